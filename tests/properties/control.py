"""Shared helpers of the property tests: per-test example budgets and the existence search of a control."""

from __future__ import annotations

from hypothesis import Phase, find, settings

from reports.pytest_plugin import current_claim
from foundation.records import CheckResult


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
        claim, "property", "verified",
        detail=(f"negative control: the property failed, as it must, on {broken}; violating instance (found after "
                f"{tries} generated instance(s) of the property's own strategy): {instance!r}. {counterpart}"),
        numbers={"tries": tries, **{k: v for k, v in outcome.numbers.items() if not isinstance(v, tuple)}})
