"""The pytest plugin: a run of marked tests becomes verdicts.json and index.html."""

import json
import re

import pytest

from reports.pytest_plugin import FULL_ENV, FULL_TIMEOUT
from foundation.registry import CLAIMS

pytest_plugins = ["pytester"]

SUITE = '''
import pytest
from foundation.records import CheckResult, Figure

@pytest.mark.claim("full.wendel", method="exact")
def test_passes_without_records():
    assert 1 + 1 == 2

@pytest.mark.claim("causal.scalar", method="symbolic")
def test_regression():
    assert 1 + 1 == 3

@pytest.mark.claim("full.invariance", method="property", control=True)
def test_control_detects_broken_model():
    assert True

def test_records_a_discrepancy(record, tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    png = tmp_path / "fig.png"
    fig.savefig(png)
    record(CheckResult("model.layernorm", "symbolic", "discrepancy", printed="radius (n+1) gamma0^2",
                       corrected="radius sqrt(n+1) |gamma0|", numbers={"residual": 0.0},
                       figures=(Figure(str(png), "a line", "Fig. 1"),)))

def test_records_a_supported_conjecture(record):
    record(CheckResult("conj.gradient-equilibria", "search", "supported", detail="no counterexample in 10 instances"))

@pytest.mark.claim("conj.value-full", method="search", control=True)
def test_conjecture_control_without_record():
    assert True

@pytest.mark.full
@pytest.mark.claim("sim.fig4", method="figure")
def test_expensive():
    assert True
'''


@pytest.fixture
def report(pytester, monkeypatch):
    # `make report` sets CONSENSUS_FULL=1; the inner run must see the default (expensive checks skipped).
    monkeypatch.delenv(FULL_ENV, raising=False)
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "reports.pytest_plugin", "--report-dir", "out")
    data = json.loads((pytester.path / "out" / "verdicts.json").read_text())
    html = (pytester.path / "out" / "index.html").read_text()
    return result, {c["claim"]: c for c in data["claims"]}, html


def test_every_registry_claim_is_listed(report):
    _, claims, _ = report
    assert list(claims) == [c.id for c in CLAIMS]


def test_passing_marked_test_verifies_its_claim(report):
    _, claims, _ = report
    assert claims["full.wendel"]["verdict"] == "verified"
    assert claims["full.wendel"]["methods"] == ["exact"]


def test_failing_test_marks_its_claim_failed(report):
    result, claims, _ = report
    result.assert_outcomes(passed=5, failed=1, skipped=1)
    assert claims["causal.scalar"]["verdict"] == "failed"
    assert "assert" in claims["causal.scalar"]["records"][0]["detail"]


def test_recorded_discrepancy_keeps_printed_and_corrected_statements(report):
    _, claims, html = report
    entry = claims["model.layernorm"]
    assert entry["verdict"] == "discrepancy"
    assert entry["records"][0]["corrected"] == "radius sqrt(n+1) |gamma0|"
    assert "radius sqrt(n+1) |gamma0|" in html


def test_a_failed_test_that_marks_no_claim_is_named_on_the_first_screen(pytester, monkeypatch):
    """A helper test's failure belongs to no claim: the manifest and the first screen name it, with its last line.
    The control: in the suite above the only failure marks a claim, and no such list appears."""
    monkeypatch.delenv(FULL_ENV, raising=False)
    pytester.makepyfile(test_helper="def test_unrelated_failure():\n    assert 'spam' == 'eggs'\n")
    pytester.runpytest("-p", "reports.pytest_plugin", "--report-dir", "out").assert_outcomes(failed=1)
    manifest = json.loads((pytester.path / "out" / "verdicts.json").read_text())["manifest"]
    failed = manifest["failed_tests_without_claim"]
    assert [t["nodeid"] for t in failed] == ["test_helper.py::test_unrelated_failure"]
    html = (pytester.path / "out" / "index.html").read_text()
    assert "<code>test_helper.py::test_unrelated_failure</code>" in html and "pytest exited with status 1" in html


def test_a_failure_of_a_claim_is_not_listed_again_as_unclaimed(report):
    _, _, html = report
    assert "pytest exited with status 1" in html and "Failed tests that check no claim" not in html


def test_a_test_run_does_not_call_itself_full_scale(report):
    """A run without the expensive checks states no report scale; the control, a --full run, does."""
    _, _, html = report
    assert "a test run: the checks that ran used their tests' sizes" in html and "scale <code" not in html


def test_negative_control_is_listed_as_control(report):
    _, claims, _ = report
    assert claims["full.invariance"]["tests"][0]["control"] is True


def test_expensive_check_is_skipped_visibly_and_reported_not_run(report):
    result, claims, _ = report
    assert claims["sim.fig4"]["verdict"] == "not-run"
    assert "make report" in claims["sim.fig4"]["records"][0]["detail"]


def test_a_claim_whose_checks_did_not_run_is_not_run_naming_the_command(report):
    """emp.rate has checks (the registry names them), none of which this run selected: not-run, not "no check yet"
    (which says no check exists)."""
    _, claims, html = report
    assert claims["emp.rate"]["verdict"] == "not-run" and claims["emp.rate"]["records"] == []
    assert "<code>python -m pytest --claim emp.rate</code> runs its tests." in html


def test_a_claim_without_any_check_is_a_visible_gap(monkeypatch):
    """The control: a claim whose registry entry names no check and that no test recorded is "no check yet"."""
    import dataclasses

    from reports import build

    unchecked = [dataclasses.replace(c, checks=()) if c.id == "emp.rate" else c for c in CLAIMS]
    monkeypatch.setattr(build, "CLAIMS", unchecked)
    verdicts = {e["claim"].id: e["verdict"] for e in build.claim_entries([], covered={c.id: {} for c in CLAIMS})}
    assert verdicts["emp.rate"] == "no check yet" and verdicts["emp.full"] == "not-run"


def test_figures_are_embedded_not_linked(report):
    _, _, html = report
    assert 'src="data:image/png;base64,' in html
    assert "<script src=" not in html and "<link" not in html


def test_claim_option_selects_the_tests_of_one_claim(pytester):
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "reports.pytest_plugin", "--no-report", "--claim", "full.wendel")
    result.assert_outcomes(passed=1)


def test_claim_option_accepts_an_area_prefix(pytester):
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "reports.pytest_plugin", "--no-report", "--claim", "full.")
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize("wanted", ["full.wendell", "fulll."])
def test_an_unknown_claim_option_fails_listing_the_known_ids_and_touches_no_report(pytester, wanted):
    """A typo in --claim stopped with '1460 deselected' and overwrote the test report with 'no check yet' for every
    claim; now it is a usage error naming the known ids, and the report folder is left as it was. The control: the
    right id writes the report."""
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "reports.pytest_plugin", "--report-dir", "out", "--claim", wanted)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.re_match_lines([rf".*--claim '{re.escape(wanted)}' is not a claim id of the registry.*known ids: "
                                  r"model\.projection, .*full\.wendel, .*"])
    assert not (pytester.path / "out").exists()
    result = pytester.runpytest("-p", "reports.pytest_plugin", "--report-dir", "out", "--claim", "full.wendel")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "out" / "verdicts.json").exists()


def test_full_environment_variable_runs_the_expensive_checks(pytester, monkeypatch):
    monkeypatch.setenv(FULL_ENV, "1")
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "reports.pytest_plugin", "--no-report")
    result.assert_outcomes(passed=6, failed=1)


HANGING = '''
import time
import pytest

@pytest.mark.claim("full.wendel", method="exact")
def test_hangs():
    time.sleep(30)

@pytest.mark.claim("causal.scalar", method="symbolic")
def test_after_the_hang():
    assert True
'''


def test_a_hanging_test_fails_by_the_time_limit_and_the_run_goes_on(pytester, monkeypatch):
    monkeypatch.delenv(FULL_ENV, raising=False)
    pytester.makepyfile(test_suite=HANGING)
    result = pytester.runpytest("-p", "reports.pytest_plugin", "--report-dir", "out", "-o", "timeout=1",
                                "-o", "timeout_method=signal")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*Timeout (>1.0s)*"])
    claims = {c["claim"]: c for c in json.loads((pytester.path / "out" / "verdicts.json").read_text())["claims"]}
    assert (claims["full.wendel"]["verdict"], claims["causal.scalar"]["verdict"]) == ("failed", "verified")


def test_full_run_gives_every_test_the_longer_time_limit(pytester, monkeypatch):
    monkeypatch.setenv(FULL_ENV, "1")
    pytester.makepyfile(test_limits=f'''
import pytest

def test_default(request):
    assert request.node.get_closest_marker("timeout").args == ({FULL_TIMEOUT},)

@pytest.mark.timeout(7)
def test_own_limit_kept(request):
    assert request.node.get_closest_marker("timeout").args == (7,)
''')
    pytester.runpytest("-p", "reports.pytest_plugin", "--no-report").assert_outcomes(passed=2)


def test_conjectures_have_their_own_table(report):
    _, claims, html = report
    assert claims["conj.gradient-equilibria"]["verdict"] == "supported"
    # a passing test of a conjecture without a search record says nothing about it: its search did not run
    assert claims["conj.value-full"]["verdict"] == "not-run" and claims["conj.value-full"]["records"] == []
    theorems, conjectures = html.split('<table id="conjectures">')
    assert 'data-claim="conj.gradient-equilibria"' in conjectures.split("</table>")[0]
    assert 'data-claim="conj.' not in theorems.split('<table id="claims">')[1]
    assert 'data-claim="full.wendel"' in theorems


SECTIONS = '''

SEEN = []


@pytest.fixture(autouse=True)
def seen(request):
    SEEN.append(request.node.name)


@pytest.fixture(scope="session", autouse=True)
def summary(report_section):
    """Like the property suite's summary: made in each process, of the tests that process ran."""
    from foundation.records import ReportSection, Table
    yield
    report_section(ReportSection("Summary", tables=(Table("seen", ("test",), tuple(sorted((n,) for n in SEEN))),)))


def test_adds_a_section(report_section):
    from foundation.records import ReportSection, Table
    report_section(ReportSection("A test's section", text="sent with the test's report",
                                 tables=(Table("t", ("a", "b"), ((1, 2.5),)),)))
'''


def _verdicts(pytester, *options):
    out = f"out{len(options)}"
    pytester.runpytest("-p", "reports.pytest_plugin", "--report-dir", out, *options)
    # a worker's temporary folders are its own (basetemp/popen-gw0/...); the records are otherwise the same
    data = json.loads(re.sub(r"popen-gw\d+/", "", (pytester.path / out / "verdicts.json").read_text()))
    return data["claims"], data["gaps"], data["sections"], data["manifest"]["tests"]


def test_parallel_workers_hand_every_record_to_the_report(pytester, monkeypatch):
    """Under pytest-xdist (`-n 2`) the tests run in two worker processes and the controller writes the report: the
    same claims, records, tests (in the collection's order), gaps and sections as a run in one process."""
    monkeypatch.delenv(FULL_ENV, raising=False)
    pytester.makepyfile(test_suite=SUITE + SECTIONS)
    alone = _verdicts(pytester)
    parallel = _verdicts(pytester, "-n", "2")
    assert alone[3] == 8 and [s["title"] for s in alone[2]] == ["A test's section", "Summary"]
    assert len(alone[2][1]["tables"][0]["rows"]) == 7  # every test that ran (the expensive one is skipped)
    assert parallel == alone
    claims = {c["claim"]: c for c in parallel[0]}
    assert claims["model.layernorm"]["records"][0]["corrected"] == "radius sqrt(n+1) |gamma0|"
    assert claims["conj.gradient-equilibria"]["verdict"] == "supported"


def test_inline_runs_are_cleared_of_every_variable_a_report_build_sets():
    """tests/conftest.py clears these for every pytester test; a variable the build adds must join them."""
    from foundation.memory import MEMORY_LEDGER_ENV
    from foundation.scale import REPORT_SCALE_ENV
    from reports.build import EXTRA_SECTIONS_DIR_ENV, MEMORY_BOUND_ENV
    from reports.checkout import BUILD_FOLDER_ENV
    from pathlib import Path

    from tests.conftest import REPORT_BUILD_ENVIRONMENT

    assert set(REPORT_BUILD_ENVIRONMENT) == {EXTRA_SECTIONS_DIR_ENV, FULL_ENV, BUILD_FOLDER_ENV, MEMORY_LEDGER_ENV,
                                             MEMORY_BOUND_ENV, REPORT_SCALE_ENV}
    source = (Path(__file__).resolve().parents[2] / "reports" / "__main__.py").read_text()
    build_environment = source[source.index("env = {**os.environ"):source.index("env.setdefault(")]
    assert all(name in build_environment for name in ("EXTRA_SECTIONS_DIR_ENV", "FULL_ENV", "BUILD_FOLDER_ENV",
                                                      "MEMORY_LEDGER_ENV", "MEMORY_BOUND_ENV", "REPORT_SCALE_ENV"))
