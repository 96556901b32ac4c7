"""The paper's simulated systems (sec. 6.1 / ICML 5.1), exactly as SPEC section 3 prints them.

Figures 1-3 (Thm 4.1 / ICML 3.2): 10 tokens on S^2, h = 2, U = I, P_eta(t) = D_eta(t) P'_eta.
Figure 4 (Thm 5.1 / ICML 4.2): causal, 50 tokens on S^499, h = 2, U = I, P' and the diagonal D(t)
drawn at random (not printed: the draws here are ours, seeded and recorded).
Figures 5-6 (Thm 5.2 / ICML 4.5): causal, 10 tokens on S^2, h = 1, the printed P' and symmetric U.
Time horizons are not printed either; the ones here are chosen so that the observations are visible.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim.field.dynamics import AttentionField
from sim.field.manifold import Ellipsoid
from sim.field.modulation import CosineDiagonal, Modulated

# --- printed matrices (ICML sec. 5.1) ----------------------------------------------------------
FIG1_P1 = np.array([[0.08, -0.19, 0.20], [-0.23, 0.31, -0.23], [0.18, -0.17, -0.16]])
FIG1_P2 = np.array([[-0.31, 0.03, 0.11], [0.06, -0.06, 0.13], [0.14, 0.11, 0.10]])
FIG5_P = np.array([[0.36, 0.42, 0.13], [0.10, -0.07, -0.20], [0.15, -0.21, 0.12]])
FIG5_U = np.array([[-0.26, 0.50, 0.56], [0.50, -0.72, -0.50], [0.56, -0.50, -0.02]])
#: v of Fig. 3 (the hemisphere of Figs. 2-3).
FIG3_V = np.array([1.0, 0.0, 0.0])


#: The diagonal of D_1(t) = 2 diag(cos 10 pi t, sin 10 pi t, cos 6 pi t) (also D(t) of Figs. 5-6), shape=[3].
fig1_D1 = CosineDiagonal(np.full(3, 2.0), np.array([10 * np.pi, 10 * np.pi, 6 * np.pi]), np.zeros(3),
                         np.array([False, True, False]))
#: The diagonal of D_2(t) = 2 diag(cos 6 pi t, sin 6 pi t, cos 4 pi t), shape=[3].
fig1_D2 = CosineDiagonal(np.full(3, 2.0), np.array([6 * np.pi, 6 * np.pi, 4 * np.pi]), np.zeros(3),
                         np.array([False, True, False]))


def full_attention_example() -> AttentionField:
    """The system of Figs. 1-3: h = 2, U = I, W = I, P_eta(t) = D_eta(t) P'_eta, full attention.

    W = I is given explicitly so that the field knows d = 3 (its heads are callables).
    """
    return AttentionField(P=(Modulated(FIG1_P1, fig1_D1, "2 diag(cos 10pi t, sin 10pi t, cos 6pi t) P'_1"),
                             Modulated(FIG1_P2, fig1_D2, "2 diag(cos 6pi t, sin 6pi t, cos 4pi t) P'_2")),
                          W=np.eye(3))


def symmetric_value_example() -> AttentionField:
    """The system of Figs. 5-6: causal, h = 1, P(t) = D_1(t) P', the printed symmetric U."""
    return AttentionField(P=(Modulated(FIG5_P, fig1_D1, "2 diag(cos 10pi t, sin 10pi t, cos 6pi t) P'"),),
                          U=(FIG5_U,), causal=True)


@dataclass(frozen=True)
class SineModulation:
    """D(t) = diag(|2 sin(omega_k t + phi_k)|), k = 1..d (Fig. 4)."""

    omega: np.ndarray
    phi: np.ndarray

    def __call__(self, t: float) -> np.ndarray:
        return np.abs(2.0 * np.sin(self.omega * t + self.phi))


@dataclass(frozen=True)
class CausalRandomExample:
    """The system of Fig. 4 and its random draws (seeded): P'_eta entries ~ U(-0.5, 0.5) (our choice,
    as for the other examples' random matrices), omega ~ U(0, 1), phi ~ U(0, 2 pi) per diagonal entry."""

    field: AttentionField
    seed: int
    p_prime: tuple[np.ndarray, ...] = field(repr=False)
    modulations: tuple[SineModulation, ...] = field(repr=False)


def causal_random_example(seed: int, *, dim: int = 500, heads: int = 2) -> CausalRandomExample:
    """Fig. 4's system: causal, U = I, W = I, P_eta(t) = D_eta(t) P'_eta with seeded random P', omega, phi."""
    rng = np.random.default_rng(seed)
    p_prime = tuple(rng.uniform(-0.5, 0.5, size=(dim, dim)) for _ in range(heads))
    modulations = tuple(SineModulation(rng.uniform(0.0, 1.0, size=dim), rng.uniform(0.0, 2 * np.pi, size=dim))
                        for _ in range(heads))
    heads_P = tuple(Modulated(p, m, "diag(|2 sin(omega t + phi)|) P'") for p, m in zip(p_prime, modulations))
    return CausalRandomExample(AttentionField(P=heads_P, W=np.eye(dim), causal=True), seed, p_prime, modulations)


def uniform_box_tokens(rng: np.random.Generator, shape) -> np.ndarray:
    """Initial states of Fig. 4: entries ~ U(-0.5, 0.5), then projected to the sphere; shape=[..., l, d]."""
    return Ellipsoid().project(rng.uniform(-0.5, 0.5, size=shape))
