"""Many small systems of eq. 6 at once, each with its own matrices: the field the conjecture searches integrate.

``sim.AttentionField`` holds one set of matrices for a whole batch of states; a search integrates thousands of
different instances (2-10 tokens in dimension 2-4), so :class:`InstanceField` takes one set per instance and
evaluates all of them in a few batched products. It is handed to ``sim.solve`` like any field (Dopri5, one step
size for the batch, every step retracted to the sphere).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .manifold import Ellipsoid


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

    def attention_update(self, t: float, y: np.ndarray) -> np.ndarray:
        """f_i = sum_eta sum_j alpha_ij^eta U_eta y_j, shape=[batch, l, d] (before the tangent projection)."""
        y = np.asarray(y, dtype=np.float64)
        if y.ndim != 3 or y.shape[0] != self.batch or y.shape[2] != self.P.shape[-1]:
            raise ValueError(f"y must have shape [batch={self.batch}, l, d={self.P.shape[-1]}]; got {y.shape}.")
        tokens, dim = y.shape[1], y.shape[2]
        # scores[b, eta, i, j] = y_i^T P_eta y_j, as stacked matrix products (einsum's path search cost more than the
        # products themselves at these sizes)
        stacked = y[:, None]  # [b, 1, l, d]
        scores = (stacked @ self.P) @ np.swapaxes(stacked, -1, -2)
        if self.causal:
            scores[..., ~np.tril(np.ones((tokens, tokens), dtype=bool))] = -np.inf
        scores -= scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores, out=scores)
        weights /= weights.sum(axis=-1, keepdims=True) * np.sqrt(dim)
        mixed = weights @ stacked  # sum_j alpha_ij^eta y_j, [b, h, l, d]
        return (mixed @ np.swapaxes(self.U, -1, -2)).sum(axis=1)  # sum_eta U_eta m_i^eta

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        f = self.attention_update(t, y)
        return f - np.sum(f * y, axis=-1, keepdims=True) * y
