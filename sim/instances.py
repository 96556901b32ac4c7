"""Many small systems of eq. 6 at once, each with its own matrices: the field the conjecture searches integrate.

``sim.AttentionField`` holds one set of matrices for a whole batch of states; a search integrates thousands of
different instances (2-10 tokens in dimension 2-4), so :class:`InstanceField` takes one set per instance and
evaluates all of them in a few batched products. It is handed to ``sim.solve`` like any field (Dopri5, one step
size for the batch, every step retracted to the sphere).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .manifold import Ellipsoid


@njit(cache=True, nogil=True)
def instance_field_(y, P, U, causal, out, scores, work):
    """eq. 6 on the sphere for ONE instance, the suite's compiled form of it: ``y : [l, d]``, ``P, U : [h, d, d]``
    (the matrices at the time of the evaluation), dy_i/dt = P_{y_i}(sum_eta sum_j alpha_ij^eta U_eta y_j) written
    into ``out : [l, d]``; ``scores : [l]`` and ``work : [3, d]`` are scratch (nothing is allocated).

    Used by ``_field_kernel`` (``InstanceField``, many instances per call) and by the whole compiled integrations
    of ``sim.compiled`` (one instance at a time, each with its own step size). Rows of alpha sum to 1/sqrt(d) (the
    sqrt(n+1) of Z_i, as printed); softmax by log-sum-exp."""
    tokens, dim = y.shape
    heads = P.shape[0]
    root = np.sqrt(dim)
    projected, mixed, total = work[0], work[1], work[2]
    for i in range(tokens):
        count = i + 1 if causal else tokens
        for e in range(dim):
            total[e] = 0.0
        for eta in range(heads):
            for e in range(dim):  # (y_i^T P_eta)_e
                acc = 0.0
                for c in range(dim):
                    acc += y[i, c] * P[eta, c, e]
                projected[e] = acc
            largest = -np.inf
            for j in range(count):
                acc = 0.0
                for e in range(dim):
                    acc += projected[e] * y[j, e]
                scores[j] = acc
                if acc > largest:
                    largest = acc
            norm = 0.0
            for j in range(count):  # log-sum-exp: every exponent <= 0
                scores[j] = np.exp(scores[j] - largest)
                norm += scores[j]
            norm *= root
            for e in range(dim):
                acc = 0.0
                for j in range(count):
                    acc += scores[j] * y[j, e]
                mixed[e] = acc / norm
            for e in range(dim):  # U_eta m_i^eta
                acc = 0.0
                for c in range(dim):
                    acc += U[eta, e, c] * mixed[c]
                total[e] += acc
        radial = 0.0
        for e in range(dim):
            radial += y[i, e] * total[e]
        for e in range(dim):
            out[i, e] = total[e] - radial * y[i, e]


@njit(cache=True, nogil=True)
def _field_kernel(y, P, U, causal, out):
    """eq. 6 for every instance (``instance_field_`` on each): ``y : [b, l, d]``, ``P, U : [b, h, d, d]``, dy/dt
    written into ``out``.

    For systems of 2-10 tokens in dimension 2-4 the stacked numpy products spent their time in per-call overhead
    (0.7 ms an evaluation of 200 instances of 4 x 3 against a few microseconds of arithmetic)."""
    scores = np.empty(y.shape[1])
    work = np.empty((3, y.shape[2]))
    for b in range(y.shape[0]):
        instance_field_(y[b], P[b], U[b], causal, out[b], scores, work)


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
        _field_kernel(y, self.P, self.U, self.causal, out)
        return out
