"""Eq. 6 on the sphere in any NumPy-like array library (PyTorch, JAX): the form the peers' solvers integrate.

    dy_i/dt = P_{y_i} ( sum_eta sum_j alpha_ij^eta U_eta y_j ),  P_y = I - y y^T,
    alpha_ij^eta = softmax_j(y_i^T P_eta(t) y_j) / sqrt(d)     (j <= i when causal)

batched over instances with their own heads: ``P, U : [b, h, d, d]``, ``y : [b, l, d]``, ``t`` a scalar or one time
per instance ``[b]``. ``P`` may be modulated,
P_eta(t) = diag(D_eta(t)) P'_eta with D_eta(t)_c = amplitude cos(omega t + phase) (sin where ``sine``), the arrays
of ``sim.figures.scenarios.CosineDiagonal`` stacked over the heads, each ``[h, d]``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


def array_field(xp: Any, softmax: Callable, P, U, causal: bool, modulation: tuple | None = None, *,
                tokens: int | None = None) -> Callable:
    """``field(t, y)`` of eq. 6 in the array library ``xp`` (``torch`` or ``jax.numpy``: its ``einsum``, ``where``,
    ``tril``, ``ones``, ``ones_like``, ``sin``, ``cos``); ``softmax(scores)`` normalises the last axis. ``P, U`` and
    the ``modulation`` arrays are the library's arrays, shapes as in the module docstring.

    The causal mask (j <= i) is made here, once, on P's device, when ``tokens`` is given; otherwise at every call
    from the scores. It is never made in one call and kept for the next: under ``jax.jit`` (and inside diffrax,
    which traces the field several times) an array made during a call is that trace's tracer, and reusing it in a
    later trace is a leaked tracer (with JAX 0.10 inside diffrax: "Computation compiled for 14 inputs but called
    with 2")."""
    root = float(np.sqrt(P.shape[-1]))
    fixed = None if tokens is None or not causal else \
        xp.tril(xp.ones((tokens, tokens), dtype=P.dtype, device=P.device)) > 0

    def mask(scores):
        if fixed is not None and fixed.shape[-1] == scores.shape[-1]:
            return fixed
        return xp.tril(xp.ones_like(scores[0, 0])) > 0

    def field(t, y):
        if modulation is None:
            P_t = P
        else:
            amplitude, omega, phase, sine = modulation
            if getattr(t, "ndim", 0) == 1:  # one time per instance [b] (torchode's instances, on their own steps)
                t = t[:, None, None]
            argument = omega * t + phase
            D = amplitude * xp.where(sine, xp.sin(argument), xp.cos(argument))  # [h, d], or [b, h, d]
            P_t = D[..., None] * P
        scores = xp.einsum("bic,bhce,bje->bhij", y, P_t, y)  # y_i^T P_eta y_j
        if causal:
            scores = xp.where(mask(scores), scores, -np.inf)
        weights = softmax(scores) / root
        mixed = xp.einsum("bhij,bjc->bhic", weights, y)  # m_i^eta = sum_j alpha_ij^eta y_j
        total = xp.einsum("bhec,bhic->bie", U, mixed)  # sum_eta U_eta m_i^eta (two products: one three-way einsum
        # is contracted by torch without reordering, through a [b, h, d, d, l, l] intermediate, 1000x slower at l = 50)
        return total - (y * total).sum(-1)[..., None] * y

    return field
