"""The pytest plugin that turns a test run into the verification report.

Tests declare the claim they check with ``@check("full.invariance", method="property")`` (``foundation.registration``; the
marker ``@pytest.mark.claim(...)`` of the same arguments is read too) and may hand result records to the ``record``
fixture. The claims are validated when the tests are collected: an id outside the registry stops the run, naming
the test and the id. At the end of every run the plugin writes ``index.html`` and ``verdicts.json`` into
``--report-dir`` (default ``build/test-report``: never ``build/report``, which ``make report`` fills), with each claim's declared evidence kinds that no collected or
registered check covers listed as gaps. What a test stands for (passed, failed, skipped, with or without
records) is the rule of ``foundation.evidence``; ``control=True`` marks a negative control: a test showing the check
rejects a deliberately broken model.
"""

from __future__ import annotations

import os
import re
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import pytest

from .build import write_report
from foundation.registration import COVERED, Check, coverage, registrations
from foundation.registration import REGISTERED as REGISTERED_CHECKS
from .checkout import BUILD_FOLDER_ENV, FULL_ENV
from foundation.evidence import TestEvidence
from foundation.memory import TEST_PROCESS, own_peak_bytes, record_stage
from foundation.outputs import OutputError, check_output_folder, claim_output_folder, output_lock
from foundation.records import CheckResult, ReportSection
from foundation.registry import EVIDENCE_KINDS, get_claim

#: Where a test run writes the report of what it ran: its own folder, apart from the full report's.
TEST_REPORT_DIR = "build/test-report"
#: The per-test time limit (seconds) under ``--full`` (``make report``) in place of the ``timeout`` of pyproject.toml:
#: a full check may run the empirical experiments from an empty build/runs (about 8 minutes in all, measured on a
#: quiet machine) and the thorough Hypothesis profile runs up to 7.5 times the examples of `make test`
#: (tests/conftest.py and tests/properties/control.py; the slowest test, 161 s at a load average of 13 on the 2 shared
#: cores, would take about 20 minutes); an hour leaves a margin of 3 on both.
FULL_TIMEOUT = 3600


#: The attribute of a test report carrying what the test handed to the report (its claims, records, Hypothesis
#: examples, sections) as JSON data: pytest serialises a report's extra attributes, so under pytest-xdist
#: (``-n``) the data travels from the worker that ran the test to the controller, which writes the report.
EVIDENCE_ATTRIBUTE = "consensus_evidence"
#: The key of a worker's output (pytest-xdist) holding the evidence kinds its collected tests cover.
COVERAGE_OUTPUT = "consensus_coverage"


class ReportCollector:
    """Collects evidence during a run and writes the report at the end.

    Two roles, in one process without pytest-xdist: where a test runs, ``running`` gathers what it hands over (the
    ``record`` and ``report_section`` fixtures) and its report carries that as JSON data; where the report is
    written (the controller under ``-n``), ``evidence`` and ``sections`` are rebuilt from those reports, so one
    rule serves both runs."""

    def __init__(self, config: pytest.Config, out: Path | None) -> None:
        self.config, self.out = config, out
        self.worker = hasattr(config, "workerinput")  # a pytest-xdist worker: it runs tests, never writes
        self.running: dict[str, TestEvidence] = {}  # nodeid -> what a test run here handed over
        self.new_sections: list[ReportSection] = []  # added by tests run here, not yet sent with a report
        self.evidence: dict[str, TestEvidence] = {}  # nodeid -> the test's evidence, from its reports
        self.sections: list[ReportSection] = []
        self.checks: dict[str, tuple[Check, ...]] = {}  # nodeid -> the test's claims, validated at collection
        self.worker_coverage: list[dict[str, dict[str, str]]] = []  # each finished worker's covered kinds
        self.order: dict[str, int] = {}  # nodeid -> position in the collection (the report lists tests in it)
        self.started = time.time()
        self.current: TestEvidence | None = None  # the test running now

    # -- collection helpers --------------------------------------------------------------------
    def running_for(self, item: pytest.Item) -> TestEvidence:
        if item.nodeid not in self.running:
            checks = self.checks.get(item.nodeid) or item_checks(item)
            claims = tuple(dict.fromkeys(c.claim for c in checks))
            method = next((c.method for c in checks), "property")
            control = any(c.control for c in checks)
            self.running[item.nodeid] = TestEvidence(item.nodeid, claims, method, control)
        return self.running[item.nodeid]

    # -- hooks where the test runs ---------------------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        outcome = yield
        report = outcome.get_result()
        running = self.running_for(item)
        data = {"claims": list(running.claims), "method": running.method, "control": running.control,
                "sections": [section.to_json() for section in self.new_sections], "message": _message(report)}
        self.new_sections.clear()
        if report.when == "teardown":
            stats = getattr(item, "hypothesis_statistics", None)
            if stats:
                running.examples = sum(int(n) for n in re.findall(r"(\d+) passing", stats))
            data.update(records=[result.to_json() for result in running.records], examples=running.examples)
            del self.running[item.nodeid]
        setattr(report, EVIDENCE_ATTRIBUTE, data)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        self.current = self.running_for(item)
        try:
            yield
        finally:
            self.current = None

    # -- hooks where the report is written ---------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.worker:
            return
        data = getattr(report, EVIDENCE_ATTRIBUTE, None) or {}
        evidence = self.evidence.get(report.nodeid)
        if evidence is None:  # a worker that crashed sends a report without data
            evidence = self.evidence[report.nodeid] = TestEvidence(
                report.nodeid, tuple(data.get("claims", ())), data.get("method", "property"), data.get("control", False))
        self.sections.extend(ReportSection.from_json(section) for section in data.get("sections", ()))
        if report.when == "call" or (report.when == "setup" and not report.passed):
            evidence.duration += report.duration
            if report.failed or report.skipped:
                evidence.outcome = "failed" if report.failed else "skipped"
                evidence.message = data.get("message", _message(report))
        if report.when == "teardown":
            if report.failed and evidence.outcome == "passed":
                evidence.outcome = "failed"
                evidence.message = data.get("message", _message(report))
            evidence.records = [CheckResult.from_json(result) for result in data.get("records", ())]
            evidence.examples = data.get("examples")

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids: list[str]) -> None:
        self.order = self.order or {nodeid: position for position, nodeid in enumerate(ids)}

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        covered = getattr(node, "workeroutput", {}).get(COVERAGE_OUTPUT)
        if covered is not None:
            self.worker_coverage.append(covered)

    def covered(self) -> dict[str, dict[str, str]]:
        """The evidence kinds with a check, per claim: of the checks registered in this process and collected
        here, and under ``-n`` also of every worker's (the controller imports no test module)."""
        collected = [c for checks in self.checks.values() for c in checks]
        covered = coverage([*REGISTERED_CHECKS, *collected])
        for other in self.worker_coverage:
            for claim, kinds in covered.items():
                for kind in kinds:
                    if other.get(claim, {}).get(kind) == COVERED:
                        kinds[kind] = COVERED
        return covered

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.worker:
            self.config.workeroutput[COVERAGE_OUTPUT] = self.covered()
            return
        if self.out is None:
            return
        record_stage("pytest (the test process)", own_peak_bytes(), TEST_PROCESS, time.time() - self.started)
        evidence = sorted(self.evidence.values(), key=lambda ev: self.order.get(ev.nodeid, len(self.order)))
        path = write_report(
            self.out,
            evidence=evidence,
            sections=joined_sections(self.sections),
            started=self.started,
            exitstatus=int(exitstatus),
            full=_full_enabled(self.config),
            covered=self.covered(),
        )
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.write_sep("-", f"verification report: {path}")


def joined_sections(sections: list[ReportSection]) -> list[ReportSection]:
    """``sections`` with those of one title joined into the first: under ``-n`` each worker's session fixture makes
    its own part of a summary (the property suite's table of what each property saw, of the tests it ran); the
    parts' tables become tables of all their rows, sorted (as the summary sorts its rows). A section whose parts
    differ in text, order or table titles is kept apart."""
    joined: dict[str, ReportSection] = {}
    apart = []
    for section in sections:
        first = joined.setdefault(section.title, section)
        if first is section:
            continue
        if (first.text, first.order, [t.title for t in first.tables]) != \
                (section.text, section.order, [t.title for t in section.tables]):
            apart.append(section)
            continue
        tables = tuple(replace(table, rows=tuple(sorted((*table.rows, *other.rows))))
                       for table, other in zip(first.tables, section.tables))
        joined[section.title] = replace(first, tables=tables, figures=(*first.figures, *section.figures))
    return [*joined.values(), *apart]


def item_checks(item: pytest.Item) -> tuple[Check, ...]:
    """The claims a test checks: its ``@check`` registrations and ``claim`` markers, validated (a
    ``pytest.UsageError`` names the test and the id outside the registry, or the method that is no evidence kind)."""
    found = list(registrations(getattr(item, "function", None)))
    for marker in item.iter_markers("claim"):
        if len(marker.args) != 1 or not isinstance(marker.args[0], str):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.claim takes exactly one claim id, got "
                                    f"{marker.args!r}.")
        method = marker.kwargs.get("method", "property")
        try:
            get_claim(marker.args[0])
        except KeyError as error:
            raise pytest.UsageError(f"{item.nodeid}: {error.args[0]}") from None
        if method not in EVIDENCE_KINDS:
            raise pytest.UsageError(f"{item.nodeid}: claim marker method={method!r} must be one of {EVIDENCE_KINDS}.")
        found.append(Check(marker.args[0], method, bool(marker.kwargs.get("control", False)), item.nodeid))
    return tuple(found)


def _message(report: pytest.TestReport) -> str:
    """What a failed or skipped report says, as the report shows it; empty for a pass. Read where the test ran (a
    report the controller of ``-n`` holds begins with a line naming the worker)."""
    if report.failed:
        return _short(report.longreprtext)
    return _skip_reason(report) if report.skipped else ""


def _short(text: str, limit: int = 1500) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _full_enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("full")) or os.environ.get(FULL_ENV, "") not in ("", "0")


# -- plugin registration -------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("consensus verification report")
    group.addoption("--report-dir", default=TEST_REPORT_DIR,
                    help=f"where index.html and verdicts.json are written (default: {TEST_REPORT_DIR}; `make report` "
                         "writes build/report)")
    group.addoption("--no-report", action="store_true", help="do not write the verification report")
    group.addoption("--claim", action="append", default=[], metavar="ID",
                    help="run only the tests that check this registry claim (repeatable; a prefix like 'causal.' works)")
    group.addoption("--full", action="store_true",
                    help=f"also run the expensive checks marked 'full' (what `make report` runs; or set {FULL_ENV}=1)")


#: Where a session keeps the lock of its report folder (``foundation.outputs.output_lock``), held from its configuration
#: to its end.
REPORT_LOCK = pytest.StashKey[ExitStack]()

#: The collectors of the running sessions, innermost last (``current_claim`` reads the last; a test that runs
#: pytest in-process nests a session).
_COLLECTORS: list[ReportCollector] = []


def pytest_configure(config: pytest.Config) -> None:
    _check_claim_option(config)  # before the report folder is claimed: a typo touches no report
    config.stash[REPORT_LOCK] = lock = ExitStack()
    collector = ReportCollector(config, _report_folder(config, lock))
    config.pluginmanager.register(collector, "consensus-report-collector")
    _COLLECTORS.append(collector)


def pytest_unconfigure(config: pytest.Config) -> None:
    collector = _collector(config)
    if collector in _COLLECTORS:
        _COLLECTORS.remove(collector)
    lock = config.stash.get(REPORT_LOCK, None)
    if lock is not None:
        lock.close()  # the report is written: the folder is free again


def _check_claim_option(config: pytest.Config) -> None:
    """Every ``--claim`` must be a registry id or an area prefix ending in '.' that some id starts with; else a usage
    error listing the known ids (pytest then stops before it collects, runs or writes anything)."""
    from foundation.registry import CLAIMS_BY_ID

    for wanted in config.getoption("claim") or ():
        known = wanted in CLAIMS_BY_ID or (wanted.endswith(".") and any(c.startswith(wanted) for c in CLAIMS_BY_ID))
        if not known:
            raise pytest.UsageError(f"--claim {wanted!r} is not a claim id of the registry (foundation/registry.py) nor an "
                                    f"area prefix ending in '.'; known ids: {', '.join(CLAIMS_BY_ID)}")


def _report_folder(config: pytest.Config, lock: ExitStack) -> Path | None:
    """``--report-dir`` (relative to the root), locked into ``lock`` (a second test run writing the same folder is
    refused at once), checked by ``foundation.outputs`` and claimed before any test runs (a folder of another command,
    such as the full report of ``make report``, is refused); None with ``--no-report``."""
    if config.getoption("no_report") or hasattr(config, "workerinput"):
        return None  # a pytest-xdist worker: the controller writes the report
    out = Path(config.getoption("report_dir"))
    out = out if out.is_absolute() else Path(config.rootpath) / out
    if os.environ.get(BUILD_FOLDER_ENV) == str(out.absolute()):
        return out  # the report build checked, claimed and locked it
    try:
        lock.enter_context(output_lock(out, command="pytest", option="--report-dir"))
        return claim_output_folder(check_output_folder(out, command="pytest", settings={}, option="--report-dir"))
    except OutputError as error:
        lock.close()  # a folder refused: nothing of this run's stays held
        raise pytest.UsageError(str(error)) from error


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    collector = _collector(config)
    for item in items:
        collector.checks[item.nodeid] = item_checks(item)
    wanted = config.getoption("claim")
    if wanted:
        selected, deselected = [], []
        for item in items:
            ids = [c.claim for c in collector.checks[item.nodeid]]
            matches = any(claim_id == w or (w.endswith(".") and claim_id.startswith(w)) for claim_id in ids for w in wanted)
            (selected if matches else deselected).append(item)
        if deselected:
            config.hook.pytest_deselected(items=deselected)
        items[:] = selected
    if _full_enabled(config):
        for item in items:
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(FULL_TIMEOUT))
        return
    skip = pytest.mark.skip(reason="expensive check: run by `make report` (or pytest --full)")
    for item in items:
        if item.get_closest_marker("full"):
            item.add_marker(skip)


def _collector(config: pytest.Config) -> ReportCollector:
    return config.pluginmanager.get_plugin("consensus-report-collector")


def current_claim(among: str | None = None) -> tuple[str, bool]:
    """The claim of the running test and whether the test is a negative control: its single claim, or
    ``among`` when the test marks several (``among`` must be one of them). For helpers that build records
    or summaries during a test, so the test's id is written once, on the test."""
    evidence = _COLLECTORS[-1].current if _COLLECTORS else None
    if evidence is None:
        raise RuntimeError("current_claim() is called outside a running test (the report plugin is not active).")
    if among is not None:
        if among not in evidence.claims:
            raise ValueError(f"claim {among!r} is not among the claims of {evidence.nodeid}: {evidence.claims}.")
        return among, evidence.control
    if len(evidence.claims) != 1:
        raise ValueError(f"{evidence.nodeid} marks {len(evidence.claims)} claims {evidence.claims}; name the claim "
                         "(among=...).")
    return evidence.claims[0], evidence.control


@pytest.fixture
def record(request: pytest.FixtureRequest):
    """Hand result records to the report: ``record(result)`` returns ``result`` unchanged. A test that marks
    claims may hand over records of those claims only."""
    evidence = _collector(request.config).running_for(request.node)

    def _record(result: CheckResult) -> CheckResult:
        if not isinstance(result, CheckResult):
            raise TypeError(f"record() takes a CheckResult, got {type(result).__name__}.")
        if evidence.claims and result.claim not in evidence.claims:
            raise ValueError(f"record(): {evidence.nodeid} marks the claims {evidence.claims}, not {result.claim!r} "
                             "(the record's claim).")
        evidence.records.append(result)
        return result

    return _record


@pytest.fixture(scope="session")
def report_section(request: pytest.FixtureRequest):
    """Add a free-standing section to the report: ``report_section(ReportSection(...))``."""
    collector = _collector(request.config)

    def _add(section: ReportSection) -> ReportSection:
        collector.new_sections.append(section)  # sent with the running test's next report
        return section

    return _add
