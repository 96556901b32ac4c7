"""Batched solvers that stay on the manifold, and one entry point, ``solve`` (diffrax's layout).

Three ideas kept apart: the *term* (a vector field ``field(t, y)`` such as ``AttentionField``), a
*solver* (one step of a method, with its ``order``), and ``solve(field, solver, t0, t1, y0, *, ...)``
with keyword-only option objects (``SaveAt``, ``ConstantStepSize``, ``AdaptiveStepSize``).

States have shape ``[..., tokens, d]``: the leading axes are independent instances integrated at once
with a common time grid. After every step the state is retracted to the manifold by pi_W (eq. 2),
which keeps a one-step method's order and its drift off E_W at rounding level.
"""

from __future__ import annotations

import inspect
import threading
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .batching import groups_of_at_most, instance_groups
from .kernels import linear_combination, scaled_error_means
from .manifold import Ellipsoid, as_finite_array
from .products import check_out, solver_threads, worker_pool


# --- solvers -------------------------------------------------------------------------------------
class Solver:
    """One step of a one-step method. ``order``: global order of convergence; ``embedded_order``:
    order of the embedded error estimate (None for fixed-step methods)."""

    order: int
    embedded_order: int | None = None

    def init(self, field, t0: float, y0: np.ndarray) -> np.ndarray | None:
        """Solver state carried between steps: None, or an array shaped like ``y0`` (e.g. the
        first-same-as-last stage), which ``solve`` splits with the state when it steps instances in parallel."""
        return None

    def step(self, field, t: float, y: np.ndarray, dt: float, state: Any, y_out: np.ndarray | None = None,
             state_out: np.ndarray | None = None):
        """Advance by ``dt``: return ``(y_next, error_estimate or None, next_state_if_accepted)``.

        ``y_out``, ``state_out``: C-contiguous float64 arrays shaped like ``y``, not overlapping ``y`` or ``state``,
        that a solver may write the end point (before the retraction) and the carried state into, returning them
        (Dopri5 does: a whole-batch array's part, which saves a copy of the state per step)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Euler(Solver):
    """Explicit Euler, order 1: y + dt f(t, y), then pi_W."""

    order = 1

    def step(self, field, t, y, dt, state, y_out=None, state_out=None):
        return y + dt * field(t, y), None, None


class RK4(Solver):
    """The classical fourth-order Runge-Kutta method, order 4, followed by the retraction pi_W."""

    order = 4

    def step(self, field, t, y, dt, state, y_out=None, state_out=None):
        half = 0.5 * dt
        k1 = field(t, y)
        k2 = field(t + half, y + half * k1)
        k3 = field(t + half, y + half * k2)
        k4 = field(t + dt, y + dt * k3)
        return y + (dt / 6.0) * (k1 + 2.0 * (k2 + k3) + k4), None, None


class DiscreteModel(Solver):
    """The discrete model itself (eq. 1) with tau = dt: y_i <- pi_W(y_i + dt f_i(y)).

    As an approximation of the flow of eq. 6 it has order 1 (one step differs by O(dt^2), sec. 2.3).
    """

    order = 1

    def step(self, field, t, y, dt, state, y_out=None, state_out=None):
        return field.manifold.retract(y + dt * field.attention_update(t, y)), None, None


class Dopri5(Solver):
    """Dormand-Prince 5(4) (the pair of scipy's RK45), first-same-as-last, order 5 with an order-4 estimate.

    The last stage f(t + dt, y_next) is taken at the step's end point before the retraction and reused as
    the next step's first stage (as scipy does): it differs from f at the retracted point by the size of
    the local error's normal component, which keeps the order and saves one evaluation per step.
    """

    order = 5
    embedded_order = 4
    _C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0)
    _A = ((),
          (1 / 5,),
          (3 / 40, 9 / 40),
          (44 / 45, -56 / 15, 32 / 9),
          (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
          (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656))
    _B = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84)
    # b - b_hat for the seven stages (the last is the FSAL stage f(t + dt, y_next)).
    _E = (71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40)

    def __init__(self) -> None:
        self._workspaces = threading.local()

    def init(self, field, t0, y0):
        return field(t0, y0)

    def _workspace(self, size: int) -> np.ndarray:
        """Rows [k_2, ..., k_6, scratch] of length ``size``, shape=[6, size], kept between steps (one per thread):
        a fresh array of this size every step costs a page fault per 4 KiB (as much time as filling it)."""
        workspace = getattr(self._workspaces, "array", None)
        if workspace is None or workspace.shape[1] != size:
            workspace = self._workspaces.array = np.empty((6, size))
        return workspace

    def step(self, field, t, y, dt, state, y_out=None, state_out=None):
        # Every linear combination of the stages is one pass over memory (sim.kernels.linear_combination). The
        # stage states are formed in the scratch row (the field only reads them), the error estimate in k_2's row,
        # free by then (valid until this thread's next step); y_next and the error skip k_2, whose weights b_2 and
        # b_2 - bhat_2 are zero.
        for out in (y_out, state_out):
            if out is not None:
                check_out(out, y.shape, y, state)
        workspace = self._workspace(y.size)
        scratch = workspace[5]
        stages = [_flat(state)]  # k_1, ..., k_s as 1-d views
        rows = (_flat(y),)
        for s, (c, a) in enumerate(zip(self._C[1:], self._A[1:]), start=1):
            linear_combination(np.array((1.0, *(dt * x for x in a))), (*rows, *stages), scratch)
            stages.append(workspace[s - 1])
            _evaluate_into(field, t + c * dt, scratch.reshape(y.shape), stages[-1].reshape(y.shape))
        without_k2 = (stages[0], *stages[2:])
        y_next = np.empty_like(y) if y_out is None else y_out
        linear_combination(np.array((1.0, dt * self._B[0], *(dt * b for b in self._B[2:]))), (*rows, *without_k2),
                           y_next.reshape(-1))
        if state_out is None:
            last = field(t + dt, y_next)
        else:
            _evaluate_into(field, t + dt, y_next, state_out)
            last = state_out
        error = workspace[0]
        linear_combination(np.array((dt * self._E[0], *(dt * e for e in self._E[2:]))), (*without_k2, _flat(last)),
                           error)
        return y_next, error.reshape(y.shape), last


def _flat(array: np.ndarray) -> np.ndarray:
    """``array`` as a 1-d C-contiguous writeable float64 array (a view when it is one already): the kernels' rows
    (a tuple of rows must have one type, and a read-only array is another type to Numba)."""
    array = np.ascontiguousarray(array, dtype=np.float64)
    return (array if array.flags.writeable else array.copy()).reshape(-1)


def _evaluate_into(field, t: float, y: np.ndarray, out: np.ndarray) -> None:
    """Write ``field(t, y)`` into ``out`` (C-contiguous, shaped like ``y``): through the field's own ``out=`` when
    ``solve`` found one (``_CountingField.writes_into``), else by a copy."""
    if getattr(field, "writes_into", False):
        field(t, y, out=out)
    else:
        out[...] = field(t, y)


# --- options -------------------------------------------------------------------------------------
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
class ConstantStepSize:
    """Fixed steps of ``dt0`` (the last one shortened to end at t1, or at a save time)."""


@dataclass(frozen=True)
class AdaptiveStepSize:
    """Error control for an embedded pair, as scipy's RK45: accept when the scaled error norm is <= 1.

    The scaled error of one instance is the RMS over its tokens and coordinates of
    e / (atol + rtol max(|y|, |y_next|)); ``norm="max"`` takes the worst instance (every instance meets
    the tolerance it would meet alone), ``norm="rms"`` the RMS over the whole batch.
    """

    rtol: float = 1e-6
    atol: float = 1e-9
    safety: float = 0.9
    min_factor: float = 0.2
    max_factor: float = 10.0
    norm: str = "max"

    def __post_init__(self) -> None:
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"{name}={value!r} must be finite and not negative.")
        if self.rtol == 0 and self.atol == 0:
            raise ValueError("rtol and atol must not both be zero.")
        if self.norm not in ("max", "rms"):
            raise ValueError(f"norm={self.norm!r} must be 'max' or 'rms'.")

    def instance_errors(self, error: np.ndarray, y: np.ndarray, y_next: np.ndarray) -> np.ndarray:
        """Mean of (e / scale)^2 over each instance's tokens and coordinates, shape=[...] (the leading axes)."""
        leading = error.shape[:-2]
        error, y, y_next = (_flat(a).reshape(-1, a.shape[-2] * a.shape[-1]) for a in (error, y, y_next))
        means = np.empty(len(error))
        scaled_error_means(error, y, y_next, float(self.rtol), float(self.atol), means)  # one pass
        return means.reshape(leading)

    def combine(self, instance_errors: np.ndarray) -> float:
        """The scaled error norm of the batch from ``instance_errors`` (instances have equal sizes, so the
        RMS over the batch is the root of the mean of the per-instance means)."""
        return float(np.sqrt(np.max(instance_errors) if self.norm == "max" else np.mean(instance_errors)))

    def error_norm(self, error: np.ndarray, y: np.ndarray, y_next: np.ndarray) -> float:
        return self.combine(self.instance_errors(error, y, y_next))


# --- the entry point -----------------------------------------------------------------------------
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


class _CountingField:
    """The field with a counter of evaluations (``attention_update`` counts as one, as the discrete model's).

    ``writes_into``: the field's call takes ``out=`` (``AttentionField`` does; a subclass that overrides
    ``__call__`` without it, or a plain function, is called without and its result copied).
    """

    def __init__(self, field):
        self.field = field
        self.manifold = getattr(field, "manifold", None)
        self.evaluations = 0
        try:
            self.writes_into = "out" in inspect.signature(field).parameters
        except (TypeError, ValueError):  # no signature to read (e.g. some builtins)
            self.writes_into = False

    def __call__(self, t, y, out=None):
        self.evaluations += 1
        return self.field(t, y) if out is None else self.field(t, y, out=out)

    def attention_update(self, t, y):
        self.evaluations += 1
        return self.field.attention_update(t, y)


@dataclass(frozen=True)
class _Attempt:
    """One attempted step of the whole batch: the (retracted) end point, each instance's scaled error
    (adaptive runs), the solver state to carry on, the drift off the manifold and whether it stayed finite."""

    y_next: np.ndarray
    instance_errors: np.ndarray | None
    next_state: np.ndarray | None
    drift: float
    finite: bool


def step_parts(y: np.ndarray, workers: int) -> tuple[int, list[slice]]:
    """How ``solve(..., workers=workers)`` splits the instances of ``y : shape=[batch, l, d]`` (or one instance
    [l, d]): the number of worker threads it uses (at most one per instance) and the parts along the first axis,
    of at most about ``PART_BYTES`` of state each, their count a multiple of the workers'."""
    batch = y.shape[0] if y.ndim > 2 else 1
    used = len(instance_groups(batch, workers))
    return used, groups_of_at_most(batch, y.nbytes // batch, PART_BYTES, multiple_of=used)


#: ``solve`` steps the instances in parts of at most about this much state, each part's step in one go (its
#: stages, error estimate and retraction), the parts handed out to the workers as they come free. A part's rows
#: then stay in the cache longer, and a worker that finds its core busy takes fewer parts. Measured on Fig. 4's
#: problem (20 MB of state): two workers 2.60-2.68 s a solve in 4 parts against 2.69-2.80 s in 2; one worker
#: 3.05-3.13 s in 2 parts against 3.21-3.28 s in 1 (4 parts: 3.11-3.28 s).
PART_BYTES = 8 << 20


class _Stepper:
    """Attempts steps of the whole batch, either in one call or split along the first axis into parts (of at most
    ``PART_BYTES`` each, their count a multiple of ``workers``) stepped by ``workers`` threads (the instances are
    independent; one common step size). With several workers BLAS (numpy's and PyTorch's, see ``sim.products``)
    runs on one thread inside each, so that the small per-instance products and the element-wise work run side by
    side.

    Each part's end point (retracted) and carried state are written straight into whole-batch arrays kept for
    the solve: two pairs take turns (``accept`` hands back the pair of the state left behind), so no step
    allocates or gathers them anew.
    """

    def __init__(self, field, solver: Solver, controller, manifold, project: bool, y: np.ndarray, workers: int):
        self.solver, self.controller, self.manifold, self.project = solver, controller, manifold, project
        self.workers, self.parts = step_parts(y, workers)
        self.fields = [_CountingField(field) for _ in self.parts]
        self._spare: tuple[np.ndarray, np.ndarray | None] | None = None
        self._stack = ExitStack()
        self._stack.enter_context(solver_threads(self.workers))
        self._pool = self._stack.enter_context(worker_pool(self.workers)) if self.workers > 1 else None

    @property
    def evaluations(self) -> int:
        """Evaluations of the whole batch (every group makes the same calls)."""
        return self.fields[0].evaluations

    def close(self) -> None:
        self._stack.close()

    def _attempt_part(self, index: int, t: float, y: np.ndarray, dt: float, state, y_out: np.ndarray,
                      state_out: np.ndarray | None) -> tuple[np.ndarray | None, float, bool]:
        """Step the instances of part ``index``, writing the end point and carried state into ``y_out`` and
        ``state_out`` (whole-batch arrays); return the part's scaled errors, drift and finiteness."""
        part = self.parts[index]
        y, state = y[part], None if state is None else state[part]
        y_target, state_target = y_out[part], None if state_out is None else state_out[part]
        y_next, error, next_state = self.solver.step(self.fields[index], t, y, dt, state, y_out=y_target,
                                                     state_out=state_target)
        errors = None
        if isinstance(self.controller, AdaptiveStepSize):
            errors = self.controller.instance_errors(error, y, y_next)
            finite = bool(np.all(np.isfinite(errors)))
        else:
            finite = bool(np.all(np.isfinite(y_next)))
        drift = 0.0
        if finite and self.project:
            self.manifold.retract(y_next, out=y_target)  # (in place when the solver wrote y_next there)
        elif y_next is not y_target:
            y_target[...] = y_next
        if finite and self.manifold is not None:
            drift = self.manifold.drift(y_target)
        if state_target is not None and next_state is not state_target:
            state_target[...] = next_state
        return errors, drift, finite

    def attempt(self, t: float, y: np.ndarray, dt: float, state) -> _Attempt:
        if self._spare is None:
            self._spare = (np.empty_like(y), None if state is None else np.empty_like(state))
        y_next, next_state = self._spare

        def attempt_part(index: int) -> tuple[np.ndarray | None, float, bool]:
            return self._attempt_part(index, t, y, dt, state, y_next, next_state)

        indices = range(len(self.parts))
        results = list(map(attempt_part, indices) if self._pool is None else self._pool.map(attempt_part, indices))
        errors = None
        if isinstance(self.controller, AdaptiveStepSize):
            errors = np.concatenate([np.atleast_1d(part_errors) for part_errors, _, _ in results]).reshape(y.shape[:-2])
        return _Attempt(y_next, errors, next_state, max(drift for _, drift, _ in results),
                        all(finite for _, _, finite in results))

    def accept(self, attempt: _Attempt, y: np.ndarray, state) -> tuple[np.ndarray, Any]:
        """The accepted attempt's state and carried state; the arrays of ``y`` and ``state`` become the spares."""
        self._spare = (y, state)
        return attempt.y_next, attempt.next_state


def _initial_step(field, solver: Solver, controller: AdaptiveStepSize, t0: float, y0: np.ndarray, f0, span: float):
    """Hairer, Norsett & Wanner's starting step (as scipy's select_initial_step), worst instance first."""
    def norm(x):
        return controller.error_norm(x, y0, y0)

    d0, d1 = norm(y0), norm(f0)
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    h0 = min(h0, span)
    f1 = field(t0 + h0, y0 + h0 * f0)
    d2 = norm(f1 - f0) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1.0 / (solver.embedded_order + 1))
    return min(100 * h0, h1, span)


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


def solve(field, solver: Solver, t0: float, t1: float, y0, *, dt0: float | None = None,
          saveat: SaveAt | None = None, controller: ConstantStepSize | AdaptiveStepSize | None = None,
          max_steps: int = MAX_STEPS, project: bool = True, manifold: Ellipsoid | None = None,
          workers: int = 1) -> Solution:
    """Integrate ``dy/dt = field(t, y)`` from t0 to t1 with ``solver``; return a :class:`Solution`.

    Parameters
    ----------
    field : callable (t, y) -> dy/dt, e.g. ``AttentionField``; ``field.manifold`` is the retraction target.
    solver : ``Euler()``, ``RK4()``, ``Dopri5()``, ``DiscreteModel()``.
    y0 : array, shape=[..., tokens, d], on the manifold (finite).
    dt0 : the (initial) step; required with ``ConstantStepSize``, chosen automatically if None otherwise.
    saveat : ``SaveAt`` (default: only t1).
    controller : ``ConstantStepSize()`` (default) or ``AdaptiveStepSize(rtol, atol)`` (embedded pairs only).
    max_steps : the step budget (accepted and rejected steps); spent before t1, ``MaxStepsReached`` is raised.
    project : retract to the manifold by pi_W after every step (default True).
    manifold : overrides ``field.manifold``.
    workers : step groups of instances (``y0``'s first axis, shape=[batch, tokens, d]) in this many threads,
        with BLAS on one thread each (the limit holds for the whole process during the solve); large batches are
        stepped in parts of about ``PART_BYTES`` whatever the workers (``step_parts``). The same steps and step
        sizes as ``workers=1``; worth it for large batches on several cores.
    """
    saveat = SaveAt() if saveat is None else saveat
    controller = ConstantStepSize() if controller is None else controller
    if not isinstance(solver, Solver):
        raise TypeError(f"solver must be a Solver instance such as RK4(); got {solver!r}.")
    t0, t1 = float(t0), float(t1)
    if not (np.isfinite(t0) and np.isfinite(t1) and t1 > t0):
        raise ValueError(f"t0={t0!r} and t1={t1!r} must be finite with t1 > t0.")
    y = as_finite_array("y0", y0, ndim_min=2).copy()
    if int(max_steps) != max_steps or max_steps < 1:
        raise ValueError(f"max_steps={max_steps!r} must be a positive integer.")
    if int(workers) != workers or workers < 1:
        raise ValueError(f"workers={workers!r} must be a positive integer.")
    manifold = manifold if manifold is not None else getattr(field, "manifold", None)
    if project and manifold is None:
        raise ValueError("project=True needs a manifold: give manifold= or a field with a .manifold attribute.")
    adaptive = isinstance(controller, AdaptiveStepSize)
    if adaptive and solver.embedded_order is None:
        raise ValueError(f"{solver!r} has no embedded error estimate; use ConstantStepSize() with it.")
    if not adaptive and not isinstance(controller, ConstantStepSize):
        raise TypeError(f"controller must be ConstantStepSize() or AdaptiveStepSize(...); got {controller!r}.")
    if dt0 is None and not adaptive:
        raise ValueError("dt0 must be given with ConstantStepSize (the fixed step).")
    if dt0 is not None and not (np.isfinite(dt0) and dt0 > 0):
        raise ValueError(f"dt0={dt0!r} must be finite and positive.")
    if saveat.ts is not None:
        save_times = np.asarray(saveat.ts, dtype=np.float64)
        if save_times.ndim != 1 or save_times.size == 0 or not np.all(np.isfinite(save_times)):
            raise ValueError("SaveAt.ts must be a non-empty 1-d array of finite times.")
        if np.any(np.diff(save_times) <= 0) or save_times[0] < t0 or save_times[-1] > t1:
            raise ValueError(f"SaveAt.ts must increase strictly within [t0, t1] = [{t0}, {t1}].")
    else:
        save_times = np.array([t1]) if not saveat.steps else np.array([])
    if project:
        drift = manifold.drift(y)
        if drift > 1e-8:
            raise ValueError(f"y0 must lie on the manifold (max |y^T W y - 1| = {drift:.3g} > 1e-8); "
                             "project it with Ellipsoid.project first.")
    # The first evaluations on the whole batch in this thread, before the workers' thread settings (PyTorch on all
    # its threads: 100 ms for Fig. 4's batch against 135 on one). Their large temporaries also lift glibc's dynamic
    # mmap threshold: split over the workers, the first run of 1000 small systems took 1.2 s instead of 0.7.
    counted = _CountingField(field)
    state = solver.init(counted, t0, y)
    span = t1 - t0
    if adaptive and dt0 is None:
        dt = _initial_step(counted, solver, controller, t0, y, state, span)
    else:
        dt = float(dt0)
    tiny = 1e-12 * max(1.0, abs(t0), abs(t1))
    ts, ys = [], []
    # a copy of what is kept: the solver's arrays are reused by later steps (and fn may return a view of y)
    keep = saveat.fn if saveat.fn is not None else np.asarray
    next_save = 0
    if save_times.size and abs(save_times[0] - t0) <= tiny or saveat.steps:
        ts.append(t0)
        ys.append(np.array(keep(y)))
        next_save += 1 if save_times.size and abs(save_times[0] - t0) <= tiny else 0
    t, steps, rejected, max_drift = t0, 0, 0, 0.0
    last_rejected = False
    stepper = _Stepper(field, solver, controller, manifold, project, y, int(workers))
    try:
        while t1 - t > tiny:
            if steps + rejected >= max_steps:
                raise MaxStepsReached(_budget_spent(max_steps, steps, rejected, t0, t, t1, dt))
            stop = save_times[next_save] if next_save < save_times.size else t1
            landed = t + dt >= stop - tiny  # this step ends exactly at the next save time (or t1)
            step = stop - t if landed else dt
            attempt = stepper.attempt(t, y, step, state)
            if not attempt.finite:
                raise FloatingPointError(f"the solution became non-finite at t={t:.6g}.")
            if adaptive:
                err = controller.combine(attempt.instance_errors)
                exponent = -1.0 / (solver.embedded_order + 1)
                if err > 1.0:
                    dt = step * max(controller.min_factor, controller.safety * err**exponent)
                    rejected += 1
                    last_rejected = True
                    continue
                factor = controller.max_factor if err == 0 else min(controller.max_factor,
                                                                    controller.safety * err**exponent)
                if last_rejected:
                    factor = min(1.0, factor)
                last_rejected = False
                # A step shortened to land on a save time says little about larger steps: keep the proposal.
                if not (step < dt and factor >= 1.0):
                    dt = step * factor
            t = stop if landed else t + step
            y, state = stepper.accept(attempt, y, state)
            steps += 1
            max_drift = max(max_drift, attempt.drift)
            if saveat.steps:
                ts.append(t)
                ys.append(np.array(keep(y)))
            elif next_save < save_times.size and t == save_times[next_save]:
                ts.append(t)
                ys.append(np.array(keep(y)))
                next_save += 1
    finally:
        stepper.close()
    return Solution(ts=np.asarray(ts), ys=np.stack(ys), evaluations=counted.evaluations + stepper.evaluations,
                    steps=steps, rejected_steps=rejected, max_drift=max_drift,
                    stats={"solver": repr(solver), "controller": repr(controller), "project": project,
                           "workers": stepper.workers, "parts": len(stepper.parts)})


def _budget_spent(max_steps: int, steps: int, rejected: int, t0: float, t: float, t1: float, dt: float) -> str:
    """The error of a spent step budget: what ran out, where, and what to raise (with the rate so far)."""
    done = (t - t0) / (t1 - t0)
    need = f"; at this rate t1 needs about {int(max_steps / done):,} steps" if done > 0 else ""
    return (f"solve ran out of steps: max_steps={max_steps} ({steps} accepted, {rejected} rejected) were spent at "
            f"t={t:.6g} of [t0, t1] = [{t0:g}, {t1:g}], {100 * done:.3g}% of the way, with steps of {dt:.3g}{need}. "
            "A correct model in this suite's checks needs far fewer: look for a broken field first; if the problem "
            "honestly needs more steps (a long horizon, a tight tolerance, a small fixed step), pass "
            "solve(..., max_steps=N) with a larger N.")


def integrate_fixed(field: Callable, solver: Solver, t0: float, t1: float, y0, *, steps: int,
                    saveat: SaveAt | None = None) -> Solution:
    """``solve`` with ``ConstantStepSize`` and ``steps`` equal steps of (t1 - t0) / steps."""
    if int(steps) != steps or steps < 1:
        raise ValueError(f"steps={steps!r} must be a positive integer.")
    return solve(field, solver, t0, t1, y0, dt0=(t1 - t0) / steps, saveat=saveat, controller=ConstantStepSize())
