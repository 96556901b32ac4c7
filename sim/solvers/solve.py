"""The entry point ``solve(field, solver, t0, t1, y0, *, ...)`` (diffrax's ``diffeqsolve``) and its option records
(``SaveAt``, ``SolveOptions``): validation, the save schedule, the first step, and the loop of attempted steps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from sim.field.manifold import Ellipsoid, as_finite_array
from sim.solvers.base import Solver
from sim.solvers.controllers import AdaptiveStepSize, ConstantStepSize
from sim.solvers.stepper import CountingField, Stepper


@dataclass(frozen=True)
class SaveAt:
    """What ``solve`` returns: the states at ``ts`` (steps land exactly on them), at every step
    (``steps=True``), or only at t1 (the default). ``fn(y)``, if given, is stored instead of the state
    (diffrax's ``SaveAt(fn=...)``): e.g. E of every instance rather than all the tokens of a large batch."""

    ts: tuple[float, ...] | np.ndarray | None = None
    steps: bool = False
    fn: Callable[[np.ndarray], np.ndarray] | None = None

    def __post_init__(self) -> None:
        if self.ts is not None and self.steps:
            raise ValueError("SaveAt takes either ts or steps=True, not both.")


@dataclass(frozen=True)
class Solution:
    """``ts : shape=[n_save]``, ``ys : shape=[n_save, ..., tokens, d]`` (or of ``SaveAt.fn``'s output) and the
    cost and drift of the run.

    ``evaluations`` counts calls of the vector field on the whole batch (each evaluates every instance,
    whether in one call or split over workers); ``max_drift`` is max |y^T W y - 1| over every accepted step.
    """

    ts: np.ndarray
    ys: np.ndarray
    evaluations: int
    steps: int
    rejected_steps: int
    max_drift: float
    stats: dict = field(default_factory=dict)


#: ``solve``'s default step budget (accepted and rejected steps together), as diffrax's ``max_steps=4096``. Measured
#: (every solve of tests/sim and tests/properties, the figures at full size; 2026-11-23): the most any check takes is
#: 2000 (fixed steps of 0.025 over [0, 50], tests/sim/test_solvers.py), the most of an adaptive one 1771 (Figs. 5-6,
#: 1000 states, rtol 1e-9 over [0, 60]; Fig. 4 at 100 trajectories takes 261), of a property test 434 (ci profile).
#: A correct model stays below the budget with a margin of 2; a broken one (a field that never settles, a step size
#: that collapses) stops within seconds: the tangent projection halved spends it at t = 0.27 of the benchmark's
#: [0, 2] (tests/sim/test_bench.py).
MAX_STEPS = 4096


class MaxStepsReached(RuntimeError):
    """``solve`` spent its step budget (``max_steps``) before reaching t1."""


@dataclass(frozen=True)
class SolveOptions:
    """How ``solve`` runs, whatever the method: the step budget ``max_steps`` (accepted and rejected steps; spent
    before t1, ``MaxStepsReached`` is raised); ``project``: retract to the manifold by pi_W after every step;
    ``manifold`` overrides ``field.manifold``; ``workers``: step groups of instances (``y0``'s first axis,
    shape=[batch, tokens, d]) in this many threads, with BLAS on one thread each (the limit holds for the whole
    process during the solve); large batches are stepped in parts of about ``PART_BYTES`` whatever the workers
    (``step_parts``). The same steps and step sizes as ``workers=1``; worth it for large batches on several
    cores."""

    max_steps: int = MAX_STEPS
    project: bool = True
    manifold: Ellipsoid | None = None
    workers: int = 1

    def __post_init__(self) -> None:
        for name in ("max_steps", "workers"):
            value = getattr(self, name)
            if int(value) != value or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer.")


def solve(field, solver: Solver, t0: float, t1: float, y0, *, controller: ConstantStepSize | AdaptiveStepSize,
          saveat: SaveAt | None = None, options: SolveOptions = SolveOptions()) -> Solution:
    """Integrate ``dy/dt = field(t, y)`` from t0 to t1 with ``solver``; return a :class:`Solution`.

    Parameters
    ----------
    field : callable (t, y) -> dy/dt, e.g. ``AttentionField``; ``field.manifold`` is the retraction target.
    solver : ``Euler()``, ``RK4()``, ``Dopri5()``, ``DiscreteModel()``.
    y0 : array, shape=[..., tokens, d], on the manifold (finite).
    controller : ``ConstantStepSize(dt0)`` (fixed steps of dt0) or ``AdaptiveStepSize(rtol, atol)`` (embedded
        pairs only; its first step ``dt0``, or chosen automatically).
    saveat : ``SaveAt`` (default: only t1).
    options : ``SolveOptions``: the step budget, the retraction, the threads.
    """
    saveat = SaveAt() if saveat is None else saveat
    t0, t1, y, manifold = _validate(field, solver, t0, t1, y0, controller, options)
    recorder = _Recorder(saveat, _save_times(saveat, t0, t1), t0, t1, y)
    if options.project:
        _check_on_manifold(manifold, y)
    # The first evaluations on the whole batch in this thread, before the workers' thread settings (PyTorch on all
    # its threads: 100 ms for Fig. 4's batch against 135 on one). Their large temporaries also lift glibc's dynamic
    # mmap threshold: split over the workers, the first run of 1000 small systems took 1.2 s instead of 0.7.
    counted = CountingField(field)
    state = solver.init(counted, t0, y)
    rule = controller.rule(solver, _first_step(counted, solver, controller, t0, t1, y, state))
    stepper = Stepper(field, solver, controller, manifold, options.project, y, int(options.workers))
    try:
        steps, rejected, max_drift = _integrate(stepper, rule, recorder, t0, t1, y, state, options.max_steps)
    finally:
        stepper.close()
    return Solution(ts=np.asarray(recorder.ts), ys=np.stack(recorder.ys),
                    evaluations=counted.evaluations + stepper.evaluations, steps=steps, rejected_steps=rejected,
                    max_drift=max_drift, stats={"solver": repr(solver), "controller": repr(controller),
                                                "project": options.project, "workers": stepper.workers,
                                                "parts": len(stepper.parts)})


def _validate(field, solver, t0, t1, y0, controller, options: SolveOptions):
    """Raise for inconsistent arguments of ``solve``; return t0, t1 (floats), a copy of y0 and the manifold."""
    if not isinstance(solver, Solver):
        raise TypeError(f"solver must be a Solver instance such as RK4(); got {solver!r}.")
    t0, t1 = float(t0), float(t1)
    if not (np.isfinite(t0) and np.isfinite(t1) and t1 > t0):
        raise ValueError(f"t0={t0!r} and t1={t1!r} must be finite with t1 > t0.")
    y = as_finite_array("y0", y0, ndim_min=2).copy()
    manifold = options.manifold if options.manifold is not None else getattr(field, "manifold", None)
    if options.project and manifold is None:
        raise ValueError("project=True needs a manifold: give SolveOptions(manifold=...) or a field with a .manifold "
                         "attribute.")
    adaptive = isinstance(controller, AdaptiveStepSize)
    if adaptive and solver.embedded_order is None:
        raise ValueError(f"{solver!r} has no embedded error estimate; use ConstantStepSize(dt0) with it.")
    if not adaptive and not isinstance(controller, ConstantStepSize):
        raise TypeError(f"controller must be ConstantStepSize(dt0) or AdaptiveStepSize(...); got {controller!r}.")
    return t0, t1, y, manifold


def _save_times(saveat: SaveAt, t0: float, t1: float) -> np.ndarray:
    """The times the steps must land on, shape=[n] (empty for ``SaveAt(steps=True)``)."""
    if saveat.ts is None:
        return np.array([t1]) if not saveat.steps else np.array([])
    save_times = np.asarray(saveat.ts, dtype=np.float64)
    if save_times.ndim != 1 or save_times.size == 0 or not np.all(np.isfinite(save_times)):
        raise ValueError("SaveAt.ts must be a non-empty 1-d array of finite times.")
    if np.any(np.diff(save_times) <= 0) or save_times[0] < t0 or save_times[-1] > t1:
        raise ValueError(f"SaveAt.ts must increase strictly within [t0, t1] = [{t0}, {t1}].")
    return save_times


def _check_on_manifold(manifold: Ellipsoid, y: np.ndarray) -> None:
    drift = manifold.drift(y)
    if drift > 1e-8:
        raise ValueError(f"y0 must lie on the manifold (max |y^T W y - 1| = {drift:.3g} > 1e-8); "
                         "project it with Ellipsoid.project first.")


def _first_step(field, solver, controller, t0: float, t1: float, y: np.ndarray, state) -> float:
    """The controller's ``dt0``, or (adaptive, no ``dt0``) its starting step from the first stage ``state``."""
    if controller.dt0 is None:
        return controller.initial_step(field, solver, t0, y, state, t1 - t0)
    return float(controller.dt0)


def _tiny(t0: float, t1: float) -> float:
    """Times closer than this are one (a step that ends this close to a save time lands on it)."""
    return 1e-12 * max(1.0, abs(t0), abs(t1))


class _Recorder:
    """The saved times and states (or ``SaveAt.fn`` of them), collected as steps are accepted; a copy of what is
    kept, since the solver's arrays are reused by later steps (and fn may return a view of y)."""

    def __init__(self, saveat: SaveAt, save_times: np.ndarray, t0: float, t1: float, y: np.ndarray):
        self.steps, self.times, self.t1 = saveat.steps, save_times, t1
        self.keep = saveat.fn if saveat.fn is not None else np.asarray
        self.ts, self.ys, self.next = [], [], 0
        at_t0 = bool(save_times.size) and abs(save_times[0] - t0) <= _tiny(t0, t1)
        if at_t0 or self.steps:
            self._append(t0, y)
            self.next += 1 if at_t0 else 0

    def _append(self, t: float, y: np.ndarray) -> None:
        self.ts.append(t)
        self.ys.append(np.array(self.keep(y)))

    def next_stop(self) -> float:
        """Where the next step must end at the latest: the next save time, else t1."""
        return self.times[self.next] if self.next < self.times.size else self.t1

    def accepted(self, t: float, y: np.ndarray) -> None:
        if self.steps:
            self._append(t, y)
        elif self.next < self.times.size and t == self.times[self.next]:
            self._append(t, y)
            self.next += 1


def _integrate(stepper: Stepper, rule, recorder: _Recorder, t0: float, t1: float, y: np.ndarray, state,
               max_steps: int) -> tuple[int, int, float]:
    """Attempt steps until t1, each landing on the next save time when it would pass it, the controller's rule
    accepting or rejecting them; return the accepted and rejected steps and the largest drift."""
    tiny, dt = _tiny(t0, t1), rule.proposed
    t, steps, rejected, max_drift = t0, 0, 0, 0.0
    while t1 - t > tiny:
        if steps + rejected >= max_steps:
            raise MaxStepsReached(_budget_spent(max_steps, steps, rejected, t0, t, t1, dt))
        stop = recorder.next_stop()
        landed = t + dt >= stop - tiny  # this step ends exactly at the next save time (or t1)
        step = stop - t if landed else dt
        attempt = stepper.attempt(t, y, step, state)
        if not attempt.finite:
            raise FloatingPointError(f"the solution became non-finite at t={t:.6g}.")
        accepted, dt = rule.adapt(attempt.instance_errors, step)
        if not accepted:
            rejected += 1
            continue
        t = stop if landed else t + step
        y, state = stepper.accept(attempt, y, state)
        steps += 1
        max_drift = max(max_drift, attempt.drift)
        recorder.accepted(t, y)
    return steps, rejected, max_drift


def _budget_spent(max_steps: int, steps: int, rejected: int, t0: float, t: float, t1: float, dt: float) -> str:
    """The error of a spent step budget: what ran out, where, and what to raise (with the rate so far)."""
    done = (t - t0) / (t1 - t0)
    need = f"; at this rate t1 needs about {int(max_steps / done):,} steps" if done > 0 else ""
    return (f"solve ran out of steps: max_steps={max_steps} ({steps} accepted, {rejected} rejected) were spent at "
            f"t={t:.6g} of [t0, t1] = [{t0:g}, {t1:g}], {100 * done:.3g}% of the way, with steps of {dt:.3g}{need}. "
            "A correct model in this suite's checks needs far fewer: look for a broken field first; if the problem "
            "honestly needs more steps (a long horizon, a tight tolerance, a small fixed step), pass "
            "solve(..., options=SolveOptions(max_steps=N)) with a larger N.")


def integrate_fixed(field: Callable, solver: Solver, t0: float, t1: float, y0, *, steps: int,
                    saveat: SaveAt | None = None) -> Solution:
    """``solve`` with ``ConstantStepSize`` and ``steps`` equal steps of (t1 - t0) / steps."""
    if int(steps) != steps or steps < 1:
        raise ValueError(f"steps={steps!r} must be a positive integer.")
    return solve(field, solver, t0, t1, y0, controller=ConstantStepSize((t1 - t0) / steps), saveat=saveat)
