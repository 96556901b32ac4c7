"""Numeric checks of the solvers and of the continuum limit (claim ``model.continuum``), as pure functions.

``convergence_order`` regresses log error on log step (diffrax's order test); ``check_continuum``
measures how one step of the discrete model (eq. 1) departs from the flow of eq. 6.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from foundation.registration import claim_result, holding, named_check
from foundation.records import CheckResult, Figure, Table

from sim.solvers import AdaptiveStepSize, Dopri5, Solver, integrate_fixed, solve

#: A fitted order counts as the nominal one within this slack (the issue's +-0.2).
ORDER_SLACK = 0.2
ORDER_REASON = ("Least-squares slope of log error on log step over a range of steps in the asymptotic regime, "
                "above rounding; +-0.2 absorbs the higher-order terms left at the largest steps.")


@dataclass(frozen=True)
class OrderFit:
    """Errors at each step size and the fitted slope of log(error) against log(step)."""

    steps: np.ndarray
    errors: np.ndarray
    slope: float


def convergence_order(steps, errors) -> OrderFit:
    """Least-squares slope of log(errors) on log(steps); both shape=[k], positive."""
    steps = np.asarray(steps, dtype=np.float64)
    errors = np.asarray(errors, dtype=np.float64)
    if steps.shape != errors.shape or steps.ndim != 1 or steps.size < 2:
        raise ValueError(f"steps and errors must be 1-d of equal length >= 2; got {steps.shape} and {errors.shape}.")
    if np.any(steps <= 0) or np.any(errors <= 0) or not np.all(np.isfinite(errors)):
        raise ValueError("steps and errors must be positive and finite (an error of 0 has no logarithm).")
    slope = float(np.polyfit(np.log(steps), np.log(errors), 1)[0])
    return OrderFit(steps, errors, slope)


def order_guide(fit: OrderFit, order: int) -> np.ndarray:
    """The errors a method of exactly ``order`` would have at ``fit.steps``, through the fit's smallest-step error:
    the dashed guide beside each solver's measured errors in :func:`plot_orders`; shape=[k]."""
    smallest = int(np.argmin(fit.steps))
    return fit.errors[smallest] * (fit.steps / fit.steps[smallest]) ** order


def plot_orders(fits: list[tuple[str, int, OrderFit]], path: Path | str) -> Figure:
    """Write the global error against the step, log-log, of each ``(solver name, nominal order, fit)`` with the
    guide of its nominal order (:func:`order_guide`) to the PNG ``path``; the report's Figure of it."""
    if not fits:
        raise ValueError("fits must hold at least one (solver name, nominal order, OrderFit); it is empty.")
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.0, 4.0))
    for index, (name, order, fit) in enumerate(fits):
        colour = f"C{index}"
        axes.loglog(fit.steps, fit.errors, "o-", color=colour, label=f"{name}: slope {fit.slope:.2f}")
        axes.loglog(fit.steps, order_guide(fit, order), "--", color=colour, linewidth=0.8, alpha=0.7)
    axes.set_xlabel("step h")
    axes.set_ylabel("global error at t1 (max abs)")
    axes.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # minor labels overlap on a short decade
    axes.legend(fontsize=8, title="measured (dashed: nominal order)", title_fontsize=8, loc="upper left",
                bbox_to_anchor=(1.01, 1.0))
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return Figure(str(path), "Global error against step size, log-log: each solver's measured errors (dots) and a "
                             "line of its nominal order through its smallest step (dashed); the slope is the order.")


def reference_solution(field, t0: float, t1: float, y0) -> np.ndarray:
    """A tight Dopri5 solution at t1 (rtol = atol = 1e-13), shape like ``y0``."""
    sol = solve(field, Dopri5(), t0, t1, y0, controller=AdaptiveStepSize(rtol=1e-13, atol=1e-13))
    return sol.ys[-1]


def solver_order(field, solver: Solver, t0: float, t1: float, y0, step_counts, reference=None) -> OrderFit:
    """Global error at t1 (max abs over all entries) against the step, for fixed steps (t1 - t0)/n."""
    reference = reference_solution(field, t0, t1, y0) if reference is None else reference
    steps, errors = [], []
    for n in step_counts:
        sol = integrate_fixed(field, solver, t0, t1, y0, steps=int(n))
        steps.append((t1 - t0) / n)
        errors.append(float(np.max(np.abs(sol.ys[-1] - reference))))
    return convergence_order(steps, errors)


def one_step_defect(field, t0: float, y0, taus, *, discrete_field=None) -> OrderFit:
    """max |pi_W(y + tau f(y)) - flow_tau(y)| against tau: one layer of eq. 1 against the flow of eq. 6.

    ``discrete_field`` (default: ``field``) supplies the discrete step; the flow is always ``field``'s.
    """
    stepper = field if discrete_field is None else discrete_field
    errors = []
    for tau in taus:
        discrete = stepper.discrete_step(t0, y0, tau)
        flow = reference_solution(field, t0, t0 + tau, y0)
        errors.append(float(np.max(np.abs(discrete - flow))))
    return convergence_order(np.asarray(taus, dtype=float), errors)


@named_check
def check_continuum(field, t0: float, y0, taus, *, discrete_field=None, seeds=None, label: str = "") -> CheckResult:
    """Claim ``model.continuum``: one discrete step (eq. 1) differs from the flow of eq. 6 by O(tau^2).

    ``discrete_field`` (default: ``field``) supplies the discrete step; a different one is a negative control.
    Supported when the fitted slope of log defect on log tau is 2 +- 0.2 (a finite fit proves no order); else
    unsupported: O(tau^2) is a statement
    about tau -> 0, which a slope fitted over finite steps goes against without refuting (the symbolic check of
    theory.model decides the order).
    """
    fit = one_step_defect(field, t0, y0, taus, discrete_field=discrete_field)
    ok = abs(fit.slope - 2.0) <= ORDER_SLACK
    table = Table(f"One step of eq. 1 against the flow of eq. 6{label}", ("tau", "max |discrete - flow|"),
                  tuple((f"{tau:.3g}", f"{err:.3e}") for tau, err in zip(fit.steps, fit.errors)))
    return claim_result(
        holding() if ok else "unsupported",
        detail=f"Fitted slope of log max|pi_W(y + tau f(y)) - Y^tau(y)| on log tau: {fit.slope:.3f} "
               f"(O(tau^2) means 2){label}. The flow Y^tau is a Dopri5 solution with rtol = atol = 1e-13.",
        numbers={"slope": fit.slope, "taus": fit.steps, "defects": fit.errors},
        tolerance=ORDER_SLACK, tolerance_reason=ORDER_REASON, expression="d(Y^tau(y), pi_W(y + tau f(y))) = O(tau^2)",
        tables=(table,), seeds=dict(seeds or {}))
