"""The ellipsoid E_W = {x : x^T W x = 1} in the dimension-free algebra of :mod:`theory.gram`.

One vocabulary with the numeric ``sim.field.manifold.Ellipsoid`` (geomstats' level set of the submersion
x^T W x - 1, pymanopt's names, the point first): ``submersion``, ``norm``, ``project``,
``projection_differential``, ``tangent_projection``, ``inner_product``, ``belongs``, ``is_tangent``, so a
symbolic identity and its numeric spot check read alike. Where ``sim`` tests membership and tangency with a
tolerance, the symbolic ``belongs`` and ``is_tangent`` return the relations that state them, to substitute.
The numeric side of theory (its spot checks in d = 500) uses ``sim.field.manifold.Ellipsoid`` itself.
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

    def submersion(self, point: Vector) -> sp.Expr:
        """x^T W x - 1: zero exactly on E_W."""
        return self.metric(point, point) - 1

    def norm(self, vector: Vector) -> sp.Expr:
        """|x|_W = sqrt(x^T W x)."""
        return sp.sqrt(self.metric(vector, vector))

    def project(self, point: Vector) -> Vector:
        """pi_W(x) = x |x|_W^{-1} (eq. 2), x != 0."""
        return point / self.norm(point)

    def projection_differential(self, point: Vector, vector: Vector) -> Vector:
        """T_x pi_W . X = |x|_W^{-1} (I - x x^T W |x|_W^{-2}) X (eq. 3), at any x != 0."""
        return (vector - point * (self.metric(point, vector) / self.metric(point, point))) / self.norm(point)

    def tangent_projection(self, point: Vector, vector: Vector) -> Vector:
        """P_y X = (I - y y^T W) X, the tangent map at a point y of E_W (eq. 3 with |y|_W = 1)."""
        return vector - point * self.metric(point, vector)

    def inner_product(self, point: Vector, u: Vector, v: Vector) -> sp.Expr:
        """<u, v>_W (the metric does not depend on the point)."""
        return self.metric(u, v)

    def belongs(self, *points: Vector) -> dict:
        """The relations saying the named points y belong to E_W: submersion(y) = 0, i.e. <y, y>_W = 1."""
        return {self.metric(p, p): sp.Integer(1) for p in points}

    def is_tangent(self, point: Vector, *vectors: Vector) -> dict:
        """The relations <y, X>_W = 0 saying that the named vectors X are tangent at y (the kernel of the
        submersion's differential)."""
        return {self.metric(point, X): sp.Integer(0) for X in vectors}


def random_spd(rng: np.random.Generator, d: int, spread: float = 1.0) -> np.ndarray:
    """A random symmetric positive-definite (d, d) matrix I/2 + spread * A A^T / d, A standard normal (d, d):
    its eigenvalues lie in [1/2, 1/2 + 4 spread] up to O(d^-2/3) (Marchenko-Pastur), so cond <= 1 + 8 spread.
    (The W of theory's spot checks; points on E_W are ``sim.field.manifold.Ellipsoid(W).project`` of Gaussians.)"""
    A = rng.standard_normal((d, d))
    return 0.5 * np.eye(d) + spread * (A @ A.T) / d
