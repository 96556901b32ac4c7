"""reports.compare: two verdicts.json agree on claims, verdicts and records (numbers within their tolerances)."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from reports.compare import RELATIVE, differences

ROOT = Path(__file__).resolve().parents[2]

REPORT = {
    "manifest": {"git_revision": "abc", "duration_seconds": 12.0},
    "claims": [
        {"claim": "full.wendel", "verdict": "discrepancy", "tests": [{"nodeid": "t1"}], "records": [
            {"claim": "full.wendel", "method": "exact", "verdict": "verified", "detail": "x",
             "numbers": {"identities": 4}},
            {"claim": "full.wendel", "method": "monte-carlo", "verdict": "discrepancy", "detail": "y",
             "numbers": {"estimate": 0.0898, "pairs": [[10, 2]]}, "tolerance": 1e-3},
        ]},
        {"claim": "causal.scalar", "verdict": "verified", "tests": [], "records": [
            {"claim": "causal.scalar", "method": "numeric", "verdict": "verified", "numbers": {"residual": 2.5e-13}},
        ]},
    ],
}


#: The line of a record of full.wendel that the new report no longer has.
WENDEL_GONE = "full.wendel: exact verified records with numbers ['identities'] and seeds {}: 1 -> 0"


def changed(edit):
    new = copy.deepcopy(REPORT)
    edit(new)
    return new


def test_a_report_agrees_with_itself_and_ignores_its_runs_own_data():
    other = changed(lambda r: (r["manifest"].update(duration_seconds=99.0), r["claims"][0].update(tests=[]),
                               r["claims"][0]["records"][0].update(detail="another test name")))
    assert differences(REPORT, other) == []


@pytest.mark.parametrize("edit, expected", [
    (lambda r: r["claims"][1].update(verdict="failed"), "causal.scalar: verdict verified -> failed"),
    (lambda r: r["claims"].pop(1), "claim causal.scalar is only in the old report"),
    (lambda r: r["claims"][0]["records"].pop(0), WENDEL_GONE),
    (lambda r: r["claims"][0]["records"][1]["numbers"].update(estimate=0.0898 + 2e-3), "beyond the tolerance 0.001"),
    (lambda r: r["claims"][1]["records"][0]["numbers"].update(residual=2.5e-13 * (1 + 1e-6)), "beyond the relative"),
    (lambda r: r["claims"][0]["records"][1]["numbers"]["pairs"].append([3, 1]), "has 1 -> 2 entries"),
], ids=["verdict", "claim", "record", "beyond-tolerance", "beyond-relative", "list-length"])
def test_each_kind_of_difference_is_found(edit, expected):
    found = differences(REPORT, changed(edit))
    assert any(expected in line for line in found), found


def test_numbers_within_their_tolerance_agree():
    within = changed(lambda r: (r["claims"][0]["records"][1]["numbers"].update(estimate=0.0898 + 9e-4),
                                r["claims"][1]["records"][0]["numbers"].update(residual=2.5e-13 * (1 + RELATIVE / 2))))
    assert differences(REPORT, within) == []


def write_reports(old, new, tmp_path):
    for name, data in (("old.json", old), ("new.json", new)):
        (tmp_path / name).write_text(json.dumps(data))


def run(old, new, tmp_path, *options):
    write_reports(old, new, tmp_path)
    return subprocess.run([sys.executable, "-m", "reports", "compare", str(tmp_path / "old.json"),
                           str(tmp_path / "new.json"), *options], cwd=ROOT, capture_output=True, text=True)


def test_the_command_exits_0_for_the_same_and_1_for_a_difference(tmp_path):
    same = run(REPORT, REPORT, tmp_path)
    assert same.returncode == 0 and "the same: 2 claims, 0 difference(s)" in same.stdout
    different = run(REPORT, changed(lambda r: r["claims"][1].update(verdict="failed")), tmp_path)
    assert different.returncode == 1 and "causal.scalar: verdict verified -> failed" in different.stdout


def test_the_command_names_a_file_that_is_no_report(tmp_path):
    (tmp_path / "bad.json").write_text("[]")
    from reports.compare import main

    assert main(tmp_path / "bad.json", tmp_path / "bad.json") == 2


def test_records_are_paired_whatever_order_the_tests_ran_in():
    """Two records of one claim and method, reported in the other order (another test ran first), still agree; the
    same swap with a number changed is still found."""
    two = changed(lambda r: r["claims"][1]["records"].append(
        {"claim": "causal.scalar", "method": "numeric", "verdict": "discrepancy", "numbers": {"gap": 0.5},
         "printed": "p", "corrected": "c"}))
    swapped = changed(lambda r: None)
    swapped["claims"][1]["records"] = copy.deepcopy(two["claims"][1]["records"][::-1])
    assert differences(two, swapped) == []
    swapped["claims"][1]["records"][0]["numbers"]["gap"] = 0.6
    assert differences(two, swapped) == ["causal.scalar: numeric discrepancy record 1: numbers['gap'] 0.5 -> 0.6 "
                                         "(beyond the relative 1e-09)"]


EXPECTED = f'''
[[expected]]
line = "{WENDEL_GONE}"
reason = "the helper formulas' test marks no claim now"
'''


def run_expecting(old, new, tmp_path, expected=EXPECTED):
    (tmp_path / "expected.toml").write_text(expected)
    write_reports(old, new, tmp_path)
    from reports.compare import main

    return main(tmp_path / "old.json", tmp_path / "new.json", tmp_path / "expected.toml")


def test_an_expected_difference_is_reported_with_its_reason_and_the_reports_agree(tmp_path, capsys):
    without_helper = changed(lambda r: r["claims"][0]["records"].pop(0))
    assert run_expecting(REPORT, without_helper, tmp_path) == 0
    out = capsys.readouterr().out
    assert f"expected: {WENDEL_GONE} (the helper formulas' test marks no claim now)" in out
    assert "the same: 2 claims, 1 difference(s), 1 of them expected" in out


def test_any_other_difference_still_fails_beside_an_expected_one(tmp_path, capsys):
    worse = changed(lambda r: (r["claims"][0]["records"].pop(0), r["claims"][1].update(verdict="failed")))
    assert run_expecting(REPORT, worse, tmp_path) == 1
    assert "NOT the same: 2 claims, 2 difference(s), 1 of them expected" in capsys.readouterr().out


def test_an_expected_difference_that_does_not_occur_fails(tmp_path, capsys):
    assert run_expecting(REPORT, REPORT, tmp_path) == 1
    out = capsys.readouterr().out
    assert f"expected but not found: {WENDEL_GONE}" in out
    assert "NOT the same" in out


@pytest.mark.parametrize("text", ["[[expected]]\nline = 'x'\n", "[[expected]\n", "expected = 3\n"],
                         ids=["no-reason", "not-toml", "not-tables"])
def test_a_bad_expectations_file_is_named(text, tmp_path, capsys):
    assert run_expecting(REPORT, REPORT, tmp_path, expected=text) == 2
    assert "expected.toml" in capsys.readouterr().err  # bad input: on stderr, as every command's


def test_the_command_takes_an_expectations_file(tmp_path):
    (tmp_path / "expected.toml").write_text(EXPECTED)
    without_helper = changed(lambda r: r["claims"][0]["records"].pop(0))
    result = run(REPORT, without_helper, tmp_path, "--expected", str(tmp_path / "expected.toml"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_records_pair_only_with_their_own_kind_and_name_their_seeds():
    """A record whose numbers or seeds change kind has no partner (one record less of the old kind, one more of the
    new); records told apart by their seeds are named by them."""
    renamed = changed(lambda r: r["claims"][1]["records"][0].update(numbers={"residual_max": 2.5e-13}))
    assert differences(REPORT, renamed) == [
        "causal.scalar: numeric verified records with numbers ['residual'] and seeds {}: 1 -> 0",
        "causal.scalar: numeric verified records with numbers ['residual_max'] and seeds {}: 0 -> 1"]
    seeded = changed(lambda r: r["claims"][1]["records"][0].update(seeds={"draws": 7}))
    moved = copy.deepcopy(seeded)
    moved["claims"][1]["records"][0]["numbers"]["residual"] = 3e-13
    assert differences(seeded, moved) == ['causal.scalar: numeric verified record 1 with seeds {"draws": 7}: '
                                          "numbers['residual'] 2.5e-13 -> 3e-13 (beyond the relative 1e-09)"]


@pytest.mark.parametrize("path", sorted((ROOT / "reports" / "comparisons").glob("*.toml")), ids=lambda p: p.stem)
def test_the_committed_expectations_files_read(path):
    from reports.compare import load_expected

    assert load_expected(path)
