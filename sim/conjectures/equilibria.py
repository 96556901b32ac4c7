"""Equilibria of eq. 6 for one instance, solved for directly: deflated Newton's method from many starts.

Newton runs on (S^{d-1})^l in tangent coordinates: at y the step solves J dx = -r, with r = B^T f(y) the field
in an orthonormal tangent basis B (a Householder reflection per token) and J = B^T Df(y) B the Riemannian
Jacobian (the Levi-Civita derivative of a tangent field on a sphere is the tangent part of its ambient derivative),
then y <- (y + B dx) / |y + B dx| token by token. Every start of a round runs at once, as one batch.

Deflation (P. E. Farrell, A. Birkisson, S. W. Funke, "Deflation techniques for finding distinct solutions of
nonlinear partial differential equations", SIAM J. Sci. Comput. 37 (2015) A2026-A2045): Newton on
G(y) = M(y) r(y), M(y) = prod_k (|y - y_k|^-p + shift) over the roots y_k found so far, whose step is the
undeflated step scaled by tau = 1 / (1 - grad log M . dx) (their eq. 3.5): G has no zero at a found root, so a
start that would fall back into y_k is sent elsewhere.

Jacobians are complex-step derivatives (Squire and Trapp, SIAM Rev. 40 (1998) 110): Df E = Im f(y + i h E) / h
with h = 1e-30 has no subtractive cancellation, so it is exact to float64 rounding like the forward-mode jets of
``sim.conjectures.jets``, and it is batched: 5x (2 tokens) to 60x (16 tokens, d = 8) faster than the jets, measured
here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Complex step: far below any scale of the field, so the truncation error h^2 |f'''| is nil in float64.
COMPLEX_STEP = 1e-30
#: A start has converged when the tangent field's largest entry is below this: 1e4 x the float64 rounding of
#: eq. 6 at |P| <= 50, |U| <= 2 (about 1e-14), so it is reached, and Newton's quadratic convergence from there
#: lands sim.conjectures.validated's refinement within one step of its own 1e-14.
CONVERGED = 1e-10
#: ... and when its Newton step (tangent coordinates) is below this: the quadratic phase. A degenerate root (a
#: singular Jacobian, e.g. a quintic zero where |f| < 1e-10 holds over 0.02 rad) converges only linearly, never gets
#: there within ``ITERATIONS``, and is left out: its spectrum holds 0, so it could not be certified anyway.
STEP_CONVERGED = 1e-9
#: Two roots are the same when no token differs by more than this: far above the 1e-12 spread of converged
#: Newton iterates, far below the distance between distinct equilibria of these instances (above 1e-4).
SAME_ROOT = 1e-7
#: Farrell et al.'s defaults: power p = 2 and shift 1 (the shift keeps G from vanishing far from all roots).
DEFLATION_POWER = 2.0
DEFLATION_SHIFT = 1.0
#: Largest tangent step of one token (radians, about): a full Newton step from far away may jump across the
#: sphere; capping it keeps the iteration a descent path (the cap is inactive near a root).
MAX_STEP = 0.5
#: Newton iterations per round: quadratic convergence needs about 6 from the basin, and starts that converge at
#: all do so within 20 in these instances; a start still wandering after that costs more than a fresh one.
ITERATIONS = 20


@dataclass(frozen=True)
class Instance:
    """One instance of eq. 6 with constant heads: ``P, U : shape=[h, d, d]``, causal or full attention."""

    P: np.ndarray
    U: np.ndarray
    causal: bool

    def __post_init__(self) -> None:
        P, U = np.asarray(self.P), np.asarray(self.U)
        if P.ndim != 3 or P.shape[-1] != P.shape[-2] or P.shape != U.shape:
            raise ValueError(f"P and U must both have shape [h, d, d]; got P {P.shape} and U {U.shape}")
        if not (np.all(np.isfinite(P)) and np.all(np.isfinite(U))):
            raise ValueError("P and U must be finite")


def field(y: np.ndarray, instance: Instance) -> np.ndarray:
    """Eq. 6 (W = I) at ``y : shape=[..., l, d]``, real or complex; shape=[..., l, d].

    Written for batches (``sim.field.eq6.eq6`` is the one-state oracle; a test checks they agree). Softmax is not
    shifted by its maximum, so that the complex step stays analytic: on the sphere |y_i^T P y_j| <= |P|_2 <= 50, far
    from exp's overflow."""
    P, U = instance.P, instance.U
    tokens, dim = y.shape[-2:]
    scores = (y[..., None, :, :] @ P) @ np.swapaxes(y, -1, -2)[..., None, :, :]   # [..., h, l, l]: y_i^T P y_j
    weights = np.exp(scores)
    if instance.causal:
        weights = weights * np.tril(np.ones((tokens, tokens)))
    weights = weights / (np.sqrt(float(dim)) * weights.sum(axis=-1, keepdims=True))
    update = (weights @ (y[..., None, :, :] @ np.swapaxes(U, -1, -2))).sum(axis=-3)  # sum_eta sum_j alpha U y_j
    radial = np.sum(y * update, axis=-1, keepdims=True)
    return update - radial * y


def tangent_bases(y: np.ndarray) -> np.ndarray:
    """Orthonormal bases of the tangent spaces, shape=[..., l, d, d-1] for unit tokens ``y : shape=[..., l, d]``:
    the last d-1 columns of the Householder reflection that maps e_1 to -sign(y_1) y."""
    sign = np.where(y[..., :1] >= 0, 1.0, -1.0)
    w = y.copy()
    w[..., :1] += sign
    dim = y.shape[-1]
    reflection = np.eye(dim) - 2.0 * w[..., :, None] * w[..., None, :] / np.sum(w * w, axis=-1)[..., None, None]
    return reflection[..., :, 1:]


def _directions(bases: np.ndarray) -> np.ndarray:
    """The tangent basis vectors as states: shape=[..., m, l, d], m = l (d-1), token i's k-th vector in row i."""
    *batch, tokens, dim, free = bases.shape
    directions = np.zeros((*batch, tokens, free, tokens, dim))
    for i in range(tokens):
        directions[..., i, :, i, :] = np.swapaxes(bases[..., i, :, :], -1, -2)
    return directions.reshape(*batch, tokens * free, tokens, dim)


def residual_and_jacobian(y: np.ndarray, instance: Instance) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(r : shape=[..., m], J : shape=[..., m, m], B : shape=[..., l, d, d-1]) at ``y : shape=[..., l, d]``:
    the field and its Riemannian Jacobian in the tangent bases B (complex step, see the module docstring)."""
    bases = tangent_bases(y)
    directions = _directions(bases)                                             # [..., m, l, d]
    values = field(y[..., None, :, :] + 1j * COMPLEX_STEP * directions, instance)
    along = values.imag / COMPLEX_STEP                                           # Df E_k, [..., m, l, d]
    flat_bases = directions.reshape(*directions.shape[:-2], -1)                  # rows: B's columns, [..., m, l d]
    r = flat_bases @ values.real[..., 0, :, :].reshape(*y.shape[:-2], -1, 1)
    J = flat_bases @ np.swapaxes(along.reshape(*along.shape[:-2], -1), -1, -2)
    return r[..., 0], J, bases


def tangent_spectrum(y: np.ndarray, instance: Instance) -> np.ndarray:
    """Eigenvalues of the linearisation at equilibria ``y : shape=[..., l, d]``, shape=[..., m] (float64)."""
    return np.linalg.eigvals(residual_and_jacobian(y, instance)[1])


def _solve(J: np.ndarray, r: np.ndarray) -> np.ndarray:
    """dx with J dx = -r per start (least squares where J is singular)."""
    try:
        return np.linalg.solve(J, -r[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return -(np.linalg.pinv(J) @ r[..., None])[..., 0]


def _deflation_factor(y, step, bases, roots) -> np.ndarray:
    """Farrell et al.'s tau = 1 / (1 - grad log M . dx) per start, ``roots : shape=[K, l, d]`` found so far."""
    if len(roots) == 0:
        return np.ones(len(y))
    difference = y[:, None] - roots[None]                                    # [S, K, l, d]
    # A start exactly at a found root has r = 0 and stops before this step matters; the floor only keeps the
    # powers finite there.
    distance = np.maximum(np.sqrt(np.sum(difference**2, axis=(-1, -2))), 1e-12)[..., None, None]
    power = DEFLATION_POWER
    gradient = np.sum(-power * distance ** (-power - 2) * difference / (distance ** -power + DEFLATION_SHIFT),
                      axis=1)                                                # ambient grad log M, [S, l, d]
    tangent = np.einsum("sld,sldk->slk", gradient, bases).reshape(len(y), -1)
    return 1.0 / (1.0 - np.sum(tangent * step, axis=-1))


def newton(instance: Instance, starts: np.ndarray, roots: np.ndarray | None = None,
           iterations: int = ITERATIONS) -> tuple[np.ndarray, np.ndarray]:
    """Deflated Newton from ``starts : shape=[S, l, d]`` (deflating ``roots : shape=[K, l, d]``, none by default);
    returns (end points : shape=[S, l, d], converged : shape=[S] bool)."""
    y = starts / np.linalg.norm(starts, axis=-1, keepdims=True)
    roots = np.zeros((0, *y.shape[1:])) if roots is None else np.asarray(roots)
    active = np.ones(len(y), dtype=bool)
    converged = np.zeros(len(y), dtype=bool)
    for _ in range(iterations):
        if not np.any(active):
            break
        r, J, bases = residual_and_jacobian(y[active], instance)
        step = _solve(J, r)
        done = (np.max(np.abs(r), axis=-1) < CONVERGED) & (np.max(np.abs(step), axis=-1) < STEP_CONVERGED)
        step = step * _deflation_factor(y[active], step, bases, roots)[:, None]
        tokens_step = np.linalg.norm(step.reshape(len(step), y.shape[1], -1), axis=-1).max(axis=-1)
        step *= np.minimum(1.0, MAX_STEP / np.maximum(tokens_step, 1e-300))[:, None]
        moved = y[active] + np.einsum("sldk,slk->sld", bases, step.reshape(len(step), y.shape[1], -1))
        moved /= np.linalg.norm(moved, axis=-1, keepdims=True)
        index = np.flatnonzero(active)
        y[index[~done]] = moved[~done]
        converged[index[done]] = True
        active[index[done]] = False
        active &= np.all(np.isfinite(y), axis=(-1, -2))
    return y, converged


def distinct(candidates: np.ndarray, known: np.ndarray) -> np.ndarray:
    """The candidates (shape=[S, l, d]) that differ from every known root and from each other, shape=[N, l, d]."""
    kept = list(known)
    new = []
    for y in candidates:
        if all(np.max(np.linalg.norm(y - other, axis=-1)) > SAME_ROOT for other in kept):
            kept.append(y)
            new.append(y)
    return np.array(new).reshape(-1, *candidates.shape[1:])


def find_equilibria(instance: Instance, starts: np.ndarray, *, rounds: int = 2, deflate: bool = True,
                    known: np.ndarray | None = None) -> np.ndarray:
    """Distinct equilibria reached from ``starts : shape=[S, l, d]``: ``rounds`` passes of the starts, each pass
    deflating every root found before it (``deflate``); ``known`` roots (shape=[K, l, d]) are deflated from the
    first pass and not returned again. Returns shape=[N, l, d]."""
    if rounds < 1:
        raise ValueError(f"rounds={rounds!r} must be a positive number of passes.")
    known = np.zeros((0, *starts.shape[1:])) if known is None else np.asarray(known)
    found = np.zeros((0, *starts.shape[1:]))
    for _ in range(rounds):
        deflated = np.concatenate([known, found]) if deflate else None
        ends, converged = newton(instance, starts, deflated)
        found = np.concatenate([found, distinct(ends[converged], np.concatenate([known, found]))])
    return found
