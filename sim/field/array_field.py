"""Eq. 6 on the sphere in any NumPy-like array library (PyTorch, JAX): the form the peers' solvers integrate.

    dy_i/dt = P_{y_i} ( sum_eta sum_j alpha_ij^eta U_eta y_j ),  P_y = I - y y^T,
    alpha_ij^eta = softmax_j(y_i^T P_eta(t) y_j) / sqrt(d)     (j <= i when causal)

batched over instances with their own heads: ``P, U : [b, h, d, d]``, ``y : [b, l, d]``. ``P`` may be modulated,
P_eta(t) = diag(D_eta(t)) P'_eta with D_eta(t)_c = amplitude cos(omega t + phase) (sin where ``sine``), the arrays
of ``sim.figures.scenarios.CosineDiagonal`` stacked over the heads, each ``[h, d]``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


def array_field(xp: Any, softmax: Callable, P, U, causal: bool, modulation: tuple | None = None) -> Callable:
    """``field(t, y)`` of eq. 6 in the array library ``xp`` (``torch`` or ``jax.numpy``: its ``einsum``, ``where``,
    ``tril``, ``ones``, ``sin``, ``cos``); ``softmax(scores)`` normalises the last axis. ``P, U`` and the
    ``modulation`` arrays are the library's arrays, shapes as in the module docstring."""
    root = float(np.sqrt(P.shape[-1]))
    masks: dict[int, Any] = {}  # tokens -> the causal mask [l, l] (j <= i), made once per length

    def mask(y):
        tokens = y.shape[-2]
        if tokens not in masks:
            masks[tokens] = xp.tril(xp.ones((tokens, tokens), dtype=y.dtype)) > 0
        return masks[tokens]

    def field(t, y):
        if modulation is None:
            P_t = P
        else:
            amplitude, omega, phase, sine = modulation
            argument = omega * t + phase
            D = amplitude * xp.where(sine, xp.sin(argument), xp.cos(argument))  # [h, d]
            P_t = D[None, :, :, None] * P
        scores = xp.einsum("bic,bhce,bje->bhij", y, P_t, y)  # y_i^T P_eta y_j
        if causal:
            scores = xp.where(mask(y), scores, -np.inf)
        weights = softmax(scores) / root
        mixed = xp.einsum("bhij,bjc->bhic", weights, y)  # m_i^eta = sum_j alpha_ij^eta y_j
        total = xp.einsum("bhec,bhic->bie", U, mixed)  # sum_eta U_eta m_i^eta (two products: one three-way einsum
        # is contracted by torch without reordering, through a [b, h, d, d, l, l] intermediate, 1000x slower at l = 50)
        return total - (y * total).sum(-1)[..., None] * y

    return field
