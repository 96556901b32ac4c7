"""What every solver shares: the ``Solver`` interface (diffrax's ``AbstractSolver``: ``init``, ``step``, ``order``)
and the two array helpers of the stage combinations."""

from __future__ import annotations

from typing import Any

import numpy as np


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


def flat(array: np.ndarray) -> np.ndarray:
    """``array`` as a 1-d C-contiguous writeable float64 array (a view when it is one already): the kernels' rows
    (a tuple of rows must have one type, and a read-only array is another type to Numba)."""
    array = np.ascontiguousarray(array, dtype=np.float64)
    return (array if array.flags.writeable else array.copy()).reshape(-1)


def evaluate_into(field, t: float, y: np.ndarray, out: np.ndarray) -> None:
    """Write ``field(t, y)`` into ``out`` (C-contiguous, shaped like ``y``): through the field's own ``out=`` when
    ``solve`` found one (``CountingField.writes_into``), else by a copy."""
    if getattr(field, "writes_into", False):
        field(t, y, out=out)
    else:
        out[...] = field(t, y)
