"""Whole integrations compiled (Numba): adaptive Dopri5 of eq. 6 for many small systems, each with its own step.

``sim.solve`` steps a batch with one step size, that of its most demanding instance, and pays Python's and
numpy's overhead per step; for systems of 2-10 tokens in dimension 2-4 (the searches', ``sim bench`` problem (a))
that overhead is most of the time. Here the whole adaptive loop runs inside one compiled function: the same
method and controller as ``solve(field, Dopri5(), ..., controller=AdaptiveStepSize(rtol, atol))``
(Dormand-Prince 5(4), first-same-as-last, scipy's starting step and step-size rule, the error of the instance as
the RMS of e / (atol + rtol max(|y|, |y_next|)), every accepted step retracted to the sphere by pi(x) = x / |x|,
eq. 2), but each instance with its own step size and time grid.

``LANES`` (8) instances are integrated side by side, one per lane of the arrays' last axis, so that every loop
runs along the lanes and the compiler vectorises it (a system of 4 tokens leaves the loops over tokens too short
to); each lane keeps its own t, step size, accepted/rejected counts and status, and a lane whose instance ended
takes the next one. A lane's arithmetic is its own, the same whatever its neighbours (``workers`` changes no bit).
The field is the suite's compiled eq. 6 in that form, ``sim.instances.lanes_field_``, on the sphere (W = I). The
matrices are constant per instance, or P_eta(t) = D_eta(t) P'_eta with the diagonal ``D_eta(t)`` a
``sim.scenarios.CosineDiagonal`` (Figs. 1-3).

Shapes: ``y0 : [b, l, d]``; ``P, U : [b, h, d, d]`` (P' when modulated); a modulation's arrays ``[h, d]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .batching import instance_groups
from .dynamics import AttentionField
from .instances import LANES, lanes_field_, lanes_scratch
from .manifold import as_finite_array
from .products import worker_pool
from .scenarios import CosineDiagonal, Modulated
from .solvers import MAX_STEPS, AdaptiveStepSize, Dopri5, MaxStepsReached
from .solvers import stepsize

# Dormand-Prince 5(4) (the tableau of sim.solvers.Dopri5, as arrays the compiled loop reads as constants).
_C = np.array(Dopri5._C)
_A = np.zeros((6, 5))
for _s, _row in enumerate(Dopri5._A):
    _A[_s, :len(_row)] = _row
_B = np.array(Dopri5._B)
_E = np.array(Dopri5._E)
_SAFETY, _MIN_FACTOR, _MAX_FACTOR = (AdaptiveStepSize.safety, AdaptiveStepSize.min_factor,
                                     AdaptiveStepSize.max_factor)
_ORDER = Dopri5.embedded_order
#: The step-size rule of sim.solvers (sim/solvers/stepsize.py), the same functions compiled.
_first_guess, _starting_step, _next_step = (njit(cache=True, nogil=True)(rule) for rule in
                                            (stepsize.first_guess, stepsize.starting_step, stepsize.next_step))
#: Status of one instance's integration.
OK, OUT_OF_STEPS, NOT_FINITE = 0, 1, 2


@njit(cache=True, nogil=True)
def _matrices_at(t, base, amplitude, omega, phase, sine, out):
    """Each lane's P_eta(t_q) = diag(D_eta(t_q)) P'_eta into ``out : [h, d, d, LANES]``, ``t, base`` per lane
    (``[LANES]``, ``[h, d, d, LANES]``); D_eta(t)_c = amplitude cos(omega t + phase) (sin where ``sine``), all
    ``[h, d]``."""
    heads, dim = amplitude.shape
    for eta in range(heads):
        for c in range(dim):
            for q in range(LANES):
                argument = omega[eta, c] * t[q] + phase[eta, c]
                scale = amplitude[eta, c] * (np.sin(argument) if sine[eta, c] else np.cos(argument))
                for e in range(dim):
                    out[eta, c, e, q] = scale * base[eta, c, e, q]


@njit(cache=True, nogil=True)
def _evaluate(t, y, base, values, causal, identity, modulated, amplitude, omega, phase, sine, P_t, scratch, out):
    """dy/dt at each lane's (t, y) into ``out`` (``t : [LANES]``, ``y, out : [l, d, LANES]``): the matrices at t
    (when modulated), then eq. 6 (``lanes_field_``); the arguments between as in ``_dopri5_instances``' field."""
    if modulated:
        _matrices_at(t, base, amplitude, omega, phase, sine, P_t)
        lanes_field_(y, P_t, values, causal, identity, out, scratch)
    else:
        lanes_field_(y, base, values, causal, identity, out, scratch)


@njit(cache=True, nogil=True)
def _scaled_norms(x, y, y_next, rtol, atol, out):
    """Each lane's RMS of x / (atol + rtol max(|y|, |y_next|)) over its entries into ``out : [LANES]``; x, y,
    y_next : ``[size, LANES]``."""
    for q in range(LANES):
        out[q] = 0.0
    for m in range(x.shape[0]):
        for q in range(LANES):
            ratio = x[m, q] / (atol + rtol * max(abs(y[m, q]), abs(y_next[m, q])))
            out[q] += ratio * ratio
    for q in range(LANES):
        out[q] = np.sqrt(out[q] / x.shape[0])


@njit(cache=True, nogil=True)
def _load_lanes(y0, P, U, t0, waiting, slot, active, fresh, last_rejected, t, y, base, values, lane_stats):
    """Give the free lanes (``fresh`` marks them, ``[LANES]``) the next instances of ``y0 : [b, l, d]``,
    ``P, U : [b, h, d, d]`` from index ``waiting`` on: state ``y : [l, d, LANES]``, matrices ``base, values :
    [h, d, d, LANES]``, t = t0 and ``lane_stats : [LANES, 5]`` reset; returns how many were loaded."""
    started = 0
    for q in range(LANES):
        fresh[q] = not active[q] and waiting < y0.shape[0]
        if fresh[q]:
            slot[q], active[q], last_rejected[q], t[q] = waiting, True, False, t0
            y[..., q], base[..., q], values[..., q] = y0[waiting], P[waiting], U[waiting]
            lane_stats[q, 0], lane_stats[q, 1], lane_stats[q, 2], lane_stats[q, 3] = OK, 0, 0, 2
            lane_stats[q, 4] = 0.0
            waiting += 1
            started += 1
    return started


@njit(cache=True, nogil=True)
def _starting_steps(t, t0, span, rtol, atol, fresh, y, field, stages, z, error, norms, times, step, dt):
    """The fresh lanes' k_1 = f(t0, y0) into ``stages[0]`` and their starting step into ``dt : [LANES]``: Hairer,
    Norsett & Wanner's (sim.solvers.AdaptiveStepSize.initial_step). ``y, z : [l, d, LANES]``, ``stages : [7, l,
    d, LANES]``, ``error : [l d, LANES]``, ``norms : [3, LANES]``; ``times, step`` ``[LANES]`` scratch."""
    size = error.shape[0]
    y_flat, z_flat, k = y.reshape(size, LANES), z.reshape(size, LANES), stages.reshape(7, size, LANES)
    base, values, causal, identity, modulated, amplitude, omega, phase, sine, P_t, scratch = field
    _evaluate(t, y, base, values, causal, identity, modulated, amplitude, omega, phase, sine, P_t, scratch, z)
    for m in range(size):
        for q in range(LANES):
            if fresh[q]:
                k[0, m, q] = z_flat[m, q]
    _scaled_norms(y_flat, y_flat, y_flat, rtol, atol, norms[0])
    _scaled_norms(k[0], y_flat, y_flat, rtol, atol, norms[1])
    for q in range(LANES):
        d0, d1 = norms[0, q], norms[1, q]
        step[q] = _first_guess(d0, d1, span)  # h0
        times[q] = t0 + step[q]
    for m in range(size):
        for q in range(LANES):
            z_flat[m, q] = y_flat[m, q] + step[q] * k[0, m, q]
    _evaluate(times, z, base, values, causal, identity, modulated, amplitude, omega, phase, sine,
              P_t, scratch, stages[1])
    for m in range(size):
        for q in range(LANES):
            error[m, q] = k[1, m, q] - k[0, m, q]
    _scaled_norms(error, y_flat, y_flat, rtol, atol, norms[2])
    for q in range(LANES):
        if fresh[q]:
            dt[q] = _starting_step(step[q], norms[1, q], norms[2, q] / step[q], span, _ORDER)


@njit(cache=True, nogil=True)
def _step_sizes(t1, tiny, max_steps, active, lane_stats, t, dt, landed, step):
    """Each lane's step this round into ``step : [LANES]``: dt, or what is left to t1 when that lands on it
    (``landed``), 0 for a lane without a running instance; a lane whose budget is spent gets OUT_OF_STEPS."""
    for q in range(LANES):
        if active[q] and lane_stats[q, 1] + lane_stats[q, 2] >= max_steps:
            lane_stats[q, 0] = OUT_OF_STEPS
        landed[q] = t[q] + dt[q] >= t1 - tiny
        step[q] = (t1 - t[q] if landed[q] else dt[q]) if active[q] and lane_stats[q, 0] == OK else 0.0


@njit(cache=True, nogil=True)
def _dopri5_step(t, step, y_flat, k, field, stages, z, z_flat, y_next, next_flat, times, error):
    """One Dormand-Prince 5(4) step of ``step : [LANES]`` from each lane's (t, y): stages k_2 .. k_6 and the FSAL
    stage f(t + step, y_next) into ``stages : [7, l, d, LANES]`` (k_1 given), ``y_next : [l, d, LANES]`` and the
    embedded error estimate into ``error : [l d, LANES]``; ``z`` ``[l, d, LANES]``, ``times`` ``[LANES]`` scratch;
    ``y_flat, z_flat, next_flat : [l d, LANES]`` and ``k : [7, l d, LANES]`` views of y, z, y_next and stages."""
    size = error.shape[0]
    base, values, causal, identity, modulated, amplitude, omega, phase, sine, P_t, scratch = field
    for s in range(1, 6):  # stage s: y + sum_j (step a_sj) k_j
        for m in range(size):
            for q in range(LANES):
                acc = y_flat[m, q]
                for j in range(s):
                    acc += (step[q] * _A[s, j]) * k[j, m, q]
                z_flat[m, q] = acc
        for q in range(LANES):
            times[q] = t[q] + _C[s] * step[q]
        _evaluate(times, z, base, values, causal, identity, modulated, amplitude, omega, phase, sine,
                  P_t, scratch, stages[s])
    for m in range(size):  # b_2 = 0
        for q in range(LANES):
            acc = y_flat[m, q] + (step[q] * _B[0]) * k[0, m, q]
            for j in range(2, 6):
                acc += (step[q] * _B[j]) * k[j, m, q]
            next_flat[m, q] = acc
    for q in range(LANES):
        times[q] = t[q] + step[q]
    _evaluate(times, y_next, base, values, causal, identity, modulated, amplitude, omega, phase, sine,
              P_t, scratch, stages[6])
    for m in range(size):  # e_2 = 0
        for q in range(LANES):
            acc = (step[q] * _E[0]) * k[0, m, q]
            for j in range(2, 7):
                acc += (step[q] * _E[j]) * k[j, m, q]
            error[m, q] = acc


@njit(cache=True, nogil=True)
def _dopri5_instances(y0, P, U, causal, identity, modulated, amplitude, omega, phase, sine, t0, t1, rtol, atol,
                      max_steps, y_end, stats, scratch):
    """Integrate every instance from t0 to t1 with its own adaptive Dopri5 steps (retracted to the sphere after
    every accepted step), ``LANES`` at a time side by side (``lanes_field_``): a lane whose instance ends (t1
    reached, its step budget spent, a non-finite error) takes the next instance, the others carry on (their
    arithmetic is the lane's own: a lane's results do not depend on its neighbours). ``y0, y_end : [b, l, d]``,
    ``P, U : [b, h, d, d]``, ``stats : [b, 5]`` (status, steps, rejected, evaluations, max drift)."""
    _, tokens, dim = y0.shape
    base = np.empty((*P.shape[1:], LANES))
    values = np.empty((*U.shape[1:], LANES))
    field = (base, values, causal, identity, modulated, amplitude, omega, phase, sine, np.empty(base.shape), scratch)
    stages = np.empty((7, tokens, dim, LANES))  # k_1 .. k_6 and the FSAL stage f(t + dt, y_next)
    z, y, y_next = np.empty((tokens, dim, LANES)), np.empty((tokens, dim, LANES)), np.empty((tokens, dim, LANES))
    y_flat, next_flat, k = y.reshape(-1, LANES), y_next.reshape(-1, LANES), stages.reshape(7, -1, LANES)
    z_flat = z.reshape(-1, LANES)
    error = np.empty(y_flat.shape)
    norms = np.empty((3, LANES))
    lane_stats = np.zeros((LANES, 5))
    times, t, dt, step = np.empty(LANES), np.full(LANES, t0), np.zeros(LANES), np.zeros(LANES)
    slot = np.zeros(LANES, dtype=np.int64)  # the instance in each lane
    active, fresh = np.zeros(LANES, dtype=np.bool_), np.zeros(LANES, dtype=np.bool_)
    landed, last_rejected = np.zeros(LANES, dtype=np.bool_), np.zeros(LANES, dtype=np.bool_)
    tiny = 1e-12 * max(1.0, abs(t0), abs(t1))
    exponent = -1.0 / 5.0  # -1 / (embedded order + 1)
    for q in range(LANES):  # every lane holds a valid instance (the first) until it is given its own
        y[..., q], base[..., q], values[..., q] = y0[0], P[0], U[0]
    waiting = 0
    while True:
        started = _load_lanes(y0, P, U, t0, waiting, slot, active, fresh, last_rejected, t, y, base, values,
                              lane_stats)
        waiting += started
        if started:
            _starting_steps(t, t0, t1 - t0, rtol, atol, fresh, y, field, stages, z, error, norms, times, step, dt)
        running = 0
        for q in range(LANES):
            running += active[q]
        if not running:
            return
        _step_sizes(t1, tiny, max_steps, active, lane_stats, t, dt, landed, step)
        _dopri5_step(t, step, y_flat, k, field, stages, z, z_flat, y_next, next_flat, times, error)
        _scaled_norms(error, y_flat, next_flat, rtol, atol, norms[0])
        for q in range(LANES):
            if not active[q]:
                continue
            if lane_stats[q, 0] == OK:
                _control(q, norms[0, q], exponent, t1, tiny, landed, last_rejected, step, dt, t, y, y_next, k,
                         lane_stats)
            if lane_stats[q, 0] != OK or not t1 - t[q] > tiny:  # the instance ended: its results out
                active[q] = False
                y_end[slot[q]] = y[..., q]
                stats[slot[q]] = lane_stats[q]


@njit(cache=True, nogil=True)
def _control(q, err, exponent, t1, tiny, landed, last_rejected, step, dt, t, y, y_next, k, lane_stats):
    """Lane q's step after its error ``err``: rejected (a shorter dt), or accepted (t advanced, y_next retracted
    into y, the FSAL stage kept as k_1, the drift updated); scipy's step-size rule, as sim.solvers."""
    tokens, dim, _ = y.shape
    lane_stats[q, 3] += 6
    if not np.isfinite(err):
        lane_stats[q, 0] = NOT_FINITE
        return
    accepted, dt[q] = _next_step(err, step[q], dt[q], last_rejected[q], _SAFETY, _MIN_FACTOR, _MAX_FACTOR, exponent)
    last_rejected[q] = not accepted
    if not accepted:
        lane_stats[q, 2] += 1
        return
    t[q] = t1 if landed[q] else t[q] + step[q]
    for i in range(tokens):  # retraction pi(x) = x / |x| (eq. 2), then the drift |y_i^T y_i - 1|
        total = 0.0
        for e in range(dim):
            total += y_next[i, e, q] * y_next[i, e, q]
        inverse = 1.0 / np.sqrt(total)
        total = 0.0
        for e in range(dim):
            y[i, e, q] = y_next[i, e, q] * inverse
            total += y[i, e, q] * y[i, e, q]
        lane_stats[q, 4] = max(lane_stats[q, 4], abs(total - 1.0))
    for m in range(k.shape[1]):  # first same as last: f(t + dt, y_next) before the retraction
        k[0, m, q] = k[6, m, q]
    lane_stats[q, 1] += 1


@dataclass(frozen=True)
class Integration:
    """The end states ``y1 : [b, l, d]`` and per instance: ``steps``, ``rejected``, ``evaluations`` (of the field on
    that instance) and ``drift`` (max |y_i^T y_i - 1| over its accepted steps), each shape=[b]."""

    y1: np.ndarray
    steps: np.ndarray
    rejected: np.ndarray
    evaluations: np.ndarray
    drift: np.ndarray

    @property
    def max_drift(self) -> float:
        return float(np.max(self.drift))


def _checked_inputs(P, U, y0, t0, t1, rtol, atol, max_steps, workers):
    """``solve_instances``' arguments checked: ``P, U : [b, h, d, d]`` and ``y0 : [b, l, d]`` (on the unit sphere)
    as C-contiguous float64, ``t0 < t1`` as floats; a ``ValueError`` naming the argument otherwise."""
    y0 = as_finite_array("y0", y0)
    P, U = as_finite_array("P", P), as_finite_array("U", U)
    if y0.ndim != 3:
        raise ValueError(f"y0 must have shape [b, l, d]; got {y0.shape}.")
    batch, _, dim = y0.shape
    if P.ndim != 4 or P.shape[0] != batch or P.shape[2:] != (dim, dim):
        raise ValueError(f"P must have shape [b={batch}, h, d={dim}, d={dim}]; got {P.shape}.")
    if U.shape != P.shape:
        raise ValueError(f"U must have the shape of P {P.shape}; got {U.shape}.")
    drift0 = float(np.max(np.abs(np.sum(y0 * y0, axis=-1) - 1.0)))
    if drift0 > 1e-8:  # as sim.solve: the retraction keeps a state on the sphere, it does not put it there
        raise ValueError(f"y0 must lie on the unit sphere (max |y^T y - 1| = {drift0:.3g} > 1e-8).")
    t0, t1 = float(t0), float(t1)
    if not (np.isfinite(t0) and np.isfinite(t1) and t1 > t0):
        raise ValueError(f"t0={t0!r} and t1={t1!r} must be finite with t1 > t0.")
    AdaptiveStepSize(rtol=rtol, atol=atol)  # the same checks of the tolerances
    if int(max_steps) != max_steps or max_steps < 1:
        raise ValueError(f"max_steps={max_steps!r} must be a positive integer.")
    if int(workers) != workers or workers < 1:
        raise ValueError(f"workers={workers!r} must be a positive integer.")
    P, U, y0 = (np.ascontiguousarray(a) for a in (P, U, y0))
    return P, U, y0, t0, t1


def _modulation_arrays(modulation, heads: int, dim: int) -> list[np.ndarray]:
    """The compiled loop's form of ``modulation`` (one ``CosineDiagonal`` per head, or None): its amplitude,
    omega, phase (float64) and sine (bool), each ``[h, d]`` (zeros when None, then unused)."""
    if modulation is None:
        return [np.zeros((heads, dim)) for _ in range(3)] + [np.zeros((heads, dim), dtype=np.bool_)]
    if len(modulation) != heads or not all(isinstance(m, CosineDiagonal) for m in modulation):
        raise ValueError(f"modulation must hold one CosineDiagonal per head ({heads}); got {modulation!r}.")
    return [np.ascontiguousarray(np.stack([np.broadcast_to(getattr(m, name), (dim,)) for m in modulation]),
                                 dtype=dtype)
            for name, dtype in (("amplitude", np.float64), ("omega", np.float64), ("phase", np.float64),
                                ("sine", np.bool_))]


def _raise_failures(status: np.ndarray, max_steps: int, t1: float) -> None:
    """``MaxStepsReached`` (OUT_OF_STEPS) or ``FloatingPointError`` (NOT_FINITE) naming the first such instance
    of ``status : [b]``; nothing when every instance is OK."""
    for code, error in ((OUT_OF_STEPS, MaxStepsReached), (NOT_FINITE, FloatingPointError)):
        failed = np.flatnonzero(status == code)
        if failed.size:
            what = (f"spent max_steps={max_steps} before t1={t1:g}" if code == OUT_OF_STEPS
                    else "became non-finite")
            raise error(f"instance {int(failed[0])} (of {failed.size} such) {what}; pass a larger max_steps only "
                        "if the problem honestly needs it.")


def solve_instances(P, U, causal: bool, y0, t1: float, *, rtol: float, atol: float, t0: float = 0.0,
                    modulation: tuple[CosineDiagonal, ...] | None = None, max_steps: int = MAX_STEPS,
                    workers: int = 1) -> Integration:
    """Integrate every instance of eq. 6 on the sphere from t0 to t1, each with its own adaptive Dopri5 steps.

    Parameters
    ----------
    P, U : arrays, shape=[b, h, d, d]: instance b's P_eta (P'_eta when ``modulation`` is given) and U_eta.
    causal : alpha_ij = 0 for j > i.
    y0 : array, shape=[b, l, d], every token on the unit sphere.
    rtol, atol : each instance's tolerances (as ``AdaptiveStepSize(rtol, atol)`` for that instance alone).
    modulation : one ``CosineDiagonal`` per head: P_eta(t) = diag(D_eta(t)) P'_eta, the same D for every instance.
    max_steps : each instance's step budget (accepted and rejected); spent, ``MaxStepsReached`` names the instance.
    workers : threads, each integrating a contiguous group of instances (the compiled loop releases the GIL).
    """
    P, U, y0, t0, t1 = _checked_inputs(P, U, y0, t0, t1, rtol, atol, max_steps, workers)
    batch, _, dim = y0.shape
    arrays = _modulation_arrays(modulation, P.shape[1], dim)
    identity = bool(np.all(U == np.eye(dim)))  # every U_eta = I: the field skips its product
    y1 = np.empty_like(y0)
    stats = np.empty((batch, 5))
    groups = instance_groups(batch, int(workers))

    def run(group: slice) -> None:
        _dopri5_instances(y0[group], P[group], U[group], bool(causal), identity, modulation is not None, *arrays,
                          t0, t1, float(rtol), float(atol), int(max_steps), y1[group], stats[group],
                          lanes_scratch(*y0.shape[1:]))

    if len(groups) == 1:
        run(groups[0])
    else:
        with worker_pool(len(groups)) as pool:
            list(pool.map(run, groups))
    _raise_failures(stats[:, 0].astype(int), max_steps, t1)
    return Integration(y1, stats[:, 1].astype(int), stats[:, 2].astype(int), stats[:, 3].astype(int), stats[:, 4])


def solve_field(field: AttentionField, y0, t1: float, *, rtol: float, atol: float, t0: float = 0.0,
                max_steps: int = MAX_STEPS, workers: int = 1) -> Integration:
    """``solve_instances`` for the instances ``y0 : [b, l, d]`` of one ``AttentionField`` on the sphere whose heads
    are constant matrices or ``Modulated`` by a ``CosineDiagonal`` (all of them alike)."""
    if not field.manifold.is_sphere:
        raise ValueError("field must live on the sphere (W = I): the compiled integration retracts by x / |x|.")
    heads = field.P
    modulated = [isinstance(p, Modulated) and isinstance(p.diagonal, CosineDiagonal) for p in heads]
    if any(modulated) and not all(modulated) or not any(modulated) and any(callable(p) for p in heads):
        raise ValueError("field's heads P_eta must all be constant matrices or all Modulated by a CosineDiagonal.")
    if any(field.U is not None and callable(u) for u in (field.U or ())):
        raise ValueError("field's value matrices U_eta must be constant.")
    y0 = as_finite_array("y0", y0)
    if y0.ndim != 3:
        raise ValueError(f"y0 must have shape [b, l, d]; got {y0.shape}.")
    batch, dim = len(y0), y0.shape[-1]
    base = np.stack([p.base if modulated[0] else p for p in heads])
    values = field.values(t0)
    P = np.ascontiguousarray(np.broadcast_to(base, (batch, *base.shape)))
    U = np.ascontiguousarray(np.broadcast_to(values, (batch, *values.shape)))
    modulation = tuple(p.diagonal for p in heads) if modulated[0] else None
    if P.shape[-1] != dim:
        raise ValueError(f"y0 must have last axis d = {P.shape[-1]}; got shape {y0.shape}.")
    return solve_instances(P, U, field.causal, y0, t1, rtol=rtol, atol=atol, t0=t0, modulation=modulation,
                           max_steps=max_steps, workers=workers)
