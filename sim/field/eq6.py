"""Eq. 6 written plainly once, for any number type (the oracle of the validated certificates).

    dy_i/dt = P_{y_i} ( sum_eta sum_j alpha_ij^eta U_eta y_j ),   P_y = I - y y^T W,
    alpha_ij^eta = exp(y_i^T P_eta y_j) / Z_i^eta,   Z_i^eta = sqrt(d) sum_j exp(y_i^T P_eta y_j)

(ICML eq. 6 with the attention of SPEC section 1; causal: j <= i only). The entries may be floats, python-flint
``arb`` balls or :class:`sim.conjectures.jets.Jet` numbers: the function uses only +, -, *, /, ``np.exp`` and
``np.sqrt``, so the same lines give a float64 value, a rigorous enclosure, or an enclosure of the Jacobian. Softmax is
not shifted by its row maximum: every caller keeps |y_i^T P y_j| <= |P|_2 on the sphere, and the certificates' |P|_2
stay far below float64's exp overflow at 709.
"""

from __future__ import annotations

import numpy as np


def eq6(y: np.ndarray, P: np.ndarray, U: np.ndarray, causal: bool, W: np.ndarray | None = None) -> np.ndarray:
    """The vector field at ``y : shape=[l, d]`` for constant heads ``P, U : shape=[h, d, d]``; shape=[l, d].

    ``W`` (shape=[d, d], default I) is the ellipsoid's matrix in the tangent projection P_y = I - y y^T W."""
    tokens, dim = y.shape
    scores = np.einsum("id,hde,je->hij", y, P, y)                     # y_i^T P_eta y_j
    weights = np.exp(scores)
    if causal:
        weights = weights * np.tril(np.ones((tokens, tokens)))        # alpha_ij = 0 for j > i
    normaliser = np.sqrt(float(dim)) * weights.sum(axis=-1, keepdims=True)   # Z_i^eta
    update = np.einsum("hij,hde,je->id", weights / normaliser, U, y)  # sum_eta sum_j alpha_ij^eta U_eta y_j
    metric_y = y if W is None else y @ np.asarray(W).T                # W y_i
    radial = np.sum(metric_y * update, axis=-1, keepdims=True)        # y_i^T W (update)_i
    return update - radial * y
