"""Solvers: orders of convergence, staying on the manifold, batching, and the continuum limit (model.continuum)."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from foundation.registration import check
from foundation.records import ReportSection, Table
from sim import (AdaptiveStepSize, AttentionField, ConstantStepSize, DiscreteModel, Dopri5, Ellipsoid, Euler, RK4,
                 SaveAt, SolveOptions, integrate_fixed, solve)
from sim.solvers.checks import (ORDER_SLACK, check_continuum, convergence_order, order_guide, plot_orders,
                                reference_solution, solver_order)
from sim.solvers.dopri5 import DORMAND_PRINCE, ButcherTableau
from sim.figures.scenarios import full_attention_example
from tests.sim.conftest import W3

DRIFT_TOL = 1e-12  # the bound on the distance off the manifold, |y^T W y - 1|

#: Step counts on [0, 1] in each method's asymptotic range for the figure-2 system (its P(t) oscillates with
#: period 0.2): large enough to resolve it, small enough that the error stays above the reference's 1e-13.
ORDER_CASES = [(Euler(), (100, 200, 400, 800)), (DiscreteModel(), (100, 200, 400, 800)),
               (RK4(), (40, 80, 160, 320)), (Dopri5(), (40, 80, 160))]


@pytest.fixture(scope="module")
def problem():
    """The figure-2 system (10 tokens on S^2, h = 2, time-varying P) from a seeded initial state."""
    field = full_attention_example()
    y0 = Ellipsoid().random_point(np.random.default_rng(1), (10, 3))
    return field, y0, reference_solution(field, 0.0, 1.0, y0)


def test_solvers_converge_with_their_order(problem, report_section, tmp_path_factory):
    field, y0, reference = problem
    rows, fits = [], []
    for solver, counts in ORDER_CASES:
        fit = solver_order(field, solver, 0.0, 1.0, y0, counts, reference)
        fits.append((repr(solver), solver.order, fit))
        rows.append((repr(solver), solver.order, f"{fit.slope:.3f}",
                     ", ".join(f"{e:.2e}" for e in fit.errors), ", ".join(f"{h:.4g}" for h in fit.steps)))
        assert abs(fit.slope - solver.order) <= ORDER_SLACK, (solver, fit.slope, fit.errors)
    report_section(ReportSection(
        "Solver orders of convergence (sim)",
        text="Global error at t = 1 on the figure-2 system (10 tokens on S^2, h = 2, time-varying P_eta(t)) against "
             "a Dopri5 reference (rtol = atol = 1e-13), fixed steps, retraction by pi_W after every step; the slope "
             f"is the least-squares fit of log error on log step (must be the nominal order +- {ORDER_SLACK}).",
        tables=(Table("Orders", ("solver", "nominal order", "fitted slope", "errors", "steps"), tuple(rows)),),
        figures=(plot_orders(fits, tmp_path_factory.mktemp("orders") / "orders.png"),), order=60))


def test_order_guide_has_the_nominal_slope_through_the_smallest_step():
    fit = convergence_order([0.1, 0.05, 0.025], [4e-3, 1e-3, 2.5e-4])  # exactly second order
    guide = order_guide(fit, 2)
    np.testing.assert_allclose(guide, fit.errors, rtol=1e-12)
    # negative control: the guide of another order leaves the measured errors (the figure shows the mismatch)
    third = order_guide(fit, 3)
    assert third[-1] == fit.errors[-1] and third[0] / fit.errors[0] == pytest.approx(4.0)


def test_orders_plot_is_a_png_and_refuses_no_fits(tmp_path):
    import matplotlib.image

    fit = convergence_order([0.1, 0.05], [1e-2, 5e-3])
    figure = plot_orders([("Euler()", 1, fit)], tmp_path / "orders.png")
    assert matplotlib.image.imread(figure.path).shape[0] > 200 and "log-log" in figure.caption
    with pytest.raises(ValueError, match="fits must hold at least one"):
        plot_orders([], tmp_path / "none.png")


def test_adaptive_dopri5_is_scipy_rk45_on_one_instance(problem):
    """Same pair, same controller: the same evaluations and the same answer as solve_ivp(method='RK45')."""
    field, y0, _ = problem
    ours = solve(field, Dopri5(), 0.0, 1.0, y0, controller=AdaptiveStepSize(rtol=1e-8, atol=1e-8))
    theirs = solve_ivp(lambda t, z: field(t, z.reshape(y0.shape)).ravel(), (0.0, 1.0), y0.ravel(), rtol=1e-8,
                       atol=1e-8)
    assert ours.evaluations == theirs.nfev
    np.testing.assert_allclose(ours.ys[-1], Ellipsoid().project(theirs.y[:, -1].reshape(y0.shape)), atol=1e-9)


def tableau_defects(tableau: ButcherTableau) -> list[str]:
    """Which of the consistency conditions of an explicit pair fail: each row of ``a`` sums to its ``c``, the
    weights ``b`` sum to 1, the error weights ``b - b_hat`` to 0 (to 1e-15: sums of a few O(1) fractions)."""
    defects = [f"row {s}" for s, (c, row) in enumerate(zip(tableau.c, tableau.a)) if abs(sum(row) - c) > 1e-15]
    defects += ["b"] * (abs(sum(tableau.b) - 1.0) > 1e-15) + ["error"] * (abs(sum(tableau.error)) > 1e-15)
    return defects


def test_the_shared_tableau_is_scipys_rk45_and_consistent():
    """One tableau for Dopri5 and the compiled integrations: scipy's (its E is b_hat - b, ours b - b_hat)."""
    from scipy.integrate import RK45

    np.testing.assert_array_equal(DORMAND_PRINCE.a_matrix(), RK45.A)
    np.testing.assert_array_equal(DORMAND_PRINCE.c, RK45.C)
    np.testing.assert_array_equal(DORMAND_PRINCE.b, RK45.B)
    np.testing.assert_array_equal(DORMAND_PRINCE.error, -RK45.E)
    assert Dopri5.tableau is DORMAND_PRINCE and tableau_defects(DORMAND_PRINCE) == []


def test_negative_control_an_inconsistent_tableau_is_found():
    broken = DORMAND_PRINCE._replace(a=(*DORMAND_PRINCE.a[:3], (44 / 45, -56 / 15, 32 / 9 + 1e-6),
                                        *DORMAND_PRINCE.a[4:]))
    assert tableau_defects(broken) == ["row 3"]


def test_adaptive_error_is_within_the_tolerance(problem):
    field, y0, reference = problem
    sol = solve(field, Dopri5(), 0.0, 1.0, y0, controller=AdaptiveStepSize(rtol=1e-9, atol=1e-9))
    assert np.max(np.abs(sol.ys[-1] - reference)) <= 1e-7  # global error: a few hundred steps of local 1e-9


@pytest.mark.parametrize("solver", [RK4(), Dopri5(), DiscreteModel()], ids=repr)
def test_long_runs_stay_on_the_ellipsoid(solver):
    field = AttentionField(P=(np.array([[0.5, -1.0, 0.2], [0.3, 0.1, 0.0], [0.0, 0.4, -0.7]]),),
                           U=(np.array([[1.0, 0.4, 0.0], [-0.2, 0.8, 0.1], [0.3, 0.0, 1.2]]),), W=W3)
    y0 = field.manifold.random_point(np.random.default_rng(2), (50, 10, 3))
    sol = integrate_fixed(field, solver, 0.0, 50.0, y0, steps=2000)
    assert sol.max_drift <= DRIFT_TOL
    assert field.manifold.belongs(sol.ys[-1], atol=DRIFT_TOL).all()


def test_without_the_retraction_rk4_drifts_off_the_manifold():
    """Negative control for the drift test: the same run with project=False leaves E_W by far more than 1e-12."""
    field = AttentionField(P=(np.array([[0.5, -1.0, 0.2], [0.3, 0.1, 0.0], [0.0, 0.4, -0.7]]),), W=W3)
    y0 = field.manifold.random_point(np.random.default_rng(2), (50, 10, 3))
    sol = solve(field, RK4(), 0.0, 50.0, y0, controller=ConstantStepSize(0.5), options=SolveOptions(project=False))
    assert sol.max_drift > 1e3 * DRIFT_TOL


def test_batched_solve_equals_solving_each_instance(problem):
    field, _, _ = problem
    y0 = Ellipsoid().random_point(np.random.default_rng(3), (3, 10, 3))
    batched = integrate_fixed(field, RK4(), 0.0, 0.5, y0, steps=50)
    for k in range(3):
        alone = integrate_fixed(field, RK4(), 0.0, 0.5, y0[k], steps=50)
        np.testing.assert_allclose(batched.ys[-1, k], alone.ys[-1], atol=1e-14)


def test_save_times_are_hit_exactly(problem):
    field, y0, _ = problem
    ts = np.array([0.0, 0.013, 0.25, 0.7, 1.0])
    sol = solve(field, Dopri5(), 0.0, 1.0, y0, saveat=SaveAt(ts=ts), controller=AdaptiveStepSize(rtol=1e-10))
    np.testing.assert_array_equal(sol.ts, ts)
    np.testing.assert_array_equal(sol.ys[0], y0)
    later = solve(field, Dopri5(), 0.0, 0.7, y0, controller=AdaptiveStepSize(rtol=1e-12, atol=1e-12))
    np.testing.assert_allclose(sol.ys[3], later.ys[-1], atol=1e-8)


# --- model.continuum: one step of eq. 1 differs from the flow of eq. 6 by O(tau^2) ----------------
TAUS = (0.02, 0.01, 0.005, 0.0025, 0.00125)  # below the period 0.2 of P(t), above the reference's 1e-13


@check("model.continuum", method="numeric")
@pytest.mark.parametrize("manifold_name", ["sphere", "ellipsoid-causal-U"])
def test_one_discrete_step_differs_from_the_flow_by_tau_squared(manifold_name, record):
    seed = 11
    rng = np.random.default_rng(seed)
    base = full_attention_example()
    if manifold_name == "sphere":
        field = base
    else:
        field = AttentionField(P=base.P, U=tuple(rng.uniform(-1, 1, (2, 3, 3))), W=W3, causal=True)
    y0 = field.manifold.random_point(rng, (10, 3))
    result = record(check_continuum(field, 0.0, y0, TAUS, seeds={"initial state and U": seed},
                                    label=f" ({manifold_name})"))
    assert result.verdict == "supported", result.detail


@check("model.continuum", method="numeric", control=True)
def test_continuum_check_rejects_a_discrete_model_with_the_wrong_value_scale():
    """A discrete model built with U = 2I against the flow with U = I differs by O(tau), not O(tau^2)."""
    field = full_attention_example()
    wrong = AttentionField(P=field.P, U=(2 * np.eye(3), 2 * np.eye(3)))
    y0 = field.manifold.random_point(np.random.default_rng(11), (10, 3))
    result = check_continuum(field, 0.0, y0, TAUS, discrete_field=wrong)
    assert result.verdict == "unsupported"  # a fitted slope goes against O(tau^2) (about tau -> 0), never refutes it
    assert abs(result.numbers["slope"] - 1.0) <= ORDER_SLACK


def test_saveat_fn_stores_a_function_of_the_state(problem):
    from sim import misalignment

    field, y0, _ = problem
    batch = np.stack([y0, y0[::-1]])
    ts = np.linspace(0.0, 0.5, 6)
    full = integrate_fixed(field, RK4(), 0.0, 0.5, batch, steps=50, saveat=SaveAt(ts=ts))
    reduced = integrate_fixed(field, RK4(), 0.0, 0.5, batch, steps=50, saveat=SaveAt(ts=ts, fn=misalignment))
    assert reduced.ys.shape == (6, 2)
    np.testing.assert_array_equal(reduced.ys, misalignment(full.ys))


def test_dopri5_reuses_its_workspace_without_touching_what_a_step_returned():
    """A step repeated from the same inputs (the retry after a rejection) gives the same result, and the next step
    overwrites neither the end point nor the carried last stage of the one before (the stages live in a workspace
    kept between steps)."""
    field = full_attention_example()
    y0 = Ellipsoid().random_point(np.random.default_rng(3), (5, 10, 3))
    solver = Dopri5()
    k0 = solver.init(field, 0.0, y0)
    y1, error, k1 = solver.step(field, 0.0, y0, 0.1, k0)
    first_step = [array.copy() for array in (y1, error, k1)]
    for again, first in zip(solver.step(field, 0.0, y0, 0.1, k0), first_step):
        np.testing.assert_array_equal(again, first)
    carried = [array.copy() for array in (y1, k1)]
    solver.step(field, 0.1, y1, 0.1, k1)
    for array, before in zip((y1, k1), carried):
        np.testing.assert_array_equal(array, before)


def test_a_field_subclass_without_out_is_called_as_it_is():
    """The solver writes stages through ``out=`` only into fields whose call takes it: a subclass overriding
    ``__call__(t, y)`` (here -1 times the field) is called itself,
    never bypassed by the base class's ``out=`` path (which would integrate the unbroken field)."""

    class ReversedProjection(AttentionField):  # -1 times the field, through __call__(t, y) alone
        def __call__(self, t, y):
            return -super().__call__(t, y)

    base = full_attention_example()
    reversed_field = ReversedProjection(P=base.P, W=np.eye(3))

    def negated(t, y):
        return -base(t, y)

    negated.manifold = base.manifold
    y0 = Ellipsoid().random_point(np.random.default_rng(12), (3, 10, 3))
    options = dict(controller=AdaptiveStepSize(rtol=1e-9, atol=1e-9))
    through_subclass = solve(reversed_field, Dopri5(), 0.0, 0.5, y0, **options)
    np.testing.assert_array_equal(through_subclass.ys, solve(negated, Dopri5(), 0.0, 0.5, y0, **options).ys)
    assert np.max(np.abs(through_subclass.ys - solve(base, Dopri5(), 0.0, 0.5, y0, **options).ys)) > 1e-3


@pytest.mark.parametrize("fn", [None, lambda y: y], ids=["state", "view-of-state"])
@pytest.mark.parametrize("workers", [1, 2])
def test_saved_states_are_copies_not_the_solvers_reused_arrays(problem, workers, fn):
    """``solve`` steps into arrays it reuses; what it saves at every step, even a view of the state returned by
    ``SaveAt.fn``, is the state of that step: that of a run stopped there."""
    field, y0, _ = problem
    batch = np.stack([y0, y0[::-1]])
    dt = 0.05
    saved = solve(field, RK4(), 0.0, 6 * dt, batch, controller=ConstantStepSize(dt), saveat=SaveAt(steps=True, fn=fn),
                  options=SolveOptions(workers=workers))
    assert saved.ys.shape == (7, *batch.shape)
    for k in range(1, 7):
        stopped = solve(field, RK4(), 0.0, k * dt, batch, controller=ConstantStepSize(dt),
                        options=SolveOptions(workers=workers))
        # the same steps; the times differ by rounding (k dt against dt + ... + dt), and so does P(t)
        np.testing.assert_allclose(saved.ys[k], stopped.ys[-1], rtol=0, atol=1e-13)


@pytest.mark.parametrize("workers", [1, 2])
def test_rejected_steps_leave_the_state_to_retry_from(problem, workers):
    """A first step far too long is rejected (and retried shorter) from the same state: the run still meets
    its tolerance against the reference."""
    field, y0, reference = problem
    batch = np.stack([y0, y0])
    sol = solve(field, Dopri5(), 0.0, 1.0, batch, controller=AdaptiveStepSize(rtol=1e-9, atol=1e-9, dt0=0.9),
                options=SolveOptions(workers=workers))
    assert sol.rejected_steps >= 1
    assert np.max(np.abs(sol.ys[-1] - reference)) <= 1e-7  # as test_adaptive_error_is_within_the_tolerance


def test_error_norm_is_scipys_per_instance_then_the_worst_or_the_rms():
    rng = np.random.default_rng(11)
    error, y, y_next = rng.standard_normal((3, 2, 4, 3))  # 2 instances of 4 tokens in d = 3
    controller = AdaptiveStepSize(rtol=1e-3, atol=1e-6)
    scale = 1e-6 + 1e-3 * np.maximum(np.abs(y), np.abs(y_next))
    means = np.mean((error / scale) ** 2, axis=(-2, -1))
    np.testing.assert_allclose(controller.instance_errors(error, y, y_next), means, rtol=1e-12)
    assert controller.error_norm(error, y, y_next) == pytest.approx(np.sqrt(np.max(means)), rel=1e-12)
    rms = AdaptiveStepSize(rtol=1e-3, atol=1e-6, norm="rms")
    assert rms.error_norm(error, y, y_next) == pytest.approx(np.sqrt(np.mean(means)), rel=1e-12)
    assert controller.instance_errors(error[0], y[0], y_next[0]).shape == ()  # one instance: no leading axes


def test_either_tolerance_alone_may_be_zero():
    assert AdaptiveStepSize(rtol=0.0, atol=1e-9).rtol == 0.0  # a pure absolute tolerance
    assert AdaptiveStepSize(rtol=1e-6, atol=0.0).atol == 0.0  # a pure relative tolerance


def test_flat_rows_are_writeable_float64_whatever_they_came_as():
    from sim.solvers.base import flat

    read_only = np.arange(6.0).reshape(2, 3)
    read_only.flags.writeable = False
    for array in (read_only, np.arange(6, dtype=np.float32), np.arange(6)):
        row = flat(array)
        assert row.dtype == np.float64 and row.flags.writeable and row.shape == (6,)
    assert not np.shares_memory(flat(read_only), read_only)  # a copy, the caller's array untouched


def test_a_field_without_an_out_argument_is_called_plainly():
    """sim.solve takes any callable f(t, y): one without ``writes_into`` is called without ``out``."""
    field = full_attention_example()
    y0 = Ellipsoid().random_point(np.random.default_rng(2), (2, 5, 3))
    plain = solve(lambda t, y: field(t, y), Dopri5(), 0.0, 0.5, y0, controller=AdaptiveStepSize(rtol=1e-8, atol=1e-8),
                  options=SolveOptions(manifold=Ellipsoid()))
    own = solve(field, Dopri5(), 0.0, 0.5, y0, controller=AdaptiveStepSize(rtol=1e-8, atol=1e-8))
    np.testing.assert_array_equal(plain.ys[-1], own.ys[-1])


def test_one_dopri5_solves_systems_of_different_sizes_in_turn():
    """Its per-thread workspace is sized for the system at hand, not the first one it met."""
    solver, field = Dopri5(), full_attention_example()
    rng = np.random.default_rng(3)
    for shape in ((2, 4, 3), (3, 7, 3), (2, 4, 3)):
        y0 = Ellipsoid().random_point(rng, shape)
        reused = solve(field, solver, 0.0, 0.3, y0, controller=AdaptiveStepSize(rtol=1e-8, atol=1e-8))
        fresh = solve(field, Dopri5(), 0.0, 0.3, y0, controller=AdaptiveStepSize(rtol=1e-8, atol=1e-8))
        np.testing.assert_array_equal(reused.ys[-1], fresh.ys[-1])


def test_a_step_refuses_an_output_array_that_is_its_input():
    field = full_attention_example()
    y = Ellipsoid().random_point(np.random.default_rng(4), (2, 4, 3))
    state = field(0.0, y)
    for out in ({"y_out": y}, {"state_out": y}, {"y_out": state}):
        with pytest.raises(ValueError, match="must not overlap the inputs"):
            Dopri5().step(field, 0.0, y, 0.01, state, **out)
