"""``python -m reports build``: the report builds into any folder, and bad pytest arguments fail before anything runs.

Each build here runs a tiny selection of tests (``tests/reports/test_records.py``, a few seconds of fast tests) with
``--no-bench``, so the command takes seconds; the real build runs the benchmarks and the whole suite.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from foundation.manifest import git_revision
from foundation.outputs import check_output_folder, claim_output_folder

ROOT = Path(__file__).resolve().parents[2]
TINY_SELECTION = ["--", "tests/reports/test_records.py"]
#: A build of the tiny selection takes 5-15 s on the shared 2-core machine (mostly starting Python three times);
#: a build that started the benchmarks by mistake would take minutes, so this bound fails it instead of waiting.
BUILD_SECONDS = 120


def _build(arguments: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run ``python -m reports build ARGUMENTS`` from ``cwd`` (this checkout's ``reports`` package first)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "reports", "build", *arguments], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=BUILD_SECONDS)


def _tests_in_tiny_selection() -> int:
    """How many tests pytest collects from the tiny selection (so a build that ran more, e.g. the whole suite, shows)."""
    listing = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "--no-report", TINY_SELECTION[1]],
                             cwd=ROOT, capture_output=True, text=True, timeout=BUILD_SECONDS)
    return sum("::" in line for line in listing.stdout.splitlines())


def _verdicts(folder: Path) -> dict:
    return json.loads((folder / "verdicts.json").read_text())


def test_report_builds_into_a_folder_outside_the_project(tmp_path):
    out = tmp_path / "report"
    result = _build(["--no-bench", "--out", str(out), *TINY_SELECTION], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (out / "index.html").is_file()
    manifest = _verdicts(out)["manifest"]
    assert (manifest["pytest_exitstatus"], manifest["tests"]) == (0, _tests_in_tiny_selection())


def test_report_builds_into_a_relative_folder_replacing_another_revisions_verdicts(tmp_path):
    out = tmp_path / "relative" / "report"
    # an earlier build with the same arguments (its settings.json), whose verdicts are another revision's
    claim_output_folder(check_output_folder(out, command="reports build", settings={"pytest_args": TINY_SELECTION[1:]}))
    stale = {"manifest": {"git_revision": "0123456789ab"}, "counts": {"verified": 1}, "claims": [{"claim": "x"}]}
    (out / "verdicts.json").write_text(json.dumps(stale))
    result = _build(["--no-bench", "--out", "relative/report", *TINY_SELECTION], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (out / "index.html").is_file()
    verdicts = _verdicts(out)
    assert verdicts["manifest"]["git_revision"] == git_revision(ROOT)
    assert "x" not in [c["claim"] for c in verdicts["claims"]]
    assert "rebuilding the report in" in result.stdout


def test_report_refuses_a_folder_built_with_other_pytest_arguments(tmp_path):
    out = tmp_path / "report"
    claim_output_folder(check_output_folder(out, command="reports build", settings={"pytest_args": ["-k", "wendel"]}))
    result = _build(["--no-bench", "--out", str(out), *TINY_SELECTION], cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"error: --out {out} holds the output of `reports build` with other settings (pytest_args: ['-k', 'wendel'] "
        "there, ['tests/reports/test_records.py'] here); use another folder, or repeat those settings to resume "
        "(nothing was changed)."]
    assert sorted(p.name for p in out.iterdir()) == ["settings.json"]


def test_bad_pytest_argument_fails_before_the_benchmarks(tmp_path):
    out = tmp_path / "report"
    result = _build(["--out", str(out), "--", "--no-such-option"], cwd=tmp_path)
    assert result.returncode == 4
    assert "unrecognized arguments: --no-such-option" in result.stderr
    assert "nothing was run" in result.stderr
    assert " bench " not in result.stdout and not (out / "sim-bench.json").exists()


def test_selection_of_no_tests_fails_before_the_benchmarks(tmp_path):
    result = _build(["--out", str(tmp_path / "report"), "--", "tests/reports/test_records.py", "-k", "no_such_test"],
                    cwd=tmp_path)
    assert result.returncode == 5
    assert "select no tests" in result.stderr and " bench " not in result.stdout

