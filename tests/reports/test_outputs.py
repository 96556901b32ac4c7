"""Outputs never clobber: one output-folder check (foundation.outputs) for every command that writes a folder.

A bad path is refused by every command alike, with exit status 2, one line on stderr, nothing written and nothing
lost; a folder of the same command and settings is resumed; the test run's report has a folder of its own."""

import errno
import json
import re
from pathlib import Path

import pytest

import empirical.cli  # noqa: F401  (imported before the commands run: no import-time output in their stderr)
import reports.__main__  # noqa: F401
import sim.__main__  # noqa: F401
from consensus import cli
from foundation.outputs import (SETTINGS_FILE, OutputError, check_output_folder, claim_output_folder, output_lock,
                             read_json, unreadable)

pytest_plugins = ["pytester"]

#: Each command that writes a folder, as ``consensus`` runs it with ``--out DIR``.
COMMANDS = {
    "run": ["run", "--model", "tiny-llama", "--weights", "random", "--prompts", "2", "--length", "8", "--passes", "1",
            "--device", "cpu", "--quiet", "--out"],
    "search": ["search", "conj.gradient-equilibria", "--method", "random", "--instances", "2", "--chunk-size", "2",
               "--no-adversarial", "--quiet", "--out"],
    "seek": ["search", "conj.gradient-equilibria", "--instances", "1", "--quiet", "--out"],
    "figure": ["figure", "1", "--out"],
    "report": ["report", "--no-bench", "--out"],
    "audit": ["audit", "--model", "tiny-llama", "--weights", "random", "--prompts", "2", "--length", "8", "--passes",
              "1", "--no-random-comparison", "--out"],
}


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``root``."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


def _file(tmp: Path) -> Path:
    (tmp / "notes.txt").write_text("a file the user keeps")
    return tmp / "notes.txt"


def _foreign(tmp: Path) -> Path:
    claim_output_folder(check_output_folder(tmp / "out", command="another command", settings={"x": 1}))
    (tmp / "out" / "result.json").write_text("{}")
    return tmp / "out"


def _unrecorded(tmp: Path) -> Path:
    (tmp / "out").mkdir()
    (tmp / "out" / "thesis.tex").write_text("months of work")
    return tmp / "out"


def _corrupt_record(tmp: Path) -> Path:
    (tmp / "out").mkdir()
    (tmp / "out" / SETTINGS_FILE).write_text('{"command": "sim sea')
    return tmp / "out"


BAD_PATHS = [
    pytest.param(_file, "must be a folder; it is a file", id="out-is-a-file"),
    pytest.param(lambda tmp: _file(tmp) / "run", r"must be a folder; \S*notes.txt above it is a file", id="under-a-file"),
    pytest.param(_foreign, "holds the output of `another command`, not of", id="another-command"),
    pytest.param(_unrecorded, "must be empty or hold a settings.json", id="non-empty-unrecorded"),
    pytest.param(_corrupt_record, r"out/settings.json cannot be read as JSON \(Unterminated string", id="corrupt-record"),
]


@pytest.mark.parametrize("make_out, message", BAD_PATHS)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_output_folder_is_refused_alike_by_every_command(tmp_path, capsys, command, make_out, message):
    out = make_out(tmp_path)
    before = _snapshot(tmp_path)
    assert cli.main([*COMMANDS[command], str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and str(out) in err[0]
    assert re.search(message, err[0])
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("make_out, message", BAD_PATHS[:2])
def test_a_suite_refuses_a_file_as_its_folder_of_runs(tmp_path, capsys, make_out, message):
    out = make_out(tmp_path)
    before = _snapshot(tmp_path)
    assert cli.main(["suite", "--only", "smollm2-trained-no-ffn", "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(message, err[0]) and _snapshot(tmp_path) == before


@pytest.mark.parametrize("command", COMMANDS)
def test_a_folder_another_writer_holds_is_refused_by_every_command(tmp_path, capsys, command):
    with output_lock(tmp_path / "out", command="another writer"):
        before = _snapshot(tmp_path)
        assert cli.main([*COMMANDS[command], str(tmp_path / "out")]) == 2
        assert _snapshot(tmp_path) == before
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is being written by pid" in err[0] and "`another writer`" in err[0]


def test_the_bad_path_table_sees_a_command_that_writes_before_checking(tmp_path, capsys, monkeypatch):
    """Control: a figure command whose check is skipped writes into a foreign folder, and the table's assertion
    on what was written fails."""
    import sim.figures.plots

    monkeypatch.setattr(sim.figures.plots, "check_output_folder",
                        lambda out, command, settings: type("F", (), {"path": Path(out), "resumed": False,
                                                                      "command": command, "settings": settings})())
    monkeypatch.setattr(sim.figures.plots, "claim_output_folder", lambda output: output.path)
    out = _unrecorded(tmp_path)
    before = _snapshot(tmp_path)
    cli.main([*COMMANDS["figure"], str(out)])
    assert _snapshot(tmp_path) != before


def test_same_settings_resume_and_other_settings_are_named(tmp_path):
    first = check_output_folder(tmp_path / "a", command="sim search", settings={"claim": "c", "chunk_size": 2})
    assert not first.resumed and not (tmp_path / "a").exists()  # checking writes nothing
    claim_output_folder(first)
    again = check_output_folder(tmp_path / "a", command="sim search", settings={"claim": "c", "chunk_size": 2})
    assert again.resumed
    with pytest.raises(OutputError, match=r"other settings \(chunk_size: 2 there, 3 here\); use another folder"):
        check_output_folder(tmp_path / "a", command="sim search", settings={"claim": "c", "chunk_size": 3})
    record = json.loads((tmp_path / "a" / SETTINGS_FILE).read_text())
    assert record["schema_version"] == 1 and record["settings"] == {"claim": "c", "chunk_size": 2}


def test_settings_compare_as_json_gives_them_back(tmp_path):
    claim_output_folder(check_output_folder(tmp_path, command="c", settings={"shape": (2, 3)}))
    assert check_output_folder(tmp_path, command="c", settings={"shape": (2, 3)}).resumed


def test_a_file_that_cannot_be_read_is_named(tmp_path):
    (tmp_path / "chunk.json").write_text("{")
    with pytest.raises(OutputError, match=r"chunk.json cannot be read as JSON \(Expecting"):
        read_json(tmp_path / "chunk.json")
    assert unreadable(tmp_path / "chunk.json").startswith("Expecting") and unreadable(tmp_path / "none.json") is None


def test_a_corrupt_search_chunk_is_refused_naming_it(tmp_path, capsys):
    assert cli.main([*COMMANDS["search"], str(tmp_path)]) == 0
    chunk = tmp_path / "chunks" / "chunk-00000.json"
    chunk.write_text(chunk.read_text()[:40])
    capsys.readouterr()
    assert cli.main([*COMMANDS["search"], str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{chunk}: its sha256" in err[0] and "is not the one chunks/index.json records" in err[0]
    from foundation.files import sha256  # the damaged chunk's hash recorded: its content is checked next

    (tmp_path / "chunks" / "index.json").write_text(json.dumps({chunk.name: sha256(chunk)}))
    assert cli.main([*COMMANDS["search"], str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{chunk} cannot be read as JSON" in err[0]


def test_a_damaged_results_file_is_rebuilt_and_said_so(tmp_path, capsys):
    assert cli.main([*COMMANDS["run"], str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    (tmp_path / "results.json").write_text('{"E": [')
    capsys.readouterr()
    assert cli.main([*COMMANDS["run"], str(tmp_path)]) == 0
    assert f"note: rebuilt {tmp_path / 'results.json'}: it could not be read" in capsys.readouterr().err
    assert json.loads((tmp_path / "results.json").read_text())["E"] == results["E"]


def test_a_plain_test_run_leaves_the_full_report_untouched(pytester):
    """`pytest FILE` writes its report to build/test-report; build/report (`make report`'s) keeps every byte."""
    full = pytester.path / "build" / "report"
    claim_output_folder(check_output_folder(full, command="reports build", settings={"pytest_args": []}))
    (full / "index.html").write_text("the hour-long full report")
    before = _snapshot(full)
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    pytester.runpytest("-p", "reports.pytest_plugin").assert_outcomes(passed=1)
    assert _snapshot(full) == before
    assert json.loads((pytester.path / "build" / "test-report" / "verdicts.json").read_text())["manifest"]["tests"] == 1


def test_a_test_run_refuses_the_full_report_as_its_report_dir(pytester):
    full = pytester.path / "build" / "report"
    claim_output_folder(check_output_folder(full, command="reports build", settings={"pytest_args": []}))
    pytester.makepyfile(test_one="def test_one():\n    raise AssertionError('must not run')\n")
    result = pytester.runpytest("-p", "reports.pytest_plugin", "--report-dir", "build/report")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--report-dir */build/report holds the output of `reports build`, not of `pytest`*"])


def test_a_test_report_folder_is_reused_by_the_next_test_run(pytester):
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    pytester.runpytest("-p", "reports.pytest_plugin").assert_outcomes(passed=1)
    pytester.makepyfile(test_two="def test_two():\n    pass\n")
    pytester.runpytest("-p", "reports.pytest_plugin").assert_outcomes(passed=2)
    verdicts = json.loads((pytester.path / "build" / "test-report" / "verdicts.json").read_text())
    assert verdicts["manifest"]["tests"] == 2


def test_a_second_process_is_refused_the_lock_naming_the_first(tmp_path):
    """The lock is the system's (fcntl.flock): another process holding it refuses this one at once, naming its pid
    and command; once it has ended, the folder is free again (the control)."""
    import subprocess
    import sys
    import time

    from foundation.outputs import OutputError, output_lock

    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys; from foundation.outputs import output_lock\n"
        f"with output_lock({str(tmp_path / 'out')!r}, command='sim figure'):\n"
        "    print('held', flush=True); sys.stdin.read()")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(OutputError, match=rf"--out .*out is being written by pid {holder.pid} \(`sim figure`, "
                                              r"started .*\); wait for it to end, or use another folder"):
            with output_lock(tmp_path / "out", command="sim figure"):
                pass
        assert time.monotonic() - started < 5  # refused at once, not after a wait
    finally:
        holder.communicate("", timeout=30)
    with output_lock(tmp_path / "out", command="sim figure") as folder:
        assert json.loads((folder / ".lock.json").read_text())["command"] == "sim figure"


@pytest.mark.parametrize("code, words", [(errno.EBADF, "its file system refused the one-writer lock"),
                                         (errno.ENOLCK, "its file system refused the one-writer lock"),
                                         (errno.EWOULDBLOCK, "is being written by")])
def test_a_lock_the_file_system_refuses_is_not_called_a_second_writer(code, words, tmp_path, monkeypatch):
    """The referee's patched flock raising EBADF read "being written by another process" and left the folder it
    created: an error other than EWOULDBLOCK / EAGAIN (a file system without flock, NFS's ENOLCK) now says the file
    system refused it; the control, EWOULDBLOCK, is a second writer. Either way the folder it created is gone."""
    import fcntl
    import os

    def refuse(descriptor, operation):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(fcntl, "flock", refuse)
    monkeypatch.setattr("foundation.outputs.HOLDER_RECORD_WAIT", 0.0)
    with pytest.raises(OutputError, match=words):
        with output_lock(tmp_path / "new", command="sim figure"):
            pass
    assert not (tmp_path / "new").exists()


def test_output_files_are_readable_as_the_umask_allows(tmp_path):
    """mkstemp creates 0600 files; the atomic writer gives them 0666 less the umask (0644 under umask 022)."""
    import os

    from foundation.files import write_json

    previous = os.umask(0o022)
    try:
        write_json(tmp_path / "a.json", {"a": 1})
        os.umask(0o077)
        write_json(tmp_path / "b.json", {"b": 1})  # the control: a stricter umask is obeyed
    finally:
        os.umask(previous)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "b.json").stat().st_mode & 0o777 == 0o600


def test_a_test_run_is_refused_a_report_dir_another_writer_holds(pytester):
    """Two test runs (``make test`` and ``pytest --claim ...``) must not write one report at once: the second is
    refused before any test runs, naming the first; once that has ended, the folder is free (the control)."""
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    with output_lock(pytester.path / "build" / "test-report", command="pytest (another run)"):
        result = pytester.runpytest("-p", "reports.pytest_plugin")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--report-dir */build/test-report is being written by pid * (`pytest (another run)`*"])
    pytester.runpytest("-p", "reports.pytest_plugin").assert_outcomes(passed=1)


#: Writes a report, then writes it again under a file-size limit below verdicts.json's size: the second write
#: fails part-way, as on a full disk. Prints whether verdicts.json kept its bytes, and the folder's files.
CUT_SHORT = """
import json, resource, signal, sys, time
from pathlib import Path
from reports.build import write_report

out = Path(sys.argv[1])
write_report(out, evidence=[], sections=[], started=time.time(), exitstatus=0, full=False)
before = (out / "verdicts.json").read_bytes()
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of ending the process
resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) // 2, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    write_report(out, evidence=[], sections=[], started=time.time(), exitstatus=1, full=False)
except OSError as error:
    print(json.dumps([error.strerror, (out / "verdicts.json").read_bytes() == before,
                      sorted(p.name for p in out.iterdir())]))
"""


def test_a_report_write_cut_short_leaves_the_earlier_verdicts_whole(tmp_path):
    """verdicts.json and index.html are written to a temporary file and renamed (foundation.files.atomic_write): a
    write that fails part-way (a full disk, a killed run) leaves the earlier report whole and no temporary file. A
    child process: the file-size limit would cut the test run's own writes too."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", CUT_SHORT, str(tmp_path / "report")], cwd=Path(__file__).parents[2],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["File too large", True, ["index.html", "verdicts.json"]]
