"""The registry's check names resolved: each claim's ``Claim.checks`` ("module:qualname" strings) leads to functions
registered with ``@check`` for that claim (:func:`naming_problems` says where one does not).

The names point into the packages that stand on the foundation (theory, sim, empirical), never into the tests, so
they are resolved here, on the report's floor, which may import them all; the layout test reads every name as an
import of this module and holds it to the import table of docs/layout.md (tests/reports/test_layout.py).
"""

from __future__ import annotations

import importlib
from typing import Any, Iterable

from foundation.registration import Check, registrations
from foundation.registry import Claim


def resolve(name: str) -> tuple[Check, ...]:
    """The registrations of the function named ``name`` ("module:qualname", as ``Claim.checks`` writes it),
    found by importing the module; ``LookupError`` saying why when the name leads to no registered check."""
    module_name, _, qualname = name.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as error:
        raise LookupError(f"{name}: no such function ({error}).") from None
    found = registrations(target)
    if not found:
        raise LookupError(f"{name}: not a registered check (no @check on it).")
    return found


def naming_problems(claims: Iterable[Claim], registered: Iterable[Check]) -> list[str]:
    """What keeps each claim's ``checks`` from leading to its checks: a name that resolves to no non-control
    registration of that claim, a non-control check among ``registered`` of the claim that its entry does not
    name, and a declared evidence kind that no named check covers (a gap). Empty when none."""
    problems = []
    by_claim: dict[str, set[str]] = {}
    for c in registered:
        if not c.control:
            by_claim.setdefault(c.claim, set()).add(c.name)
    for claim in claims:
        kinds: set[str] = set()
        for name in claim.checks:
            try:
                mine = [c for c in resolve(name) if c.claim == claim.id and not c.control]
            except LookupError as error:
                problems.append(f"{claim.id}: {error.args[0]}")
                continue
            if not mine:
                problems.append(f"{claim.id}: {name} is a registered check, but not of {claim.id}.")
            kinds |= {c.method for c in mine}
        for name in sorted(by_claim.get(claim.id, set()) - set(claim.checks)):
            problems.append(f"{claim.id}: the registered check {name} is not named in its entry's checks.")
        for kind in [k for k in claim.evidence if k not in kinds]:
            problems.append(f"{claim.id}: no named check of the declared kind {kind!r} (a gap).")
    return problems
