"""Dimension-free vector algebra: vectors are formal combinations of named vectors, and a bilinear form
evaluated on two named vectors is a Gram symbol ``<a, b>_M``.

An identity proved here holds in every dimension d = n + 1: the only facts used are bilinearity, the
symmetry of the forms declared symmetric, and the constraints substituted explicitly (e.g.
``<y, y>_W = 1`` for a token on the ellipsoid E_W, ``<y, X>_W = 0`` for a tangent vector X at y).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import sympy as sp

Scalar = sp.Expr | int | float


@dataclass(frozen=True)
class Vector:
    """A formal linear combination ``sum_a terms[a] * a`` of named vectors ``a`` (names are strings)."""

    terms: Mapping[str, sp.Expr] = field(default_factory=dict)

    def __add__(self, other: "Vector") -> "Vector":
        if not isinstance(other, Vector):
            return NotImplemented
        terms = dict(self.terms)
        for name, coefficient in other.terms.items():
            terms[name] = terms.get(name, 0) + coefficient
        return Vector(terms)

    def __neg__(self) -> "Vector":
        return Vector({name: -c for name, c in self.terms.items()})

    def __sub__(self, other: "Vector") -> "Vector":
        return self + (-other)

    def __mul__(self, scalar: Scalar) -> "Vector":
        if isinstance(scalar, Vector):
            raise TypeError("the product of two vectors is a bilinear form: use Form(u, v).")
        return Vector({name: c * scalar for name, c in self.terms.items()})

    __rmul__ = __mul__

    def __truediv__(self, scalar: Scalar) -> "Vector":
        return self * (sp.Integer(1) / scalar)

    def coefficient(self, name: str) -> sp.Expr:
        """The coefficient of the named vector ``name`` (0 if absent)."""
        return sp.sympify(self.terms.get(name, 0))

    def simplify(self, relations: Mapping[sp.Expr, sp.Expr] | None = None) -> "Vector":
        """Each coefficient reduced by :func:`reduce` (substituting ``relations``)."""
        reduced = {name: reduce(c, relations) for name, c in self.terms.items()}
        return Vector({name: c for name, c in reduced.items() if c != 0})

    def is_zero(self, relations: Mapping[sp.Expr, sp.Expr] | None = None) -> bool:
        return not self.simplify(relations).terms

    def __repr__(self) -> str:
        if not self.terms:
            return "0"
        return " + ".join(f"({sp.sstr(c)})*{name}" for name, c in self.terms.items())


def vector(name: str) -> Vector:
    """The named vector ``name`` as a :class:`Vector`."""
    return Vector({name: sp.Integer(1)})


def sum_vectors(vectors) -> Vector:
    total = Vector()
    for v in vectors:
        total = total + v
    return total


@dataclass(frozen=True)
class Form:
    """A bilinear form ``(u, v) -> u^T M v`` on named vectors; ``symmetric`` declares M^T = M."""

    name: str
    symmetric: bool = True

    def entry(self, a: str, b: str) -> sp.Symbol:
        """The Gram symbol ``<a, b>_M`` (its two names sorted when M is symmetric)."""
        if self.symmetric and b < a:
            a, b = b, a
        return sp.Symbol(f"<{a},{b}>_{self.name}", real=True)

    def __call__(self, u: Vector, v: Vector) -> sp.Expr:
        total = sp.Integer(0)
        for a, ca in u.terms.items():
            for b, cb in v.terms.items():
                total += ca * cb * self.entry(a, b)
        return total


#: Residuals larger than this (in operations) are not handed to ``sympy.simplify``, which can take
#: minutes on them; their zero test is the expanded numerator alone.
SIMPLIFY_LIMIT = 400


def _exp_symbol(e: sp.exp) -> sp.Expr:
    coefficient, rest = e.args[0].as_coeff_Mul()
    return sp.Symbol(f"exp({sp.sstr(rest)})", positive=True) ** coefficient


def reduce(expr: Scalar, relations: Mapping[sp.Expr, sp.Expr] | None = None, *, rounds: int = 4) -> sp.Expr:
    """``expr`` with ``relations`` substituted (repeatedly, as a relation may produce another's key), then
    reduced: expanded; if not yet 0, put over a common denominator and the numerator expanded; if still not
    0 and small, simplified. A result of 0 proves the identity; a nonzero result of a large residual means
    that expansion did not cancel it."""
    expr = sp.sympify(expr)
    for _ in range(rounds):
        new = expr.xreplace(dict(relations or {}))
        if new == expr:
            break
        expr = new
    # exponentials of Gram symbols become plain symbols: the residual is then rational in them
    # (exp(c a) becomes E_a^c, so that exp(2a) and exp(a)^2 agree)
    expr = sp.expand(expr)
    exps = {e: _exp_symbol(e) for e in expr.atoms(sp.exp)}
    exps[sp.E] = _exp_symbol(sp.exp(1, evaluate=False))
    expr = sp.expand(expr.xreplace(exps))
    if expr == 0:
        return expr
    numerator = sp.expand(sp.numer(sp.together(expr)))
    if numerator == 0:
        return sp.Integer(0)
    back = {v.base if v.is_Pow else v: sp.exp(k.args[0] / (v.exp if v.is_Pow else 1))
            for k, v in exps.items() if k is not sp.E}
    if sp.count_ops(expr) <= SIMPLIFY_LIMIT:
        return sp.simplify(expr.xreplace(back))
    return expr.xreplace(back)
