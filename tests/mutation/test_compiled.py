"""cosmic-ray's session over the compiled code leaves mutmut's functions to mutmut, and counts each mutant once."""

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.mutation.compiled import (COMPILE_OPTION, LEFT_TO_MUTMUT, leave_to_mutmut, mutmut_lines,
                                        mutmut_mutates, njit_lines, wait_for_workers, worker_ports)
from devtools.mutation.summary import read_cosmic_ray
from tests.mutation.test_summary import _cosmic_ray_session

#: A module as sim/solvers/compiled.py is laid out: a kernel (@njit), a wrapper, a class with a method and a property.
MODULE = '''from numba import njit

LIMIT = 2


@njit(cache=True)
def kernel(x):
    return x + 1


def wrapper(x):
    return kernel(x) * 3


class Holder:
    def method(self):
        return LIMIT - 1

    @property
    def value(self):
        return LIMIT * 5
'''


#: A [tool.mutmut] that mutates sim/field/*.py but one file, as pyproject.toml keeps sim/solvers/stepsize.py from it.
PYPROJECT = '''[tool.mutmut]
only_mutate = ["sim/field/*.py"]
do_not_mutate = ["sim/field/rule.py"]
'''


def test_mutmut_mutates_what_only_mutate_matches_and_do_not_mutate_does_not():
    assert mutmut_mutates("sim/field/kernels.py", PYPROJECT)
    assert not mutmut_mutates("sim/field/rule.py", PYPROJECT)  # matched by both: kept from mutmut
    assert not mutmut_mutates("sim/solvers/compiled.py", PYPROJECT)  # matched by neither
    assert mutmut_mutates("sim/field/rule.py", '[tool.mutmut]\nonly_mutate = ["sim/field/*.py"]\n')  # no exclusion


def test_mutmut_lines_are_the_undecorated_functions_and_methods():
    assert mutmut_lines(MODULE) == [(11, 12), (16, 17)]  # wrapper, Holder.method; not kernel, not the property


def test_njit_lines_are_the_decorators_of_the_kernels():
    assert njit_lines(MODULE) == {6}


def test_mutants_in_mutmut_functions_are_left_to_it_and_not_counted_twice(tmp_path):
    """Rows 1-7 of the fabricated session: all but row 6 have results; rows 11 and 16 (a wrapper, a method) are
    pending and left to mutmut, row 6 (an @njit option) is excluded by construction, row 8 (the kernel) and row 21
    (a property: mutmut skips it) stay cosmic-ray's."""
    import sqlite3

    (tmp_path / "sim" / "field").mkdir(parents=True)
    (tmp_path / "sim" / "field" / "kernels.py").write_text(MODULE)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    session = tmp_path / "session.sqlite"
    _cosmic_ray_session(session, "sim/field/drift.py")
    _add_mutants(session, "sim/field/kernels.py", ((8, "p"), (11, "h"), (16, "i"), (21, "j"), (6, "k")))
    assert leave_to_mutmut(session, tmp_path) == 2
    with sqlite3.connect(session) as db:
        left = db.execute("SELECT job_id FROM work_results WHERE output = ?", (LEFT_TO_MUTMUT,)).fetchall()
        option = db.execute("SELECT job_id FROM work_results WHERE output = ?", (COMPILE_OPTION,)).fetchall()
    assert sorted(left) == [("h",), ("i",)] and option == [("k",)]
    outcomes = read_cosmic_ray(session, tmp_path)
    assert not any(":wrapper@" in name or ":Holder.method@" in name for name in outcomes)  # mutmut's count them
    assert outcomes["sim.field.kernels:kernel@+1:4:core/NumberReplacer#0"] == "not checked"  # still to run
    assert outcomes["sim.field.kernels:Holder.value@+1:4:core/NumberReplacer#0"] == "not checked"
    assert outcomes["sim.field.kernels:<kernel>@+0:4:core/NumberReplacer#0"] == "excluded"  # the @njit option
    assert outcomes["sim.field.drift:sphere_drift@+4:4:core/NumberReplacer#0"] == "excluded"  # a filter's skip stays
    assert outcomes["sim.field.drift:<LIMIT>@+0:4:core/NumberReplacer#0"] == "not checked"  # no function: cosmic-ray's
    assert leave_to_mutmut(session, tmp_path) == 0  # already recorded: nothing twice


#: The definition cosmic-ray names for each row of MODULE that the tests mutate (None: outside any).
_DEFINITION_OF_ROW = {6: None, 8: "kernel", 11: "wrapper", 16: "method", 21: "value"}


def _add_mutants(session, module, rows_and_jobs, shift=0):
    """Pending mutants of ``module`` (laid out as MODULE, its rows moved down by ``shift``) at the rows of
    ``rows_and_jobs``, in that order of occurrence."""
    import sqlite3

    with sqlite3.connect(session) as db:
        for occurrence, (row, job) in enumerate(rows_and_jobs):
            db.execute("INSERT INTO mutation_specs VALUES (?, 'core/NumberReplacer', '{}', ?, ?, 4, ?, 5, ?, ?)",
                       (module, occurrence, row + shift, row + shift, _DEFINITION_OF_ROW[row], job))


def _names(folder, text, shift):
    """The names ``read_cosmic_ray`` gives a session's mutants of MODULE's kernel (two at one place), decorator
    and property, with the module written as ``text`` (MODULE with ``shift`` lines more above them)."""
    (folder / "sim" / "field").mkdir(parents=True)
    (folder / "sim" / "field" / "kernels.py").write_text(text)
    session = folder / "session.sqlite"
    _cosmic_ray_session(session, "sim/field/drift.py")
    _add_mutants(session, "sim/field/kernels.py", ((6, "k"), (8, "p"), (8, "q"), (21, "j")), shift)
    return sorted(name for name in read_cosmic_ray(session, folder) if name.startswith("sim.field.kernels"))


def test_a_mutants_name_holds_while_the_file_above_it_is_edited(tmp_path):
    """Rows count from the mutant's function or statement, so a function added above moves every row of the
    session, not a name; two mutants of one operator at one place are told apart by their order."""
    names = _names(tmp_path / "before", MODULE, 0)
    assert names == ["sim.field.kernels:<kernel>@+0:4:core/NumberReplacer#0",
                     "sim.field.kernels:Holder.value@+1:4:core/NumberReplacer#0",
                     "sim.field.kernels:kernel@+1:4:core/NumberReplacer#0",
                     "sim.field.kernels:kernel@+1:4:core/NumberReplacer#1"]
    edited = MODULE.replace("LIMIT = 2\n", "LIMIT = 2\n\n\ndef added(x):\n    return x - 7\n")
    assert _names(tmp_path / "after", edited, 4) == names


def test_control_a_session_from_another_version_of_the_file_is_refused(tmp_path):
    """The rows of MODULE read against the edited file: the kernel's mutant at row 8 is not inside ``kernel``."""
    edited = MODULE.replace("LIMIT = 2\n", "LIMIT = 2\n\n\ndef added(x):\n    return x - 7\n")
    with pytest.raises(ValueError, match="made from another version of the file"):
        _names(tmp_path, edited, 0)


def test_a_sessions_mutants_are_named_on_the_committed_source_it_was_made_from(tmp_path):
    """With a sources record, the blobs it names are read (git), not the working tree edited since; without one,
    the working tree."""
    import devtools.mutation.compiled as compiled

    names = _names(tmp_path, MODULE, 0)
    session = tmp_path / "session.sqlite"
    config = tmp_path / "compiled.toml"
    config.write_text('[cosmic-ray]\nmodule-path = ["sim/field/kernels.py", "sim/field/drift.py"]\n')
    for command in (["init", "-q"], ["add", "sim"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *command], cwd=tmp_path, check=True)
    compiled.sources_record(session).write_text(json.dumps(compiled.sources(config, tmp_path)))
    (tmp_path / "sim" / "field" / "kernels.py").write_text("\n\n" + MODULE)  # edited after the session was made
    assert sorted(n for n in read_cosmic_ray(session, tmp_path) if n.startswith("sim.field.kernels")) == names
    compiled.sources_record(session).unlink()
    with pytest.raises(ValueError, match="another version"):
        read_cosmic_ray(session, tmp_path)


def test_mutants_of_a_file_kept_from_mutmut_all_stay_cosmic_rays(tmp_path):
    """The same module under a name do_not_mutate lists (as sim/solvers/stepsize.py): its wrapper's and method's
    mutants are not left to mutmut, which never mutates them; only the @njit option is excluded."""
    (tmp_path / "sim" / "field").mkdir(parents=True)
    (tmp_path / "sim" / "field" / "rule.py").write_text(MODULE)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    session = tmp_path / "session.sqlite"
    _cosmic_ray_session(session)
    _add_mutants(session, "sim/field/rule.py", ((8, "p"), (11, "h"), (16, "i"), (6, "k")))
    assert leave_to_mutmut(session, tmp_path) == 0
    outcomes = read_cosmic_ray(session, tmp_path)
    assert outcomes["sim.field.rule:wrapper@+0:4:core/NumberReplacer#0"] == "not checked"  # cosmic-ray's to run
    assert outcomes["sim.field.rule:Holder.method@+0:4:core/NumberReplacer#0"] == "not checked"
    assert outcomes["sim.field.rule:<kernel>@+0:4:core/NumberReplacer#0"] == "excluded"


def test_worker_ports_come_from_the_configuration(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('[cosmic-ray.distributor.http]\nworker-urls = ["http://localhost:9876", "http://localhost:9877"]\n')
    assert worker_ports(config) == [9876, 9877]


def test_a_worker_that_never_listens_fails_with_its_port():
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]  # closed again: nothing listens there
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(RuntimeError, match=f"port {port} did not start"):
            wait_for_workers([port], process, seconds=1.0)
    finally:
        process.kill()
        process.wait()


def test_survivors_and_failed_workers_are_run_again_and_nothing_else(tmp_path):
    from devtools.mutation.compiled import forget_survivors

    session = tmp_path / "session.sqlite"
    _cosmic_ray_session(session)
    before = read_cosmic_ray(session, tmp_path)
    assert forget_survivors(session) == 2  # the survivor (row 4) and the worker's exception (row 6)
    after = read_cosmic_ray(session, tmp_path)
    again = {f"sim.field.kernels:sphere_drift@+{offset}:4:core/NumberReplacer#0" for offset in (3, 5)}
    assert [before[name] for name in sorted(again)] == ["survived", "other"]
    assert all(after[name] == "not checked" for name in again)  # pending again for `exec`
    assert {k: v for k, v in after.items() if k not in again} == {k: v for k, v in before.items() if k not in again}


def test_a_session_is_resumed_while_made_alike_and_its_survivors_run_again_only_then(tmp_path, monkeypatch):
    """run_session with cosmic-ray's commands stood in: no session, or one made from other files, is made afresh
    (init, filter, record of its sources), --survivors or not; one made from the same files is resumed, and with
    --survivors its survivors are forgotten first; every run ends in `cosmic-ray exec`."""
    import types

    import devtools.mutation.compiled as compiled

    commands, forgotten = [], []
    monkeypatch.setattr(compiled, "sources", lambda config: {"sim/field/kernels.py": "blob 1"})
    monkeypatch.setattr(compiled.subprocess, "run",
                        lambda argv, **kwargs: commands.append(argv[0].split("-")[-1] + " " + argv[1])
                        or types.SimpleNamespace(returncode=0))
    monkeypatch.setattr(compiled.subprocess, "Popen", lambda *args, **kwargs: types.SimpleNamespace(
        pid=0, wait=lambda timeout=None: 0))
    monkeypatch.setattr(compiled, "wait_for_workers", lambda *args: None)
    monkeypatch.setattr(compiled.os, "killpg", lambda *args: None)
    monkeypatch.setattr(compiled, "leave_to_mutmut", lambda session: 0)
    monkeypatch.setattr(compiled, "forget_survivors", lambda session: forgotten.append(session) or 0)
    config, session = Path("tests/mutation/compiled.toml"), tmp_path / "s.sqlite"

    def run(survivors):
        commands.clear()
        assert compiled.run_session(config, session, survivors=survivors) == 0
        return list(commands)

    made = ["ray init", "operators " + str(session), "ray exec"]
    assert run(survivors=True) == made and not forgotten  # nothing to resume: a new session, all of it runs
    session.write_text("")  # (cosmic-ray init would have made it)
    assert json.loads(compiled.sources_record(session).read_text()) == {"sim/field/kernels.py": "blob 1"}
    assert run(survivors=False) == ["ray exec"] and not forgotten  # resumed
    assert run(survivors=True) == ["ray exec"] and forgotten == [session]
    compiled.sources_record(session).write_text(json.dumps({"sim/field/kernels.py": "blob 0"}))
    assert run(survivors=True) == made and forgotten == [session]  # made from other files: afresh