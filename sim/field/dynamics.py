"""The attention dynamics: the vector field of eq. 6, the discrete model of eq. 1, and E of eq. 9.

Notation of the ICML paper (SPEC section 1): tokens y = (y_1..y_l), y_i in E_W subset R^d, d = n + 1;
heads eta = 1..h with P_eta(t) = Q_eta^T K_eta and value matrices U_eta(t);

    alpha_ij^eta = exp(y_i^T P_eta y_j) / Z_i^eta,   Z_i^eta = sqrt(n+1) sum_j exp(y_i^T P_eta y_j)

(the sqrt(n+1) multiplies the normaliser as printed, so the rows of alpha sum to 1/sqrt(d)); causal
attention keeps j <= i only. Every function is batched: ``y : shape=[..., l, d]``.
"""

from __future__ import annotations

from typing import Callable, Sequence, Union

import numpy as np

from sim.field.batching import groups_of_at_most
from sim.field.kernels import normalised_rows, shift_rows_, summed_normalised_rows
from sim.field.manifold import ZERO_NORM, Ellipsoid, as_finite_array
from sim.field.products import check_out, matmul
from sim.field.workspace import FieldWorkspace

#: ``AttentionField`` evaluates groups of instances of at most about this much state at a time (Fig. 4: 10 of its
#: trajectories, a solver's part, ``sim.solvers.stepper.PART_BYTES``): a group's temporaries, about 3 times its
#: state, then stay in the cache between the products. Measured on Fig. 4's solve: groups of 4 MiB 2-4% faster than
#: the whole batch at once (chunks of 10 and 25 trajectories alike); 2026-11-27, parts and groups of 2 MiB 3%
#: faster than parts of 8 MiB in groups of 4 MiB (3.68-3.71 against 3.80-3.83 s), parts of 8 MiB in groups of 2
#: MiB between (3.75 s).
GROUP_BYTES = 2 << 20

#: A head's matrix: a constant (d, d) array or a callable ``t -> (d, d) array``.
Matrix = Union[np.ndarray, Callable[[float], np.ndarray]]


def _as_batch(array: np.ndarray, trailing: int) -> np.ndarray:
    """``array`` (C-contiguous, shape=[..., *trailing axes]) with its leading axes as one: the kernels' layout
    [batch, ...] (a view, so that a kernel writing into it writes into ``array``)."""
    return array.reshape(-1, *array.shape[array.ndim - trailing:])


def _check_square(name: str, value, dim: int | None) -> np.ndarray:
    matrix = as_finite_array(name, value)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"{name} must be a square (d, d) matrix; got shape {matrix.shape}.")
    if dim is not None and matrix.shape[0] != dim:
        raise ValueError(f"{name} must have shape ({dim}, {dim}) like the other matrices; got {matrix.shape}.")
    return matrix


def _check_head_matrices(name: str, matrices, dim: int | None) -> tuple[tuple[Matrix, ...], int | None]:
    """Validate one matrix per head (constant (d, d) arrays or callables of t); return them and d, fixed by the
    first constant matrix when ``dim`` is None."""
    checked = []
    for eta, matrix in enumerate(matrices, start=1):
        if not callable(matrix):
            matrix = _check_square(f"{name}[{eta - 1}] (head {eta})", matrix, dim)
            dim = matrix.shape[0]
        checked.append(matrix)
    return tuple(checked), dim


class AttentionField:
    """The vector field of eq. 6: dy_i/dt = P_{y_i}( sum_eta sum_j alpha_ij^eta(t, y) U_eta(t) y_j ).

    Parameters
    ----------
    P : sequence of h matrices, each shape=[d, d] or a callable t -> shape=[d, d]
        (a function of t alone: the field reuses the value of the last t it was called at).
        P_eta(t) = Q_eta(t)^T K_eta(t), one per head.
    U : sequence of h matrices (constant or callables), or None
        The value matrices U_eta(t); None means U_eta = I for every head.
    W : array, shape=[d, d], or None
        The SPD matrix of the ellipsoid E_W; None is the sphere.
    causal : bool
        Auto-regressive attention: alpha_ij = 0 for j > i, Z_i sums over j <= i.

    Notes
    -----
    Calling the field, ``field(t, y)`` with ``y : shape=[..., l, d]``, returns dy/dt of the same shape.
    The formula is evaluated as printed at any y (on E_W it is tangent to E_W).

    The field holds the mathematics, set once when it is made; its evaluations keep their arrays in ``workspace``
    (``sim.field.workspace.FieldWorkspace``: per-thread buffers, P(t) of the last times). Eq. 6's pieces are
    methods, the softmax (``_softmax``) and the tangent projection (``_project_``), so that a negative
    control replaces one piece of this one implementation.
    """

    def __init__(self, P: Sequence[Matrix], U: Sequence[Matrix] | None = None, W: np.ndarray | None = None,
                 causal: bool = False) -> None:
        if callable(P) or isinstance(P, np.ndarray) and P.ndim == 2:
            raise TypeError("P must be a sequence of h head matrices (arrays or callables of t), e.g. P=(P1, P2); "
                            "got a single matrix.")
        heads = tuple(P)
        if not heads:
            raise ValueError("P must hold at least one head (h >= 1).")
        self.manifold = Ellipsoid(W)
        self.P, dim = _check_head_matrices("P", heads, self.manifold.dim)
        self.U = None
        if U is not None:
            if callable(U) or isinstance(U, np.ndarray) and U.ndim == 2:
                raise TypeError("U must be a sequence of h value matrices (arrays or callables of t), or None "
                                "for U = I; got a single matrix.")
            if len(tuple(U)) != len(heads):
                raise ValueError(f"U must have one matrix per head: len(U) = {len(tuple(U))} but len(P) = "
                                 f"{len(heads)}.")
            self.U, dim = _check_head_matrices("U", tuple(U), dim)
        self.W = None if W is None else np.asarray(W, dtype=np.float64)
        self.causal = bool(causal)
        self.dim = dim
        #: Per-thread buffers and P(t) of the last times: where evaluations keep their arrays.
        self.workspace = FieldWorkspace()
        self._identity_values = self.U is None or all(not callable(u) and np.array_equal(u, np.eye(dim))
                                                      for u in self.U)
        constant_P = not any(callable(p) for p in self.P)
        self._P_stack = np.concatenate(self.P, axis=1) if constant_P else None  # [P_1 | ... | P_h], [d, h d]
        constant_U = self.U is not None and not any(callable(u) for u in self.U)
        self._U_stack = (np.concatenate([u.T for u in self.U], axis=0)  # [U_1^T; ...; U_h^T], [h d, d]
                         if constant_U and not self._identity_values else None)

    def __repr__(self) -> str:
        metric = "I" if self.W is None else "given"
        return f"AttentionField(heads={self.heads}, d={self.dim}, causal={self.causal}, W={metric})"

    # --- the matrices at time t -----------------------------------------------------------------
    @property
    def heads(self) -> int:
        """h, the number of heads."""
        return len(self.P)

    def _evaluate(self, name: str, eta: int, matrix: Matrix, t: float, dim: int | None) -> np.ndarray:
        if not callable(matrix):
            return matrix
        value = np.asarray(matrix(t), dtype=np.float64)
        if value.ndim != 2 or value.shape[0] != value.shape[1] or (dim is not None and value.shape[0] != dim):
            expected = f"({dim}, {dim})" if dim is not None else "(d, d)"
            raise ValueError(f"{name}[{eta}](t) must return a {expected} matrix; at t={t!r} it returned shape "
                             f"{value.shape}.")
        if not np.all(np.isfinite(value)):
            raise ValueError(f"{name}[{eta}](t) must be finite; at t={t!r} it has NaN/inf entries.")
        return value

    def query_key(self, t: float) -> np.ndarray:
        """The matrices P_eta(t), shape=[h, d, d]."""
        return np.stack([self._evaluate("P", eta, p, t, self.dim) for eta, p in enumerate(self.P)])

    def values(self, t: float) -> np.ndarray:
        """The matrices U_eta(t), shape=[h, d, d] (identities when U is None)."""
        if self.U is None:
            if self.dim is None:
                raise ValueError("values(t) needs the dimension d: give W or a constant P or U matrix.")
            return np.broadcast_to(np.eye(self.dim), (self.heads, self.dim, self.dim))
        return np.stack([self._evaluate("U", eta, u, t, self.dim) for eta, u in enumerate(self.U)])

    def _P_columns(self, t: float, dim: int) -> np.ndarray:
        """[P_1(t) | ... | P_h(t)], shape=[d, h d] (shared between calls: not to be written); with callables, kept
        by the workspace for the last few times (``FieldWorkspace.at_time``)."""
        if self._P_stack is not None:
            return self._P_stack

        def fill(columns: np.ndarray) -> None:
            for eta, p in enumerate(self.P):
                columns[:, eta * dim:(eta + 1) * dim] = self._evaluate("P", eta, p, t, dim)

        return self.workspace.at_time(t, (dim, self.heads * dim), fill)

    def _check_state(self, y) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        if y.ndim < 2:
            raise ValueError(f"y must have shape [..., tokens, d]; got shape {y.shape}.")
        if not np.isfinite(y).all():
            raise ValueError(f"y must be finite; it holds {np.count_nonzero(~np.isfinite(y))} NaN or infinite "
                             "values.")
        if self.dim is not None and y.shape[-1] != self.dim:
            raise ValueError(f"y must have last axis d = {self.dim} (the size of the head matrices); "
                             f"got shape {y.shape}.")
        return y

    # --- attention (eq. 6's alpha) ----------------------------------------------------------------
    def _scores(self, t: float, y: np.ndarray) -> np.ndarray:
        """s_ij^eta = y_i^T P_eta y_j in the layout [..., l, h, l] (all heads by one matrix product)."""
        dim, tokens, h = y.shape[-1], y.shape[-2], self.heads
        stacked = self._P_columns(t, dim)
        if stacked.shape[0] != dim:
            raise ValueError(f"y must have last axis d = {stacked.shape[0]} (the size of P(t)); got shape {y.shape}.")
        # (y @ [P_1 | ... | P_h]) has row i = (y_i^T P_1, ..., y_i^T P_h); as [..., l h, d] row (i, eta) is y_i^T P_eta.
        # (a stack times one matrix is multiplied as one 2-d product: one large gemm.)
        flat = y.reshape(-1, dim)
        projected = matmul(flat, stacked, out=self.workspace.buffer("projected", (len(flat), h * dim)))
        projected = projected.reshape(*y.shape[:-2], tokens * h, dim)
        scores = matmul(projected, np.swapaxes(y, -1, -2),
                        out=self.workspace.buffer("scores", (*y.shape[:-2], tokens * h, tokens)))
        return scores.reshape(*y.shape[:-2], tokens, h, tokens)

    def _softmax(self, scores: np.ndarray, dim: int, out: np.ndarray) -> np.ndarray:
        """alpha_ij^eta = exp(s_ij^eta) / Z_i^eta, Z_i^eta = sqrt(d) sum_j exp(s_ij^eta) (sums over j <= i when causal;
        alpha_ij = 0 for j > i), from ``scores : shape=[batch, l, h, l]`` (overwritten) into ``out`` of that shape, or
        summed over the heads into ``out : shape=[batch, l, l]``. Log-sum-exp: each row shifted by its own largest
        score first, which leaves alpha unchanged and keeps every exponent <= 0. ``out``'s shape is checked before
        the compiled kernels write into it: they do not check their indices, and a smaller array would be written
        past its end."""
        batch, tokens, _, _ = scores.shape
        summed = out.shape == (batch, tokens, tokens)
        if not summed and out.shape != scores.shape:
            raise ValueError(f"out must have shape {scores.shape} (each head) or {(batch, tokens, tokens)} (summed "
                             f"over the heads); got {out.shape}.")
        shift_rows_(scores, self.causal)
        np.exp(scores, out=scores)
        (summed_normalised_rows if summed else normalised_rows)(scores, np.sqrt(dim), out)
        return out

    def _weights(self, t: float, y: np.ndarray, summed: bool = False) -> np.ndarray:
        """alpha_ij^eta in the layout [..., l, h, l] (see ``attention``), or sum_eta alpha_ij^eta, shape=[..., l, l]
        (in this thread's buffer)."""
        scores = self._scores(t, y)
        if summed:
            weights = self.workspace.buffer("summed", (*scores.shape[:-2], scores.shape[-1]))
        else:
            weights = np.empty_like(scores)
        self._softmax(_as_batch(scores, 3), y.shape[-1], _as_batch(weights, 2 if summed else 3))
        return weights

    def attention(self, t: float, y) -> np.ndarray:
        """alpha_ij^eta(t, y), shape=[..., h, l, l]; rows sum to 1/sqrt(d) (the sqrt(n+1) of Z_i, as printed).

        Softmax by log-sum-exp (each row shifted by its own largest score); zero above the diagonal when causal.
        """
        y = self._check_state(y)
        return np.moveaxis(self._weights(t, y), -2, -3)

    def attention_update(self, t: float, y) -> np.ndarray:
        """f_i(y) = sum_eta sum_j alpha_ij^eta(t, y) U_eta(t) y_j (before projection), shape=[..., l, d]."""
        return self._update(t, self._check_state(y))

    def _update(self, t: float, y: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``attention_update`` of a checked state, its last product written into ``out`` when given."""
        if self._identity_values:  # U_eta = I: f = (sum_eta alpha^eta) y, one product
            return matmul(self._weights(t, y, summed=True), y, out=out)
        weights = self._weights(t, y)  # [..., l, h, l]
        tokens, dim, h = y.shape[-2], y.shape[-1], self.heads
        # row (i, eta) of the product is m_i^eta = sum_j alpha_ij^eta y_j; then sum_eta U_eta m_i^eta by one product
        mixed = matmul(weights.reshape(*y.shape[:-2], tokens * h, tokens), y).reshape(*y.shape[:-2], tokens, h * dim)
        if self._U_stack is not None:
            stacked_U = self._U_stack
        else:
            stacked_U = np.concatenate([u.T for u in self.values(t)], axis=0)
        if out is not None:
            matmul(mixed.reshape(-1, h * dim), stacked_U, out=out.reshape(-1, dim))
            return out
        return matmul(mixed.reshape(-1, h * dim), stacked_U).reshape(y.shape)

    def __call__(self, t: float, y, out: np.ndarray | None = None) -> np.ndarray:
        """dy/dt of eq. 6: P_{y_i} f_i(y) with P_y = I - y y^T W, shape=[..., l, d] like ``y``.

        ``out``: a C-contiguous float64 array shaped like ``y``, not overlapping it, to write dy/dt into
        (returned): a solver's stage row, which saves a copy of the state per evaluation.

        The instances (``y``'s leading axes) are evaluated in groups of about ``GROUP_BYTES`` of state: a group's
        temporaries then stay in the cache from one product to the next.
        """
        y = self._check_state(y)
        if out is None:
            out = np.empty(y.shape)
        else:
            check_out(out, y.shape, y)
        instances = y.reshape(-1, *y.shape[-2:])
        targets = out.reshape(instances.shape)
        for group in groups_of_at_most(len(instances), instances[0].nbytes, GROUP_BYTES):
            self._project_(instances[group], self._update(t, instances[group], targets[group]))
        return out

    def _project_(self, points: np.ndarray, vectors: np.ndarray) -> np.ndarray:
        """P_y X = (I - y y^T W) X (eq. 3 on E_W), the projection of eq. 6, overwriting ``vectors``; both
        shape=[..., l, d]."""
        return self.manifold.tangent_projection_(points, vectors)

    def discrete_step(self, t: float, y, tau: float) -> np.ndarray:
        """One layer of the discrete model (eq. 1): y_i <- pi_W(y_i + tau f_i(y)), shape=[..., l, d].

        ``tau`` is the step of V_eta = tau V'_eta (sec. 2.3); the matrices are evaluated at time ``t``.
        """
        tau = float(tau)
        if not np.isfinite(tau):
            raise ValueError(f"tau must be finite; got {tau!r}.")
        y = self._check_state(y)
        return self.manifold.project(y + tau * self.attention_update(t, y))


# --- functions of the state --------------------------------------------------------------------
def _check_tokens(y) -> np.ndarray:
    y = as_finite_array("y", y, ndim_min=2)
    return y


def misalignment(y) -> np.ndarray:
    """E(y) = 1 - (1/l) sum_i y_1^T y_i / (|y_1| |y_i|) (eq. 9), shape=[...] for ``y : shape=[..., l, d]``.

    Euclidean cosines as printed; zero iff all tokens point in y_1's direction. Raises for zero tokens.
    """
    y = _check_tokens(y)
    norms = np.linalg.norm(y, axis=-1)
    if np.any(norms <= ZERO_NORM):
        raise ValueError("y must have nonzero tokens: the cosine in E (eq. 9) is undefined for a zero token.")
    unit = y / norms[..., None]
    cosines = np.sum(unit[..., :1, :] * unit, axis=-1)
    return 1.0 - np.mean(cosines, axis=-1)


def token_lyapunov(y, v) -> np.ndarray:
    """V_i(y) = 1 - v^T y_i, shape=[..., l] (the functions V_1, V_2 of Fig. 6 and the terms of eq. 7)."""
    y = _check_tokens(y)
    v = as_finite_array("v", v, ndim_min=1)
    if v.shape != (y.shape[-1],):
        raise ValueError(f"v must have shape ({y.shape[-1]},) like the tokens; got {v.shape}.")
    return 1.0 - y @ v


def hemisphere_lyapunov(y, v) -> np.ndarray:
    """V(y) = max_i (1 - v^T y_i) (eq. 7), shape=[...]; a Lyapunov function on H+(v)^l (Thm 4.1 / ICML 3.2)."""
    return np.max(token_lyapunov(y, v), axis=-1)


def leading_eigenpair(U: np.ndarray) -> tuple[complex, np.ndarray, float]:
    """(lambda, v, runner-up): the eigenvalue of ``U : shape=[d, d]`` of largest real part, a real unit eigenvector
    (the real part of the computed one, normalised; sign: first nonzero entry positive) and the next largest real
    part (-inf when d = 1). The one eigenpair helper: Thm 5.2's hypotheses and the conjecture families read it."""
    values, vectors = np.linalg.eig(U)
    order = np.argsort(-values.real)
    runner = float(values[order[1]].real) if len(values) > 1 else -np.inf
    v = np.real(vectors[:, order[0]])
    v = v / np.linalg.norm(v)
    return complex(values[order[0]]), v * np.sign(v[np.flatnonzero(np.abs(v) > 1e-12)[0]]), runner


def top_eigenvector(U) -> tuple[float, np.ndarray]:
    """(lambda, v): the largest eigenvalue of a symmetric U and its unit eigenvector (sign: first nonzero > 0).

    Raises ValueError unless U is symmetric and lambda is simple (the hypotheses of Thm 5.2 / ICML 4.5).
    """
    U = as_finite_array("U", U)
    if U.ndim != 2 or U.shape[0] != U.shape[1]:
        raise ValueError(f"U must be a square (d, d) matrix; got shape {U.shape}.")
    asymmetry = float(np.max(np.abs(U - U.T)))
    if asymmetry > 1e-12 * max(1.0, float(np.max(np.abs(U)))):
        raise ValueError(f"U must be symmetric (Thm 5.2 / ICML 4.5 needs U^T = U); max |U - U^T| is {asymmetry:.3g}.")
    lam, v, runner = leading_eigenpair(U)
    if lam.real - runner <= 1e-12 * max(1.0, abs(lam.real)):  # d = 1: the runner-up is -inf, always simple
        raise ValueError(f"U's largest eigenvalue must be simple; the top two are {lam.real:.6g} and {runner:.6g}.")
    return float(lam.real), v
