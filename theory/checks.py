"""The symbolic and numeric checks of theory by claim id: what ``python -m theory check`` runs.

The checks are the functions of the theory modules registered with ``@check(claim, method=...)``
(``foundation.checks``); each returns one :class:`foundation.records.CheckResult` or a list of them. The default
arguments are the paper's model; the tests under ``tests/theory`` call the same functions, and their negative
controls call them with a deliberately broken model.
"""

from __future__ import annotations

from typing import Callable, Iterable

from foundation.checks import REGISTERED
from foundation.records import CheckResult
from foundation.registry import CLAIMS, get_claim

from . import causal, conjectures, full_attention, gradient, layernorm, model, wendel

MODULES = (causal, conjectures, full_attention, gradient, layernorm, model, wendel)


def _theory_checks() -> dict[str, tuple[Callable[[], CheckResult | list[CheckResult]], ...]]:
    """Claim id -> the registered check functions of the theory modules, in registry order, each module's in
    source order."""
    names = {module.__name__ for module in MODULES}
    by_claim: dict[str, list[Callable]] = {}
    for registered in REGISTERED:
        if registered.name.split(":")[0] in names:
            by_claim.setdefault(registered.claim, []).append(registered.function)
    return {c.id: tuple(by_claim[c.id]) for c in CLAIMS if c.id in by_claim}


CHECKS = _theory_checks()


def run_checks(claims: Iterable[str] | None = None) -> list[CheckResult]:
    """Run the checks of ``claims`` (all when None), in registry order, each function once, keeping the records
    of the selected claims; unknown ids raise KeyError."""
    selected = list(CHECKS) if not claims else list(dict.fromkeys(claims))
    for claim in selected:
        get_claim(claim)  # a clear error for an id outside the registry
        if claim not in CHECKS:
            raise KeyError(f"claim {claim!r} has no symbolic check in theory; claims with one: {', '.join(CHECKS)}")
    functions = dict.fromkeys(function for claim in selected for function in CHECKS[claim])
    results: list[CheckResult] = []
    for function in functions:
        outcome = function()
        results.extend(r for r in (outcome if isinstance(outcome, (list, tuple)) else [outcome]) if r.claim in selected)
    return results
