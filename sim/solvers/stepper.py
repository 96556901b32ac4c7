"""The threaded stepper: one attempted step of the whole batch, in parts handed out to worker threads."""

from __future__ import annotations

import inspect
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.field.batching import groups_of_at_most, instance_groups
from sim.field.products import solver_threads, worker_pool
from sim.solvers.base import Solver


class CountingField:
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
class Attempt:
    """One attempted step of the whole batch: the (retracted) end point, each instance's scaled error
    (adaptive runs), the solver state to carry on, the drift off the manifold and whether it stayed finite."""

    y_next: np.ndarray
    instance_errors: np.ndarray | None
    next_state: np.ndarray | None
    drift: float
    finite: bool


#: ``solve`` steps the instances in parts of at most about this much state, each part's step in one go (its
#: stages, error estimate and retraction), the parts handed out to the workers as they come free. A part's rows
#: then stay in the cache longer, and a worker that finds its core busy takes fewer parts. Measured on Fig. 4's
#: problem (20 MB of state; 2026-11-27, the workers' products in numpy, medians of 4 interleaved solves): two
#: workers 3.68-3.71 s a solve in parts of 2 MiB (10 trajectories, one field group each) against 3.80-3.83 s in
#: parts of 8 MiB (25 trajectories, groups of 12-13), 3.69 s at 1 MiB, 3.73 s at 3 MiB, 3.88 s at 16 MiB; one
#: worker 4.20 s against 4.44 s (median of 3). (Earlier, the products in PyTorch: 8 MiB against 16 MiB, 2.60-2.68 s
#: against 2.69-2.80 s.)
PART_BYTES = 2 << 20


def step_parts(y: np.ndarray, workers: int) -> tuple[int, list[slice]]:
    """How ``solve(..., options=SolveOptions(workers=workers))`` splits the instances of ``y : shape=[batch, l, d]``
    (or one instance [l, d]): the number of worker threads it uses (at most one per instance) and the parts along
    the first axis, of at most about ``PART_BYTES`` of state each, their count a multiple of the workers'."""
    batch = y.shape[0] if y.ndim > 2 else 1
    used = len(instance_groups(batch, workers))
    return used, groups_of_at_most(batch, y.nbytes // batch, PART_BYTES, multiple_of=used)


class Stepper:
    """Attempts steps of the whole batch, either in one call or split along the first axis into parts (of at most
    ``PART_BYTES`` each, their count a multiple of ``workers``) stepped by ``workers`` threads (the instances are
    independent; one common step size). With several workers BLAS (numpy's and PyTorch's, see ``sim.field.products``)
    runs on one thread inside each, so that the small per-instance products and the element-wise work run side by
    side.

    Each part's end point (retracted) and carried state are written straight into whole-batch arrays kept for
    the solve: two pairs take turns (``accept`` hands back the pair of the state left behind), so no step
    allocates or gathers them anew.
    """

    def __init__(self, field, solver: Solver, controller, manifold, project: bool, y: np.ndarray, workers: int):
        self.solver, self.controller, self.manifold, self.project = solver, controller, manifold, project
        self.workers, self.parts = step_parts(y, workers)
        self.fields = [CountingField(field) for _ in self.parts]
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
        if self.controller.estimates_error:
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

    def attempt(self, t: float, y: np.ndarray, dt: float, state) -> Attempt:
        if self._spare is None:
            self._spare = (np.empty_like(y), None if state is None else np.empty_like(state))
        y_next, next_state = self._spare

        def attempt_part(index: int) -> tuple[np.ndarray | None, float, bool]:
            return self._attempt_part(index, t, y, dt, state, y_next, next_state)

        indices = range(len(self.parts))
        results = list(map(attempt_part, indices) if self._pool is None else self._pool.map(attempt_part, indices))
        errors = None
        if self.controller.estimates_error:
            errors = np.concatenate([np.atleast_1d(part_errors) for part_errors, _, _ in results]).reshape(y.shape[:-2])
        return Attempt(y_next, errors, next_state, max(drift for _, drift, _ in results),
                       all(finite for _, _, finite in results))

    def accept(self, attempt: Attempt, y: np.ndarray, state) -> tuple[np.ndarray, Any]:
        """The accepted attempt's state and carried state; the arrays of ``y`` and ``state`` become the spares."""
        self._spare = (y, state)
        return attempt.y_next, attempt.next_state
