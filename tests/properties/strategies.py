"""Hypothesis strategies: model instances that satisfy each theorem's hypotheses.

Every instance is a small frozen dataclass of *parameters* (dimension, number of tokens, bounds, a seed);
its arrays (W, tokens, the matrices P_eta(t), U) are drawn from ``np.random.default_rng(seed)`` on first
use. So a failing example prints as a constructor call that can be pasted into an ``@example(...)`` as a
regression, Hypothesis shrinks the parameters, and large arrays never pass through Hypothesis' byte
stream. The strategies depend only on numpy and Hypothesis; the properties build ``sim`` objects from
the arrays.

Hypotheses generated (SPEC section 2; long version numbering):

* ``full_attention_instances`` -- Hyp. 4.1 (Thm 4.1): U = I, h >= 1, P_eta(t) bounded and uniformly
  continuous (trigonometric polynomials with bounded coefficients); tokens on E_W (sphere or W != I)
  inside the open hemisphere H+(v) = {y : v^T y > 0}, some of them close to its boundary.
* ``consensus_perturbations`` -- Remark 4.1: as above with time-invariant P, tokens a small perturbation
  of a consensus point z.
* ``causal_identity_instances`` -- Hyp. 5.1 (Thm 5.1): causal, W = I, U = I, h >= 1, P(t) bounded; tokens
  anywhere except y_j = -y_1 (each kept at least an angle away from -y_1).
* ``symmetric_value_instances`` -- Hyp. 5.2 (Thm 5.2): causal, W = I, h = 1, U symmetric with a simple
  largest eigenvalue lambda > 0, tokens in D^l(v) = {v^T y_i > 0}.
* ``moving_eigenvector_instances`` -- Hyp. 5.3 (Thm 5.3): as above with U(t) = R(t) U R(t)^T, R(t) a
  rotation by the angle omega t in a plane containing v, so the top eigenvector v(t) moves at the
  constant speed |dv/dt| = omega (bounded eigenvector speed); omega = 0 is Thm 5.2.
* ``gradient_instances`` -- Hyp. 3.1 (Thm 3.1): h = 1, U = I, P symmetric positive definite and
  time-invariant, W = P (reconstructed); tokens anywhere on E_W.
* ``antipodal_configurations`` -- outside Thm 4.1's domain: tokens +-y on a line (in no open
  hemisphere), an equilibrium that never meets.

Dimensions d run from 2 to a few hundred: most examples are small (d <= 6), about one in five is
large (7 <= d <= MAX_DIM), so a profile's examples include some large ones.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from hypothesis import strategies as st

#: The largest dimension d = n + 1 generated ("up to a few hundred").
MAX_DIM = 300
#: The largest number of tokens generated.
MAX_TOKENS = 8
#: The largest number of heads generated.
MAX_HEADS = 3
#: Largest bound p on the Frobenius norm of P_eta(t): attention weights stay within e^{+-2p} of uniform.
MAX_P_BOUND = 2.0
#: Largest angular frequency of the trigonometric P_eta(t), per unit of the time scale sqrt(d) (the paper's
#: D(t) uses up to 10 pi on S^2; the sim figure tests cover that; here it bounds the step count).
MAX_FREQUENCY = 2.0 * np.pi
#: Largest number of harmonics of a trigonometric P_eta(t).
MAX_HARMONICS = 3

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


# --- building blocks -------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrigonometricMatrix:
    """P(t) = A_0 + sum_k (A_k cos(omega_k t) + B_k sin(omega_k t)), shape=[d, d].

    ``coefficients : shape=[2K + 1, d, d]`` stacks A_0, A_1..A_K, B_1..B_K; ``frequencies : shape=[K]``.
    Bounded: |P(t)|_F <= sum of the coefficients' Frobenius norms (``bound``); uniformly continuous
    (Lipschitz with constant sum_k omega_k (|A_k|_F + |B_k|_F)). K = 0 is a constant matrix.
    """

    coefficients: np.ndarray
    frequencies: np.ndarray

    def __call__(self, t: float) -> np.ndarray:
        phases = self.frequencies * t
        weights = np.concatenate(([1.0], np.cos(phases), np.sin(phases)))
        # The weighted sum of the coefficients as one vector-matrix product over their flattened entries: the
        # product np.tensordot forms, without its per-call set-up (a solve evaluates P(t) tens of thousands of times).
        dim = self.coefficients.shape[-1]
        return (weights @ self.coefficients.reshape(len(weights), dim * dim)).reshape(dim, dim)

    @property
    def bound(self) -> float:
        """sup_t |P(t)|_F <= this (the triangle inequality over the coefficients)."""
        return float(np.sum(np.linalg.norm(self.coefficients, axis=(1, 2))))

    @property
    def time_invariant(self) -> bool:
        return self.frequencies.size == 0


def random_trigonometric_matrix(rng: np.random.Generator, dim: int, harmonics: int, bound: float,
                                max_frequency: float) -> TrigonometricMatrix:
    """A trigonometric P(t) with Gaussian coefficients scaled so that sum_k |coefficient_k|_F = ``bound``.

    Frequencies are uniform in [0.1, max_frequency] / sqrt(d): per unit of the model's time scale sqrt(d)
    (the rows of alpha sum to 1/sqrt(d)), so P varies as often over the dynamics whatever d, and a solver's
    step count over a horizon of c sqrt(d) does not grow with d.
    """
    coefficients = rng.standard_normal((2 * harmonics + 1, dim, dim))
    shares = rng.dirichlet(np.ones(2 * harmonics + 1))
    coefficients *= (bound * shares / np.linalg.norm(coefficients, axis=(1, 2)))[:, None, None]
    frequencies = rng.uniform(0.1, max_frequency, size=harmonics) / np.sqrt(dim)
    return TrigonometricMatrix(coefficients, frequencies)


def random_orthogonal(rng: np.random.Generator, dim: int) -> np.ndarray:
    """A Haar-random orthogonal matrix, shape=[d, d] (QR of a Gaussian matrix with the sign fix)."""
    q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
    return q * np.sign(np.diag(r))


def random_spd(rng: np.random.Generator, dim: int, condition: float) -> np.ndarray:
    """A random SPD matrix with eigenvalues in [1, condition] (so |y| <= 1 on E_W), shape=[d, d]."""
    q = random_orthogonal(rng, dim)
    eigenvalues = np.concatenate(([1.0, condition], rng.uniform(1.0, condition, size=dim - 2)))[:dim]
    matrix = (q * eigenvalues) @ q.T
    return (matrix + matrix.T) / 2


def w_normalize(W: np.ndarray | None, x: np.ndarray) -> np.ndarray:
    """pi_W(x) = x / |x|_W row by row, shape=[..., d] (W None: the sphere)."""
    squared = np.sum(x * x, axis=-1) if W is None else np.einsum("...i,ij,...j->...", x, W, x)
    return x / np.sqrt(squared)[..., None]


def unit_orthogonal_to(rng: np.random.Generator, direction: np.ndarray, count: int) -> np.ndarray:
    """``count`` random Euclidean unit vectors orthogonal to the unit vector ``direction``, shape=[count, d]."""
    gaussian = rng.standard_normal((count, direction.size))
    gaussian -= np.outer(gaussian @ direction, direction)
    return gaussian / np.linalg.norm(gaussian, axis=-1, keepdims=True)


def tokens_in_hemisphere(rng: np.random.Generator, W: np.ndarray | None, v: np.ndarray, tokens: int,
                         margin: float) -> np.ndarray:
    """Tokens on E_W with v^T y_i > 0, shape=[l, d].

    Directions sin(theta_i) v/|v| + cos(theta_i) u_i (u_i a unit vector orthogonal to v) with
    sin(theta_i) uniform in [margin, 1] and the first token exactly at ``margin``, mapped to E_W by pi_W
    (which keeps the sign of v^T y). A small margin puts a token close to the hemisphere's boundary.
    """
    axis = v / np.linalg.norm(v)
    heights = np.concatenate(([margin], rng.uniform(margin, 1.0, size=tokens - 1)))
    rng.shuffle(heights)
    directions = heights[:, None] * axis + np.sqrt(1.0 - heights**2)[:, None] * unit_orthogonal_to(rng, axis, tokens)
    return w_normalize(W, directions)


# --- dimensions ----------------------------------------------------------------------------------
def dimensions(max_dim: int = MAX_DIM) -> st.SearchStrategy[int]:
    """d = n + 1 from 2 to ``max_dim``: four in five examples have d <= 6, the others 7 <= d <= max_dim.

    The size class is drawn first, so shrinking a large example moves it to the small class.
    """
    return st.integers(0, 4).flatmap(lambda size: st.integers(2, 6) if size < 4 else st.integers(7, max_dim))


# --- full attention (Thm 4.1 / ICML 3.2) ---------------------------------------------------------
@dataclass(frozen=True)
class FullAttentionInstance:
    """Hyp. 4.1: U_eta = I, h heads with bounded, uniformly continuous trigonometric P_eta(t); tokens on E_W
    in H+(v). ``condition`` is W's condition number (1.0: the sphere); ``margin`` the smallest sin of a
    token's elevation above the hemisphere's boundary; ``harmonics = 0`` makes P time-invariant."""

    dim: int
    tokens: int
    heads: int
    seed: int
    p_bound: float
    harmonics: int
    max_frequency: float
    margin: float
    condition: float = 1.0

    @cached_property
    def _arrays(self):
        rng = np.random.default_rng(self.seed)
        W = None if self.condition == 1.0 else random_spd(rng, self.dim, self.condition)
        v = w_normalize(W, rng.standard_normal(self.dim))
        y0 = tokens_in_hemisphere(rng, W, v, self.tokens, self.margin)
        P = tuple(random_trigonometric_matrix(rng, self.dim, self.harmonics, self.p_bound, self.max_frequency)
                  for _ in range(self.heads))
        return W, v, y0, P

    W = property(lambda self: self._arrays[0], doc="W, shape=[d, d], or None for the sphere.")
    v = property(lambda self: self._arrays[1], doc="v in E_W defining the hemisphere H+(v), shape=[d].")
    y0 = property(lambda self: self._arrays[2], doc="Initial tokens in H+(v), shape=[l, d].")
    P = property(lambda self: self._arrays[3], doc="The heads' P_eta(t), a tuple of TrigonometricMatrix.")


@st.composite
def full_attention_instances(draw, *, max_dim: int = MAX_DIM, time_invariant: bool = False,
                             sphere_only: bool = False) -> FullAttentionInstance:
    """Instances of Hyp. 4.1 (see FullAttentionInstance)."""
    dim = draw(dimensions(max_dim))
    return FullAttentionInstance(
        dim=dim,
        tokens=draw(st.integers(2, MAX_TOKENS)),
        heads=draw(st.integers(1, MAX_HEADS)),
        seed=draw(SEEDS),
        p_bound=draw(st.floats(0.0, MAX_P_BOUND)),
        harmonics=0 if time_invariant else draw(st.integers(0, MAX_HARMONICS)),
        max_frequency=draw(st.floats(0.5, MAX_FREQUENCY)),
        margin=draw(st.floats(1e-3, 0.9)),
        condition=1.0 if sphere_only else draw(st.sampled_from([1.0, 2.0, 5.0])),
    )


# --- Remark 4.1: perturbations of a consensus ----------------------------------------------------
@dataclass(frozen=True)
class ConsensusPerturbation:
    """Time-invariant P (Remark 4.1), U = I: tokens pi_W(z + radius * s_i g_i) around a consensus point z in
    E_W, g_i Gaussian directions tangent at z of unit Euclidean length, s_i uniform in [0.1, 1] (so the tokens
    differ even for d = 2, where every g_i is one of the two unit tangents +-t)."""

    dim: int
    tokens: int
    heads: int
    seed: int
    p_bound: float
    radius: float
    condition: float = 1.0

    @cached_property
    def _arrays(self):
        rng = np.random.default_rng(self.seed)
        W = None if self.condition == 1.0 else random_spd(rng, self.dim, self.condition)
        z = w_normalize(W, rng.standard_normal(self.dim))
        Wz = z if W is None else W @ z
        directions = rng.standard_normal((self.tokens, self.dim))
        directions -= np.outer(directions @ Wz, z)  # tangent at z: z^T W g = 0 (as |z|_W = 1)
        directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
        directions *= rng.uniform(0.1, 1.0, size=(self.tokens, 1))
        y0 = w_normalize(W, z + self.radius * directions)
        P = tuple(random_trigonometric_matrix(rng, self.dim, 0, self.p_bound, 1.0) for _ in range(self.heads))
        return W, z, y0, P

    W = property(lambda self: self._arrays[0], doc="W, shape=[d, d], or None for the sphere.")
    z = property(lambda self: self._arrays[1], doc="The consensus point z in E_W, shape=[d].")
    y0 = property(lambda self: self._arrays[2], doc="The perturbed tokens, shape=[l, d].")
    P = property(lambda self: self._arrays[3], doc="The heads' constant P_eta, a tuple of TrigonometricMatrix.")


@st.composite
def consensus_perturbations(draw, *, max_dim: int = MAX_DIM) -> ConsensusPerturbation:
    """Instances of Remark 4.1: small perturbations (radius 1e-3 .. 0.2) of a consensus point."""
    return ConsensusPerturbation(
        dim=draw(dimensions(max_dim)),
        tokens=draw(st.integers(2, MAX_TOKENS)),
        heads=draw(st.integers(1, MAX_HEADS)),
        seed=draw(SEEDS),
        p_bound=draw(st.floats(0.0, MAX_P_BOUND)),
        radius=draw(st.floats(1e-3, 0.2)),
        condition=draw(st.sampled_from([1.0, 2.0, 5.0])),
    )


# --- causal attention, U = I (Thm 5.1 / ICML 4.2) ------------------------------------------------
@dataclass(frozen=True)
class CausalIdentityInstance:
    """Hyp. 5.1: causal, W = I, U_eta = I, bounded trigonometric P_eta(t). Token j >= 2 makes an angle with
    y_1 drawn uniformly in [0, pi - min_angle], so it is at least ``min_angle`` away from -y_1.

    ``antipodal_second`` puts y_1 = e_1 and y_2 = -y_1 exactly: outside the domain D^1. On a coordinate
    axis the second token's field is an exact multiple of e_1 in floating point, so this unstable
    equilibrium is not left through rounding errors (see AntipodalConfiguration)."""

    dim: int
    tokens: int
    heads: int
    seed: int
    p_bound: float
    harmonics: int
    max_frequency: float
    min_angle: float
    antipodal_second: bool = False

    @cached_property
    def _arrays(self):
        rng = np.random.default_rng(self.seed)
        first = w_normalize(None, rng.standard_normal(self.dim))
        if self.antipodal_second:
            first = np.eye(self.dim)[0]
        angles = rng.uniform(0.0, np.pi - self.min_angle, size=self.tokens - 1)
        others = np.cos(angles)[:, None] * first + np.sin(angles)[:, None] * unit_orthogonal_to(rng, first,
                                                                                               self.tokens - 1)
        y0 = np.vstack((first, others))
        if self.antipodal_second:
            y0[1] = -first
        P = tuple(random_trigonometric_matrix(rng, self.dim, self.harmonics, self.p_bound, self.max_frequency)
                  for _ in range(self.heads))
        return y0, P

    y0 = property(lambda self: self._arrays[0], doc="Initial tokens on the sphere, shape=[l, d].")
    P = property(lambda self: self._arrays[1], doc="The heads' P_eta(t), a tuple of TrigonometricMatrix.")


@st.composite
def causal_identity_instances(draw, *, max_dim: int = MAX_DIM) -> CausalIdentityInstance:
    """Instances of Hyp. 5.1 inside the domain D^1 (every y_j at least 0.05 rad away from -y_1)."""
    return CausalIdentityInstance(
        dim=draw(dimensions(max_dim)),
        tokens=draw(st.integers(2, MAX_TOKENS)),
        heads=draw(st.integers(1, MAX_HEADS)),
        seed=draw(SEEDS),
        p_bound=draw(st.floats(0.0, MAX_P_BOUND)),
        harmonics=draw(st.integers(0, MAX_HARMONICS)),
        max_frequency=draw(st.floats(0.5, MAX_FREQUENCY)),
        min_angle=draw(st.floats(0.05, 1.0)),
    )


# --- causal attention, symmetric U (Thm 5.2 / ICML 4.5; Thm 5.3) ---------------------------------
@dataclass(frozen=True)
class SymmetricValueInstance:
    """Hyp. 5.2: causal, W = I, h = 1, U = Q diag(lambda_1 > lambda_2 >= ...) Q^T with lambda_1 = ``top`` > 0
    and gap lambda_1 - lambda_2 = ``gap``; the rest uniform in [lambda_1 - gap - spread, lambda_1 - gap]
    (possibly negative). Tokens in D^l(v), v = Q e_1. ``speed`` omega > 0 makes U time-varying
    (Hyp. 5.3): U(t) = R(t) U R(t)^T with R(t) the rotation by omega t in the plane (v, Q e_2), so the top
    eigenvector v(t) = cos(omega t) v + sin(omega t) Q e_2 moves at speed omega."""

    dim: int
    tokens: int
    seed: int
    p_bound: float
    harmonics: int
    max_frequency: float
    top: float
    gap: float
    spread: float
    margin: float
    speed: float = 0.0

    @cached_property
    def _arrays(self):
        rng = np.random.default_rng(self.seed)
        q = random_orthogonal(rng, self.dim)
        rest = rng.uniform(self.top - self.gap - self.spread, self.top - self.gap, size=self.dim - 2)
        eigenvalues = np.concatenate(([self.top, self.top - self.gap], rest))[:self.dim]
        v = q[:, 0]
        y0 = tokens_in_hemisphere(rng, None, v, self.tokens, self.margin)
        P = random_trigonometric_matrix(rng, self.dim, self.harmonics, self.p_bound, self.max_frequency)
        return q, eigenvalues, v, y0, P

    q = property(lambda self: self._arrays[0], doc="Eigenvectors of U (columns), shape=[d, d].")
    eigenvalues = property(lambda self: self._arrays[1], doc="Eigenvalues of U, largest first, shape=[d].")
    v = property(lambda self: self._arrays[2], doc="The unit top eigenvector of U(0), shape=[d].")
    y0 = property(lambda self: self._arrays[3], doc="Initial tokens in D^l(v), shape=[l, d].")
    P = property(lambda self: self._arrays[4], doc="P(t), a TrigonometricMatrix.")

    @cached_property
    def U(self) -> np.ndarray:
        """U = U(0), symmetric, shape=[d, d]."""
        matrix = (self.q * self.eigenvalues) @ self.q.T
        return (matrix + matrix.T) / 2

    def top_eigenvector(self, t: float) -> np.ndarray:
        """v(t) = cos(omega t) q_1 + sin(omega t) q_2, the unit top eigenvector of U(t), shape=[d]."""
        if self.dim == 1:
            return self.v
        return np.cos(self.speed * t) * self.q[:, 0] + np.sin(self.speed * t) * self.q[:, 1]

    def value(self, t: float) -> np.ndarray:
        """U(t) = R(t) U R(t)^T, shape=[d, d]: only the top two eigenvectors rotate, so O(d^2) per call."""
        if self.speed == 0.0:
            return self.U
        c, s = np.cos(self.speed * t), np.sin(self.speed * t)
        q1, q2 = self.q[:, 0], self.q[:, 1]
        w1, w2 = c * q1 + s * q2, c * q2 - s * q1
        l1, l2 = self.eigenvalues[0], self.eigenvalues[1]
        return self.U + l1 * (np.outer(w1, w1) - np.outer(q1, q1)) + l2 * (np.outer(w2, w2) - np.outer(q2, q2))

    def with_speed(self, speed: float) -> "SymmetricValueInstance":
        """The same instance with the eigenvector speed omega = ``speed``."""
        return replace(self, speed=float(speed))


@st.composite
def symmetric_value_instances(draw, *, max_dim: int = MAX_DIM) -> SymmetricValueInstance:
    """Instances of Hyp. 5.2 with lambda_1 in [0.2, 2], gap in [0.1, 1], tokens in D^l(v)."""
    return SymmetricValueInstance(
        dim=draw(dimensions(max_dim)),
        tokens=draw(st.integers(2, MAX_TOKENS)),
        seed=draw(SEEDS),
        p_bound=draw(st.floats(0.0, MAX_P_BOUND)),
        harmonics=draw(st.integers(0, MAX_HARMONICS)),
        max_frequency=draw(st.floats(0.5, MAX_FREQUENCY)),
        top=draw(st.floats(0.2, 2.0)),
        gap=draw(st.floats(0.1, 1.0)),
        spread=draw(st.floats(0.0, 2.0)),
        margin=draw(st.floats(1e-2, 0.9)),
    )


def moving_eigenvector_instances(*, max_dim: int = 8) -> st.SearchStrategy[SymmetricValueInstance]:
    """Instances of Hyp. 5.3 at speed 0 (the property varies the speed omega with ``with_speed``).

    Time-invariant P, a clear gap (>= 0.3), tokens at least 0.2 above the hemisphere's edge (so the slow
    speeds compared keep every token in the moving hemisphere) and small dimensions d <= 8 (three runs over
    30 sqrt(d) / gap each).
    """
    return st.builds(
        SymmetricValueInstance,
        dim=st.integers(2, max_dim),
        tokens=st.integers(2, 5),
        seed=SEEDS,
        p_bound=st.floats(0.0, 1.0),
        harmonics=st.just(0),
        max_frequency=st.just(1.0),
        top=st.floats(0.5, 2.0),
        gap=st.floats(0.3, 1.0),
        spread=st.floats(0.0, 1.0),
        margin=st.floats(0.2, 0.9),
    )


# --- the gradient case (Thm 3.1) -----------------------------------------------------------------
@dataclass(frozen=True)
class GradientInstance:
    """Hyp. 3.1: h = 1, U = I, P SPD and time-invariant with eigenvalues in [smallest, largest], W = P;
    tokens uniform on E_W (no hemisphere needed)."""

    dim: int
    tokens: int
    seed: int
    smallest: float
    largest: float

    @cached_property
    def _arrays(self):
        rng = np.random.default_rng(self.seed)
        q = random_orthogonal(rng, self.dim)
        eigenvalues = np.concatenate(([self.smallest, self.largest],
                                      rng.uniform(self.smallest, self.largest, size=self.dim - 2)))[:self.dim]
        P = (q * eigenvalues) @ q.T
        P = (P + P.T) / 2
        y0 = w_normalize(P, rng.standard_normal((self.tokens, self.dim)))
        return P, y0

    P = property(lambda self: self._arrays[0], doc="P = W, SPD, shape=[d, d].")
    y0 = property(lambda self: self._arrays[1], doc="Initial tokens on E_P, shape=[l, d].")


@st.composite
def gradient_instances(draw, *, max_dim: int = MAX_DIM) -> GradientInstance:
    """Instances of Hyp. 3.1 with P's eigenvalues in [0.2, 3]."""
    smallest = draw(st.floats(0.2, 3.0))
    return GradientInstance(
        dim=draw(dimensions(max_dim)),
        tokens=draw(st.integers(2, MAX_TOKENS)),
        seed=draw(SEEDS),
        smallest=smallest,
        largest=draw(st.floats(smallest, 3.0)),
    )


# --- outside the hypotheses: no common hemisphere ------------------------------------------------
@dataclass(frozen=True)
class AntipodalConfiguration:
    """Tokens +-y on one line through the origin, both signs present (``signs``), so no open hemisphere holds
    them all; Hyp. 4.1 otherwise (U = I, trigonometric P_eta(t), E_W). Every term of eq. 6 is a multiple of
    y, so the configuration is an equilibrium that never meets.

    The line is the first coordinate axis, y = e_1 / |e_1|_W: then every vector the field computes is a
    multiple of e_1 whose other coordinates are exact zeros, so the equilibrium is exact in floating point
    too. (It is unstable: along a generic line, or at a regular simplex, rounding errors of ~1e-17 grow
    and the tokens leave it and meet after a time ~ 40 / rate -- a numerical, not a theoretical, event.)"""

    dim: int
    heads: int
    seed: int
    p_bound: float
    harmonics: int
    signs: tuple[int, ...]
    condition: float = 1.0

    @cached_property
    def _arrays(self):
        rng = np.random.default_rng(self.seed)
        W = None if self.condition == 1.0 else random_spd(rng, self.dim, self.condition)
        y = w_normalize(W, np.eye(self.dim)[0])
        y0 = np.asarray(self.signs, dtype=np.float64)[:, None] * y
        P = tuple(random_trigonometric_matrix(rng, self.dim, self.harmonics, self.p_bound, MAX_FREQUENCY)
                  for _ in range(self.heads))
        return W, y0, P

    W = property(lambda self: self._arrays[0], doc="W, shape=[d, d], or None for the sphere.")
    y0 = property(lambda self: self._arrays[1], doc="The tokens +-y, shape=[l, d].")
    P = property(lambda self: self._arrays[2], doc="The heads' P_eta(t), a tuple of TrigonometricMatrix.")

    @property
    def tokens(self) -> int:
        return len(self.signs)


@st.composite
def antipodal_configurations(draw, *, max_dim: int = MAX_DIM) -> AntipodalConfiguration:
    """Instances with tokens +-y (at least one of each sign) and otherwise Hyp. 4.1."""
    rest = draw(st.lists(st.sampled_from([-1, 1]), min_size=0, max_size=MAX_TOKENS - 2))
    return AntipodalConfiguration(
        dim=draw(dimensions(max_dim)),
        heads=draw(st.integers(1, MAX_HEADS)),
        seed=draw(SEEDS),
        p_bound=draw(st.floats(0.0, MAX_P_BOUND)),
        harmonics=draw(st.integers(0, MAX_HARMONICS)),
        signs=(1, -1, *rest),
        condition=draw(st.sampled_from([1.0, 2.0, 5.0])),
    )
