"""What one test contributed to the report, and the records it stands for.

The rule (documented in the README, section "The report"):

* a test marks a claim (``@check(...)`` or ``@pytest.mark.claim(...)``) only when it checks that claim's
  statement; tests of helper machinery (two helper formulas agreeing, a parser, a plotter) mark no claim and
  contribute nothing to any claim. A test marking no claim contributes only records it hands over (one whose
  claim comes from its data: a stored witness names its conjecture); a marked test may hand over records of the
  claims it marks only;
* a passing test contributes the records it handed to ``record``; a passing claim-marked test that handed none
  contributes, for each claim it marks, a record with the marker's method whose detail names the test (its pass is
  the evidence: the test's assertions are the check): ``verified`` where that method can prove the claim,
  ``supported`` where it cannot (property tests of a theorem: generated instances; ``records.holding_verdict``);
* a failing test contributes a ``failed`` record for each claim it marks (a regression);
* a skipped test contributes ``not-run`` with the skip reason;
* a conjecture (``conj.*``) takes its verdict only from a search's record, never from a bare pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .records import CheckResult, holding_verdict
from .registry import CLAIMS_BY_ID


@dataclass
class TestEvidence:
    """What one test contributed: its outcome, records and Hypothesis statistics."""

    __test__ = False  # not a test class, despite the name

    nodeid: str
    claims: tuple[str, ...]
    method: str
    control: bool
    outcome: str = "passed"
    duration: float = 0.0
    message: str = ""
    examples: int | None = None
    records: list[CheckResult] = field(default_factory=list)


def records_of(ev: TestEvidence) -> list[CheckResult]:
    """The records a test stands for, given its outcome (the rule of the module docstring)."""
    kind = "negative control" if ev.control else "test"
    if ev.outcome == "failed":
        claims = ev.claims or tuple(dict.fromkeys(r.claim for r in ev.records))
        return [CheckResult(c, ev.method, "failed", detail=f"{kind} {ev.nodeid} failed:\n{ev.message}") for c in claims]
    if ev.outcome == "skipped":
        return [CheckResult(c, ev.method, "not-run", detail=f"{kind} {ev.nodeid} skipped: {ev.message}")
                for c in ev.claims]
    if ev.records:
        return list(ev.records)
    if any(CLAIMS_BY_ID[c].conjecture for c in ev.claims):
        return []  # a conjecture's verdict comes only from a search's record (supported / refuted)
    examples = f" ({ev.examples} Hypothesis examples)" if ev.examples is not None else ""
    what = "rejected the deliberately broken model" if ev.control else "passed"
    numbers = {"examples": ev.examples} if ev.examples is not None else {}
    return [CheckResult(c, ev.method, holding_verdict(c, ev.method), detail=f"{kind} {ev.nodeid} {what}{examples}", numbers=numbers)
            for c in ev.claims]
