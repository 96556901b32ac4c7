"""mutmut's crashed mutants run again, each in a fresh process, and the summary counts that run's verdict."""

import json
import subprocess

import pytest

from devtools.mutation.__main__ import main
from devtools.mutation.fresh import PYTEST_ARGS, TIMED_OUT, apply_fresh, crashed, rerun
from devtools.mutation.summary import section

#: A mutants/ folder as mutmut 3.8.1 leaves it: results (exit codes: -6 abort, -11 segfault, 1 killed, 0 survived)
#: and its map of tests per function with each function's hash.
CODES = {"pkg.mod.x_f__mutmut_1": -6, "pkg.mod.x_f__mutmut_2": -11, "pkg.mod.x_f__mutmut_3": 1,
         "pkg.mod.x_g__mutmut_1": 0, "other.mod.x_h__mutmut_1": -6}
TESTS = {"pkg.mod.x_f": ["tests/test_mod.py::test_f"], "pkg.mod.x_g": ["tests/test_mod.py::test_g"]}
HASHES = {"pkg.mod.x_f": "hash f", "pkg.mod.x_g": "hash g", "other.mod.x_h": "hash h"}
#: The test module of the folder: it fails when mutant 1 of f is under test and passes otherwise (mutmut's
#: trampoline reads MUTANT_UNDER_TEST the same way).
TEST_MODULE = '''import os


def test_f():
    assert os.environ.get("MUTANT_UNDER_TEST") != "pkg.mod.x_f__mutmut_1"
'''


def _folder(tmp_path):
    folder = tmp_path / "mutants"
    (folder / "pkg").mkdir(parents=True)
    (folder / "pkg" / "mod.py.meta").write_text(json.dumps({"exit_code_by_key": CODES}))
    (folder / "mutmut-stats.json").write_text(json.dumps({"tests_by_mangled_function_name": TESTS,
                                                          "function_hashes": HASHES}))
    (folder / "tests").mkdir()
    (folder / "tests" / "test_mod.py").write_text(TEST_MODULE)
    return folder


def test_the_crashed_mutants_of_the_scope_are_listed(tmp_path):
    assert crashed(_folder(tmp_path), ["pkg.*"]) == ["pkg.mod.x_f__mutmut_1", "pkg.mod.x_f__mutmut_2"]


def test_each_runs_its_functions_tests_in_a_new_process_with_mutmuts_arguments(tmp_path):
    folder, calls = _folder(tmp_path), []

    def run(argv, *, cwd, env, timeout, capture_output):
        calls.append((argv[-1], env["MUTANT_UNDER_TEST"], cwd))
        if env["MUTANT_UNDER_TEST"].endswith("_2"):
            raise subprocess.TimeoutExpired(argv, timeout)
        assert argv[1:3] == ["-m", "pytest"] and tuple(argv[3:3 + len(PYTEST_ARGS)]) == PYTEST_ARGS
        return subprocess.CompletedProcess(argv, 1)

    results = rerun(folder, ["pkg.mod.x_f__mutmut_1", "pkg.mod.x_f__mutmut_2"], run=run)
    assert calls == [("tests/test_mod.py::test_f", "pkg.mod.x_f__mutmut_1", folder),
                     ("tests/test_mod.py::test_f", "pkg.mod.x_f__mutmut_2", folder)]
    assert results == {"pkg.mod.x_f__mutmut_1": {"exit_code": 1, "tests": 1, "function_hash": "hash f"},
                       "pkg.mod.x_f__mutmut_2": {"exit_code": TIMED_OUT, "tests": 1, "function_hash": "hash f"}}
    with pytest.raises(ValueError, match="has no tests"):
        rerun(folder, ["other.mod.x_h__mutmut_1"], run=run)


def test_a_real_fresh_process_reads_the_mutant_under_test(tmp_path):
    """pytest itself, in the folder: the mutant the test module fails on is killed (1), another passes (0)."""
    folder = _folder(tmp_path)
    results = rerun(folder, ["pkg.mod.x_f__mutmut_1", "pkg.mod.x_f__mutmut_2"])
    assert [results[name]["exit_code"] for name in sorted(results)] == [1, 0]


def test_a_fresh_verdict_replaces_a_crash_of_the_same_code_only():
    outcomes = {"a.x_f__mutmut_1": "other", "a.x_f__mutmut_2": "other", "a.x_f__mutmut_3": "other",
                "a.x_g__mutmut_1": "other", "a.x_f__mutmut_4": "killed"}
    fresh = {"a.x_f__mutmut_1": {"exit_code": 1, "function_hash": "f"},
             "a.x_f__mutmut_2": {"exit_code": 0, "function_hash": "f"},
             "a.x_f__mutmut_3": {"exit_code": -9, "function_hash": "f"},    # killed by the machine
             "a.x_g__mutmut_1": {"exit_code": 1, "function_hash": "old g"},  # measured on other code
             "a.x_f__mutmut_4": {"exit_code": 0, "function_hash": "f"}}      # mutmut has a verdict now
    applied, replaced = apply_fresh(outcomes, fresh, {"a.x_f": "f", "a.x_g": "new g"})
    assert applied == {"a.x_f__mutmut_1": "killed", "a.x_f__mutmut_2": "survived", "a.x_f__mutmut_3": "other",
                       "a.x_g__mutmut_1": "other", "a.x_f__mutmut_4": "killed"}
    assert replaced == 3
    segfault = {"a.x_f__mutmut_3": {"exit_code": -11, "function_hash": "f"}}  # the mutant's own crash, again
    assert apply_fresh(outcomes, segfault, {"a.x_f": "f"})[0]["a.x_f__mutmut_3"] == "killed"


def test_the_summary_counts_the_fresh_verdicts_and_says_so(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    fresh = tmp_path / "fresh.json"
    monkeypatch.chdir(tmp_path)
    assert main(["fresh", "pkg.*"]) == 0  # writes build/mutants/fresh.json: mutant 1 killed, mutant 2 passes
    (tmp_path / "build" / "mutants" / "fresh.json").rename(fresh)
    out = tmp_path / "summary.json"
    equivalents = tmp_path / "equivalent.toml"
    equivalents.write_text("[equivalent]\n")
    assert main([str(folder), str(out), "--scope", "pkg.*", "--equivalents", str(equivalents),
                 "--fresh", str(fresh)]) == 0
    summary = json.loads(out.read_text())
    assert (summary["totals"]["killed"], summary["totals"]["survived"], summary["totals"]["other"]) == (2, 2, 0)
    assert summary["fresh"] == 2
    assert "2 mutants whose test process crashed in mutmut's fork were run again" in section(out).text
    assert main([str(folder), str(out), "--scope", "pkg.*", "--equivalents", str(equivalents),
                 "--fresh", str(tmp_path / "none.json")]) == 0  # without the record: two crashes
    assert json.loads(out.read_text())["totals"]["other"] == 2
