"""`make mutants` resumes: mutmut runs only the functions with a mutant still to run (devtools/mutation/resume.py), and
cosmic-ray's session is made again only when the committed files or the configuration changed
(devtools/mutation/compiled.py). mutmut is stood in by a function that writes results as mutmut 3.8.1 keeps them
(``mutants/<path>.py.meta``), its regeneration by one that clears a function's results."""

import json
import subprocess

from devtools.mutation.compiled import made_alike, sources, sources_record
from devtools.mutation.resume import pending_functions, resume

SCOPE = ("sim.a.*", "sim.b.x_only*")
MUTANTS = {"sim/a.py": ["sim.a.x_f__mutmut_1", "sim.a.x_f__mutmut_2", "sim.a.x_g__mutmut_1"],
           "sim/b.py": ["sim.b.x_only__mutmut_1", "sim.b.x_other__mutmut_1"]}  # x_other: outside the scope


def write_results(folder, codes: dict) -> None:
    """mutmut's meta files: every mutant of MUTANTS with the code ``codes`` gives (None: not run)."""
    for path, names in MUTANTS.items():
        meta = folder / (path + ".meta")
        meta.parent.mkdir(parents=True, exist_ok=True)
        meta.write_text(json.dumps({"exit_code_by_key": {name: codes.get(name) for name in names}}))


def results(folder) -> dict:
    return {k: v for path in MUTANTS for k, v in
            json.loads((folder / (path + ".meta")).read_text())["exit_code_by_key"].items()}


class Mutmut:
    """A stand-in for ``mutmut run NAMES``: records each call; runs (result 1: killed) the in-scope mutants its globs
    name; ``clears`` a function's results at its first call, as mutmut's regeneration of an edited function does."""

    def __init__(self, folder, clears=None, decides=True, code=0):
        self.folder, self.clears, self.decides, self.code, self.calls = folder, clears, decides, code, []

    def __call__(self, names):
        import fnmatch

        self.calls.append(list(names))
        codes = results(self.folder) if (self.folder / "sim/a.py.meta").exists() else {}
        if self.clears and len(self.calls) == 1:
            codes.update({name: None for name in codes if name.startswith(self.clears)})
        elif self.decides:
            codes.update({name: 1 for path in MUTANTS for name in MUTANTS[path]
                          if any(fnmatch.fnmatchcase(name, glob) for glob in names)})
        write_results(self.folder, codes)
        return self.code


def test_a_first_run_names_the_scope(tmp_path):
    mutmut = Mutmut(tmp_path)
    assert resume(SCOPE, tmp_path, run=mutmut) == 0
    assert mutmut.calls == [list(SCOPE)]
    assert results(tmp_path)["sim.a.x_g__mutmut_1"] == 1 and results(tmp_path)["sim.b.x_other__mutmut_1"] is None


def test_only_the_functions_with_a_mutant_left_run_again(tmp_path):
    write_results(tmp_path, {"sim.a.x_f__mutmut_1": 1, "sim.a.x_g__mutmut_1": 0, "sim.b.x_only__mutmut_1": 3})
    assert pending_functions(tmp_path, SCOPE) == ["sim.a.x_f__mutmut_*"]  # not x_other: out of scope
    mutmut = Mutmut(tmp_path)
    assert resume(SCOPE, tmp_path, run=mutmut) == 0
    assert mutmut.calls == [["sim.a.x_f__mutmut_*"]]
    assert results(tmp_path)["sim.a.x_g__mutmut_1"] == 0  # a survivor keeps its result


def test_survivors_run_again_when_asked_but_not_those_listed_as_equivalent(tmp_path):
    write_results(tmp_path, {"sim.a.x_f__mutmut_1": 1, "sim.a.x_f__mutmut_2": 0, "sim.a.x_g__mutmut_1": 0,
                             "sim.b.x_only__mutmut_1": 33})
    assert pending_functions(tmp_path, SCOPE) == []
    listed = {"sim.a.x_g__mutmut_1": "a reason"}
    assert pending_functions(tmp_path, SCOPE, survivors=True, equivalents=listed) == [
        "sim.a.x_f__mutmut_*", "sim.b.x_only__mutmut_*"]  # a survivor, and a mutant no test reached


def test_with_nothing_left_mutmut_regenerates_and_runs_the_functions_it_cleared(tmp_path):
    write_results(tmp_path, {name: 1 for names in MUTANTS.values() for name in names})
    mutmut = Mutmut(tmp_path, clears="sim.a.x_g")
    assert resume(SCOPE, tmp_path, run=mutmut) == 0
    assert mutmut.calls == [["sim.a.x_f__mutmut_1"], ["sim.a.x_g__mutmut_*"]]  # one killed mutant, by name


def test_mutants_left_undecided_after_their_run_are_reported(tmp_path, capsys):
    write_results(tmp_path, {"sim.a.x_f__mutmut_1": 1})
    mutmut = Mutmut(tmp_path, decides=False)
    assert resume(SCOPE, tmp_path, run=mutmut) == 1
    assert len(mutmut.calls) == 1 and "left 3 function(s) undecided" in capsys.readouterr().out


def test_a_failing_mutmut_stops_the_run_with_its_code(tmp_path):
    mutmut = Mutmut(tmp_path, code=2)
    assert resume(SCOPE, tmp_path, run=mutmut) == 2 and len(mutmut.calls) == 1


def _repository(tmp_path):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "k.py").write_text("x = 1\n")
    (tmp_path / "c.toml").write_text('[cosmic-ray]\nmodule-path = ["k.py"]\n')
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    return git


def test_a_session_resumes_only_while_its_committed_files_and_configuration_are_the_same(tmp_path):
    git = _repository(tmp_path)
    config, session = tmp_path / "c.toml", tmp_path / "s.sqlite"
    made_from = sources(config, tmp_path)
    assert not made_alike(session, made_from)  # no session yet
    session.write_text("")
    assert not made_alike(session, made_from)  # a session made before the record was kept
    sources_record(session).write_text(json.dumps(made_from))
    assert made_alike(session, sources(config, tmp_path))
    (tmp_path / "k.py").write_text("x = 2\n")
    assert made_alike(session, sources(config, tmp_path))  # uncommitted: the workers clone the committed tree
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "two")
    assert not made_alike(session, sources(config, tmp_path))
    sources_record(session).write_text(json.dumps(sources(config, tmp_path)))
    config.write_text(config.read_text() + "timeout = 1.0\n")
    assert not made_alike(session, sources(config, tmp_path))  # another configuration
