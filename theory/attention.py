"""The attention vector field (6) in the dimension-free algebra.

Its float64 counterpart is the one implementation of eq. 6 in ``sim.field.dynamics.AttentionField``, which theory's
numeric spot checks call.

Tokens are named vectors ``y1..yl``; head eta has the (not necessarily symmetric) score form
``P{eta}``; ``r`` stands for sqrt(n+1), the factor of the normaliser Z_i (kept as printed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import sympy as sp

from .ellipsoid import Ellipsoid
from .gram import Form, Vector, sum_vectors, vector

#: sqrt(n+1) of the normaliser Z_i = sqrt(n+1) sum_j exp(y_i^T P y_j).
ROOT_D = sp.Symbol("r", positive=True)


def tokens(count: int, name: str = "y") -> list[Vector]:
    return [vector(f"{name}{i + 1}") for i in range(count)]


@dataclass(frozen=True)
class AttentionField:
    """Right-hand side of (6) on named tokens.

    ``scores[eta]`` is head eta's form P_eta; ``value(eta, y_j)`` returns U_eta y_j (default U = I);
    ``causal`` restricts the sums to j <= i; ``ellipsoid`` provides the tangent projection P_y.
    """

    ellipsoid: Ellipsoid = field(default_factory=Ellipsoid)
    scores: tuple[Form, ...] = (Form("P", symmetric=False),)
    value: Callable[[int, Vector], Vector] = lambda eta, y: y  # noqa: E731
    causal: bool = False
    tangent_projection: Callable[[Ellipsoid, Vector, Vector], Vector] | None = None

    def keys(self, i: int, count: int) -> range:
        return range(i + 1) if self.causal else range(count)

    def normaliser(self, eta: int, y: list[Vector], i: int) -> sp.Expr:
        """Z_i^eta = sqrt(n+1) sum_j exp(y_i^T P_eta y_j)."""
        P = self.scores[eta]
        return ROOT_D * sum(sp.exp(P(y[i], y[j])) for j in self.keys(i, len(y)))

    def weight(self, eta: int, y: list[Vector], i: int, j: int) -> sp.Expr:
        """alpha_ij^eta = exp(y_i^T P_eta y_j) / Z_i^eta."""
        return sp.exp(self.scores[eta](y[i], y[j])) / self.normaliser(eta, y, i)

    def drive(self, y: list[Vector], i: int) -> Vector:
        """sum_eta sum_j alpha_ij^eta U_eta y_j (before projecting)."""
        return sum_vectors(self.value(eta, y[j]) * self.weight(eta, y, i, j)
                           for eta in range(len(self.scores)) for j in self.keys(i, len(y)))

    def project(self, point: Vector, v: Vector) -> Vector:
        if self.tangent_projection is not None:
            return self.tangent_projection(self.ellipsoid, point, v)
        return self.ellipsoid.tangent_projection(point, v)

    def __call__(self, y: list[Vector]) -> list[Vector]:
        """dy_i/dt = P_{y_i}(sum_eta sum_j alpha_ij^eta U_eta y_j), i = 1..l."""
        return [self.project(y[i], self.drive(y, i)) for i in range(len(y))]
