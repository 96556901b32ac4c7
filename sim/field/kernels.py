"""Fused loops (Numba) for the passes over memory that a numpy expression splits into several.

For Fig. 4's problem a worker's state is 10 MB: each numpy operation on it is a trip through memory, and a
Runge-Kutta step made about 55 of them (42 ms a step against 40 ms for one evaluation of the field). Each
kernel here makes one pass and allocates nothing: the stage combinations, the error norm, the retraction and
the drift of the solvers, the softmax rows (around numpy's vectorised exp) and the tangent projection of the
field. They release the GIL (``nogil``), so a solve's worker threads run them side by side.

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
@njit(cache=True, nogil=True)
def shift_rows_(scores, causal):
    """Each row (b, i, eta) of ``scores : shape=[batch, l, h, l]`` minus its largest entry over j <= i (every j when
    not ``causal``), in place; the entries j > i of a causal row set to -inf. After ``np.exp`` (vectorised, several
    times faster than a loop's exp) the row holds the numerators of eq. 6's softmax: every exponent <= 0 and the
    largest term exactly 1, so the row's sum can neither overflow nor underflow (log-sum-exp); masked terms 0."""
    batch, tokens, heads, _ = scores.shape
    for b in range(batch):
        for i in range(tokens):
            count = i + 1 if causal else tokens
            for eta in range(heads):
                row = scores[b, i, eta]
                largest = row[0]
                for j in range(1, count):
                    if row[j] > largest:
                        largest = row[j]
                for j in range(count):
                    row[j] -= largest
                for j in range(count, tokens):
                    row[j] = -np.inf


@njit(cache=True, nogil=True, fastmath=_VECTORISED_SUMS)
def normalised_rows(numerators, scale, out):
    """alpha_ij^eta = e_ij^eta / (scale sum_j e_ij^eta) (eq. 6, ``scale`` = sqrt(n+1) as printed) from the
    numerators e of ``shift_rows_`` and ``np.exp``; numerators, out : shape=[batch, l, h, l]."""
    batch, tokens, heads, _ = numerators.shape
    for b in range(batch):
        for i in range(tokens):
            for eta in range(heads):
                row = numerators[b, i, eta]
                inverse = 1.0 / (scale * np.sum(row))
                for j in range(tokens):
                    out[b, i, eta, j] = row[j] * inverse


@njit(cache=True, nogil=True, fastmath=_VECTORISED_SUMS)
def summed_normalised_rows(numerators, scale, out):
    """sum_eta alpha_ij^eta (``normalised_rows`` summed over the heads: with U_eta = I the update is
    f = (sum_eta alpha^eta) y, one product); numerators : shape=[batch, l, h, l], out : shape=[batch, l, l]."""
    batch, tokens, heads, _ = numerators.shape
    for b in range(batch):
        for i in range(tokens):
            for j in range(tokens):
                out[b, i, j] = 0.0
            for eta in range(heads):
                row = numerators[b, i, eta]
                inverse = 1.0 / (scale * np.sum(row))
                for j in range(tokens):
                    out[b, i, j] += row[j] * inverse


@njit(cache=True, nogil=True, fastmath=_VECTORISED_SUMS, inline="always")
def _dot(a, b):
    """a^T b of two 1-d arrays (inlined into the sphere's kernels below, vectorised like them)."""
    total = 0.0
    for k in range(a.shape[0]):
        total += a[k] * b[k]
    return total


@njit(cache=True, nogil=True, fastmath=_VECTORISED_SUMS)
def sphere_tangent_projection_(points, vectors):
    """P_y X = X - (y^T X) y (eq. 3 on the sphere) row by row, overwriting ``vectors``; shape=[rows, d] each."""
    for r in range(points.shape[0]):
        point, vector = points[r], vectors[r]
        inner = _dot(point, vector)
        for k in range(point.shape[0]):
            vector[k] -= inner * point[k]


#: exp by range reduction x = n ln 2 + r, |r| <= ln(2)/2, and the Taylor polynomial of degree 13 (its remainder
#: r^14/14! < 1e-17 relative); ln 2 split in two (fdlibm's LN2_HI, LN2_LO) so that n ln 2 is exact enough.
_LOG2E, _LN2_HI, _LN2_LO = 1.4426950408889634, 6.93147180369123816490e-01, 1.90821492927058770002e-10
_INVERSE_FACTORIALS = tuple(1.0 / float(np.prod(np.arange(1, k + 1))) for k in range(14))


@njit(cache=True, nogil=True, fastmath=_VECTORISED_SUMS)
def exp_nonpositive_(row, count, bits, scale):
    """row[j] <- exp(row[j]) for j < count, every row[j] <= 0 (a softmax's shifted scores), within 2 ulp of
    ``np.exp`` (tests/sim/test_kernels.py); below -708 (exp < 1e-307, a weight far below rounding) as exp(-708).

    A loop Numba can vectorise: its own exp is a call of the C library's, one number at a time (no SVML in this
    llvmlite), and was about half of an evaluation of a 10-token system. ``bits : int64 [>= count]`` and ``scale``,
    the same memory as float64 (``bits.view(np.float64)``), are scratch: 2^n is written as its bit pattern."""
    for j in range(count):
        x = max(row[j], -708.0)
        n = np.floor(x * _LOG2E + 0.5)
        r = (x - n * _LN2_HI) - n * _LN2_LO
        p = _INVERSE_FACTORIALS[13]
        for k in range(12, -1, -1):
            p = p * r + _INVERSE_FACTORIALS[k]
        row[j] = p
        bits[j] = (np.int64(n) + 1023) << 52  # 2^n, n in [-1022, 0]
    for j in range(count):
        row[j] *= scale[j]


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
        inverse = 1.0 / np.sqrt(_dot(point, point))
        for k in range(point.shape[0]):
            target[k] = point[k] * inverse


@njit(cache=True, nogil=True, fastmath=_VECTORISED_SUMS)
def sphere_drift(points):
    """max_r |points[r]^T points[r] - 1|, the distance off the sphere in the submersion; shape=[rows, d]."""
    worst = 0.0
    for r in range(points.shape[0]):
        distance = abs(_dot(points[r], points[r]) - 1.0)
        if distance > worst or np.isnan(distance):  # a NaN is kept: it says the state is lost
            worst = distance
    return worst
