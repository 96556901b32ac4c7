"""The ellipsoid E_W = {x : x^T W x = 1} in the dimension-free algebra of :mod:`theory.gram`.

Method names match the numeric ``sim.manifold.Ellipsoid`` (``project``, ``tangent_projection``,
``inner_product``), so a symbolic identity and its numeric spot check read alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from .gram import Form, Vector


@dataclass(frozen=True)
class Ellipsoid:
    """E_W for the symmetric positive-definite form ``metric`` (W)."""

    metric: Form = field(default_factory=lambda: Form("W"))

    def norm(self, x: Vector) -> sp.Expr:
        """|x|_W = sqrt(x^T W x)."""
        return sp.sqrt(self.metric(x, x))

    def project(self, x: Vector) -> Vector:
        """pi_W(x) = x |x|_W^{-1} (eq. 2), x != 0."""
        return x / self.norm(x)

    def tangent_map(self, x: Vector, vector: Vector) -> Vector:
        """T_x pi_W . X = |x|_W^{-1} (I - x x^T W |x|_W^{-2}) X (eq. 3), at any x != 0."""
        return (vector - x * (self.metric(x, vector) / self.metric(x, x))) / self.norm(x)

    def tangent_projection(self, point: Vector, vector: Vector) -> Vector:
        """P_y X = (I - y y^T W) X, the tangent map at a point y of E_W (eq. 3 with |y|_W = 1)."""
        return vector - point * self.metric(point, vector)

    def inner_product(self, point: Vector, u: Vector, v: Vector) -> sp.Expr:
        """<u, v>_W (the metric does not depend on the point)."""
        return self.metric(u, v)

    def on_manifold(self, *points: Vector) -> dict:
        """The relations <y, y>_W = 1 for named points y (each a single named vector)."""
        return {self.metric(p, p): sp.Integer(1) for p in points}

    def tangent_at(self, point: Vector, *vectors: Vector) -> dict:
        """The relations <y, X>_W = 0 saying that the named vectors X are tangent at y."""
        return {self.metric(point, X): sp.Integer(0) for X in vectors}


# -- float64 counterparts used by the high-dimensional spot checks ----------------------------------

def random_spd(rng: np.random.Generator, d: int, spread: float = 1.0) -> np.ndarray:
    """A random symmetric positive-definite (d, d) matrix I/2 + spread * A A^T / d, A standard normal (d, d):
    its eigenvalues lie in [1/2, 1/2 + 4 spread] up to O(d^-2/3) (Marchenko-Pastur), so cond <= 1 + 8 spread."""
    A = rng.standard_normal((d, d))
    return 0.5 * np.eye(d) + spread * (A @ A.T) / d


def random_points(rng: np.random.Generator, W: np.ndarray, count: int) -> np.ndarray:
    """``count`` random points of E_W, shape (count, d)."""
    x = rng.standard_normal((count, W.shape[0]))
    return x / np.sqrt(np.einsum("id,de,ie->i", x, W, x))[:, None]


def tangent_projection_matrix(W: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P_y = I - y y^T W, shape (d, d), for y in E_W of shape (d,)."""
    return np.eye(len(y)) - np.outer(y, W @ y)
