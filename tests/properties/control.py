"""Shared helpers of the property tests: per-test example budgets, the existence search of a control, and the
two kinds of row of a file's table of properties and controls (:class:`EveryInstance`, :class:`FirstViolation`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import pytest
from hypothesis import Phase, example, find, given, settings
from hypothesis.statistics import collector, describe_statistics
from hypothesis.strategies import SearchStrategy

from foundation.records import CheckResult, holding_verdict
from foundation.registration import registrations
from reports.pytest_plugin import current_claim


def budget(fraction: float, minimum: int = 3, cap: int = 100) -> settings:
    """The loaded profile's settings with ``fraction`` of its max_examples (at least ``minimum``, at most ``cap``).

    The profiles (tests/conftest.py: dev, ci, thorough) set the scale; an expensive property takes a
    fraction of it so the whole suite keeps its time budget under every profile (each example integrates
    an ODE, ~0.1-1 s; the cap keeps the thorough profile's run of this folder near 15 min of CPU).
    """
    examples = max(minimum, min(cap, int(settings.default.max_examples * fraction)))
    return settings(settings.default, max_examples=examples)


def find_violation(strategy, violated, *, max_examples: int = 25):
    """The first generated instance on which ``violated(instance)`` is true, and how many were tried.

    A negative control whose broken model need not fail on *every* instance uses this: the property must
    be seen to fail on some instance of the property's own strategy. Derandomised and without shrinking
    (each try integrates an ODE), so it is reproducible and cheap; raises hypothesis' NoSuchExample when
    no violation is found among ``max_examples`` tries.
    """
    tried = []

    def condition(instance) -> bool:
        tried.append(instance)
        return violated(instance)

    found = find(strategy, condition, settings=settings(max_examples=max_examples, phases=[Phase.generate],
                                                        derandomize=True, database=None, deadline=None))
    return found, len(tried)


# --- a summary of what every property saw, for the report ---------------------------------------
#: (claim, property, control) -> list of (holds, numbers), filled by ``observe`` during the run.
OBSERVED: dict[tuple[str, str, bool], list[tuple[bool, dict]]] = {}


def observe(name: str, outcome, *, claim: str | None = None):
    """Keep ``outcome`` (a checks.Outcome) for the report's summary table; return it unchanged. The claim and
    whether this is a negative control are the running test's (its ``@check``); ``claim`` picks one of its claims
    when it checks several."""
    claim, control = current_claim(claim)
    OBSERVED.setdefault((claim, name, control), []).append((bool(outcome.holds), dict(outcome.numbers)))
    return outcome


def _extremes(runs: list[tuple[bool, dict]]) -> str:
    keys = [k for k, v in runs[0][1].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    parts = []
    for key in keys:
        values = [n[key] for _, n in runs if isinstance(n.get(key), (int, float))]
        parts.append(f"{key} {min(values):.3g} .. {max(values):.3g}" if len(values) > 1 else f"{key} {values[0]:.3g}")
    return "; ".join(parts)


def summary_rows() -> tuple[tuple, ...]:
    """One row per observed property: claim, property, kind, instances run, held, ranges of its numbers."""
    rows = []
    for (claim, name, control), runs in sorted(OBSERVED.items()):
        rows.append((claim, name, "negative control" if control else "property", len(runs),
                     sum(h for h, _ in runs), _extremes(runs)))
    return tuple(rows)


def control_record(broken: str, instance, tries: int, outcome,
                   counterpart: str = "The same instance passes with the model as printed."):
    """The report's record of a search control of the running test's claim: which broken model or instance, found
    after how many tries."""
    claim, _ = current_claim()
    return CheckResult(
        claim, "property", holding_verdict(claim, "property"),
        detail=(f"negative control: the property failed, as it must, on {broken}; violating instance (found after "
                f"{tries} generated instance(s) of the property's own strategy): {instance!r}. {counterpart}"),
        numbers={"tries": tries, **{k: v for k, v in outcome.numbers.items() if not isinstance(v, tuple)}})


# --- the rows of a file's table ------------------------------------------------------------------
@dataclass(frozen=True)
class EveryInstance:
    """A property run by Hypothesis on every instance of ``strategy``: ``check(instance, **keywords)`` must hold,
    or, a negative control (``holds=False``: a broken model in ``keywords``, or instances outside the hypotheses),
    fail on each. ``name`` is its row in the report's summary (:func:`observe`); ``budget`` its Hypothesis
    settings (:func:`budget`; None: the loaded profile's); ``examples`` instances always tried first (regressions)."""

    name: str
    check: Callable
    strategy: SearchStrategy
    budget: settings | None = None
    keywords: Mapping[str, Any] = field(default_factory=dict)
    holds: bool = True
    examples: tuple = ()

    @property
    def control(self) -> bool:
        return not self.holds

    def run(self, item: pytest.Item, record: Callable) -> None:
        """Run the row as the test ``item`` (``record``: the report's fixture, unused: the report counts the
        examples)."""

        def one_instance(instance):
            outcome = observe(self.name, self.check(instance, **self.keywords))
            assert bool(outcome.holds) is self.holds, outcome.numbers

        test = given(self.strategy)(one_instance)
        for instance in self.examples:
            test = example(instance)(test)
        if self.budget is not None:
            test = self.budget(test)
        with collector.with_value(lambda statistics: noted(item, statistics)):
            with_row_digest(test, item.nodeid)()


# A row's Hypothesis test runs inside the table's test, which is no ``@given`` test itself; Hypothesis' pytest plugin
# does two things for each case of a parametrised ``@given`` test that are done here for each row, the same way:
def with_row_digest(test, node_id: str):
    """The Hypothesis test ``test`` (``@given``) with ``node_id`` added to its digest: its own seed (the ci profile
    derandomises by the digest) and database key, though every row runs the same inner function (Hypothesis has
    no public name for it)."""
    test.hypothesis.inner_test._hypothesis_internal_add_digest = node_id.encode()
    return test


def noted(item, statistics) -> None:
    """Keep a row's Hypothesis statistics on its pytest ``item``, where the report reads how many examples passed
    (``reports.pytest_plugin``) and ``--hypothesis-show-statistics`` prints them."""
    item.hypothesis_statistics = describe_statistics({**statistics, "nodeid": item.nodeid})


@dataclass(frozen=True)
class FirstViolation:
    """A negative control whose broken model need not fail on *every* instance: the first instance of ``strategy``
    (:func:`find_violation`, at most ``max_examples`` tried) on which ``check(instance, **broken)`` fails (or
    ``violated(instance)``, when given, is true), which must fail there and pass with ``printed`` instead of
    ``broken``; recorded for the report (:func:`control_record`: ``described`` names the broken model,
    ``counterpart`` what passes)."""

    name: str
    check: Callable
    strategy: SearchStrategy
    broken: Mapping[str, Any]
    described: str
    printed: Mapping[str, Any] = field(default_factory=dict)
    violated: Callable[[Any], bool] | None = None
    max_examples: int = 25
    counterpart: str = "The same instance passes with the model as printed."

    control = True

    def run(self, item: pytest.Item, record: Callable) -> None:
        """Run the row as the test ``item`` and hand its record to ``record`` (the report's fixture)."""
        violated = self.violated or (lambda instance: not self.check(instance, **self.broken).holds)
        instance, tries = find_violation(self.strategy, violated, max_examples=self.max_examples)
        outcome = observe(self.name, self.check(instance, **self.broken))
        assert not outcome.holds, outcome.numbers
        assert self.check(instance, **self.printed).holds, self.counterpart
        record(control_record(self.described, instance, tries, outcome, counterpart=self.counterpart))


def row(case_id: str, case: EveryInstance | FirstViolation):
    """``case`` as a row of a file's table: ``pytest.param`` with its id and the claim of its check (the check's own
    registration, ``foundation.registration``; a control marked as one)."""
    (registered,) = registrations(case.check)
    return pytest.param(case, id=case_id,
                        marks=pytest.mark.claim(registered.claim, method=registered.method, control=case.control))
