"""The registry's check names resolved: each claim's ``Claim.checks`` ("module:qualname", method) leads to a function
registered for that claim by that method (:func:`naming_problems` says where one does not).

A product check is registered by ``@named_check`` from the registry entries that name it, so its claims and methods
are the registry's by construction; what a name can still get wrong is the function: a module or function that does
not exist, or one that carries no ``@named_check``. The names point into the packages that stand on the
foundation (theory, sim, empirical), never into the tests, so they are resolved here, on the report's floor, which
may import them all; the layout test reads every name as an import of this module and holds it to the import table
of docs/layout.md (tests/reports/test_layout.py).
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
        raise LookupError(f"{name}: not a registered check (no @named_check on it).")
    return found


def naming_problems(claims: Iterable[Claim]) -> list[str]:
    """What keeps each claim's ``checks`` from leading to its checks: a name that resolves to no registration of
    that claim by the method written beside it, and a declared evidence kind that no such check covers (a gap).
    Empty when none."""
    problems = []
    for claim in claims:
        kinds: set[str] = set()
        for name, method in claim.checks:
            try:
                found = resolve(name)
            except LookupError as error:
                problems.append(f"{claim.id}: {error.args[0]}")
                continue
            if (claim.id, method) not in {(c.claim, c.method) for c in found if not c.control}:
                problems.append(f"{claim.id}: {name} is a registered check, but not of {claim.id} by {method}.")
            else:
                kinds.add(method)
        for kind in [k for k in claim.evidence if k not in kinds]:
            problems.append(f"{claim.id}: no named check of the declared kind {kind!r} (a gap).")
    return problems
