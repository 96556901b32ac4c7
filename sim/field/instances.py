"""Many small systems of eq. 6 at once, each with its own matrices: the field the conjecture searches integrate.

``sim.AttentionField`` holds one set of matrices for a whole batch of states; a search integrates thousands of
different instances (2-10 tokens in dimension 2-4), so :class:`InstanceField` takes one set per instance. Its one
compiled form of eq. 6 is ``lanes_field_``: ``LANES`` instances side by side, each with its own state and
matrices, the form ``sim.solvers.compiled``'s integrations run. ``InstanceField`` evaluates a batch through it, a group
of ``LANES`` at a time, and is handed to ``sim.solve`` like any field (Dopri5, one step size for the batch, every step
retracted to the sphere). ``sim.AttentionField`` is the reference; the tests hold the two equal to rounding.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from sim.field.kernels import exp_nonpositive_
from sim.field.manifold import Ellipsoid


#: Instances integrated side by side by ``lanes_field_`` and ``sim.solvers.compiled``: one AVX-512 register of float64
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
def _lanes_attend(y, U, eta, causal, identity, scratch, out):
    """Each lane's m_i^eta = sum_j alpha_ij^eta y_j (alpha = the scores ``[l, l, LANES]`` times ``rows[1]``, both
    in ``scratch``) in ``work[1] : [d, LANES]``, then U_eta m_i^eta (m_i itself when ``identity``) added to
    ``out[i] : [d, LANES]``; ``y, out : [l, d, LANES]``, ``U : [h, d, d, LANES]``."""
    scores, _, _, work, rows = scratch
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
    product skipped). Each lane runs eq. 6 for its instance; the loops run along the
    lanes, so that the compiler vectorises them over the instances (a system of 4 tokens in d = 3 leaves a loop
    over j too short to vectorise), and no sum is reordered (no fastmath flag here). One head at a time for all
    tokens (scores, softmax, attention summed into ``out`` in the order of the heads), then the projection."""
    scores, bits, scale, work, rows = scratch
    out[...] = 0.0
    for eta in range(P.shape[0]):
        _lanes_scores(y, P, eta, causal, work, scores)
        _lanes_softmax(scores, causal, np.sqrt(y.shape[1]), bits, scale, rows)
        _lanes_attend(y, U, eta, causal, identity, scratch, out)
    _lanes_tangent(y, rows, out)


def lanes_scratch(tokens: int, dim: int):
    """The scratch arrays of ``lanes_field_``: the scores ``[l, l, LANES]``, the exp's int64 bits ``[l LANES]``
    and the same memory as float64, ``[2, d, LANES]`` for y_i^T P and m_i, and ``[3, l, LANES]`` for each row's
    max, 1 / (Z_i sqrt(d)) and y_i^T f_i."""
    bits = np.empty(tokens * LANES, dtype=np.int64)
    return (np.empty((tokens, tokens, LANES)), bits, bits.view(np.float64), np.empty((2, dim, LANES)),
            np.empty((3, tokens, LANES)))


@njit(cache=True, nogil=True)
def _instances_field(y, P, U, causal, identity, out, lanes, scratch):
    """eq. 6 for every instance through ``lanes_field_``, ``LANES`` instances at a time: ``y, out : [b, l, d]``,
    ``P, U : [b, h, d, d]``; ``lanes`` from ``_lanes_arrays`` holds one group in the lanes' layout (the last
    group's free lanes repeat its last instance, whose result is not copied out)."""
    lanes_y, lanes_P, lanes_U, lanes_out = lanes
    batch, tokens, dim = y.shape
    heads = P.shape[1]
    for start in range(0, batch, LANES):
        for q in range(LANES):
            b = min(start + q, batch - 1)
            for i in range(tokens):
                for e in range(dim):
                    lanes_y[i, e, q] = y[b, i, e]
            for eta in range(heads):
                for c in range(dim):
                    for e in range(dim):
                        lanes_P[eta, c, e, q] = P[b, eta, c, e]
                        lanes_U[eta, c, e, q] = U[b, eta, c, e]
        lanes_field_(lanes_y, lanes_P, lanes_U, causal, identity, lanes_out, scratch)
        for q in range(min(LANES, batch - start)):
            for i in range(tokens):
                for e in range(dim):
                    out[start + q, i, e] = lanes_out[i, e, q]


def _lanes_arrays(tokens: int, dim: int, heads: int):
    """One group of ``LANES`` instances in the lanes' layout: y and dy/dt ``[l, d, LANES]``, P and U
    ``[h, d, d, LANES]``."""
    return (np.empty((tokens, dim, LANES)), np.empty((heads, dim, dim, LANES)), np.empty((heads, dim, dim, LANES)),
            np.empty((tokens, dim, LANES)))


@dataclass(frozen=True, eq=False)
class InstanceField:
    """dy_i/dt = P_{y_i}( sum_eta sum_j alpha_ij^eta U_eta y_j ) (eq. 6 on the sphere, W = I), per instance.

    Parameters
    ----------
    P, U : arrays, shape=[batch, h, d, d]
        Instance b's head matrices P_eta = Q_eta^T K_eta and U_eta (constant).
    causal : bool
        alpha_ij = 0 for j > i (Z_i sums over j <= i).

    Notes
    -----
    ``field(t, y)`` with ``y : shape=[batch, l, d]`` returns dy/dt of that shape. Rows of alpha sum to 1/sqrt(d)
    (the sqrt(n+1) of Z_i, as printed); softmax by log-sum-exp.
    """

    P: np.ndarray
    U: np.ndarray
    causal: bool = False
    manifold: Ellipsoid = field(init=False, repr=False)
    identity: bool = field(init=False, repr=False)
    _threads: threading.local = field(init=False, repr=False)  # each thread's arrays for one [l, d]

    def __post_init__(self) -> None:
        # writeable C-contiguous float64: a read-only array (e.g. one a Dask worker received) is another type to
        # Numba, and each type compiles the whole integration anew (about 17 s, sim.solvers.compiled)
        P, U = (np.require(a, dtype=np.float64, requirements=["C", "W"]) for a in (self.P, self.U))
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
        object.__setattr__(self, "identity", bool(np.all(U == np.eye(P.shape[-1]))))  # U_eta = I: no product
        object.__setattr__(self, "_threads", threading.local())

    @property
    def batch(self) -> int:
        return self.P.shape[0]

    def _check(self, y) -> np.ndarray:
        y = np.ascontiguousarray(y, dtype=np.float64)
        if y.ndim != 3 or y.shape[0] != self.batch or y.shape[2] != self.P.shape[-1]:
            raise ValueError(f"y must have shape [batch={self.batch}, l, d={self.P.shape[-1]}]; got {y.shape}.")
        return y

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        """dy/dt = P_{y_i} f_i, shape=[batch, l, d] (``lanes_field_``, ``LANES`` instances at a time)."""
        y = self._check(y)
        out = np.empty_like(y)
        _instances_field(y, self.P, self.U, self.causal, self.identity, out, *self._arrays(*y.shape[1:]))
        return out

    def _arrays(self, tokens: int, dim: int):
        """This thread's lane arrays and scratch for states ``[l, d]``, reused by its next call (a solve calls the
        field thousands of times: allocating them each time made a one-instance call twice as slow, measured)."""
        kept = self._threads.__dict__
        if kept.get("shape") != (tokens, dim):
            kept["shape"] = (tokens, dim)
            kept["arrays"] = _lanes_arrays(tokens, dim, self.P.shape[1]), lanes_scratch(tokens, dim)
        return kept["arrays"]
