"""Checks registered by claim: the registry ties each product check to its claims, a test names its claim itself.

A check function of ``theory``, ``sim`` or ``empirical`` (it returns result records) carries a bare ``@named_check``:
its claims and methods are those of the registry entries whose ``Claim.checks`` list its ``module:qualname``, found
when the module is imported (an error names the function that no entry lists), so a claim's id is typed once in the
product code, on its registry entry. A test registers with ``@check("full.wendel", method="exact")`` (pytest reads
the registration as the test's claim; ``control=True`` marks a negative control), validated when pytest collects it:
an id outside the registry or a method that is no evidence kind is an error naming it; or it names the registered
check it calls instead of repeating its id and method: ``@check(wendel.check_closed_forms)``.
Inside a registered check, :func:`claim_result` builds a record of the running check's claim and method; the
records a check returns must be of its registrations (an error names the function otherwise).

The registry's names point up into the packages that stand on this module, so it never imports them: the report
resolves them (:mod:`reports.named_checks`).

The registered checks say which declared evidence kinds of a claim (``Claim.evidence``) have a check:
:func:`coverage` gives ``covered`` or ``gap`` per kind, and the report shows every gap.
"""

from __future__ import annotations

import contextvars
import functools
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping

from .records import CheckResult, holding_verdict
from .registry import CLAIMS, CLAIMS_BY_ID, EVIDENCE_KINDS, get_claim

#: The attribute a decorated function carries: a tuple of its :class:`Check` registrations.
ATTRIBUTE = "claim_checks"
COVERED, GAP = "covered", "gap"


@dataclass(frozen=True)
class Check:
    """One registration: ``function`` checks ``claim`` by ``method`` (a negative control when ``control``)."""

    claim: str
    method: str
    control: bool
    name: str  # module:qualname of the function (or of the test)
    function: Callable | None = field(default=None, compare=False, repr=False)


#: Every registration made in this process, in import order.
REGISTERED: list[Check] = []


def check(claim: str | Callable, method: str | None = None, *, control: bool = False) -> Callable:
    """Register the decorated function (a test) as a check of ``claim`` by ``method``.

    ``claim`` is a registry id, or a function already registered (its claims and methods are taken; ``method`` must
    then be omitted). Raises ``KeyError`` naming an unknown id and ``ValueError`` for a method that is not one of
    ``EVIDENCE_KINDS``. The function is returned unchanged, with its registrations in ``claim_checks``.
    """
    if callable(claim):
        if method is not None:
            raise ValueError(f"check({_name(claim)}, method={method!r}): a registered check brings its own method; "
                             "omit method.")
        targets = registrations(claim)
        if not targets:
            raise ValueError(f"check({_name(claim)}): that function is not a registered check (decorate it with "
                             "@named_check and name it in its claim's registry entry first).")
        return _registering([(target.claim, target.method) for target in targets], control)
    get_claim(claim)
    if method not in EVIDENCE_KINDS:
        raise ValueError(f"check({claim!r}, method={method!r}): method must be one of {EVIDENCE_KINDS}.")
    return _registering([(claim, method)], control)


def named_check(function: Callable) -> Callable:
    """Register ``function`` as the check its registry entries name: for each claim (of ``CLAIMS_BY_ID``) whose
    ``Claim.checks`` lists its ``module:qualname``, with the method listed beside the name. Raises ``LookupError``
    naming the function when no entry lists it. The function is returned unchanged, with its registrations in
    ``claim_checks``."""
    name = _name(function)
    pairs = [(claim.id, method) for claim in CLAIMS_BY_ID.values() for named, method in claim.checks if named == name]
    if not pairs:
        raise LookupError(f"@named_check on {name}: no claim of the registry names it; add ({name!r}, method) to "
                          "the checks of its claim's entry in foundation/registry.py.")
    return _registering(pairs, control=False)(function)


def _registering(pairs: list[tuple[str, str]], control: bool) -> Callable[[Callable], Callable]:
    """The decorator registering a function for each (claim, method) of ``pairs``, besides any it already has."""

    def register(function: Callable) -> Callable:
        previous = registrations(function)  # stacked decorators: one wrapper holding every registration
        original = function.__wrapped__ if previous else function

        @functools.wraps(original)
        def registered(*args, **kwargs):
            token = _RUNNING.set(mine)
            try:
                return _of_registrations(original(*args, **kwargs), mine)
            finally:
                _RUNNING.reset(token)

        mine = (*(replace(c, function=registered) for c in previous),
                *(Check(c, m, control, _name(original), registered) for c, m in pairs))
        REGISTERED[:] = [c for c in REGISTERED if c not in previous] + list(mine)
        setattr(registered, ATTRIBUTE, mine)
        return registered

    return register


#: The registrations of the registered check running now (innermost), read by :func:`claim_result`.
_RUNNING: contextvars.ContextVar[tuple[Check, ...]] = contextvars.ContextVar("running_check", default=())


def claim_result(verdict: str, *, claim: str | None = None, **fields: Any) -> CheckResult:
    """A record of the running registered check: its claim and method, ``verdict`` and the other fields of
    :class:`~foundation.records.CheckResult`. ``claim`` picks one when the check is registered for several."""
    chosen = _running_check(claim)
    return CheckResult(chosen.claim, chosen.method, verdict, **fields)


def holding(*, claim: str | None = None) -> str:
    """The verdict of the running registered check when it found nothing against its claim
    (:func:`~foundation.records.holding_verdict`): ``verified`` where its method can prove the claim, else
    ``supported``. ``claim`` as for :func:`claim_result`."""
    chosen = _running_check(claim)
    return holding_verdict(chosen.claim, chosen.method)


def _running_check(claim: str | None) -> Check:
    running = _RUNNING.get()
    if not running:
        raise RuntimeError("claim_result() and holding() belong inside a registered check (@named_check or @check); "
                           "none is running.")
    chosen = [c for c in running if claim is None or c.claim == claim]
    if len({c.claim for c in chosen}) != 1:
        raise ValueError(f"the running check {running[0].name} is registered for "
                         f"{sorted({c.claim for c in running})}; pass claim= one of them.")
    return chosen[0]


def _of_registrations(outcome: Any, mine: tuple[Check, ...]) -> Any:
    """``outcome`` unchanged, after checking that every record in it is of one of the check's registrations."""
    records = [outcome] if isinstance(outcome, CheckResult) else list(outcome) if isinstance(outcome, (list, tuple)) \
        else []
    allowed = {(c.claim, c.method) for c in mine}
    for record in records:
        if isinstance(record, CheckResult) and (record.claim, record.method) not in allowed:
            raise ValueError(f"{mine[0].name} is registered as a check of {sorted(allowed)} but returned a record of "
                             f"({record.claim!r}, {record.method!r}).")
    return outcome


def registrations(function: Callable) -> tuple[Check, ...]:
    """The registrations of ``function`` (empty when it is not a registered check)."""
    return getattr(function, ATTRIBUTE, ())


def checks_of(claim: str, checks: Iterable[Check] | None = None) -> list[Check]:
    """The registered checks of ``claim`` (among ``checks``, by default all registered so far)."""
    get_claim(claim)
    return [c for c in (REGISTERED if checks is None else checks) if c.claim == claim]


def coverage(checks: Iterable[Check] | None = None) -> dict[str, dict[str, str]]:
    """For every registry claim, each declared evidence kind (``Claim.evidence``) mapped to ``covered`` when a
    check (not a negative control) of that kind is among ``checks`` (default: all registered), else ``gap``."""
    kinds: dict[str, set[str]] = {}
    for c in REGISTERED if checks is None else checks:
        if not c.control:
            kinds.setdefault(c.claim, set()).add(c.method)
    return {claim.id: {kind: COVERED if kind in kinds.get(claim.id, ()) else GAP for kind in claim.evidence}
            for claim in CLAIMS}


def gaps(covered: Mapping[str, Mapping[str, str]]) -> dict[str, list[str]]:
    """The claims of a :func:`coverage` map with at least one declared evidence kind without a check."""
    return {claim: [k for k, state in kinds.items() if state == GAP]
            for claim, kinds in covered.items() if GAP in kinds.values()}


def _name(function: Callable) -> str:
    return f"{getattr(function, '__module__', '?')}:{getattr(function, '__qualname__', repr(function))}"
