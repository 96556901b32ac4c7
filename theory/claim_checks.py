"""The symbolic and numeric checks of theory by claim id: what ``python -m theory check`` runs.

The checks are the functions of the theory modules that the registry names for each claim (``Claim.checks``;
each carries ``@named_check``, which registers it for those claims, ``foundation.registration``); each returns one
:class:`foundation.records.CheckResult` or a list of them. The default arguments are the paper's model; the tests
under ``tests/theory`` call the same functions, and their negative controls call them with a deliberately broken
model.
"""

from __future__ import annotations

import importlib
from typing import Callable, Iterable

from foundation.records import CheckResult
from foundation.registry import CLAIMS, get_claim


def _theory_function(name: str) -> Callable[[], CheckResult | list[CheckResult]]:
    """The function of theory named ``module:qualname`` in a registry entry (a name on theory's own floor)."""
    module, _, qualname = name.partition(":")
    return getattr(importlib.import_module(module), qualname)


def _theory_checks() -> dict[str, tuple[Callable[[], CheckResult | list[CheckResult]], ...]]:
    """Claim id -> the check functions of theory that the claim's registry entry names (``Claim.checks``, the
    names in theory's modules), in registry order and each entry's order: the registry is the one list of them."""
    by_claim = {claim.id: tuple(_theory_function(name) for name in claim.check_names if name.startswith("theory."))
                for claim in CLAIMS}
    return {claim: functions for claim, functions in by_claim.items() if functions}


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
