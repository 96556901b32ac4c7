"""Asymptotic stability of the consensus set for time-independent P (claim ``full.autonomous``, Remark 4.1 of the
long version), measured: from perturbations of a consensus point (z, ..., z) of size eps, the tokens never get
farther from z than they started (stability, the delta(eps) = eps of Lyapunov's definition) and their spread
falls by orders (attractivity), for every eps of a range, on seeded random constant P.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from foundation.registration import claim_result, named_check
from foundation.records import CheckResult

from sim.field.dynamics import AttentionField
from sim.field.manifold import Ellipsoid
from sim.solvers import AdaptiveStepSize, Dopri5, SaveAt, solve

#: Every random draw (instances of P, consensus points, perturbations), recorded in the result.
SEED = 41
#: The sizes of the perturbations of the consensus point.
PERTURBATIONS = (1e-1, 1e-2, 1e-3)
#: Instances of random constant (P_1, P_2), 5 tokens on S^2, each run to HORIZON.
INSTANCES, TOKENS, DIM, HEADS, HORIZON, SAMPLES = 4, 5, 3, 2, 50.0, 201
#: Entries of P_eta ~ N(0, P_SCALE^2): bounded and time-independent, as Remark 4.1 asks.
P_SCALE = 1.0

#: Stability: max_t max_i |y_i(t) - z| <= (1 + STABILITY_TOL) max_i |y_i(0) - z|.
STABILITY_TOL = 1e-6
STABILITY_REASON = ("Integrated with rtol = atol = 1e-12: the absolute error of a token stays below 1e-10, a relative "
                    "1e-7 of the smallest perturbation 1e-3; a growth above 1e-6 of the distance to z is the flow's, "
                    "not the integration's.")
#: Attractivity: the tokens' diameter at the horizon is at most ATTRACTION_RATIO times its initial value.
ATTRACTION_RATIO = 1e-3


@dataclass(frozen=True)
class StabilityRun:
    """Per instance and perturbation size (shape=[instances, perturbations]): the largest distance to z over the
    run over the initial one, and the final diameter over the initial one."""

    growth: np.ndarray
    attraction: np.ndarray


def random_constant_heads(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """HEADS constant matrices P_eta, shape=[DIM, DIM] each, entries ~ N(0, P_SCALE^2)."""
    return tuple(P_SCALE * rng.standard_normal((DIM, DIM)) for _ in range(HEADS))


def _diameter(y: np.ndarray) -> np.ndarray:
    """max_ij |y_i - y_j|, shape=[...] for ``y : shape=[..., l, d]``."""
    return np.max(np.linalg.norm(y[..., :, None, :] - y[..., None, :, :], axis=-1), axis=(-2, -1))


def perturbed_runs(make_field=AttentionField) -> StabilityRun:
    """Run every instance from its consensus point z perturbed by each size in PERTURBATIONS (one batch per
    instance). ``make_field(P=...)`` builds the field (negative controls pass a broken one)."""
    rng = np.random.default_rng(SEED)
    sphere = Ellipsoid()
    growth, attraction = [], []
    for _ in range(INSTANCES):
        field = make_field(P=random_constant_heads(rng))
        z = sphere.random_point(rng, (DIM,))
        directions = rng.standard_normal((len(PERTURBATIONS), TOKENS, DIM))
        sizes = np.array(PERTURBATIONS)[:, None, None]
        y0 = sphere.project(z + sizes * directions / np.linalg.norm(directions, axis=-1, keepdims=True))
        ys = solve(field, Dopri5(), 0.0, HORIZON, y0, saveat=SaveAt(ts=np.linspace(0.0, HORIZON, SAMPLES)),
                   controller=AdaptiveStepSize(rtol=1e-12, atol=1e-12)).ys
        distance = np.max(np.linalg.norm(ys - z, axis=-1), axis=-1)  # [time, perturbation]
        growth.append(distance.max(axis=0) / distance[0])
        attraction.append(_diameter(ys[-1]) / _diameter(ys[0]))
    return StabilityRun(np.array(growth), np.array(attraction))


@named_check
def check_asymptotic_stability(run: StabilityRun) -> CheckResult:
    """Verified when on every instance and perturbation size the distance to z never grows (to STABILITY_TOL)
    and the diameter falls below ATTRACTION_RATIO of its start."""
    numbers = {"instances": INSTANCES, "perturbations": list(PERTURBATIONS),
               "max_distance_growth": float(run.growth.max()), "max_final_over_initial_diameter":
                   float(run.attraction.max()), "horizon": HORIZON}
    ok = run.growth.max() <= 1 + STABILITY_TOL and run.attraction.max() <= ATTRACTION_RATIO
    return claim_result(
        "verified" if ok else "refuted",
        detail=f"{INSTANCES} random constant (P_1, P_2) (entries N(0, {P_SCALE:g})), U = I, {TOKENS} tokens on S^2, "
               f"started at a random consensus point z perturbed by {', '.join(f'{e:g}' for e in PERTURBATIONS)}: "
               f"the largest distance to z over the run is {run.growth.max():.7f} times the initial one (stable, "
               f"delta = eps), and at t = {HORIZON:g} the diameter is at most {run.attraction.max():.1e} times its "
               "initial value (attractive): asymptotically stable for every perturbation size.",
        numbers=numbers, tolerance=STABILITY_TOL, tolerance_reason=f"{STABILITY_REASON} Attraction is read as a "
        f"diameter ratio <= {ATTRACTION_RATIO:g} at the horizon: three orders, far above the integration error.",
        seeds={"instances": SEED})
