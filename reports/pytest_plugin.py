"""The pytest plugin that turns a test run into the verification report.

Tests declare the claim they check with ``@pytest.mark.claim("full.invariance", method="property")``
and may hand result records to the ``record`` fixture. At the end of every run the plugin writes
``index.html`` and ``verdicts.json`` into ``--report-dir`` (default ``build/report``).

How a test becomes evidence:

* a passing test contributes the records it handed over; one that handed none contributes a
  ``verified`` record for each claim it is marked with;
* a failing test contributes a ``failed`` record for each claim it is marked with (a regression);
* a skipped test contributes ``not-run`` with the skip reason;
* ``control=True`` marks a negative control: a test showing the check rejects a deliberately broken
  model. It is listed with the claim's evidence; a failing control makes the claim ``failed``.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .records import CheckResult, ReportSection

FULL_ENV = "CONSENSUS_FULL"
#: The per-test time limit (seconds) under ``--full`` (``make report``) in place of the ``timeout`` of pyproject.toml:
#: a full check may run the empirical experiments from an empty build/runs (about 8 minutes in all, measured on a
#: quiet machine) and the thorough Hypothesis profile runs up to 7.5 times the examples of `make test`
#: (tests/conftest.py and tests/properties/control.py; the slowest test, 161 s at a load average of 13 on the 2 shared
#: cores, would take about 20 minutes); an hour leaves a margin of 3 on both.
FULL_TIMEOUT = 3600


@dataclass
class TestEvidence:
    """What one test contributed: its outcome, records and Hypothesis statistics."""

    nodeid: str
    claims: tuple[str, ...]
    method: str
    control: bool
    outcome: str = "passed"
    duration: float = 0.0
    message: str = ""
    examples: int | None = None
    records: list[CheckResult] = field(default_factory=list)


class ReportCollector:
    """Collects evidence during a run and writes the report at the end."""

    def __init__(self, config: pytest.Config, out: Path | None) -> None:
        self.config, self.out = config, out
        self.evidence: dict[str, TestEvidence] = {}
        self.sections: list[ReportSection] = []
        self.started = time.time()

    # -- collection helpers --------------------------------------------------------------------
    def evidence_for(self, item: pytest.Item) -> TestEvidence:
        if item.nodeid not in self.evidence:
            markers = list(item.iter_markers("claim"))
            claims = tuple(dict.fromkeys(_claim_id(m, item) for m in markers))
            method = next((m.kwargs.get("method") for m in markers if m.kwargs.get("method")), "property")
            control = any(m.kwargs.get("control", False) for m in markers)
            self.evidence[item.nodeid] = TestEvidence(item.nodeid, claims, method, control)
        return self.evidence[item.nodeid]

    # -- hooks -----------------------------------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        outcome = yield
        report = outcome.get_result()
        evidence = self.evidence_for(item)
        if report.when == "call" or (report.when == "setup" and not report.passed):
            evidence.duration += report.duration
            if report.failed:
                evidence.outcome = "failed"
                evidence.message = _short(report.longreprtext)
            elif report.skipped:
                evidence.outcome = "skipped"
                evidence.message = _skip_reason(report)
        if report.when == "teardown":
            if report.failed and evidence.outcome == "passed":
                evidence.outcome = "failed"
                evidence.message = _short(report.longreprtext)
            stats = getattr(item, "hypothesis_statistics", None)
            if stats:
                evidence.examples = sum(int(n) for n in re.findall(r"(\d+) passing", stats))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.out is None:
            return
        from .build import write_report

        path = write_report(
            self.out,
            evidence=list(self.evidence.values()),
            sections=self.sections,
            started=self.started,
            exitstatus=int(exitstatus),
            full=_full_enabled(self.config),
        )
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.write_sep("-", f"verification report: {path}")


def _claim_id(marker: pytest.Mark, item: pytest.Item) -> str:
    from .registry import get_claim

    if len(marker.args) != 1:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.claim takes exactly one claim id, got {marker.args!r}.")
    return get_claim(marker.args[0]).id


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
    group.addoption("--report-dir", default="build/report",
                    help="where index.html and verdicts.json are written (default: build/report)")
    group.addoption("--no-report", action="store_true", help="do not write the verification report")
    group.addoption("--claim", action="append", default=[], metavar="ID",
                    help="run only the tests that check this registry claim (repeatable; a prefix like 'causal.' works)")
    group.addoption("--full", action="store_true",
                    help=f"also run the expensive checks marked 'full' (what `make report` runs; or set {FULL_ENV}=1)")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(ReportCollector(config, _report_folder(config)), "consensus-report-collector")


def _report_folder(config: pytest.Config) -> Path | None:
    """``--report-dir`` (relative to the root), created and checked writable before any test runs; None with
    ``--no-report``."""
    from .build import ReportInputError, output_folder

    if config.getoption("no_report"):
        return None
    out = Path(config.getoption("report_dir"))
    try:
        return output_folder(out if out.is_absolute() else Path(config.rootpath) / out, "--report-dir")
    except ReportInputError as error:
        raise pytest.UsageError(str(error)) from error


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = config.getoption("claim")
    if wanted:
        selected, deselected = [], []
        for item in items:
            ids = [m.args[0] for m in item.iter_markers("claim") if m.args]
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


@pytest.fixture
def record(request: pytest.FixtureRequest):
    """Hand result records to the report: ``record(result)`` returns ``result`` unchanged."""
    evidence = _collector(request.config).evidence_for(request.node)

    def _record(result: CheckResult) -> CheckResult:
        if not isinstance(result, CheckResult):
            raise TypeError(f"record() takes a CheckResult, got {type(result).__name__}.")
        evidence.records.append(result)
        return result

    return _record


@pytest.fixture(scope="session")
def report_section(request: pytest.FixtureRequest):
    """Add a free-standing section to the report: ``report_section(ReportSection(...))``."""
    collector = _collector(request.config)

    def _add(section: ReportSection) -> ReportSection:
        collector.sections.append(section)
        return section

    return _add
