"""The Dormand-Prince 5(4) pair."""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

from sim.field.kernels import linear_combination
from sim.field.products import check_out
from sim.solvers.base import Solver, evaluate_into, flat


class ButcherTableau(NamedTuple):
    """An explicit Runge-Kutta pair with an error estimate: stage ``s`` is taken at ``t + c[s] dt`` from
    ``y + dt sum_j a[s][j] k_j``, the step is ``y + dt sum_j b[j] k_j``, and ``dt sum_j error[j] k_j`` estimates its
    local error (``error = b - b_hat``, one entry per stage plus the first-same-as-last stage f(t + dt, y_next))."""

    c: tuple[float, ...]
    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    error: tuple[float, ...]

    def a_matrix(self) -> np.ndarray:
        """``a`` as a strictly lower triangular array, shape=[stages, stages - 1] (zeros above the diagonal)."""
        matrix = np.zeros((len(self.c), len(self.c) - 1))
        for stage, row in enumerate(self.a):
            matrix[stage, :len(row)] = row
        return matrix


#: Dormand-Prince 5(4), the pair of scipy's RK45: shared by :class:`Dopri5` and the compiled integrations
#: (sim.solvers.compiled), so the two cannot drift apart.
DORMAND_PRINCE = ButcherTableau(
    c=(0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0),
    a=((),
       (1 / 5,),
       (3 / 40, 9 / 40),
       (44 / 45, -56 / 15, 32 / 9),
       (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
       (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656)),
    b=(35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
    error=(71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40))


class Dopri5(Solver):
    """Dormand-Prince 5(4) (the pair of scipy's RK45), first-same-as-last, order 5 with an order-4 estimate.

    The last stage f(t + dt, y_next) is taken at the step's end point before the retraction and reused as
    the next step's first stage (as scipy does): it differs from f at the retracted point by the size of
    the local error's normal component, which keeps the order and saves one evaluation per step.
    """

    order = 5
    embedded_order = 4
    tableau = DORMAND_PRINCE

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
        # Every linear combination of the stages is one pass over memory (sim.field.kernels.linear_combination). The
        # stage states are formed in the scratch row (the field only reads them), the error estimate in k_2's row,
        # free by then (valid until this thread's next step); y_next and the error skip k_2, whose weights b_2 and
        # b_2 - bhat_2 are zero.
        for out in (y_out, state_out):
            if out is not None:
                check_out(out, y.shape, y, state)
        workspace = self._workspace(y.size)
        scratch = workspace[5]
        stages = [flat(state)]  # k_1, ..., k_s as 1-d views
        rows = (flat(y),)
        for s, (c, a) in enumerate(zip(self.tableau.c[1:], self.tableau.a[1:]), start=1):
            linear_combination(np.array((1.0, *(dt * x for x in a))), (*rows, *stages), scratch)
            stages.append(workspace[s - 1])
            evaluate_into(field, t + c * dt, scratch.reshape(y.shape), stages[-1].reshape(y.shape))
        without_k2 = (stages[0], *stages[2:])
        y_next = np.empty_like(y) if y_out is None else y_out
        linear_combination(np.array((1.0, dt * self.tableau.b[0], *(dt * b for b in self.tableau.b[2:]))), (*rows, *without_k2),
                           y_next.reshape(-1))
        if state_out is None:
            last = field(t + dt, y_next)
        else:
            evaluate_into(field, t + dt, y_next, state_out)
            last = state_out
        error = workspace[0]
        linear_combination(np.array((dt * self.tableau.error[0], *(dt * e for e in self.tableau.error[2:]))), (*without_k2, flat(last)),
                           error)
        return y_next, error.reshape(y.shape), last
