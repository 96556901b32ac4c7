"""Instances built around a planted equilibrium: eq. 6 is linear in the value matrices.

For fixed heads P and a fixed state y (shape=[l, d]) the attention weights do not depend on U, so

    f_i(y) = P_{y_i} sum_eta U_eta z_i^eta,   z_i^eta = sum_j alpha_ij^eta y_j,

is linear in (U_1, ..., U_h). The U that make y an equilibrium form a linear subspace (with the symmetry of every
U_eta, when the claim asks for it, another linear condition); a drawn U0 is projected orthogonally onto it. For the
multi-head claim the first token is v: its equation makes v an eigenvector of sum_eta U_eta, and a drawn multiple
of v v^T added to every head before the projection makes it, in most draws, the top one. Stability is left to
the score and the optimiser (``sim.conjectures.seek``); the hypotheses are checked as for every instance.
"""

from __future__ import annotations

import numpy as np

from sim.conjectures.families import Shape, get_family, symmetrised, top_eigenpair

#: Largest |P_eta|_2 and the scale of the drawn U0 (as ``sim.conjectures.structured``'s).
P_MAX = 50.0
U_MAX = 2.0


def planted_parameters(shape: Shape) -> int:
    """Length of theta: P's directions and scales, U0's entries and v v^T weights, the planted state."""
    h, l, d = shape.heads, shape.tokens, shape.dim
    return 2 * h * d * d + 2 * h + l * d


def plantable(claim: str, shape: Shape) -> bool:
    """Whether the value entries outnumber the equations l (d-1) of an equilibrium, with one to spare for the
    top eigenvalue (h d (d+1)/2 entries of symmetric heads, h d^2 otherwise)."""
    h, l, d = shape.heads, shape.tokens, shape.dim
    free = h * d * (d + 1) // 2 if get_family(claim).value_rule == "symmetric" else h * d * d
    return free > l * (d - 1) + 1


def attention_sums(y: np.ndarray, P: np.ndarray, causal: bool) -> np.ndarray:
    """z_i^eta = sum_j alpha_ij^eta y_j for ``y : shape=[l, d]``, ``P : shape=[h, d, d]``; shape=[h, l, d]."""
    scores = np.einsum("id,hde,je->hij", y, P, y)
    scores = scores - scores.max(axis=-1, keepdims=True)  # the weights' ratios only; Z_i divides them out
    weights = np.exp(scores)
    if causal:
        weights = weights * np.tril(np.ones((len(y), len(y))))
    weights /= np.sqrt(float(y.shape[1])) * weights.sum(axis=-1, keepdims=True)
    return weights @ y


def plant(y: np.ndarray, P: np.ndarray, U0: np.ndarray, causal: bool, symmetric: bool) -> np.ndarray:
    """The U nearest ``U0 : shape=[h, d, d]`` (Frobenius) that makes ``y`` an equilibrium of (P, U) (and keeps every
    U_eta symmetric with ``symmetric``); shape=[h, d, d]."""
    heads, dim = P.shape[0], P.shape[1]
    projections = np.eye(dim) - y[:, :, None] * y[:, None, :]                     # P_{y_i}, [l, d, d]
    z = attention_sums(y, P, causal)
    rows = np.einsum("ica,hib->ichab", projections, z).reshape(y.size, heads * dim * dim)
    if symmetric:
        upper = [(a, b) for a in range(dim) for b in range(a + 1, dim)]
        skew = np.zeros((heads * len(upper), heads, dim, dim))
        for k, (eta, (a, b)) in enumerate((eta, pair) for eta in range(heads) for pair in upper):
            skew[k, eta, a, b], skew[k, eta, b, a] = 1.0, -1.0
        rows = np.concatenate([rows, skew.reshape(len(skew), -1)])
    u0 = U0.reshape(-1)
    correction = np.linalg.lstsq(rows, rows @ u0, rcond=None)[0]  # minimum norm: in the row space
    U = (u0 - correction).reshape(U0.shape)
    return symmetrised(U) if symmetric else U  # the projection is symmetric to ~1e-16; the hypothesis is exact


def decode_planted(claim: str, shape: Shape, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P, U, y*) from ``theta``: P_eta = c_eta G_eta / |G_eta|_2 (c in (0, 50)), y* the planted state (for the
    multi-head claim tokens 2..l reflected into v^T y_i > 0, v = y*_1), U the projection of U0 = S + w v v^T
    (S symmetrised for symmetric claims) onto the U making y* an equilibrium; y* is flipped to -y* (also an
    equilibrium: eq. 6 is odd) when v's sign convention (``top_eigenpair``) points the other way."""
    h, l, d = shape.heads, shape.tokens, shape.dim
    family = get_family(claim)
    parts = np.split(np.asarray(theta, float), np.cumsum([h * d * d, h, h * d * d, h]))
    rawP, zP, rawU, zw, rawy = parts[:5]
    P = rawP.reshape(h, d, d)
    P = P / np.linalg.norm(P, ord=2, axis=(1, 2), keepdims=True) * (P_MAX * 0.5 * (1 + np.tanh(zP)))[:, None, None]
    y = rawy.reshape(l, d) / np.linalg.norm(rawy.reshape(l, d), axis=1, keepdims=True)
    symmetric = family.value_rule == "symmetric"
    if symmetric:
        y[1:] *= np.where(y[1:] @ y[0] < 0, -1.0, 1.0)[:, None]
    S = rawU.reshape(h, d, d)
    S = 0.5 * (S + np.swapaxes(S, 1, 2)) if symmetric else S
    S = S / np.linalg.norm(S, ord=2, axis=(1, 2), keepdims=True) * (U_MAX / 2)
    U0 = S + (U_MAX * 0.5 * (1 + np.tanh(zw)))[:, None, None] * np.outer(y[0], y[0])
    U = plant(y, P, U0, family.causal, symmetric)
    ok, _, v = top_eigenpair(U.sum(axis=0))
    if ok and v @ y[0] < 0:
        y = -y
    return P, U, y
