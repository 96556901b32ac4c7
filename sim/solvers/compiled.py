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
The field is the suite's compiled eq. 6 in that form, ``sim.field.instances.lanes_field_``, on the sphere (W = I). The
matrices are constant per instance, or P_eta(t) = D_eta(t) P'_eta with the diagonal ``D_eta(t)`` a
``sim.figures.scenarios.CosineDiagonal`` (Figs. 1-3).

Shapes: ``y0 : [b, l, d]``; ``P, U : [b, h, d, d]`` (P' when modulated); a modulation's arrays ``[h, d]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from sim.field.batching import instance_groups
from sim.field.dynamics import AttentionField
from sim.field.instances import LANES, InstanceField, lanes_field_, lanes_scratch
from sim.field.manifold import as_finite_array
from sim.field.products import worker_pool
from sim.field.modulation import CosineDiagonal, Modulated
from sim.solvers import MAX_STEPS, AdaptiveStepSize, Dopri5, MaxStepsReached
from sim.solvers import stepsize
from sim.solvers.dopri5 import DORMAND_PRINCE

# Dormand-Prince 5(4) (sim.solvers.dopri5.DORMAND_PRINCE, the tableau of sim.solvers.Dopri5, as arrays the compiled
# loop reads as constants).
_C = np.array(DORMAND_PRINCE.c)
_A = DORMAND_PRINCE.a_matrix()
_B = np.array(DORMAND_PRINCE.b)
_E = np.array(DORMAND_PRINCE.error)
_ORDER = Dopri5.embedded_order
#: The step-size rule of sim.solvers (sim/solvers/stepsize.py), the same functions compiled.
_first_guess, _starting_step, _next_step = (njit(cache=True, nogil=True)(rule) for rule in
                                            (stepsize.first_guess, stepsize.starting_step, stepsize.next_step))
#: Status of one instance's integration.
OK, OUT_OF_STEPS, NOT_FINITE = 0, 1, 2


class Settings(NamedTuple):
    """The scalars of one integration: the span [t0, t1], the controller's tolerances and step-size rule
    (``exponent`` = -1 / (embedded order + 1)), each instance's step budget, and ``tiny``: times closer are one."""

    t0: float
    t1: float
    rtol: float
    atol: float
    safety: float
    min_factor: float
    max_factor: float
    exponent: float
    max_steps: int
    tiny: float


class Modulation(NamedTuple):
    """D_eta(t)_c = amplitude cos(omega t + phase) (sin where ``sine``) of P_eta(t) = diag(D_eta(t)) P'_eta, each
    ``[h, d]`` (float64; ``sine`` bool)."""

    amplitude: np.ndarray
    omega: np.ndarray
    phase: np.ndarray
    sine: np.ndarray


class LaneField(NamedTuple):
    """eq. 6 for the instances in the lanes (``lanes_field_``'s arguments): each lane's ``base`` P_eta (P'_eta when
    ``modulated``) and ``values`` U_eta, ``[h, d, d, LANES]``; ``matrices_at_t`` the modulated P_eta(t) of that
    shape; ``identity``: every U_eta = I; ``scratch`` from ``lanes_scratch``."""

    base: np.ndarray
    values: np.ndarray
    causal: bool
    identity: bool
    modulated: bool
    modulation: Modulation
    matrices_at_t: np.ndarray
    scratch: tuple


class Tally(NamedTuple):
    """Per instance (``[b]``) or per lane (``[LANES]``): the status (OK, OUT_OF_STEPS, NOT_FINITE), the accepted and
    rejected steps, the evaluations of the field, and the drift max |y_i^T y_i - 1| over the accepted steps."""

    status: np.ndarray
    steps: np.ndarray
    rejected: np.ndarray
    evaluations: np.ndarray
    drift: np.ndarray


class Lanes(NamedTuple):
    """Each lane's state, ``[LANES]``: its instance (``slot``), whether it runs one (``active``), was just given one
    (``fresh``), its step lands on t1 (``landed``), its last step was rejected; its t, proposed step ``dt``, the
    ``step`` of this round, and its instance's ``tally``."""

    slot: np.ndarray
    active: np.ndarray
    fresh: np.ndarray
    landed: np.ndarray
    last_rejected: np.ndarray
    t: np.ndarray
    dt: np.ndarray
    step: np.ndarray
    tally: Tally


class Workspace(NamedTuple):
    """The Dormand-Prince arrays of the lanes: states ``y, y_next, z : [l, d, LANES]``, ``stages : [7, l, d, LANES]``
    (k_1 .. k_6 and the FSAL stage f(t + step, y_next)), their views ``y_flat, next_flat, z_flat : [l d, LANES]``
    and ``k : [7, l d, LANES]``, the error estimate ``[l d, LANES]``, ``norms : [3, LANES]`` and ``times :
    [LANES]``."""

    y: np.ndarray
    y_next: np.ndarray
    z: np.ndarray
    stages: np.ndarray
    y_flat: np.ndarray
    next_flat: np.ndarray
    z_flat: np.ndarray
    k: np.ndarray
    error: np.ndarray
    norms: np.ndarray
    times: np.ndarray


class Instances(NamedTuple):
    """A group of instances: ``y0, y1 : [b, l, d]`` (start, end), ``P, U : [b, h, d, d]`` and their ``tally``
    (``[b]`` each)."""

    y0: np.ndarray
    P: np.ndarray
    U: np.ndarray
    y1: np.ndarray
    tally: Tally


@njit(cache=True, nogil=True)
def _matrices_at(t, base, modulation, out):
    """Each lane's P_eta(t_q) = diag(D_eta(t_q)) P'_eta into ``out : [h, d, d, LANES]``, ``t, base`` per lane
    (``[LANES]``, ``[h, d, d, LANES]``), D_eta from ``modulation``."""
    amplitude, omega, phase, sine = modulation
    heads, dim = amplitude.shape
    for eta in range(heads):
        for c in range(dim):
            for q in range(LANES):
                argument = omega[eta, c] * t[q] + phase[eta, c]
                scale = amplitude[eta, c] * (np.sin(argument) if sine[eta, c] else np.cos(argument))
                for e in range(dim):
                    out[eta, c, e, q] = scale * base[eta, c, e, q]


@njit(cache=True, nogil=True)
def _evaluate(field, t, y, out):
    """dy/dt at each lane's (t, y) into ``out`` (``t : [LANES]``, ``y, out : [l, d, LANES]``): the matrices at t
    (when modulated), then eq. 6 (``lanes_field_``) of the ``LaneField``."""
    if field.modulated:
        _matrices_at(t, field.base, field.modulation, field.matrices_at_t)
        lanes_field_(y, field.matrices_at_t, field.values, field.causal, field.identity, out, field.scratch)
    else:
        lanes_field_(y, field.base, field.values, field.causal, field.identity, out, field.scratch)


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
def _load_lanes(instances, waiting, t0, lanes, field, work):
    """Give the free lanes the next ``instances`` from index ``waiting`` on (``lanes.fresh`` marks them): their
    state into ``work.y``, their matrices into ``field``, t = t0 and their tally reset; returns how many."""
    started = 0
    for q in range(LANES):
        lanes.fresh[q] = not lanes.active[q] and waiting < instances.y0.shape[0]
        if lanes.fresh[q]:
            lanes.slot[q], lanes.active[q], lanes.last_rejected[q], lanes.t[q] = waiting, True, False, t0
            work.y[..., q], field.base[..., q] = instances.y0[waiting], instances.P[waiting]
            field.values[..., q] = instances.U[waiting]
            tally = lanes.tally
            tally.status[q], tally.steps[q], tally.rejected[q], tally.evaluations[q] = OK, 0, 0, 2
            tally.drift[q] = 0.0
            waiting += 1
            started += 1
    return started


@njit(cache=True, nogil=True)
def _unload_lane(q, lanes, work, instances):
    """Lane q's instance ended: its end state and tally into ``instances``' row; the lane is free."""
    lanes.active[q] = False
    b = lanes.slot[q]
    instances.y1[b] = work.y[..., q]
    out, lane = instances.tally, lanes.tally
    out.status[b], out.steps[b], out.rejected[b] = lane.status[q], lane.steps[q], lane.rejected[q]
    out.evaluations[b], out.drift[b] = lane.evaluations[q], lane.drift[q]


@njit(cache=True, nogil=True)
def _starting_steps(settings, lanes, field, work):
    """The fresh lanes' k_1 = f(t0, y0) into ``work.stages[0]`` and their starting step into ``lanes.dt``: Hairer,
    Norsett & Wanner's (sim.solvers.AdaptiveStepSize.initial_step); ``lanes.step`` holds h0 meanwhile."""
    y_flat, z_flat, k, error, norms = work.y_flat, work.z_flat, work.k, work.error, work.norms
    fresh, step, times, span = lanes.fresh, lanes.step, work.times, settings.t1 - settings.t0
    size = error.shape[0]
    _evaluate(field, lanes.t, work.y, work.z)
    for m in range(size):
        for q in range(LANES):
            if fresh[q]:
                k[0, m, q] = z_flat[m, q]
    _scaled_norms(y_flat, y_flat, y_flat, settings.rtol, settings.atol, norms[0])
    _scaled_norms(k[0], y_flat, y_flat, settings.rtol, settings.atol, norms[1])
    for q in range(LANES):
        d0, d1 = norms[0, q], norms[1, q]
        step[q] = _first_guess(d0, d1, span)  # h0
        times[q] = settings.t0 + step[q]
    for m in range(size):
        for q in range(LANES):
            z_flat[m, q] = y_flat[m, q] + step[q] * k[0, m, q]
    _evaluate(field, times, work.z, work.stages[1])
    for m in range(size):
        for q in range(LANES):
            error[m, q] = k[1, m, q] - k[0, m, q]
    _scaled_norms(error, y_flat, y_flat, settings.rtol, settings.atol, norms[2])
    for q in range(LANES):
        if fresh[q]:
            lanes.dt[q] = _starting_step(step[q], norms[1, q], norms[2, q] / step[q], span, _ORDER)


@njit(cache=True, nogil=True)
def _step_sizes(settings, lanes):
    """Each lane's step this round into ``lanes.step``: dt, or what is left to t1 when that lands on it
    (``lanes.landed``), 0 for a lane without a running instance; a lane whose budget is spent gets
    OUT_OF_STEPS."""
    t1, t, dt, tally = settings.t1, lanes.t, lanes.dt, lanes.tally
    for q in range(LANES):
        if lanes.active[q] and tally.steps[q] + tally.rejected[q] >= settings.max_steps:
            tally.status[q] = OUT_OF_STEPS
        lanes.landed[q] = t[q] + dt[q] >= t1 - settings.tiny
        running = lanes.active[q] and tally.status[q] == OK
        lanes.step[q] = (t1 - t[q] if lanes.landed[q] else dt[q]) if running else 0.0


@njit(cache=True, nogil=True)
def _dopri5_step(lanes, field, work):
    """One Dormand-Prince 5(4) step of ``lanes.step`` from each lane's (t, y): stages k_2 .. k_6 and the FSAL
    stage f(t + step, y_next) into ``work.stages`` (k_1 given), ``work.y_next`` and the embedded error estimate
    into ``work.error``."""
    t, step, times = lanes.t, lanes.step, work.times
    y_flat, z_flat, next_flat, k, error = work.y_flat, work.z_flat, work.next_flat, work.k, work.error
    size = error.shape[0]
    for s in range(1, 6):  # stage s: y + sum_j (step a_sj) k_j
        for m in range(size):
            for q in range(LANES):
                acc = y_flat[m, q]
                for j in range(s):
                    acc += (step[q] * _A[s, j]) * k[j, m, q]
                z_flat[m, q] = acc
        for q in range(LANES):
            times[q] = t[q] + _C[s] * step[q]
        _evaluate(field, times, work.z, work.stages[s])
    for m in range(size):  # b_2 = 0
        for q in range(LANES):
            acc = y_flat[m, q] + (step[q] * _B[0]) * k[0, m, q]
            for j in range(2, 6):
                acc += (step[q] * _B[j]) * k[j, m, q]
            next_flat[m, q] = acc
    for q in range(LANES):
        times[q] = t[q] + step[q]
    _evaluate(field, times, work.y_next, work.stages[6])
    for m in range(size):  # e_2 = 0
        for q in range(LANES):
            acc = (step[q] * _E[0]) * k[0, m, q]
            for j in range(2, 7):
                acc += (step[q] * _E[j]) * k[j, m, q]
            error[m, q] = acc


@njit(cache=True, nogil=True)
def _dopri5_instances(instances, settings, field, lanes, work):
    """Integrate every one of ``instances`` from t0 to t1 with its own adaptive Dopri5 steps (retracted to the
    sphere after every accepted step), ``LANES`` at a time side by side (``lanes_field_``): a lane whose instance
    ends (t1 reached, its step budget spent, a non-finite error) takes the next instance, the others carry on
    (their arithmetic is the lane's own: a lane's results do not depend on its neighbours). ``field``, ``lanes``
    and ``work`` from ``_lanes_records``."""
    waiting = 0
    while True:
        started = _load_lanes(instances, waiting, settings.t0, lanes, field, work)
        waiting += started
        if started:
            _starting_steps(settings, lanes, field, work)
        running = 0
        for q in range(LANES):
            running += lanes.active[q]
        if not running:
            return
        _step_sizes(settings, lanes)
        _dopri5_step(lanes, field, work)
        _scaled_norms(work.error, work.y_flat, work.next_flat, settings.rtol, settings.atol, work.norms[0])
        for q in range(LANES):
            if not lanes.active[q]:
                continue
            if lanes.tally.status[q] == OK:
                _control(q, work.norms[0, q], settings, lanes, work)
            if lanes.tally.status[q] != OK or not settings.t1 - lanes.t[q] > settings.tiny:  # the instance ended
                _unload_lane(q, lanes, work, instances)


@njit(cache=True, nogil=True)
def _control(q, err, settings, lanes, work):
    """Lane q's step after its error ``err``: rejected (a shorter dt), or accepted (t advanced, y_next retracted
    into y, the FSAL stage kept as k_1, the drift updated); scipy's step-size rule, as sim.solvers."""
    y, y_next, k, tally = work.y, work.y_next, work.k, lanes.tally
    tokens, dim, _ = y.shape
    tally.evaluations[q] += 6
    if not np.isfinite(err):
        tally.status[q] = NOT_FINITE
        return
    accepted, lanes.dt[q] = _next_step(err, lanes.step[q], lanes.dt[q], lanes.last_rejected[q], settings.safety,
                                       settings.min_factor, settings.max_factor, settings.exponent)
    lanes.last_rejected[q] = not accepted
    if not accepted:
        tally.rejected[q] += 1
        return
    lanes.t[q] = settings.t1 if lanes.landed[q] else lanes.t[q] + lanes.step[q]
    for i in range(tokens):  # retraction pi(x) = x / |x| (eq. 2), then the drift |y_i^T y_i - 1|
        total = 0.0
        for e in range(dim):
            total += y_next[i, e, q] * y_next[i, e, q]
        inverse = 1.0 / np.sqrt(total)
        total = 0.0
        for e in range(dim):
            y[i, e, q] = y_next[i, e, q] * inverse
            total += y[i, e, q] * y[i, e, q]
        tally.drift[q] = max(tally.drift[q], abs(total - 1.0))
    for m in range(k.shape[1]):  # first same as last: f(t + dt, y_next) before the retraction
        k[0, m, q] = k[6, m, q]
    tally.steps[q] += 1


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


def _checked_inputs(field: InstanceField, y0, t0, t1, controller: AdaptiveStepSize, max_steps, workers):
    """``solve_instances``' arguments checked: ``y0 : [b, l, d]`` (on the unit sphere, for the b instances of
    ``field``) as C-contiguous float64, ``t0 < t1`` as floats; a ``ValueError`` naming the argument otherwise."""
    y0 = as_finite_array("y0", y0)
    if y0.ndim != 3:
        raise ValueError(f"y0 must have shape [b, l, d]; got {y0.shape}.")
    batch, _, dim = y0.shape
    if field.P.shape[0] != batch or field.P.shape[2:] != (dim, dim):
        raise ValueError(f"field's P must have shape [b={batch}, h, d={dim}, d={dim}]; got {field.P.shape}.")
    drift0 = float(np.max(np.abs(np.sum(y0 * y0, axis=-1) - 1.0)))
    if drift0 > 1e-8:  # as sim.solve: the retraction keeps a state on the sphere, it does not put it there
        raise ValueError(f"y0 must lie on the unit sphere (max |y^T y - 1| = {drift0:.3g} > 1e-8).")
    t0, t1 = float(t0), float(t1)
    if not (np.isfinite(t0) and np.isfinite(t1) and t1 > t0):
        raise ValueError(f"t0={t0!r} and t1={t1!r} must be finite with t1 > t0.")
    if not isinstance(controller, AdaptiveStepSize) or controller.dt0 is not None:
        raise ValueError(f"controller must be an AdaptiveStepSize without dt0 (each instance starts with its own "
                         f"step); got {controller!r}.")
    if int(max_steps) != max_steps or max_steps < 1:
        raise ValueError(f"max_steps={max_steps!r} must be a positive integer.")
    if int(workers) != workers or workers < 1:
        raise ValueError(f"workers={workers!r} must be a positive integer.")
    return np.ascontiguousarray(y0), t0, t1


def _settings(controller: AdaptiveStepSize, t0: float, t1: float, max_steps: int) -> Settings:
    """The compiled loop's scalars of an integration from t0 to t1 under ``controller``."""
    return Settings(t0=t0, t1=t1, rtol=float(controller.rtol), atol=float(controller.atol),
                    safety=float(controller.safety), min_factor=float(controller.min_factor),
                    max_factor=float(controller.max_factor), exponent=-1.0 / (_ORDER + 1), max_steps=int(max_steps),
                    tiny=1e-12 * max(1.0, abs(t0), abs(t1)))


def _modulation_arrays(modulation, heads: int, dim: int) -> Modulation:
    """The compiled loop's form of ``modulation`` (one ``CosineDiagonal`` per head, or None): its amplitude,
    omega, phase (float64) and sine (bool), each ``[h, d]`` (zeros when None, then unused)."""
    if modulation is None:
        return Modulation(*[np.zeros((heads, dim)) for _ in range(3)], np.zeros((heads, dim), dtype=np.bool_))
    if len(modulation) != heads or not all(isinstance(m, CosineDiagonal) for m in modulation):
        raise ValueError(f"modulation must hold one CosineDiagonal per head ({heads}); got {modulation!r}.")
    return Modulation(*[np.ascontiguousarray(np.stack([np.broadcast_to(getattr(m, name), (dim,)) for m in modulation]),
                                             dtype=dtype)
                        for name, dtype in (("amplitude", np.float64), ("omega", np.float64),
                                            ("phase", np.float64), ("sine", np.bool_))])


def _tally(size: int) -> Tally:
    """A zero ``Tally`` of ``size`` instances or lanes."""
    return Tally(*(np.zeros(size, dtype=np.int64) for _ in range(4)), np.zeros(size))


def _lanes_records(field: InstanceField, modulation: Modulation, modulated: bool,
                   y0: np.ndarray) -> tuple[LaneField, Lanes, Workspace]:
    """One thread's arrays of ``_dopri5_instances`` for the instances of ``field`` from ``y0 : [b, l, d]``
    (``modulation`` used when ``modulated``); every lane holds a valid instance (the first) until it is given its
    own."""
    _, tokens, dim = y0.shape
    base = np.ascontiguousarray(np.broadcast_to(field.P[0, ..., None], (*field.P.shape[1:], LANES)))
    values = np.ascontiguousarray(np.broadcast_to(field.U[0, ..., None], base.shape))
    lane_field = LaneField(base, values, field.causal, field.identity, modulated, modulation, np.empty(base.shape),
                           lanes_scratch(tokens, dim))
    stages = np.empty((7, tokens, dim, LANES))
    y = np.ascontiguousarray(np.broadcast_to(y0[0, ..., None], (tokens, dim, LANES)))
    y_next, z = np.empty(y.shape), np.empty(y.shape)
    work = Workspace(y, y_next, z, stages, y.reshape(-1, LANES), y_next.reshape(-1, LANES), z.reshape(-1, LANES),
                     stages.reshape(7, -1, LANES), np.empty((tokens * dim, LANES)), np.empty((3, LANES)),
                     np.empty(LANES))
    flags = [np.zeros(LANES, dtype=np.bool_) for _ in range(4)]  # active, fresh, landed, last_rejected
    lanes = Lanes(np.zeros(LANES, dtype=np.int64), *flags, np.zeros(LANES), np.zeros(LANES), np.zeros(LANES),
                  _tally(LANES))
    return lane_field, lanes, work


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


def solve_instances(field: InstanceField, y0, t1: float, *, controller: AdaptiveStepSize, t0: float = 0.0,
                    modulation: tuple[CosineDiagonal, ...] | None = None, max_steps: int = MAX_STEPS,
                    workers: int = 1) -> Integration:
    """Integrate every instance of eq. 6 on the sphere from t0 to t1, each with its own adaptive Dopri5 steps.

    Parameters
    ----------
    field : the instances' matrices, ``InstanceField(P, U, causal)`` with ``P, U : [b, h, d, d]`` (P'_eta when
        ``modulation`` is given).
    y0 : array, shape=[b, l, d], every token on the unit sphere.
    controller : each instance's ``AdaptiveStepSize(rtol, atol, ...)``, as for that instance alone (no ``dt0``).
    modulation : one ``CosineDiagonal`` per head: P_eta(t) = diag(D_eta(t)) P'_eta, the same D for every instance.
    max_steps : each instance's step budget (accepted and rejected); spent, ``MaxStepsReached`` names the instance.
    workers : threads, each integrating a contiguous group of instances (the compiled loop releases the GIL).
    """
    y0, t0, t1 = _checked_inputs(field, y0, t0, t1, controller, max_steps, workers)
    settings = _settings(controller, t0, t1, max_steps)
    arrays = _modulation_arrays(modulation, field.P.shape[1], y0.shape[-1])
    y1, tally = np.empty_like(y0), _tally(len(y0))
    groups = instance_groups(len(y0), int(workers))

    def run(group: slice) -> None:
        instances = Instances(y0[group], field.P[group], field.U[group], y1[group], Tally(*(a[group] for a in tally)))
        _dopri5_instances(instances, settings, *_lanes_records(field, arrays, modulation is not None, y0))

    if len(groups) == 1:
        run(groups[0])
    else:
        with worker_pool(len(groups)) as pool:
            list(pool.map(run, groups))
    _raise_failures(tally.status, max_steps, t1)
    return Integration(y1, tally.steps, tally.rejected, tally.evaluations, tally.drift)


def solve_field(field: AttentionField, y0, t1: float, *, controller: AdaptiveStepSize, t0: float = 0.0,
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
    if base.shape[-1] != dim:
        raise ValueError(f"y0 must have last axis d = {base.shape[-1]}; got shape {y0.shape}.")
    instances = InstanceField(np.broadcast_to(base, (batch, *base.shape)), np.broadcast_to(values, (batch,
                                                                                                    *values.shape)),
                              field.causal)
    modulation = tuple(p.diagonal for p in heads) if modulated[0] else None
    return solve_instances(instances, y0, t1, controller=controller, t0=t0, modulation=modulation,
                           max_steps=max_steps, workers=workers)
