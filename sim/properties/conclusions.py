"""The properties: each theorem's conclusion as a plain function ``check_<property>(instance, model)``.

Every check integrates ``model(...)`` (default: ``sim.AttentionField``, eq. 6) with ``sim.solve`` and
returns ``Outcome(holds, numbers)``. The property tests (tests/properties) assert ``holds`` on generated instances
that meet the hypotheses; their negative controls run the *same* function on a broken model
(tests/properties/models.py) or on an instance outside the hypotheses and assert that it does not hold. An
instance is any object with the attributes a check reads (``P``, ``W``, ``y0``, ``dim``, ``tokens``, ...): the
Hypothesis strategies of tests/properties/strategies.py generate them.

These functions are product code, registered with the claims they check (``foundation.registry`` names them), so
that the registry leads to them without resolving a name in the tests.

Tolerances come from the solver's error, measured rather than assumed: a trajectory whose check needs a
tolerance is integrated twice, by Dormand-Prince 5(4) at rtol = RTOL (kept) and at rtol = 100 RTOL; the
largest distance between the two, ``error``, over-estimates the kept trajectory's error (about 100 times
smaller), and each tolerance is that error times the Lipschitz constant of the monitored function, plus a
rounding floor. Convergence checks compare with thresholds (CONSENSUS_*) three orders above that error.

Time is measured in units of sqrt(d): the rows of alpha sum to 1/sqrt(d) (the sqrt(n+1) in Z_i), so
every rate of the model scales as 1/sqrt(d).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from foundation.registration import named_check
from sim.field.dynamics import AttentionField, hemisphere_lyapunov, misalignment
from sim.solvers import AdaptiveStepSize, Dopri5, SaveAt, solve

#: The model as printed (eq. 6); a negative control passes a broken one instead (tests/properties/models.py).
MODEL = AttentionField

#: Relative tolerance of the kept trajectory; its absolute tolerance is 1e-3 times smaller.
RTOL = 1e-7
#: The comparison trajectory's rtol: 100 times looser, so its error dominates their difference.
COARSE_FACTOR = 100.0
#: Rounding floor added to every tolerance: float64 sums of O(1) terms over the thousands of steps.
ROUNDING = 1e-12
#: Consensus reached: every token within this Euclidean distance of the target (E ~ distance^2 / 2,
#: so E <= 5e-9). Three orders above the solver error (~1e-7) and far below any initial spread.
CONSENSUS_DISTANCE = 1e-4
#: Consensus reached for claims stated with E (eq. 9): E <= 1e-8 (tokens within ~1.4e-4 of y_1).
CONSENSUS_E = 1e-8


class Outcome(NamedTuple):
    """Whether a property held on one instance, and the numbers that decided it."""

    holds: bool
    numbers: dict


class Trajectory(NamedTuple):
    """Samples ``ys : shape=[n, l, d]`` at ``ts : shape=[n]``; ``error : shape=[n, l]`` bounds each token's
    numerical error (Euclidean) at each sample (zeros when no comparison run was made)."""

    ts: np.ndarray
    ys: np.ndarray
    error: np.ndarray


def _solve_grid(field, y0: np.ndarray, ts: np.ndarray, rtol: float) -> np.ndarray:
    controller = AdaptiveStepSize(rtol=rtol, atol=rtol * 1e-3)
    return solve(field, Dopri5(), ts[0], ts[-1], y0, saveat=SaveAt(ts=ts), controller=controller).ys


def simulate(field, y0: np.ndarray, t_final: float, *, samples: int = 101, compare: bool = True) -> Trajectory:
    """Integrate ``field`` from ``y0 : shape=[l, d]`` over [0, t_final], sampled at ``samples`` times."""
    ts = np.linspace(0.0, t_final, samples)
    ys = _solve_grid(field, y0, ts, RTOL)
    if not compare:
        return Trajectory(ts, ys, np.zeros(ys.shape[:2]))
    coarse = _solve_grid(field, y0, ts, RTOL * COARSE_FACTOR)
    return Trajectory(ts, ys, np.linalg.norm(ys - coarse, axis=-1))


def simulate_until(field, y0: np.ndarray, reached: Callable[[np.ndarray], bool], *, chunk: float, t_max: float,
                   samples_per_chunk: int = 21, compare: bool = False) -> tuple[Trajectory, bool]:
    """Integrate chunks of length ``chunk`` until ``reached(y)`` (y : shape=[l, d]) holds at a sample, or up
    to ``t_max`` (rounded up to whole chunks). ``compare``: measure the error (else zeros), see ``simulate``.

    Returns the samples and whether ``reached`` held. The error of each chunk is measured from the
    chunk's start; errors of earlier chunks are added (a non-expanding flow does not amplify them).
    """
    ts_all, ys_all, err_all = [np.zeros(1)], [y0[None]], [np.zeros((1, y0.shape[0]))]
    carried = np.zeros(y0.shape[0])
    y = y0
    chunks = int(np.ceil(t_max / chunk - 1e-9))
    for start in chunk * np.arange(chunks):
        part = simulate(field, y, chunk, samples=samples_per_chunk, compare=compare)
        hits = [k for k in range(1, samples_per_chunk) if reached(part.ys[k])]
        end = hits[0] if hits else samples_per_chunk - 1
        ts_all.append(start + part.ts[1:end + 1])
        ys_all.append(part.ys[1:end + 1])
        err_all.append(carried + part.error[1:end + 1])
        carried, y = err_all[-1][-1], part.ys[end]
        if hits:
            break
    run = Trajectory(np.concatenate(ts_all), np.concatenate(ys_all), np.concatenate(err_all))
    return run, bool(hits)


def _time_scale(dim: int) -> float:
    return float(np.sqrt(dim))


def _field_for(instance, model, **keywords):
    return model(P=tuple(instance.P), **keywords)


# --- full attention (Thm 4.1 / ICML 3.2) ---------------------------------------------------------
@named_check
def check_full_invariance(instance, model=MODEL) -> Outcome:
    """full.invariance: tokens starting in H+(v) stay there, min_{t,i} v^T y_i(t) > 0, over [0, 10 sqrt(d)].

    Tolerance |v| * error: v^T y is |v|-Lipschitz in y.
    """
    field = _field_for(instance, model, W=instance.W)
    run = simulate(field, instance.y0, 10 * _time_scale(instance.dim))
    heights = run.ys @ instance.v
    tolerance = float(np.linalg.norm(instance.v) * run.error.max() + ROUNDING)
    lowest = float(heights.min())
    return Outcome(lowest > -tolerance, {"min_height": lowest, "initial_min_height": float(heights[0].min()),
                                         "tolerance": tolerance})


@named_check
def check_full_lyapunov(instance, model=MODEL) -> Outcome:
    """full.lyapunov: V = max_i (1 - v^T y_i) never increases, and decreases strictly (no instance starts at
    consensus), over [0, 10 sqrt(d)].

    Tolerance 2 |v| max error: each sampled V is off by at most |v| times the largest token error.
    """
    field = _field_for(instance, model, W=instance.W)
    run = simulate(field, instance.y0, 10 * _time_scale(instance.dim))
    V = hemisphere_lyapunov(run.ys, instance.v)
    tolerance = float(2 * np.linalg.norm(instance.v) * run.error.max() + ROUNDING)
    rise = float(np.max(np.diff(V)))
    drop = float(V[0] - V[-1])
    return Outcome(rise <= tolerance and drop > tolerance,
                   {"max_increase": rise, "total_decrease": drop, "V0": float(V[0]), "tolerance": tolerance})


@named_check
def check_full_convergence(instance, model=MODEL) -> Outcome:
    """full.convergence: E (eq. 9) reaches CONSENSUS_E before t = 100 sqrt(d) (the generated instances
    need at most ~10 sqrt(d))."""
    field = _field_for(instance, model, W=instance.W)
    scale = _time_scale(instance.dim)
    run, reached = simulate_until(field, instance.y0, lambda y: misalignment(y) <= CONSENSUS_E,
                                  chunk=10 * scale, t_max=100 * scale)
    return Outcome(reached, {"E0": float(misalignment(instance.y0)), "E_final": float(misalignment(run.ys[-1])),
                             "time": float(run.ts[-1]), "time_over_sqrt_d": float(run.ts[-1] / scale)})


@named_check
def check_consensus_returns(instance, model=MODEL) -> Outcome:
    """full.autonomous (Remark 4.1): a perturbed consensus z returns. Stability: no token ever gets farther
    from z (W-distance) than the farthest one started, since max_i (1 - <z, y_i>_W) is the Lyapunov
    function (7) with v = W z; attractivity: E reaches CONSENSUS_E before t = 100 sqrt(d).

    Tolerance: the W-distance is sqrt(lambda_max(W))-Lipschitz in y, times the accumulated error.
    """
    field = _field_for(instance, model, W=instance.W)
    scale = _time_scale(instance.dim)
    run, reached = simulate_until(field, instance.y0, lambda y: misalignment(y) <= CONSENSUS_E,
                                  chunk=10 * scale, t_max=100 * scale, compare=True)
    offsets = run.ys - instance.z
    Wo = offsets if instance.W is None else offsets @ instance.W
    distances = np.sqrt(np.sum(Wo * offsets, axis=-1))  # [n, l]
    lipschitz = 1.0 if instance.W is None else float(np.sqrt(np.linalg.eigvalsh(instance.W)[-1]))
    tolerance = float(lipschitz * run.error.max() + ROUNDING)
    growth = float(distances.max() - distances[0].max())
    return Outcome(reached and growth <= tolerance,
                   {"initial_distance": float(distances[0].max()), "max_distance": float(distances.max()),
                    "E_final": float(misalignment(run.ys[-1])), "time": float(run.ts[-1]),
                    "returned": reached, "tolerance": tolerance})


def _w_norm(W, x: np.ndarray) -> np.ndarray:
    return np.sqrt(np.sum(x * (x if W is None else x @ W), axis=-1))


def attention_bounds(instance) -> tuple[float, float]:
    """Lemma 4.1's a <= alpha <= b: |y_i^T P y_j| <= p c^2 with c^2 = max_{E_W} |y|^2 = 1/lambda_min(W) and
    p >= |P(t)|_F, so alpha_ij in [e^{-2 p c^2}, e^{2 p c^2}] / (sqrt(d) l); worst head."""
    c2 = 1.0 if instance.W is None else 1.0 / float(np.linalg.eigvalsh(instance.W)[0])
    p = max(P.bound for P in instance.P)
    base = np.sqrt(instance.dim) * instance.tokens
    return float(np.exp(-2 * p * c2) / base), float(np.exp(2 * p * c2) / base)


@named_check
def check_attention_bounds(instance, model=MODEL) -> Outcome:
    """full.bounds (Lemma 4.1): a <= alpha_ij^eta(t, y) <= b at 64 times and 64 states (the instance's
    tokens, random tokens on E_W, and all tokens equal to +- P's top singular vectors, where
    |y^T P y| is largest). Tolerance: relative rounding 1e-12 of the exponentials."""
    field = _field_for(instance, model, W=instance.W)
    rng = np.random.default_rng(instance.seed)
    lower, upper = attention_bounds(instance)
    times = rng.uniform(0.0, 100.0, size=64)
    states = [instance.y0]
    W = instance.W
    for _ in range(31):
        gaussian = rng.standard_normal((instance.tokens, instance.dim))
        states.append(gaussian / _w_norm(W, gaussian)[:, None])
    for t in times[32:]:
        # tokens at +- the top singular vectors u, w of one head's P(t): |u^T P w| = sigma_max is largest
        left, _, right = np.linalg.svd(instance.P[int(rng.integers(len(instance.P)))](t))
        pair = np.stack((left[:, 0], right[0]))
        chosen = pair[rng.integers(2, size=instance.tokens)] * rng.choice([-1.0, 1.0], size=instance.tokens)[:, None]
        states.append(chosen / _w_norm(W, chosen)[:, None])
    alphas = np.stack([field.attention(t, y) for t, y in zip(times, states)])
    low, high = float(alphas.min()), float(alphas.max())
    return Outcome(low >= lower * (1 - 1e-12) and high <= upper * (1 + 1e-12),
                   {"min_alpha": low, "a": lower, "max_alpha": high, "b": upper})


# --- causal attention, U = I (Thm 5.1 / ICML 4.2) ------------------------------------------------
@named_check
def check_first_token_fixed(instance, model=MODEL) -> Outcome:
    """causal.first-token: y_1(t) = y_1(0) over [0, 5 sqrt(d)] (long enough for a moving y_1 to move by
    ~ 5 alpha_11 sqrt(d) = O(1), far above the tolerance).

    Tolerance 2 * (first token's measured error) + rounding: the exact solution is constant.
    """
    field = _field_for(instance, model, causal=True)
    run = simulate(field, instance.y0, 5 * _time_scale(instance.dim))
    moved = float(np.max(np.linalg.norm(run.ys[:, 0] - instance.y0[0], axis=-1)))
    tolerance = float(2 * run.error[:, 0].max() + ROUNDING)
    return Outcome(moved <= tolerance, {"first_token_motion": moved, "tolerance": tolerance})


@named_check
def check_causal_consensus(instance, model=MODEL) -> Outcome:
    """causal.identity: every token reaches CONSENSUS_DISTANCE of y_1(0) before t = 200 sqrt(d)
    (consensus at the fixed first token: E -> 0 and y_1 fixed)."""
    field = _field_for(instance, model, causal=True)
    scale = _time_scale(instance.dim)
    target = instance.y0[0]
    run, reached = simulate_until(
        field, instance.y0, lambda y: np.max(np.linalg.norm(y - target, axis=-1)) <= CONSENSUS_DISTANCE,
        chunk=20 * scale, t_max=200 * scale)
    return Outcome(reached, {"E_final": float(misalignment(run.ys[-1])), "time_over_sqrt_d": float(run.ts[-1] / scale),
                             "distance_to_y1_0": float(np.max(np.linalg.norm(run.ys[-1] - target, axis=-1)))})


# --- causal attention, symmetric U (Thm 5.2 / ICML 4.5) ------------------------------------------
def _symmetric_field(instance, model):
    U = instance.U if instance.speed == 0.0 else instance.value
    return model(P=(instance.P,), U=(U,), causal=True)


@named_check
def check_symmetric_consensus(instance, model=MODEL) -> Outcome:
    """causal.symmetric: every token reaches CONSENSUS_DISTANCE of v before t = 200 sqrt(d) / gap
    (the rates near (v..v) are (lambda_1 - lambda_2) times the row sums 1/sqrt(d))."""
    field = _symmetric_field(instance, model)
    scale = _time_scale(instance.dim) / instance.gap
    run, reached = simulate_until(
        field, instance.y0, lambda y: np.max(np.linalg.norm(y - instance.v, axis=-1)) <= CONSENSUS_DISTANCE,
        chunk=20 * scale, t_max=200 * scale)
    return Outcome(reached, {"E_final": float(misalignment(run.ys[-1])), "time_over_scale": float(run.ts[-1] / scale),
                             "distance_to_v": float(np.max(np.linalg.norm(run.ys[-1] - instance.v, axis=-1)))})


@named_check
def check_token_lyapunov_monotone(instance, model=MODEL, token: int = 0) -> Outcome:
    """V_k = 1 - v^T y_k never increases over [0, 20 sqrt(d) / gap] (k = 0: V_1 of Thm 5.2's proof and
    Fig. 6, a Lyapunov function; k = 1: V_2, which the paper says need not be monotone).

    Tolerance 2 * (token k's largest measured error) + rounding (V_k is 1-Lipschitz, |v| = 1).
    """
    field = _symmetric_field(instance, model)
    run = simulate(field, instance.y0, 20 * _time_scale(instance.dim) / instance.gap)
    V = 1.0 - run.ys[:, token] @ instance.v
    tolerance = float(2 * run.error[:, token].max() + ROUNDING)
    rise = float(np.max(np.diff(V)))
    return Outcome(rise <= tolerance, {"max_increase": rise, "V0": float(V[0]), "V_final": float(V[-1]),
                                       "tolerance": tolerance})


# --- causal attention, time-varying U (Thm 5.3) --------------------------------------------------
#: Eigenvector speeds compared, in units of the tracking rate kappa = gap / sqrt(d). Kept below the rate at
#: which a token at the hemisphere's edge (v^T y >= 0.2, see moving_eigenvector_instances) turns towards v:
#: faster, the moving hemisphere can leave a token behind, which then goes to -v(t) (Thm 5.3's domain is
#: only guaranteed for small speeds) and the radius saturates near 2 at every speed.
SPEEDS = (0.0, 0.02, 0.06)
#: The radius is measured over [T0, T0 + 5/kappa] with T0 = 25/kappa, once the transient (e^{-25} ~ 1e-11)
#: is gone.
TRANSIENT, WINDOW = 25.0, 5.0
#: With a constant eigenvector the radius must vanish: below this (the solver's error is ~1e-7 relative
#: to the O(1) tokens, ~1e-9 absolute near the equilibrium; the transient is ~1e-11).
EXACT_RADIUS = 1e-6


def tracking_radius(instance, model=MODEL) -> float:
    """max over the window of max_i |y_i(t) - v(t)|: the radius of the ball around the moving consensus."""
    field = _symmetric_field(instance, model)
    kappa = instance.gap / _time_scale(instance.dim)
    start, end = TRANSIENT / kappa, (TRANSIENT + WINDOW) / kappa
    ts = np.concatenate(([0.0], np.linspace(start, end, 41)))
    ys = _solve_grid(field, instance.y0, ts, RTOL)[1:]
    targets = np.stack([instance.top_eigenvector(t) for t in ts[1:]])
    return float(np.max(np.linalg.norm(ys - targets[:, None, :], axis=-1)))


@named_check
def check_tracking_radius(instance, model=MODEL) -> Outcome:
    """causal.time-varying: the limiting radius vanishes at speed 0 and grows with the speed (SPEEDS)."""
    kappa = instance.gap / _time_scale(instance.dim)
    radii = [tracking_radius(instance.with_speed(s * kappa), model) for s in SPEEDS]
    holds = radii[0] <= EXACT_RADIUS and radii[0] < radii[1] < radii[2]
    return Outcome(holds, {"radius_at_speed_0": radii[0], "radius_at_speed_1": radii[1],
                           "radius_at_speed_2": radii[2], "speeds_over_kappa": SPEEDS})


# --- the gradient case (Thm 3.1, sec. 3.3) -------------------------------------------------------
def potential(P: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Phi(y) = 1/2 sum_{i,j} exp(y_i^T P y_j) (eq. 8, reconstructed), shape=[...] for y : shape=[..., l, d]."""
    return 0.5 * np.sum(np.exp(y @ P @ np.swapaxes(y, -1, -2)), axis=(-2, -1))


@named_check
def check_potential_monotone(instance, model=MODEL, metric_is_P: bool = True) -> Outcome:
    """grad.convergence: Phi never decreases along a solution (Hyp. 3.1, W = P), strictly off equilibria,
    and the solution comes to rest: max_i |dy_i/dt| falls by 1e-6 before t = 200 sqrt(d).

    ``metric_is_P=False`` puts the tokens on the sphere (W = I != P): outside Hyp. 3.1.
    Tolerance: Phi's change under the token errors, sum_i |grad_i Phi| * error (first order, the largest
    gradient along the run, twice for the two samples of an increment), plus rounding 1e-12 Phi.
    """
    W = instance.P if metric_is_P else None
    y0 = instance.y0 if metric_is_P else instance.y0 / np.linalg.norm(instance.y0, axis=-1, keepdims=True)
    field = model(P=(instance.P,), W=W)
    scale = _time_scale(instance.dim)
    speed0 = float(np.max(np.linalg.norm(field(0.0, y0), axis=-1)))
    run, rested = simulate_until(field, y0, lambda y: np.max(np.linalg.norm(field(0.0, y), axis=-1)) <= 1e-6 * speed0,
                                 chunk=20 * scale, t_max=200 * scale, compare=True)
    phi = potential(instance.P, run.ys)
    weights = np.exp(run.ys @ instance.P @ np.swapaxes(run.ys, -1, -2))  # [n, l, l]
    gradients = weights @ (run.ys @ instance.P)  # grad_i Phi = sum_j e_ij P y_j (P symmetric)
    lipschitz = float(np.max(np.sum(np.linalg.norm(gradients, axis=-1), axis=-1)))
    tolerance = float(2 * lipschitz * run.error.max() + ROUNDING * phi.max())
    fall = float(np.max(-np.diff(phi)))
    rise = float(phi[-1] - phi[0])
    return Outcome(fall <= tolerance and rise > tolerance and rested,
                   {"max_decrease": fall, "total_increase": rise, "came_to_rest": rested,
                    "time_over_sqrt_d": float(run.ts[-1] / scale), "tolerance": tolerance})
