"""Step-size controllers (diffrax's ``stepsize_controller``): each owns its rule for the next step.

A controller is a frozen option object; ``controller.rule(solver, dt)`` starts its rule for one solve, whose
``adapt(error, step) -> (accepted, next_step)`` decides on every attempted step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.field.kernels import scaled_error_means
from sim.solvers.base import Solver, flat
from sim.solvers.stepsize import first_guess, next_step, starting_step


def _check_step(dt0) -> None:
    if dt0 is not None and not (np.isfinite(dt0) and dt0 > 0):
        raise ValueError(f"dt0={dt0!r} must be finite and positive.")


@dataclass(frozen=True)
class ConstantStepSize:
    """Fixed steps of ``dt0`` (the last one shortened to end at t1, or at a save time)."""

    dt0: float

    #: the steps need no error estimate
    estimates_error = False

    def __post_init__(self) -> None:
        if self.dt0 is None:
            raise ValueError("dt0 must be given with ConstantStepSize (the fixed step).")
        _check_step(self.dt0)

    def rule(self, solver: Solver, dt: float) -> "FixedSteps":
        return FixedSteps(dt)


class FixedSteps:
    """The rule of ``ConstantStepSize``: every step accepted, the next one ``dt`` again."""

    def __init__(self, dt: float):
        self.proposed = dt

    def adapt(self, error, step: float) -> tuple[bool, float]:
        return True, self.proposed


@dataclass(frozen=True)
class AdaptiveStepSize:
    """Error control for an embedded pair, as scipy's RK45: accept when the scaled error norm is <= 1.

    The scaled error of one instance is the RMS over its tokens and coordinates of
    e / (atol + rtol max(|y|, |y_next|)); ``norm="max"`` takes the worst instance (every instance meets
    the tolerance it would meet alone), ``norm="rms"`` the RMS over the whole batch. ``dt0`` is the first step
    (None: Hairer, Norsett & Wanner's starting step, ``initial_step``).
    """

    rtol: float = 1e-6
    atol: float = 1e-9
    safety: float = 0.9
    min_factor: float = 0.2
    max_factor: float = 10.0
    norm: str = "max"
    dt0: float | None = None

    #: the steps need the solver's error estimate (``instance_errors`` of every attempt)
    estimates_error = True

    def __post_init__(self) -> None:
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"{name}={value!r} must be finite and not negative.")
        if self.rtol == 0 and self.atol == 0:
            raise ValueError("rtol and atol must not both be zero.")
        if self.norm not in ("max", "rms"):
            raise ValueError(f"norm={self.norm!r} must be 'max' or 'rms'.")
        _check_step(self.dt0)

    def instance_errors(self, error: np.ndarray, y: np.ndarray, y_next: np.ndarray) -> np.ndarray:
        """Mean of (e / scale)^2 over each instance's tokens and coordinates, shape=[...] (the leading axes)."""
        leading = error.shape[:-2]
        error, y, y_next = (flat(a).reshape(-1, a.shape[-2] * a.shape[-1]) for a in (error, y, y_next))
        means = np.empty(len(error))
        scaled_error_means(error, y, y_next, float(self.rtol), float(self.atol), means)  # one pass
        return means.reshape(leading)

    def combine(self, instance_errors: np.ndarray) -> float:
        """The scaled error norm of the batch from ``instance_errors`` (instances have equal sizes, so the
        RMS over the batch is the root of the mean of the per-instance means)."""
        return float(np.sqrt(np.max(instance_errors) if self.norm == "max" else np.mean(instance_errors)))

    def error_norm(self, error: np.ndarray, y: np.ndarray, y_next: np.ndarray) -> float:
        return self.combine(self.instance_errors(error, y, y_next))

    def initial_step(self, field, solver: Solver, t0: float, y0: np.ndarray, f0: np.ndarray, span: float) -> float:
        """Hairer, Norsett & Wanner's starting step (as scipy's select_initial_step), worst instance first."""
        def norm(x):
            return self.error_norm(x, y0, y0)

        d0, d1 = norm(y0), norm(f0)
        h0 = first_guess(d0, d1, span)
        f1 = field(t0 + h0, y0 + h0 * f0)
        return starting_step(h0, d1, norm(f1 - f0) / h0, span, solver.embedded_order)

    def rule(self, solver: Solver, dt: float) -> "ErrorControl":
        return ErrorControl(self, solver.embedded_order, dt)


class ErrorControl:
    """The rule of ``AdaptiveStepSize`` for one solve: scipy's RK45 step-size update, with the proposed step and
    whether the last attempt was rejected as its state."""

    def __init__(self, controller: AdaptiveStepSize, embedded_order: int, dt: float):
        self.controller = controller
        self.exponent = -1.0 / (embedded_order + 1)
        self.proposed = dt
        self.after_rejection = False

    def adapt(self, error: np.ndarray, step: float) -> tuple[bool, float]:
        """``error``: the attempt's ``instance_errors``; ``step``: the step attempted (the proposal, or shorter
        to land on a save time). Accept when the combined norm is <= 1; return the next step to try."""
        c = self.controller
        accepted, self.proposed = next_step(c.combine(error), step, self.proposed, self.after_rejection, c.safety,
                                            c.min_factor, c.max_factor, self.exponent)
        self.after_rejection = not accepted
        return accepted, self.proposed
