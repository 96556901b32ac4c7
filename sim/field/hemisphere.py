"""Whether tokens lie in one open hemisphere {y : v^T y > 0}: the premise of Theorem 4.1 / ICML 3.2, decided by
linear programming with a certificate either way (a direction v, or Gordan's alternative: a convex combination of
the unit points that is zero). One implementation for the whole suite: Wendel's Monte Carlo (theory.wendel), the
conjecture families (sim.conjectures.families) and the audit of real transformers (empirical.audit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.spatial import ConvexHull

#: A point counts as strictly inside when its cosine with the certificate direction exceeds this.
#: Reason: the cosine is computed in float64 from unit vectors; its rounding error is below
#: d * 2.2e-16 < 1e-12 for d <= 4096, so a larger margin cannot be a rounding artefact.
HEMISPHERE_MARGIN_TOL = 1e-10
#: Gordan certificate accepted when |sum_i lambda_i y_i| (unit y_i, sum lambda = 1) is below this.
#: Reason: HiGHS's default primal feasibility tolerance is 1e-7 per constraint.
GORDAN_RESIDUAL_TOL = 1e-6
@dataclass(frozen=True)
class HemisphereResult:
    """Whether points lie in one open hemisphere ``{y : v^T y > 0}``.

    ``margin`` is ``min_i cos(v, y_i)`` for the direction ``v`` found by the LP (a lower bound on
    the best achievable margin; <= 0 when no open hemisphere holds the points). ``gordan_residual``
    is ``|sum_i lambda_i y_i / |y_i||`` of the alternative's certificate (``nan`` when inside).
    """

    inside: bool
    margin: float
    direction: np.ndarray  # shape [d], unit
    gordan_residual: float


def open_hemisphere(points: np.ndarray, *, certify_outside: bool = True) -> HemisphereResult:
    """Decide whether ``points`` (shape ``[l, d]``, no zero rows) lie in one open hemisphere.

    LP (scipy HiGHS): maximise ``t`` over ``(v, t)`` with ``v^T y_i / |y_i| >= t``, ``-1 <= v <= 1``,
    ``t <= 1`` (for l < d over ``v = sum_i w_i y_i / |y_i|`` with ``-1 <= w <= 1`` instead). The points are
    inside iff the optimum is positive; the answer is re-checked in float64 from the returned ``v``. When not
    inside, Gordan's theorem gives ``lambda >= 0``, ``sum lambda = 1``, ``sum lambda_i y_i / |y_i| = 0``, which
    is solved for and its residual returned (``certify_outside=False`` skips that second LP: residual nan).
    """
    y = np.asarray(points, dtype=np.float64)
    if y.ndim != 2 or y.shape[0] < 1 or y.shape[1] < 1:
        raise ValueError(f"points must have shape [l, d] with l, d >= 1; got shape {y.shape}.")
    if not np.all(np.isfinite(y)):
        raise ValueError("points must be finite (no NaN or inf).")
    norms = np.linalg.norm(y, axis=1)
    if np.any(norms == 0.0):
        raise ValueError(f"points must be non-zero; rows {np.flatnonzero(norms == 0.0).tolist()} are zero.")
    unit = y / norms[:, None]
    count, dim = unit.shape
    # With fewer points than dimensions, v may be taken in the points' span, v = unit^T w (the part of v
    # orthogonal to it does not change unit v): the LP then has l + 1 variables and the Gram matrix as rows.
    rows = unit @ unit.T if count < dim else unit
    size = rows.shape[1]
    # Variables x = (w or v, t); minimise -t subject to -rows x + t <= 0.
    cost = np.zeros(size + 1)
    cost[-1] = -1.0
    a_ub = np.hstack([-rows, np.ones((count, 1))])
    bounds = [(-1.0, 1.0)] * size + [(None, 1.0)]
    solution = linprog(cost, A_ub=a_ub, b_ub=np.zeros(count), bounds=bounds, method="highs")
    if solution.status != 0:
        raise RuntimeError(f"the hemisphere LP did not solve: {solution.message}")
    v = unit.T @ solution.x[:size] if count < dim else solution.x[:size]
    v_norm = np.linalg.norm(v)
    direction = v / v_norm if v_norm > 0 else np.zeros(dim)
    margin = float(np.min(unit @ direction)) if v_norm > 0 else 0.0
    if margin > HEMISPHERE_MARGIN_TOL:
        return HemisphereResult(True, margin, direction, float("nan"))
    residual = _gordan_residual(unit) if certify_outside else float("nan")
    return HemisphereResult(False, margin, direction, residual)


def _gordan_residual(unit: np.ndarray) -> float:
    """``|sum_i lambda_i u_i|`` of a certificate: solve the LP ``U^T lambda = 0, sum lambda = 1, lambda >= 0``
    (as ``G lambda = 0`` with the Gram matrix ``G = U U^T`` when l < d: the same condition)."""
    count, dim = unit.shape
    rows = unit @ unit.T if count < dim else unit.T
    a_eq = np.vstack([rows, np.ones((1, count))])
    b_eq = np.concatenate([np.zeros(rows.shape[0]), [1.0]])
    solution = linprog(np.zeros(count), A_eq=a_eq, b_eq=b_eq, bounds=[(0.0, None)] * count, method="highs")
    if solution.status != 0:
        return float("inf")
    return float(np.linalg.norm(unit.T @ solution.x))


def in_open_hemisphere(points: np.ndarray) -> bool:
    """Whether the rows of ``points : shape=[l, d]`` lie in one open hemisphere (the LP of :func:`open_hemisphere`,
    after the cheap certificate v = the points' mean; no Gordan certificate is computed)."""
    points = np.asarray(points, dtype=np.float64)
    if np.all(points @ points.mean(axis=0) > 0):
        return True
    return open_hemisphere(points, certify_outside=False).inside


def hull_inradius(points: np.ndarray) -> float:
    """The radius of the largest ball around 0 inside the convex hull of ``points : shape=[l, d]``; 0 when 0 is not
    an interior point (also when the hull has no interior: fewer than d + 1 affinely independent points).

    Positive exactly when the points lie in no closed hemisphere, so in no open one either, and it says by how much:
    moving every point by less than it keeps 0 inside the hull, so every such state lies in no open hemisphere too
    (the margin of the hypothesis "in no open hemisphere" as an open set).
    """
    try:
        hull = ConvexHull(np.asarray(points, dtype=np.float64))
    except Exception:  # scipy's QhullError: fewer than d + 1 affinely independent points, the hull has no interior
        return 0.0
    return float(max(0.0, np.min(-hull.equations[:, -1])))
