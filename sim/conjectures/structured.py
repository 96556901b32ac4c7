"""Structured instance families for the seeking search (``sim.conjectures.seek``), beside the random draws of
``sim.conjectures.families``: the instances a Gaussian sampler almost never produces.

A structure builds the heads from a parameter vector ``theta`` (standard normal numbers, so an optimiser can move
them) and from choices fixed when the instance is drawn (signs, a shared eigenbasis):

- ``pm-identity``: P_eta = s_eta c_eta I, signs s = +-1 with both present when h >= 2 ("+-cI pairs");
- ``commuting``: P_eta = Q diag(p_eta) Q^T and, where the claim lets U be chosen, U_eta = Q diag(u_eta) Q^T: every
  head shares the eigenbasis Q;
- ``skew``: P_eta = c_eta K_eta / |K_eta|_2, K skew (pure rotation parts);
- ``low-rank``: P_eta = c_eta a b^T / (|a| |b|) (a = b, with a sign, where P must be symmetric);
- ``planted``: U projected onto the value matrices that make a drawn state an equilibrium (``sim.conjectures.planted``),
  for the claims whose U the search may choose (symmetric heads, or a U with a real top eigenvalue);
- ``random``: the claim's own random family (``sim.conjectures.families``, |P| up to 20), so that the seeking search
  also optimises generic instances.

Scales: |P_eta|_2 up to ``P_MAX`` = 50 (the random families stop at 20). Each claim constrains U as its hypotheses
say (symmetric heads; U with a real, simple, positive top eigenvalue; U = P; U = I), and a draw is repeated until
the instance meets the claim's hypotheses on (P, U); the state hypotheses (D^l(v), no open hemisphere) are
checked at the equilibrium by the search.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import special_ortho_group

from sim.conjectures.families import Shape, get_family, symmetrised, top_eigenpair
from sim.conjectures.family import bounded_scale
from sim.conjectures.planted import decode_planted, plantable, planted_parameters

#: Largest spectral norm of a structured P_eta (the issue asks for at least 50).
P_MAX = 50.0
#: Largest spectral norm of a U_eta that the claim lets the search scale (as in sim.conjectures.families: time rescaling
#: aside, only ratios between heads matter).
U_MAX = 2.0
#: The wide shapes: up to 16 tokens and d up to 8 (the default shapes are the claim's random family's, so that a
#: side-by-side measurement compares searches over the same sizes).
WIDE_TOKENS = (2, 3, 4, 6, 8, 12, 16)
WIDE_DIMS = (2, 3, 4, 6, 8)
#: Draws tried before giving up on a valid instance (a valid one comes in a few tries: the test is a spectral gap).
MAX_DRAWS = 100

P_STRUCTURES = ("pm-identity", "commuting", "skew", "low-rank")
SOURCES = ("random", *P_STRUCTURES, "planted")
class NoInstance(Exception):
    """No instance of a structure meets the claim's hypotheses at a shape (the search counts the attempt)."""


@dataclass(frozen=True)
class Draw:
    """One structured instance: ``theta`` (optimised) and the choices held fixed (``signs : shape=[h]``, the shared
    eigenbasis ``basis : shape=[d, d]``); ``seed`` is the generator's seed that drew it."""

    claim: str
    structure: str
    shape: Shape
    theta: np.ndarray
    signs: np.ndarray
    basis: np.ndarray
    seed: list[int]


def _unit(matrices: np.ndarray) -> np.ndarray:
    return matrices / np.linalg.norm(matrices, ord=2, axis=(-2, -1), keepdims=True)


def parameters(claim: str, structure: str, shape: Shape) -> int:
    """Length of ``theta`` for ``structure`` of ``claim``."""
    if structure == "random":
        return get_family(claim).parameters(shape)
    if structure == "planted":
        return planted_parameters(shape)
    h, d, rule = shape.heads, shape.dim, get_family(claim).value_rule
    P_size = {"pm-identity": h, "commuting": h * d, "skew": h * d * d + h, "low-rank": h * 2 * d + h}[structure]
    U_size = {"symmetric": h * d * d + h, "top-real": h * d * d, "equal-P": 0, "identity": 0}[rule]
    if structure == "commuting" and rule in ("symmetric", "top-real"):
        U_size = h * d
    return P_size + U_size


def _heads_P(draw: Draw, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P : shape=[h, d, d], the rest of theta)."""
    h, d = draw.shape.heads, draw.shape.dim
    Q = draw.basis
    if draw.structure == "pm-identity":
        return (draw.signs * bounded_scale(theta[:h], P_MAX))[:, None, None] * np.eye(d), theta[h:]
    if draw.structure == "commuting":
        p = P_MAX * np.tanh(theta[:h * d].reshape(h, d))
        P = np.einsum("ik,hk,jk->hij", Q, p, Q)  # symmetric up to rounding; exactly where the claim asks it
        return (symmetrised(P) if get_family(draw.claim).value_rule == "equal-P" else P), theta[h * d:]
    if draw.structure == "skew":
        raw = theta[:h * d * d].reshape(h, d, d)
        scales = bounded_scale(theta[h * d * d:h * d * d + h], P_MAX)
        return _unit(raw - np.swapaxes(raw, 1, 2)) * scales[:, None, None], theta[h * d * d + h:]
    a, b = theta[:h * d].reshape(h, d), theta[h * d:2 * h * d].reshape(h, d)
    if get_family(draw.claim).value_rule == "equal-P":  # P must be symmetric: s a a^T
        b = a * draw.signs[:, None]
    P = _unit(a[:, :, None] * b[:, None, :]) * bounded_scale(theta[2 * h * d:2 * h * d + h], P_MAX)[:, None, None]
    return P, theta[2 * h * d + h:]


def decode(draw: Draw, theta: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(P, U), each shape=[h, d, d], of ``draw`` (with ``theta`` in place of its own, for the optimiser)."""
    return decode_with_state(draw, theta)[:2]


def decode_with_state(draw: Draw, theta: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(P, U, the planted equilibrium : shape=[l, d] of a ``planted`` draw, None for the other structures)."""
    theta = draw.theta if theta is None else np.asarray(theta, float)
    if draw.structure == "random":
        batch = get_family(draw.claim).decode(theta[None], draw.shape)
        return batch.P[0], batch.U[0], None
    if draw.structure == "planted":
        return decode_planted(draw.claim, draw.shape, theta)
    return (*_heads_and_values(draw, theta), None)


def _heads_and_values(draw: Draw, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h, d = draw.shape.heads, draw.shape.dim
    P, rest = _heads_P(draw, theta)
    rule = get_family(draw.claim).value_rule
    if rule == "identity":
        return P, np.broadcast_to(np.eye(d), P.shape).copy()
    if rule == "equal-P":
        return P, P.copy()
    if draw.structure == "commuting":
        u = U_MAX * np.tanh(rest.reshape(h, d))
        values = np.einsum("ik,hk,jk->hij", draw.basis, u, draw.basis)
        return P, symmetrised(values) if rule == "symmetric" else values
    raw = rest[:h * d * d].reshape(h, d, d)
    if rule == "top-real":
        return P, _unit(raw)
    scales = bounded_scale(rest[h * d * d:], U_MAX)
    return P, _unit(raw + np.swapaxes(raw, 1, 2)) * scales[:, None, None]


def instance_problems(claim: str, P: np.ndarray, U: np.ndarray) -> list[str]:
    """What the instance (P, U) misses of ``claim``'s hypotheses on the heads (the state is checked later)."""
    rule = get_family(claim).value_rule  # None: a claim whose hypotheses the search checks only at the equilibrium
    problems = []
    if rule == "symmetric":
        if len(P) < 2:
            problems.append(f"h = {len(P)} heads; the conjecture is about h >= 2")
        if not top_eigenpair(U.sum(axis=0))[0]:
            problems.append("the top eigenvalue of sum_eta U_eta is not simple and positive")
    if rule == "top-real" and not top_eigenpair(U[0])[0]:
        problems.append("U's eigenvalue of largest real part is not real, simple and positive")
    if not np.all(np.isfinite(P)) or not np.all(np.isfinite(U)):
        problems.append("non-finite entries")
    return problems


def structures(claim: str) -> tuple[str, ...]:
    """The sources that fit ``claim``: its random family, and the structures (skew P is not symmetric, so not for
    U = P; only the random family for claims without a U rule, e.g. P = U = I)."""
    get_family(claim)  # a clear error for an unknown claim
    if get_family(claim).value_rule is None:
        return ("random",)
    # U = I claims (conj.nonsymmetric-full) are about non-symmetric P: +-c I and Q diag Q^T are symmetric
    unfit = {"equal-P": ("skew", "planted"),
             "identity": ("planted", "pm-identity", "commuting")}.get(get_family(claim).value_rule, ())
    return tuple(s for s in SOURCES if s not in unfit)


def shapes(claim: str, wide: bool = False) -> dict[str, tuple[int, ...]]:
    """The levels of each size factor: the claim's random family's, or with ``wide`` up to 16 tokens and d = 8."""
    family = get_family(claim)
    return {"heads": family.heads, "tokens": WIDE_TOKENS if wide else family.tokens,
            "dim": WIDE_DIMS if wide else family.dims}


def draw_structured(claim: str, seed: list[int], *, structure: str, shape: Shape) -> Draw:
    """A ``structure`` instance of ``claim`` of ``shape`` meeting the claim's hypotheses on (P, U), drawn by
    ``np.random.default_rng(seed)``: the fixed choices and theta (redrawn until valid)."""
    if structure not in structures(claim):
        raise ValueError(f"structure={structure!r} does not fit {claim}; it must be one of {structures(claim)}")
    if shape.heads < 1 or shape.tokens < 1 or shape.dim < 2:
        raise ValueError(f"shape={shape!r} must have heads >= 1, tokens >= 1 and dim >= 2")
    if structure == "planted" and not plantable(claim, shape):
        raise NoInstance(f"{shape} has more equilibrium equations than free value entries: nothing to plant")
    rng = np.random.default_rng(seed)
    for _ in range(MAX_DRAWS):
        signs = rng.choice([-1.0, 1.0], size=shape.heads)
        if structure == "pm-identity" and shape.heads >= 2:
            signs[:2] = (1.0, -1.0)  # a +-cI pair
        basis = special_ortho_group.rvs(shape.dim, random_state=rng)
        theta = rng.standard_normal(parameters(claim, structure, shape))
        draw = Draw(claim, structure, shape, theta, signs, basis, list(seed))
        if not instance_problems(claim, *decode(draw)):
            return draw
    raise NoInstance(f"no valid {structure} instance of {claim} of {shape} in {MAX_DRAWS} draws (seed {seed})")
