"""Asymptotic stability of the consensus set for time-independent P (claim ``full.autonomous``, Remark 4.1 of the
long version), measured: from perturbations of a consensus point (z, ..., z) of size eps, the tokens never get
farther from z than they started (stability, the delta(eps) = eps of Lyapunov's definition) and their spread
falls by orders (attractivity), for every eps of a range, on seeded random constant P.

``supported`` when no distance to z grows beyond STABILITY_TOL and the diameter falls by ATTRACTION_RATIO within
the horizon; else ``unsupported``, never ``refuted``. With every token within eps <= 0.1 of z all lie in H+(z),
where max_i |y_i - z|^2 / 2 = max_i (1 - z^T y_i) is the Lyapunov function V of eq. 7 (v = z), non-increasing along
every solution (Thm 4.1's proof): a rise contradicts that monotone V (claim ``full.lyapunov``, checked on its own),
not the Remark's stability, whose definition allows a delta(eps) < eps; and attractivity is a limit, which a finite
run never refutes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from foundation.registration import claim_result, named_check
from foundation.records import CheckResult

from sim.field.dynamics import AttentionField
from sim.field.manifold import Ellipsoid
from sim.figures.plots import finite_run_verdict, verdict_sentence
from sim.solvers import AdaptiveStepSize, Dopri5, SaveAt, solve

#: Every random draw (instances of P, consensus points, perturbations), recorded in the result.
SEED = 41
#: The sizes of the perturbations of the consensus point.
PERTURBATIONS = (1e-1, 1e-2, 1e-3)
#: Instances of random constant (P_1, P_2), 5 tokens on S^2, each run to HORIZON.
INSTANCES, TOKENS, DIM, HEADS, HORIZON, SAMPLES = 4, 5, 3, 2, 50.0, 201
#: Dopri5's (rtol, atol); tests/sim/test_stability.py shows the verdict unchanged at half of them and at twice the
#: horizon.
TOLERANCES = (1e-12, 1e-12)
#: Entries of P_eta ~ N(0, P_SCALE^2): bounded and time-independent, as Remark 4.1 asks.
P_SCALE = 1.0

#: Stability: max_t max_i |y_i(t) - z| <= (1 + STABILITY_TOL) max_i |y_i(0) - z|.
STABILITY_TOL = 1e-6
STABILITY_REASON = ("Integrated with rtol = atol <= 1e-12: the absolute error of a token stays below 1e-10, a relative "
                    "1e-7 of the smallest perturbation 1e-3; a growth above 1e-6 of the distance to z is the flow's, "
                    "not the integration's.")
#: Attractivity: the tokens' diameter at the horizon is at most ATTRACTION_RATIO times its initial value: three orders
#: of decrease, which no integration error fakes (below 1e-10 a token, against a bound of about 2e-6 for the smallest
#: perturbation: 1e-3 times its initial diameter of about 2e-3).
ATTRACTION_RATIO = 1e-3


@dataclass(frozen=True)
class StabilityRun:
    """Per instance and perturbation size (shape=[instances, perturbations]): the largest distance to z over the
    run over the initial one, and the final diameter (at t = ``horizon``) over the initial one."""

    growth: np.ndarray
    attraction: np.ndarray
    horizon: float


def random_constant_heads(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """HEADS constant matrices P_eta, shape=[DIM, DIM] each, entries ~ N(0, P_SCALE^2)."""
    return tuple(P_SCALE * rng.standard_normal((DIM, DIM)) for _ in range(HEADS))


def _diameter(y: np.ndarray) -> np.ndarray:
    """max_ij |y_i - y_j|, shape=[...] for ``y : shape=[..., l, d]``."""
    return np.max(np.linalg.norm(y[..., :, None, :] - y[..., None, :, :], axis=-1), axis=(-2, -1))


def perturbed_runs(make_field=AttentionField, *, horizon: float = HORIZON,
                   tolerances: tuple[float, float] = TOLERANCES) -> StabilityRun:
    """Run every instance from its consensus point z perturbed by each size in PERTURBATIONS (one batch per
    instance) to t = ``horizon`` (SAMPLES spaced as over HORIZON), Dopri5 at (rtol, atol) = ``tolerances``.
    ``make_field(P=...)`` builds the field (negative controls pass a broken one)."""
    rng = np.random.default_rng(SEED)
    sphere = Ellipsoid()
    growth, attraction = [], []
    for _ in range(INSTANCES):
        field = make_field(P=random_constant_heads(rng))
        z = sphere.random_point(rng, (DIM,))
        directions = rng.standard_normal((len(PERTURBATIONS), TOKENS, DIM))
        sizes = np.array(PERTURBATIONS)[:, None, None]
        y0 = sphere.project(z + sizes * directions / np.linalg.norm(directions, axis=-1, keepdims=True))
        ts = np.linspace(0.0, horizon, round((SAMPLES - 1) * horizon / HORIZON) + 1)
        ys = solve(field, Dopri5(), 0.0, horizon, y0, saveat=SaveAt(ts=ts),
                   controller=AdaptiveStepSize(rtol=tolerances[0], atol=tolerances[1])).ys
        distance = np.max(np.linalg.norm(ys - z, axis=-1), axis=-1)  # [time, perturbation]
        growth.append(distance.max(axis=0) / distance[0])
        attraction.append(_diameter(ys[-1]) / _diameter(ys[0]))
    return StabilityRun(np.array(growth), np.array(attraction), horizon)


@named_check
def check_asymptotic_stability(run: StabilityRun) -> CheckResult:
    """Supported (a simulation proves no theorem) when on every instance and perturbation size of ``run`` (``growth``,
    ``attraction`` of shape=[instances, perturbations]) the distance to z never grows (to STABILITY_TOL) and the
    diameter falls below ATTRACTION_RATIO of its start; unsupported when a distance grows or a diameter has not
    fallen that far within the horizon (module docstring: neither refutes the Remark)."""
    numbers = {"instances": INSTANCES, "perturbations": list(PERTURBATIONS),
               "max_distance_growth": float(run.growth.max()), "max_final_over_initial_diameter":
                   float(run.attraction.max()), "horizon": run.horizon}
    grew = run.growth.max() > 1 + STABILITY_TOL
    verdict = finite_run_verdict(contradicted=False, shown=not grew and run.attraction.max() <= ATTRACTION_RATIO)
    return claim_result(
        verdict,
        detail=f"{INSTANCES} random constant (P_1, P_2) (entries N(0, {P_SCALE:g})), U = I, {TOKENS} tokens on S^2, "
               f"started at a random consensus point z perturbed by {', '.join(f'{e:g}' for e in PERTURBATIONS)}: "
               f"the largest distance to z over the run is {run.growth.max():.7f} times the initial one (stable, "
               f"delta = eps, when at most 1), and at t = {run.horizon:g} the diameter is at most "
               f"{run.attraction.max():.1e} times its initial value (attractive when at most {ATTRACTION_RATIO:g})."
               + verdict_sentence(verdict, horizon=run.horizon, missed=(
                   f"a distance to z grew by a factor {run.growth.max():.4g} (V of eq. 7 with v = z rose: against "
                   "full.lyapunov's monotone V; stability allows delta < eps, so no refutation of the Remark)"
                   if grew else f"diameter ratio {run.attraction.max():.2e} > {ATTRACTION_RATIO:g}")),
        numbers=numbers, tolerance=STABILITY_TOL, tolerance_reason=f"{STABILITY_REASON} Attraction is read as a "
        f"diameter ratio <= {ATTRACTION_RATIO:g} at the horizon: three orders, far above the integration error.",
        seeds={"instances": SEED})
