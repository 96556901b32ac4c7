"""Fused loops (Numba) for the passes over memory that a numpy expression splits into several.

For Fig. 4's problem a worker's state is 10 MB: each numpy operation on it is a trip through memory, and a
Runge-Kutta step made about 55 of them (42 ms a step against 40 ms for one evaluation of the field). Each
kernel here makes one pass and allocates nothing: the stage combinations, the error norm, the retraction and
the drift of the solvers, the softmax rows and the tangent projection of the field. They release the GIL
(``nogil``), so a solve's worker threads run them side by side.

Sums are vectorised by allowing LLVM to reassociate additions (``fastmath={"reassoc", "contract"}``: no
change to NaN/inf handling): they are then added in another order than a plain loop's, a difference of
rounding only (tests/sim/test_kernels.py compares every kernel with the numpy formula it replaces).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Reassociation lets LLVM vectorise the sums; "contract" lets it use fused multiply-adds.
_VECTORISED_SUMS = {"reassoc", "contract"}


# --- the field (eq. 6) ---------------------------------------------------------------------------
@njit(cache=True, nogil=True, fastmath=_VECTORISED_SUMS)
def _softmax_row(row, count, scale, buffer):
    """exp(row[j] - max) into ``buffer[j]`` for j < count; returns 1 / (scale * sum_j exp(row[j] - max)).

    Shifted by the row's own largest score, every exponent is <= 0 and the largest term is 1: the sum can
    neither overflow nor underflow (log-sum-exp)."""
    largest = row[0]
    for j in range(1, count):
        if row[j] > largest:
            largest = row[j]
    total = 0.0
    for j in range(count):
        buffer[j] = np.exp(row[j] - largest)
        total += buffer[j]
    return 1.0 / (scale * total)


@njit(cache=True, nogil=True, fastmath=_VECTORISED_SUMS)
def attention_weights(scores, causal, scale, out):
    """alpha_ij^eta = exp(s_ij^eta) / (scale sum_j exp(s_ij^eta)) (eq. 6's attention with Z_i's factor
    ``scale`` = sqrt(n+1)); j <= i only and zero above the diagonal when ``causal``.

    scores, out : shape=[batch, l, h, l] (row (b, i, eta) holds s_i.^eta)."""
    batch, tokens, heads, _ = scores.shape
    buffer = np.empty(tokens)
    for b in range(batch):
        for i in range(tokens):
            count = i + 1 if causal else tokens
            for eta in range(heads):
                inverse = _softmax_row(scores[b, i, eta], count, scale, buffer)
                for j in range(count):
                    out[b, i, eta, j] = buffer[j] * inverse
                for j in range(count, tokens):
                    out[b, i, eta, j] = 0.0


@njit(cache=True, nogil=True, fastmath=_VECTORISED_SUMS)
def summed_attention(scores, causal, scale, out):
    """sum_eta alpha_ij^eta (``attention_weights`` summed over the heads: with U_eta = I the update is
    f = (sum_eta alpha^eta) y, one product).

    scores : shape=[batch, l, h, l]; out : shape=[batch, l, l]."""
    batch, tokens, heads, _ = scores.shape
    buffer = np.empty(tokens)
    for b in range(batch):
        for i in range(tokens):
            count = i + 1 if causal else tokens
            for j in range(tokens):
                out[b, i, j] = 0.0
            for eta in range(heads):
                inverse = _softmax_row(scores[b, i, eta], count, scale, buffer)
                for j in range(count):
                    out[b, i, j] += buffer[j] * inverse


@njit(cache=True, nogil=True, fastmath=_VECTORISED_SUMS)
def sphere_tangent_projection_(points, vectors):
    """P_y X = X - (y^T X) y (eq. 3 on the sphere) row by row, overwriting ``vectors``; shape=[rows, d] each."""
    for r in range(points.shape[0]):
        point, vector = points[r], vectors[r]
        inner = 0.0
        for k in range(point.shape[0]):
            inner += point[k] * vector[k]
        for k in range(point.shape[0]):
            vector[k] -= inner * point[k]


# --- the solvers ---------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def linear_combination(coefficients, rows, out):
    """out = sum_k coefficients[k] rows[k] (a Runge-Kutta stage's state, the step's end point, the error
    estimate); ``rows`` a tuple of 1-d arrays of out's length, each read once."""
    for i in range(out.shape[0]):
        total = 0.0
        for k in range(len(rows)):
            total += coefficients[k] * rows[k][i]
        out[i] = total


@njit(cache=True, nogil=True, fastmath=_VECTORISED_SUMS)
def scaled_error_means(error, y, y_next, rtol, atol, out):
    """out[n] = mean_m (error[n, m] / (atol + rtol max(|y[n, m]|, |y_next[n, m]|)))^2: each instance's mean
    squared scaled error (scipy's RK45 norm before the root); error, y, y_next : shape=[instances, size]."""
    for n in range(error.shape[0]):
        total = 0.0
        for m in range(error.shape[1]):
            ratio = error[n, m] / (atol + rtol * max(abs(y[n, m]), abs(y_next[n, m])))
            total += ratio * ratio
        out[n] = total / error.shape[1]


@njit(cache=True, nogil=True, fastmath=_VECTORISED_SUMS)
def sphere_retract(points, out):
    """pi(x) = x / |x| (eq. 2 on the sphere) row by row; points, out : shape=[rows, d] (may be the same)."""
    for r in range(points.shape[0]):
        point, target = points[r], out[r]
        squared = 0.0
        for k in range(point.shape[0]):
            squared += point[k] * point[k]
        inverse = 1.0 / np.sqrt(squared)
        for k in range(point.shape[0]):
            target[k] = point[k] * inverse


@njit(cache=True, nogil=True, fastmath=_VECTORISED_SUMS)
def sphere_drift(points):
    """max_r |points[r]^T points[r] - 1|, the distance off the sphere in the submersion; shape=[rows, d]."""
    worst = 0.0
    for r in range(points.shape[0]):
        point = points[r]
        squared = 0.0
        for k in range(point.shape[0]):
            squared += point[k] * point[k]
        distance = abs(squared - 1.0)
        if not distance <= worst:  # (a NaN is kept: it says the point left the reals)
            worst = distance
    return worst
