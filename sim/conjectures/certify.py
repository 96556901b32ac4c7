"""The float64 screen of a search hit (one instance, on the project's own field), before validated certification.

Newton's method on the tangent space refines the end point of a run; then |f(y*)| <= ``RESIDUAL``, every eigenvalue
of the central-difference Jacobian on the tangent space of (S^{d-1})^l has real part <= -``MARGIN``, runs from
perturbed starts return to y*, and y* is at least ``AWAY`` from what the conjecture claims. This is evidence, cheap
to compute; only ``sim.conjectures.validated`` (through ``sim.conjectures.replay``) certifies a witness: a float64
screen passes slow saddles (an unstable eigenvalue of 1e-9 looks stable to finite differences at any horizon), and a
finite-time run never refutes an asymptotic statement.

Everything runs on ``sim.AttentionField`` (not the search's batched field), so a screen is also a check of the
search's field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from sim.field.dynamics import AttentionField
from sim.conjectures.linearisation import tangent_basis, tangent_jacobian
from sim.solvers import AdaptiveStepSize, Dopri5, SaveAt, SolveOptions, solve

#: Integrations of a replay's float64 evidence (sim.conjectures.replay, and the witness figures of
#: sim.conjectures.witnessview): rtol 1e-10 each; the end must lie inside the certified ball with a factor 2 to spare,
#: far above the 1e-8 the two integrators may differ by.
EVIDENCE = AdaptiveStepSize(rtol=1e-10, atol=1e-12)
#: Longest evidence run: the slowest certified rate is ~0.03, so 25 time constants are below 1000.
EVIDENCE_HORIZON = 1000.0

#: |f(y*)| bound of a certified equilibrium (the brief's 1e-10; Newton reaches ~1e-15 where it converges).
RESIDUAL = 1e-10
#: Largest real part allowed: 1e4 x the ~1e-10 error of the central-difference Jacobian, so the sign is certain.
MARGIN = 1e-6
#: Minimum distance from the claimed outcome (consensus, or (v..v)) for a counterexample: 10^4 x the solver's
#: tolerances, far from any numerical near-consensus.
AWAY = 1e-2
#: Size of the perturbations of the return test (each token moved by this much, then retracted).
PERTURBATION = 1e-3
#: Perturbed starts of the return test.
PERTURBED_RUNS = 6
#: A perturbed run "returns" when it ends this close to y*: 1e-4 of the perturbation, above the 1e-10 solver error.
RETURNED = 1e-7
#: Solver tolerance of the screen's runs.
TIGHT = AdaptiveStepSize(rtol=1e-11, atol=1e-13)
#: The run from y0 towards an equilibrium only has to end in its basin (Newton then finds y* to 1e-15, and the
#: stored witness is replayed by two integrators at rtol 1e-10): 1e-9 takes about 2.5x fewer steps than TIGHT.
APPROACH = AdaptiveStepSize(rtol=1e-9, atol=1e-11)
#: |f(y)| below which the approach run stops (Newton's method then converges quadratically from there).
SETTLED = 1e-12
MAX_STEPS = 2_000_000


@dataclass
class Certificate:
    """The outcome of a certification; ``numbers`` are what decided it (JSON-ready)."""

    certified: bool
    reason: str
    kind: str
    equilibrium: np.ndarray | None = None
    eigenvalues: np.ndarray | None = None
    numbers: dict = field(default_factory=dict)
    #: The start a certified witness records when it is not the searched one (``sim.conjectures.search.certify``:
    #: the attractor itself, when the searched start reaches its ball only in float64 runs); None: the searched one.
    start: np.ndarray | None = None


def attention_field(P: np.ndarray, U: np.ndarray, causal: bool) -> AttentionField:
    """The project's field for one instance: ``P, U : shape=[h, d, d]``."""
    return AttentionField(P=tuple(np.asarray(P, float)), U=tuple(np.asarray(U, float)), causal=causal)


def integrate(field_: AttentionField, y0: np.ndarray, t1: float, controller=TIGHT, ts=None) -> np.ndarray:
    """The states at ``ts`` (or at t1 only), shape=[len(ts), ..., l, d]."""
    saveat = SaveAt(ts=tuple(ts)) if ts is not None else SaveAt()
    return solve(field_, Dopri5(), 0.0, t1, y0, saveat=saveat, controller=controller,
                 options=SolveOptions(max_steps=MAX_STEPS)).ys


def approach(field_: AttentionField, y0: np.ndarray, t1: float) -> tuple[np.ndarray, float]:
    """Integrate from ``y0`` towards an equilibrium in segments of doubling length (5, 10, 20, ... up to t1),
    stopping once |f(y)| < ``SETTLED``: at a stiff equilibrium (eigenvalues ~ -10) the explicit solver's stability
    limit, not the tolerance, sets the step, so the rest of [0, t1] would cost hundreds of steps for nothing.
    Returns (state, time reached)."""
    y, t, length = np.array(y0, dtype=float), 0.0, 5.0
    while t < t1:
        end = min(t1, t + length)
        y = solve(field_, Dopri5(), t, end, y, controller=APPROACH, options=SolveOptions(max_steps=MAX_STEPS)).ys[-1]
        t, length = end, 2 * length
        if np.max(np.abs(field_(t, y))) < SETTLED:
            break
    return y, t


def refine(field_: AttentionField, y: np.ndarray, iterations: int = 30) -> np.ndarray:
    """Newton's method for f(y) = 0 in tangent coordinates, retracted to the sphere after every step."""
    y = y / np.linalg.norm(y, axis=-1, keepdims=True)
    for _ in range(iterations):
        f = field_(0.0, y)
        if np.max(np.abs(f)) < 1e-15:
            break
        basis = tangent_basis(y)
        jacobian = tangent_jacobian(field_, y)
        step = np.linalg.lstsq(jacobian, -(basis.T @ f.reshape(-1)), rcond=None)[0]
        y = (y.reshape(-1) + basis @ step).reshape(y.shape)
        y = y / np.linalg.norm(y, axis=-1, keepdims=True)
    return y


def certify_equilibrium(P, U, causal: bool, y0: np.ndarray, t1: float,
                        distance: Callable[[np.ndarray], float], *, seed: int = 0,
                        refine_steps: int = 30) -> Certificate:
    """Run from ``y0`` to ``t1``, refine the end point to y* (``refine_steps`` Newton steps) and certify it a stable
    equilibrium away from the claimed outcome (``distance(y) -> float``, 0 at it). ``seed`` draws the
    ``PERTURBED_RUNS`` perturbations of the return test."""
    field_ = attention_field(P, U, causal)
    end, reached_at = approach(field_, y0, t1)
    y_star = refine(field_, end, refine_steps)
    residual = float(np.max(np.abs(field_(0.0, y_star))))
    eigenvalues = np.linalg.eigvals(tangent_jacobian(field_, y_star))
    largest = float(np.max(eigenvalues.real))
    away = float(distance(y_star))
    reached = float(np.max(np.linalg.norm(end - y_star, axis=-1)))
    numbers = {"residual": residual, "largest_real_part": largest, "distance_from_claim": away,
               "end_to_equilibrium": reached, "t1": t1,
               "approach_stopped_at": reached_at}
    common = dict(kind="equilibrium", equilibrium=y_star, eigenvalues=eigenvalues, numbers=numbers)
    if residual > RESIDUAL:
        return Certificate(False, f"not an equilibrium: |f(y*)| = {residual:.3g} > {RESIDUAL:g}", **common)
    if away < AWAY:
        return Certificate(False, f"the equilibrium is the claimed outcome (distance {away:.3g} < {AWAY:g})",
                           **common)
    if largest > -MARGIN:
        return Certificate(False, f"not asymptotically stable: an eigenvalue has real part {largest:.3g} > "
                                  f"-{MARGIN:g}", **common)
    if reached > PERTURBATION:
        return Certificate(False, f"the run from y0 ends {reached:.3g} from y* (> {PERTURBATION:g})", **common)
    rng = np.random.default_rng(seed)
    starts = y_star + PERTURBATION * rng.standard_normal((PERTURBED_RUNS, *y_star.shape)) / np.sqrt(y_star.shape[-1])
    starts /= np.linalg.norm(starts, axis=-1, keepdims=True)
    # e^-25 of the perturbation after 25 time constants of the slowest mode (transients of a non-normal
    # Jacobian are covered by the margin 1e-3 / 1e-7 = 1e4).
    horizon = min(25.0 / abs(largest), 1e5)
    returned = integrate(field_, starts, horizon)[-1]
    worst = float(np.max(np.linalg.norm(returned - y_star, axis=-1)))
    numbers.update(return_horizon=horizon, return_distance=worst, perturbations=PERTURBED_RUNS,
                   perturbation_seed=seed)
    if worst > RETURNED:
        return Certificate(False, f"perturbed runs end {worst:.3g} from y* (> {RETURNED:g})", **common)
    return Certificate(True, "stable equilibrium away from the claimed outcome", **common)
