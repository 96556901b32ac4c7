"""Turning identities into result records (``foundation.records.CheckResult``).

A symbolic identity is a residual (lhs - rhs, a scalar or a :class:`~theory.gram.Vector`) and the
relations substituted before simplifying; it holds when the reduced residual is exactly zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import sympy as sp

from foundation.registration import claim_result, holding
from foundation.records import CheckResult

from .gram import Vector, reduce

#: Longest rendering of one residual in a report (the reduced residual is always shown in full).
MAX_RENDERED = 600


@dataclass(frozen=True)
class Identity:
    """``name`` reads the identity (``"P_y P_y X = P_y X"``); ``residual`` is lhs - rhs."""

    name: str
    residual: sp.Expr | Vector
    relations: Mapping[sp.Expr, sp.Expr] = field(default_factory=dict)

    def reduced(self) -> sp.Expr | Vector | sp.MatrixBase:
        if isinstance(self.residual, Vector):
            return self.residual.simplify(self.relations)
        if isinstance(self.residual, sp.MatrixBase):
            return self.residual.applyfunc(lambda e: reduce(e, self.relations))
        return reduce(self.residual, self.relations)

    def holds(self) -> bool:
        return is_zero(self.reduced())


def is_zero(reduced) -> bool:
    if isinstance(reduced, Vector):
        return not reduced.terms
    if isinstance(reduced, sp.MatrixBase):
        return all(e == 0 for e in reduced)
    return reduced == 0


def render(expr) -> str:
    if isinstance(expr, sp.MatrixBase):
        expr = list(expr)
    text = repr(expr) if isinstance(expr, Vector) else sp.sstr(expr)
    return text if len(text) <= MAX_RENDERED else text[:MAX_RENDERED] + " ..."


def render_relations(relations: Mapping) -> str:
    return ", ".join(f"{sp.sstr(k)} = {sp.sstr(v)}" for k, v in relations.items()) or "none"


def evaluate_identities(identities: list[Identity]) -> tuple[str, list[str]]:
    """Each identity reduced once: ``(expression, failing)``, the expression listing each identity, its residual, the
    substituted relations and what it simplifies to, and the names of those that do not hold."""
    lines, failing = [], []
    for identity in identities:
        reduced = identity.reduced()
        ok = is_zero(reduced)
        if not ok:
            failing.append(identity.name)
        lines.append(f"[{'holds' if ok else 'FAILS'}] {identity.name}\n"
                     f"    residual lhs - rhs = {render(identity.residual)}\n"
                     f"    with {render_relations(identity.relations)}\n"
                     f"    simplifies to {render(reduced)}")
    return "\n".join(lines), failing


def identities_result(identities: list[Identity], *, detail: str, numbers: Mapping | None = None,
                      fail_verdict: str = "refuted", **extra) -> CheckResult:
    """One record of the running check (``@named_check``: its claim and method) for a list of identities: when every
    reduced residual is 0 the check's holding verdict (``verified`` for a symbolic check, ``supported`` for a
    ``reduction``, whose remainder is argued in words), else ``fail_verdict``; the expression is
    :func:`evaluate_identities`'."""
    expression, failing = evaluate_identities(identities)
    verdict = holding() if not failing else fail_verdict
    text = detail if not failing else f"{detail} Identities that do NOT hold: {'; '.join(failing)}."
    return claim_result(verdict, detail=text, expression=expression,
                       numbers={"identities": len(identities), "failing": len(failing), **(numbers or {})},
                       **extra)


def numeric_result(residuals: Mapping[str, float], *, tolerance: float, tolerance_reason: str, detail: str,
                   seeds: Mapping[str, int], numbers: Mapping | None = None, limits: tuple[str, ...] = (),
                   **extra) -> CheckResult:
    """A spot check, one record of the running check (``@named_check``: its claim and method): when every residual is
    at most ``tolerance``, ``supported`` (a finite computation proves no mathematical claim; ``verified`` only for an
    observation, ``foundation.registration.holding``); else ``refuted`` when a finite-time residual misses it, and ``unsupported``
    when only residuals named in ``limits`` do (a quantity that tends to 0 as t -> oo, read at a horizon: a run that has
    not got there yet goes against the claim without refuting it)."""
    failing = [name for name, value in residuals.items() if not value <= tolerance]
    verdict = (holding() if not failing else "unsupported" if all(name in limits for name in failing)
               else "refuted")
    text = detail if not failing else f"{detail} Residuals above tolerance: {', '.join(failing)}."
    return claim_result(verdict, detail=text, numbers={**residuals, **(numbers or {})},
                       tolerance=tolerance, tolerance_reason=tolerance_reason, seeds=dict(seeds), **extra)
