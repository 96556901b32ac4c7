"""Many small systems of eq. 6 at once, each with its own matrices: the field the conjecture searches integrate.

``sim.AttentionField`` holds one set of matrices for a whole batch of states; a search integrates thousands of
different instances (2-10 tokens in dimension 2-4), so :class:`InstanceField` takes one set per instance and
evaluates all of them in a few batched products. It is handed to ``sim.solve`` like any field (Dopri5, one step
size for the batch, every step retracted to the sphere). ``lanes_field_`` is the same eq. 6 for ``LANES``
instances side by side (``sim.compiled``'s integrations).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .kernels import VECTORISED_SUMS, exp_nonpositive_
from .manifold import Ellipsoid


@njit(cache=True, nogil=True, fastmath=VECTORISED_SUMS)
def instance_field_(y, P, U, causal, out, scratch):
    """eq. 6 on the sphere for ONE instance, the suite's compiled form of it: ``y : [l, d]``, ``P, U : [h, d, d]``
    (the matrices at the time of the evaluation), dy_i/dt = P_{y_i}(sum_eta sum_j alpha_ij^eta U_eta y_j) written
    into ``out : [l, d]``; ``scratch`` from ``field_scratch(l, d)`` (nothing is allocated here).

    Used by ``_field_kernel`` (``InstanceField``, many instances per call); the whole compiled integrations of
    ``sim.compiled`` use its form for ``LANES`` instances side by side, ``lanes_field_``. Rows of alpha sum to
    1/sqrt(d) (the sqrt(n+1) of Z_i, as printed); softmax by log-sum-exp. The loops over j run along the rows of
    y^T (contiguous), so that Numba vectorises them, the exp too (``exp_nonpositive_``)."""
    columns, scores, bits, scale, work = scratch
    tokens, dim = y.shape
    heads = P.shape[0]
    root = np.sqrt(dim)
    for c in range(dim):  # y^T: row c holds coordinate c of every token
        for j in range(tokens):
            columns[c, j] = y[j, c]
    for i in range(tokens):
        count = i + 1 if causal else tokens
        for e in range(dim):
            work[2, e] = 0.0
        for eta in range(heads):
            for e in range(dim):  # (y_i^T P_eta)_e
                acc = 0.0
                for c in range(dim):
                    acc += y[i, c] * P[eta, c, e]
                work[0, e] = acc
            for j in range(count):  # s_ij = sum_e (y_i^T P_eta)_e y_je
                scores[j] = work[0, 0] * columns[0, j]
            for e in range(1, dim):
                for j in range(count):
                    scores[j] += work[0, e] * columns[e, j]
            largest = scores[0]
            for j in range(1, count):
                largest = max(largest, scores[j])
            for j in range(count):  # log-sum-exp: every exponent <= 0
                scores[j] -= largest
            exp_nonpositive_(scores, count, bits, scale)
            norm = 0.0
            for j in range(count):
                norm += scores[j]
            inverse = 1.0 / (norm * root)
            for e in range(dim):  # m_i^eta = sum_j alpha_ij^eta y_j
                acc = 0.0
                for j in range(count):
                    acc += scores[j] * columns[e, j]
                work[1, e] = acc * inverse
            for e in range(dim):  # U_eta m_i^eta
                acc = 0.0
                for c in range(dim):
                    acc += U[eta, e, c] * work[1, c]
                work[2, e] += acc
        radial = 0.0
        for e in range(dim):
            radial += y[i, e] * work[2, e]
        for e in range(dim):
            out[i, e] = work[2, e] - radial * y[i, e]


def field_scratch(tokens: int, dim: int):
    """The scratch arrays of ``instance_field_`` for ``l = tokens``, ``d = dim``: y^T ``[d, l]``, the scores
    ``[l]``, the exp's int64 bits ``[l]`` and the same memory as float64, and ``[3, d]`` for y_i^T P, m_i and f_i."""
    bits = np.empty(tokens, dtype=np.int64)
    return np.empty((dim, tokens)), np.empty(tokens), bits, bits.view(np.float64), np.empty((3, dim))


@njit(cache=True, nogil=True)
def _field_kernel(y, P, U, causal, out, scratch):
    """eq. 6 for every instance (``instance_field_`` on each): ``y : [b, l, d]``, ``P, U : [b, h, d, d]``, dy/dt
    written into ``out``.

    For systems of 2-10 tokens in dimension 2-4 the stacked numpy products spent their time in per-call overhead
    (0.7 ms an evaluation of 200 instances of 4 x 3 against a few microseconds of arithmetic)."""
    for b in range(y.shape[0]):
        instance_field_(y[b], P[b], U[b], causal, out[b], scratch)


@dataclass(frozen=True, eq=False)
class InstanceField:
    """dy_i/dt = P_{y_i}( sum_eta sum_j alpha_ij^eta U_eta y_j ) (eq. 6 on the sphere, W = I), per instance.

    Parameters
    ----------
    P, U : arrays, shape=[batch, h, d, d]: instance b's head matrices P_eta = Q_eta^T K_eta and U_eta (constant).
    causal : alpha_ij = 0 for j > i (Z_i sums over j <= i).

    ``field(t, y)`` with ``y : shape=[batch, l, d]`` returns dy/dt of that shape. Rows of alpha sum to 1/sqrt(d)
    (the sqrt(n+1) of Z_i, as printed); softmax by log-sum-exp.
    """

    P: np.ndarray
    U: np.ndarray
    causal: bool = False
    manifold: Ellipsoid = field(init=False, repr=False)

    def __post_init__(self) -> None:
        P, U = (np.ascontiguousarray(a, dtype=np.float64) for a in (self.P, self.U))
        if P.ndim != 4 or P.shape[-1] != P.shape[-2]:
            raise ValueError(f"P must have shape [batch, h, d, d]; got {P.shape}.")
        if U.shape != P.shape:
            raise ValueError(f"U must have the shape of P {P.shape}; got {U.shape}.")
        if not (np.all(np.isfinite(P)) and np.all(np.isfinite(U))):
            raise ValueError("P and U must be finite.")
        object.__setattr__(self, "P", P)
        object.__setattr__(self, "U", U)
        object.__setattr__(self, "causal", bool(self.causal))
        object.__setattr__(self, "manifold", Ellipsoid(None))

    @property
    def batch(self) -> int:
        return self.P.shape[0]

    def _check(self, y) -> np.ndarray:
        y = np.ascontiguousarray(y, dtype=np.float64)
        if y.ndim != 3 or y.shape[0] != self.batch or y.shape[2] != self.P.shape[-1]:
            raise ValueError(f"y must have shape [batch={self.batch}, l, d={self.P.shape[-1]}]; got {y.shape}.")
        return y

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        """dy/dt = P_{y_i} f_i, shape=[batch, l, d] (one fused pass, ``_field_kernel``)."""
        y = self._check(y)
        out = np.empty_like(y)
        _field_kernel(y, self.P, self.U, self.causal, out, field_scratch(y.shape[1], y.shape[2]))
        return out


#: Instances integrated side by side by ``lanes_field_`` and ``sim.compiled``: one AVX-512 register of float64
#: (two AVX2 registers); every array of the lanes' form has this last axis.
LANES = 8


@njit(cache=True, nogil=True)
def _lanes_scores(y, P, eta, causal, work, scores):
    """Each lane's s_ij = y_i^T P_eta y_j (j <= i when ``causal``) into ``scores : [l, l, LANES]``, with
    (y_i^T P_eta)_e in ``work[0] : [d, LANES]``; ``y : [l, d, LANES]``, ``P : [h, d, d, LANES]``."""
    tokens, dim, _ = y.shape
    for i in range(tokens):
        for e in range(dim):  # (y_i^T P_eta)_e
            for q in range(LANES):
                work[0, e, q] = y[i, 0, q] * P[eta, 0, e, q]
            for c in range(1, dim):
                for q in range(LANES):
                    work[0, e, q] += y[i, c, q] * P[eta, c, e, q]
        for j in range(i + 1 if causal else tokens):  # s_ij = sum_e (y_i^T P_eta)_e y_je
            for q in range(LANES):
                scores[i, j, q] = work[0, 0, q] * y[j, 0, q]
            for e in range(1, dim):
                for q in range(LANES):
                    scores[i, j, q] += work[0, e, q] * y[j, e, q]


@njit(cache=True, nogil=True)
def _lanes_softmax(scores, causal, root, bits, scale, rows):
    """Each lane's exp(s_ij - max_j s_ij) in place in ``scores : [l, l, LANES]`` (log-sum-exp) and
    1 / (Z_i sqrt(d)) into ``rows[1] : [l, LANES]`` (``root`` = sqrt(d)); ``rows[0]`` holds the row maxima."""
    tokens = scores.shape[0]
    for i in range(tokens):
        count = i + 1 if causal else tokens
        for q in range(LANES):
            rows[0, i, q] = scores[i, 0, q]
        for j in range(1, count):
            for q in range(LANES):
                rows[0, i, q] = max(rows[0, i, q], scores[i, j, q])
        for j in range(count):  # log-sum-exp: every exponent <= 0
            for q in range(LANES):
                scores[i, j, q] -= rows[0, i, q]
        exp_nonpositive_(scores[i].reshape(scores[i].size), count * LANES, bits, scale)
        for q in range(LANES):
            rows[1, i, q] = scores[i, 0, q]
        for j in range(1, count):
            for q in range(LANES):
                rows[1, i, q] += scores[i, j, q]
        for q in range(LANES):
            rows[1, i, q] = 1.0 / (rows[1, i, q] * root)


@njit(cache=True, nogil=True)
def _lanes_attend(y, U, eta, causal, identity, scores, rows, work, out):
    """Each lane's m_i^eta = sum_j alpha_ij^eta y_j (alpha = ``scores : [l, l, LANES]`` times ``rows[1]``) in
    ``work[1] : [d, LANES]``, then U_eta m_i^eta (m_i itself when ``identity``) added to ``out[i] : [d, LANES]``;
    ``y, out : [l, d, LANES]``, ``U : [h, d, d, LANES]``."""
    tokens, dim, _ = y.shape
    for i in range(tokens):
        count = i + 1 if causal else tokens
        for e in range(dim):  # m_i^eta = sum_j alpha_ij^eta y_j
            for q in range(LANES):
                work[1, e, q] = scores[i, 0, q] * y[0, e, q]
            for j in range(1, count):
                for q in range(LANES):
                    work[1, e, q] += scores[i, j, q] * y[j, e, q]
            for q in range(LANES):
                work[1, e, q] *= rows[1, i, q]
        if identity:
            for e in range(dim):
                for q in range(LANES):
                    out[i, e, q] += work[1, e, q]
        else:
            for e in range(dim):  # U_eta m_i^eta
                for q in range(LANES):
                    acc = U[eta, e, 0, q] * work[1, 0, q]
                    for c in range(1, dim):
                        acc += U[eta, e, c, q] * work[1, c, q]
                    out[i, e, q] += acc


@njit(cache=True, nogil=True)
def _lanes_tangent(y, rows, out):
    """Each lane's f_i - (y_i^T f_i) y_i in place of f = ``out : [l, d, LANES]`` (the projection P_{y_i}),
    y_i^T f_i kept in ``rows[2] : [l, LANES]``; ``y : [l, d, LANES]``."""
    tokens, dim, _ = y.shape
    for i in range(tokens):
        for q in range(LANES):
            rows[2, i, q] = y[i, 0, q] * out[i, 0, q]
        for e in range(1, dim):
            for q in range(LANES):
                rows[2, i, q] += y[i, e, q] * out[i, e, q]
        for e in range(dim):
            for q in range(LANES):
                out[i, e, q] = out[i, e, q] - rows[2, i, q] * y[i, e, q]


@njit(cache=True, nogil=True)
def lanes_field_(y, P, U, causal, identity, out, scratch):
    """eq. 6 on the sphere for ``LANES`` instances side by side, each with its own state and matrices:
    ``y : [l, d, LANES]``, ``P, U : [h, d, d, LANES]`` (the matrices at each lane's time); dy/dt written into
    ``out : [l, d, LANES]``; ``scratch`` from ``lanes_scratch(l, d)``; ``identity`` says every U_eta = I (its
    product skipped). Each lane does ``instance_field_``'s arithmetic for its instance; the loops run along the
    lanes, so that the compiler vectorises them over the instances (a system of 4 tokens in d = 3 leaves a loop
    over j too short to vectorise), and no sum is reordered (no fastmath flag here). One head at a time for all
    tokens (scores, softmax, attention summed into ``out`` in the order of the heads), then the projection."""
    scores, bits, scale, work, rows = scratch
    out[...] = 0.0
    for eta in range(P.shape[0]):
        _lanes_scores(y, P, eta, causal, work, scores)
        _lanes_softmax(scores, causal, np.sqrt(y.shape[1]), bits, scale, rows)
        _lanes_attend(y, U, eta, causal, identity, scores, rows, work, out)
    _lanes_tangent(y, rows, out)


def lanes_scratch(tokens: int, dim: int):
    """The scratch arrays of ``lanes_field_``: the scores ``[l, l, LANES]``, the exp's int64 bits ``[l LANES]``
    and the same memory as float64, ``[2, d, LANES]`` for y_i^T P and m_i, and ``[3, l, LANES]`` for each row's
    max, 1 / (Z_i sqrt(d)) and y_i^T f_i."""
    bits = np.empty(tokens * LANES, dtype=np.int64)
    return (np.empty((tokens, tokens, LANES)), bits, bits.view(np.float64), np.empty((2, dim, LANES)),
            np.empty((3, tokens, LANES)))
