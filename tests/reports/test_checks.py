"""Checks registered by claim (foundation.registration): a product check found in the registry by its name, validation
at import, records of the running check, coverage and gaps, and what a test without a claim contributes (nothing)."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from foundation.registration import (COVERED, GAP, REGISTERED, Check, check, checks_of, claim_result, coverage, gaps,
                                     holding,
                                     named_check, registrations)
from foundation.registry import CLAIMS_BY_ID
from reports.pytest_plugin import FULL_ENV

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]


def test_an_unknown_claim_id_is_an_error_naming_it():
    with pytest.raises(KeyError, match="'full.wendle' is not in the registry"):
        check("full.wendle", method="exact")


def test_a_method_that_is_no_evidence_kind_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"method='hunch'\): method must be one of"):
        check("full.wendel", method="hunch")


@pytest.fixture(autouse=True)
def registry_restored():
    """The checks registered by these tests are removed afterwards (they must not cover a claim in the report)."""
    before = list(REGISTERED)
    yield
    REGISTERED[:] = before


@pytest.fixture
def exact_check():
    @check("full.wendel", method="exact")
    def exact(verdict="verified"):
        return claim_result(verdict, detail="a record of the running check")

    return exact


def named_in(monkeypatch, function, entries: dict[str, str]) -> str:
    """``function``'s "module:qualname", planted with a method in the checks of the registry entries ``entries``
    (claim id -> method) for the test's duration."""
    name = f"{function.__module__}:{function.__qualname__}"
    for claim_id, method in entries.items():
        claim = CLAIMS_BY_ID[claim_id]
        monkeypatch.setitem(CLAIMS_BY_ID, claim_id, replace(claim, checks=(*claim.checks, (name, method))))
    return name


def test_a_product_check_takes_its_claims_and_methods_from_the_entries_naming_it(monkeypatch):
    def verdict(claim=None):
        return claim_result("verified", claim=claim)

    name = named_in(monkeypatch, verdict, {"full.wendel": "exact", "causal.scalar": "symbolic"})
    registered = named_check(verdict)
    assert {(c.claim, c.method, c.control, c.name) for c in registrations(registered)} == {
        ("full.wendel", "exact", False, name), ("causal.scalar", "symbolic", False, name)}
    record = registered("causal.scalar")
    assert (record.claim, record.method) == ("causal.scalar", "symbolic")


def test_a_product_check_no_entry_names_is_an_error_naming_it():
    # negative control: the same decorator on a function that no registry entry lists
    def unnamed():
        return claim_result("verified")

    with pytest.raises(LookupError, match=r"@named_check on tests\.reports\.test_checks:.*unnamed: no claim"):
        named_check(unnamed)


def test_a_registered_check_builds_records_of_its_claim_and_method(exact_check):
    record = exact_check()
    assert (record.claim, record.method, record.verdict) == ("full.wendel", "exact", "verified")
    assert [(c.claim, c.method, c.control) for c in registrations(exact_check)] == [("full.wendel", "exact", False)]
    assert any(c.function is exact_check for c in checks_of("full.wendel"))


def test_a_test_may_name_the_registered_check_instead_of_its_id(exact_check):
    def a_test():
        pass

    assert [(c.claim, c.method, c.control) for c in registrations(check(exact_check, control=True)(a_test))] == [
        ("full.wendel", "exact", True)]
    with pytest.raises(ValueError, match="not a registered check"):
        check(a_test)
    with pytest.raises(ValueError, match="brings its own method"):
        check(exact_check, method="exact")


def test_stacked_registrations_need_the_claim_named():
    @check("emp.no-ffn", method="empirical")
    @check("emp.full", method="empirical")
    def both(claim=None):
        return claim_result("supported", claim=claim)

    registered = {(c.claim, c.method) for c in registrations(both)}
    assert registered == {("emp.no-ffn", "empirical"), ("emp.full", "empirical")}
    assert both("emp.full").claim == "emp.full"
    with pytest.raises(ValueError, match="pass claim= one of them"):
        both()


def test_a_record_of_another_claim_than_registered_is_an_error():
    # negative control of the validation: the check is registered for full.wendel, returns a causal.scalar record
    @check("full.wendel", method="exact")
    def mislabelled():
        from foundation.records import CheckResult

        return CheckResult("causal.scalar", "symbolic", "verified")

    with pytest.raises(ValueError, match="mislabelled is registered as a check of .*'causal.scalar'"):
        mislabelled()


def test_claim_result_outside_a_registered_check_is_an_error():
    with pytest.raises(RuntimeError, match="inside a registered check"):
        claim_result("verified")
    with pytest.raises(RuntimeError, match="inside a registered check"):
        holding()


def test_coverage_reaches_covered_and_gap():
    exact = Check("full.wendel", "exact", False, "t")
    covered = coverage([exact, Check("full.wendel", "monte-carlo", True, "control")])
    # a negative control alone does not cover an evidence kind
    assert covered["full.wendel"] == {"exact": COVERED, "monte-carlo": GAP}
    assert gaps(covered)["full.wendel"] == ["monte-carlo"]
    both = coverage([exact, Check("full.wendel", "monte-carlo", False, "t2")])
    assert both["full.wendel"] == {"exact": COVERED, "monte-carlo": COVERED}
    assert "full.wendel" not in gaps(both)


# --- through pytest --------------------------------------------------------------------------------
GAPS_SUITE = '''
from foundation.registration import check
from foundation.records import CheckResult

@check("full.wendel", method="exact")
def test_exact():
    assert True

def test_a_search_names_its_conjecture_in_its_record(record):
    record(CheckResult("conj.value-full", "search", "supported", detail="no counterexample in 3 instances"))

@check("causal.scalar", method="numeric", control=True)
def test_a_control_covers_nothing(record):
    record(CheckResult("causal.scalar", "numeric", "supported", detail="the broken model is rejected"))
'''


def test_a_declared_evidence_kind_without_a_check_is_a_gap_in_verdicts_and_report(pytester, monkeypatch):
    # A separate process: this one has the whole suite's checks registered.
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv(FULL_ENV, raising=False)
    pytester.makepyfile(test_gaps=GAPS_SUITE)
    pytester.runpytest_subprocess("-p", "reports.pytest_plugin", "--report-dir", "out").assert_outcomes(passed=3)
    data = json.loads((pytester.path / "out" / "verdicts.json").read_text())
    claims = {c["claim"]: c for c in data["claims"]}
    assert claims["full.wendel"]["evidence"] == {"exact": "covered", "monte-carlo": "gap"}
    assert data["gaps"]["full.wendel"] == ["monte-carlo"]
    # a record covers its kind (a search's, from a test marking no claim); a negative control's does not
    assert claims["conj.value-full"]["evidence"] == {"search": "covered"} and "conj.value-full" not in data["gaps"]
    assert claims["causal.scalar"]["evidence"] == {"symbolic": "gap", "numeric": "gap"}
    assert claims["full.wendel"]["verdict"] == "verified"
    html = (pytester.path / "out" / "index.html").read_text()
    assert "Declared evidence without a check (a gap): monte-carlo." in html


UNKNOWN_MARKER = '''
import pytest

@pytest.mark.claim("full.wendle", method="exact")
def test_typo():
    assert True
'''

UNKNOWN_CHECK = '''
from foundation.registration import check

@check("full.wendle", method="exact")
def test_typo():
    assert True
'''


@pytest.mark.parametrize("suite", [UNKNOWN_MARKER, UNKNOWN_CHECK], ids=["marker", "check"])
def test_an_unknown_id_stops_the_run_at_collection_naming_it(pytester, suite):
    pytester.makepyfile(test_typo=suite)
    result = pytester.runpytest("-p", "reports.pytest_plugin", "--no-report")
    assert result.ret != 0 and "passed" not in result.parseoutcomes()  # stopped before running anything
    assert "'full.wendle' is not in the registry" in result.stdout.str() + result.stderr.str()


HELPER_SUITE = '''
from foundation.registration import check

def helper(n):
    return 2 ** n

def test_two_helper_formulas_agree():
    assert helper(3) == 8

@check("causal.scalar", method="symbolic")
def test_marked():
    assert helper(3) == 8
'''


def test_a_helper_test_adds_no_record(pytester, monkeypatch):
    monkeypatch.delenv(FULL_ENV, raising=False)
    pytester.makepyfile(test_helpers=HELPER_SUITE)
    pytester.runpytest("-p", "reports.pytest_plugin", "--report-dir", "out").assert_outcomes(passed=2)
    claims = json.loads((pytester.path / "out" / "verdicts.json").read_text())["claims"]
    tests = [t["nodeid"] for c in claims for t in c["tests"]]
    records = [r for c in claims for r in c["records"]]
    assert not any("test_two_helper_formulas_agree" in t for t in tests)
    assert not any("test_two_helper_formulas_agree" in r["detail"] for r in records)
    # the claim-marked test's pass is a record with its marker's method
    assert [(r["claim"], r["method"], r["verdict"]) for r in records] == [("causal.scalar", "symbolic", "verified")]


RECORDING_SUITE = '''
from foundation.registration import check
from reports.pytest_plugin import current_claim
from foundation.records import CheckResult

@check("full.wendel", method="exact")
def test_records_another_claim(record):
    record(CheckResult("causal.scalar", "symbolic", "verified"))

@check("full.wendel", method="exact", control=True)
def test_knows_its_claim():
    assert current_claim() == ("full.wendel", True)

@check("full.wendel", method="exact")
@check("causal.scalar", method="symbolic")
def test_with_two_claims_names_one():
    assert current_claim("causal.scalar") == ("causal.scalar", False)
    try:
        current_claim()
    except ValueError as error:
        assert "name the claim" in str(error)
    else:
        raise AssertionError("current_claim() must refuse to choose among two claims")
'''


def test_records_and_the_running_claim_come_from_the_tests_registration(pytester):
    pytester.makepyfile(test_recording=RECORDING_SUITE)
    result = pytester.runpytest("-p", "reports.pytest_plugin", "--no-report")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_records_another_claim marks the claims ('full.wendel',), not 'causal.scalar'*"])
