"""Deflated Newton's parts (sim.conjectures.equilibria) at their edges: the instance's refusals word for word, the
documented Householder bases, one Newton step assembled by hand (the cap, the retraction, Farrell's deflation
factor from a complex-step gradient of log M), the convergence test's two conditions, the sameness of roots at
exactly ``SAME_ROOT`` and the passes of ``find_equilibria``. The searches that use them are in test_seek.py."""

import re

import numpy as np
import pytest

from sim.conjectures.equilibria import (COMPLEX_STEP, CONVERGED, DEFLATION_POWER, DEFLATION_SHIFT, MAX_STEP, SAME_ROOT,
                                        STEP_CONVERGED, Instance, distinct, find_equilibria, newton,
                                        residual_and_jacobian, tangent_bases, _solve)

#: The multi-head counterexample of test_seek.py (P = +-20 I, causal): from one start its deflated passes find
#: one more root per pass up to four.
MULTIHEAD = Instance(np.array([20 * np.eye(2), -20 * np.eye(2)]), np.array([np.diag([0.0, 2.0]), np.diag([1.0, -2.0])]),
                     causal=True)
MULTIHEAD_START = np.array([[[1.0, 0.0], [np.cos(0.3), np.sin(0.3)]]])
#: Two tokens in R^3 with seeded heads: l != d - 1 != 1, so every reshape of a step into tokens is exercised.
RNG = np.random.default_rng(42)
WIDE = Instance(RNG.standard_normal((2, 3, 3)), RNG.standard_normal((2, 3, 3)), causal=False)
#: Agreement of two float64 assemblies of the same step (values of order 1): a few roundings.
ROUNDING = 1e-14


def _unit(rng, *shape):
    y = rng.standard_normal(shape)
    return y / np.linalg.norm(y, axis=-1, keepdims=True)


def _one_token(U: np.ndarray) -> Instance:
    """One token in the plane, P = 0: f(y) = (U y - (y^T U y) y) / sqrt(2), whose tangent part at angle t is
    (c cos^2 t + (d - a) sin t cos t - b sin^2 t) / sqrt(2) for U = [[a, b], [c, d]]."""
    return Instance(np.zeros((1, 2, 2)), np.asarray(U, dtype=float)[None], causal=True)


# --- the instance ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("P, U, message", [
    pytest.param(np.eye(2), np.eye(2), "P and U must both have shape [h, d, d]; got P (2, 2) and U (2, 2)",
                 id="square but no head axis"),
    pytest.param(np.ones((1, 2, 3)), np.ones((1, 2, 3)), "P and U must both have shape [h, d, d]; got P (1, 2, 3) "
                 "and U (1, 2, 3)", id="not square"),
    pytest.param(np.ones((1, 2, 2)), np.ones((1, 3, 3)), "P and U must both have shape [h, d, d]; got P (1, 2, 2) "
                 "and U (1, 3, 3)", id="square, of other sizes"),
    pytest.param(np.ones((1, 2, 2)), np.array([[[1.0, np.nan], [0.0, 1.0]]]), "P and U must be finite", id="U nan"),
    pytest.param(np.array([[[np.inf, 0.0], [0.0, 1.0]]]), np.ones((1, 2, 2)), "P and U must be finite", id="P inf"),
])
def test_an_instance_refuses_each_bad_pair_with_its_own_words(P, U, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        Instance(P, U, causal=True)


def test_control_an_instance_of_finite_square_heads_of_one_shape_is_kept():
    instance = Instance(np.ones((2, 3, 3)), np.zeros((2, 3, 3)), causal=False)
    assert instance.P.shape == instance.U.shape == (2, 3, 3)


# --- the tangent bases and the residual ------------------------------------------------------------------------------
@pytest.mark.parametrize("y, column, other_convention", [
    pytest.param([0.0, 1.0], [-1.0, 0.0], [1.0, 0.0], id="y_1 = 0 takes the + sign"),
    pytest.param([0.6, 0.8], [-0.8, 0.6], [0.8, -0.6], id="y_1 > 0"),
    pytest.param([-0.6, 0.8], [0.8, 0.6], [-0.8, -0.6], id="y_1 < 0"),
])
def test_the_basis_is_the_last_column_of_the_documented_householder_reflection(y, column, other_convention):
    """H = I - 2 w w^T / w^T w, w = y + sign(y_1) e_1 with sign(0) = +1, worked by hand in the plane; the column of
    the other sign is the negative control (it is a tangent basis too, but not the documented one)."""
    basis = tangent_bases(np.array([[y]]))[0, 0, :, 0]
    np.testing.assert_allclose(basis, column, atol=1e-15)  # a few roundings of entries of order 1
    assert not np.allclose(basis, other_convention, atol=0.1)


def test_one_state_without_a_batch_axis_has_the_residual_and_jacobian_of_a_batch_of_one():
    y = _unit(np.random.default_rng(7), 2, 3)
    r, J, bases = residual_and_jacobian(y, WIDE)
    r_batch, J_batch, bases_batch = residual_and_jacobian(y[None], WIDE)
    assert r.shape == (4,) and J.shape == (4, 4) and bases.shape == (2, 3, 2)
    np.testing.assert_allclose(r, r_batch[0], atol=ROUNDING)
    np.testing.assert_allclose(J, J_batch[0], atol=ROUNDING)
    np.testing.assert_array_equal(bases, bases_batch[0])
    assert np.max(np.abs(J)) > 0.1  # control: a Jacobian that could tell a misplaced axis


def test_one_token_in_the_plane_has_the_residual_and_jacobian_worked_by_hand():
    """U = [[1, 0], [c, 0]] at y = e_1 (basis (0, 1)): r = c / sqrt(2), J = (d - a) / sqrt(2) = -1 / sqrt(2)."""
    c = 0.25
    r, J, _ = residual_and_jacobian(np.array([[[1.0, 0.0]]]), _one_token([[1.0, 0.0], [c, 0.0]]))
    np.testing.assert_allclose(r, [[c / np.sqrt(2)]], atol=1e-16)  # a rounding of a number of order 0.2
    np.testing.assert_allclose(J, [[[-1 / np.sqrt(2)]]], atol=1e-15)


# --- Newton's steps --------------------------------------------------------------------------------------------------
def test_newton_normalises_each_token_of_each_start():
    starts = np.array([[[3.0, 4.0], [0.0, -2.0]], [[0.5, 0.0], [1.0, 1.0]]])
    ends, converged = newton(MULTIHEAD, starts, iterations=0)
    np.testing.assert_allclose(ends, [[[0.6, 0.8], [0.0, -1.0]], [[1.0, 0.0], [np.sqrt(0.5), np.sqrt(0.5)]]],
                               atol=1e-16)
    assert not np.any(converged)


def test_a_singular_jacobian_takes_the_least_squares_step_of_least_norm():
    """J dx = -r with J = diag(1, 0), r = (1, 2): no solution; least squares of least norm dx = (-1, 0). The
    other start of the batch, J = diag(2, 4), is solved exactly (-r / diag), as it is alone (the control)."""
    J = np.array([np.diag([1.0, 0.0]), np.diag([2.0, 4.0])])
    r = np.array([[1.0, 2.0], [1.0, 2.0]])
    np.testing.assert_allclose(_solve(J, r), [[-1.0, 0.0], [-0.5, -0.5]], atol=1e-15)  # an SVD's rounding
    np.testing.assert_array_equal(_solve(J[1:], r[1:]), [[-0.5, -0.5]])


def _log_deflation_gradient(y: np.ndarray, roots: np.ndarray) -> np.ndarray:
    """The ambient gradient of log M(y) = sum_k log(|y - y_k|^-p + shift), by complex steps entry by entry."""
    gradient = np.zeros_like(y)
    for index in np.ndindex(*y.shape):
        probe = y.astype(complex)
        probe[index] += 1j * COMPLEX_STEP
        distances = np.sqrt(np.sum((probe[None] - roots) ** 2, axis=(-1, -2)))  # analytic: no abs
        gradient[index] = np.sum(np.log(distances ** -DEFLATION_POWER + DEFLATION_SHIFT)).imag / COMPLEX_STEP
    return gradient


def _hand_step(instance: Instance, y: np.ndarray, roots: np.ndarray) -> tuple[np.ndarray, float]:
    """One deflated Newton step from ``y : shape=[l, d]`` as the module docstring states it; (new y, uncapped
    largest token step)."""
    r, J, bases = residual_and_jacobian(y, instance)
    step = np.linalg.solve(J, -r)
    if len(roots):
        tangent = np.einsum("ld,ldk->lk", _log_deflation_gradient(y, roots), bases).ravel()
        step = step / (1.0 - tangent @ step)  # Farrell et al.'s tau
    per_token = step.reshape(len(y), -1)
    largest = np.max(np.linalg.norm(per_token, axis=-1))
    per_token = per_token * min(1.0, MAX_STEP / largest)
    moved = y + np.einsum("ldk,lk->ld", bases, per_token)
    return moved / np.linalg.norm(moved, axis=-1, keepdims=True), largest


def test_one_newton_step_is_the_documented_capped_tangent_step_with_and_without_deflation():
    rng = np.random.default_rng(11)
    starts = _unit(rng, 6, 2, 3)
    roots = _unit(rng, 2, 2, 3)
    for deflated in (np.zeros((0, 2, 3)), roots):
        ends, _ = newton(WIDE, starts, roots=deflated if len(deflated) else None, iterations=1)
        expected = [_hand_step(WIDE, y, deflated) for y in starts]
        np.testing.assert_allclose(ends, [end for end, _ in expected], atol=1e-12)  # tau's gradient: complex step
        largest = [size for _, size in expected]
        assert min(largest) < MAX_STEP < max(largest)  # the cap is met and missed in the same batch
    # control: the undeflated step is not the deflated one
    assert not np.allclose(newton(WIDE, starts, iterations=1)[0], newton(WIDE, starts, roots, iterations=1)[0])


def test_a_double_root_converges_only_linearly_and_is_left_out():
    """U = [[0, 1], [0, 0]]: f = -sin^2 t / sqrt(2) has a double root at t = 0, where Newton halves t per step: after
    20 steps from t = 0.1 the residual (1e-14) is far below ``CONVERGED`` but the step (5e-8) above
    ``STEP_CONVERGED``. Control: U = diag(1, 0), f = -sin t cos t / sqrt(2), a simple root there, converges."""
    start = np.array([[[np.cos(0.1), np.sin(0.1)]]])
    double = _one_token([[0.0, 1.0], [0.0, 0.0]])
    ends, converged = newton(double, start)
    assert not converged[0]
    assert np.max(np.abs(residual_and_jacobian(ends, double)[0])) < 1e-12 and 0 < abs(ends[0, 0, 1]) < 1e-6
    assert len(find_equilibria(double, start)) == 0
    simple = _one_token(np.diag([1.0, 0.0]))
    ends, converged = newton(simple, start)
    assert converged[0]
    np.testing.assert_allclose(ends[0, 0], [1.0, 0.0], atol=1e-9)  # converged: the step below 1e-9


#: U = [[a, 0], [c, 0]] at y = e_1: r = c / sqrt(2), J = -a / sqrt(2), the step c / a. The c are found by stepping one
#: float at a time from CONVERGED sqrt(2) and STEP_CONVERGED a until the residual, or the step, is the bound exactly.
RESIDUAL_AT_BOUND = (1.0, 1.4142135623730953e-10)
STEP_AT_BOUND = (0.05, 5.000000000000001e-11)


@pytest.mark.parametrize("a, c", [pytest.param(*RESIDUAL_AT_BOUND, id="residual = CONVERGED, step below"),
                                  pytest.param(*STEP_AT_BOUND, id="step = STEP_CONVERGED, residual below")])
def test_both_convergence_bounds_are_strict(a, c):
    instance = _one_token([[a, 0.0], [c, 0.0]])
    e1 = np.array([[[1.0, 0.0]]])
    r, J, _ = residual_and_jacobian(e1, instance)
    step = np.linalg.solve(J, -r[..., None])[..., 0]
    residual, size = np.max(np.abs(r)), np.max(np.abs(step))
    assert residual == CONVERGED or size == STEP_CONVERGED  # one bound met exactly
    assert residual <= CONVERGED and size <= STEP_CONVERGED
    ends, converged = newton(instance, e1, iterations=1)
    assert not converged[0] and ends[0, 0, 1] != 0.0  # at a bound: stepped on, not converged
    assert newton(instance, e1, iterations=2)[1][0]  # control: one step later both are below


def test_a_start_that_overflows_is_dropped_and_the_others_go_on():
    """P = diag(800, 0): at y = e_1 the logit 800 overflows exp (inf / inf); the start at 0.1 rad from e_2 (logit 8)
    converges to the equilibrium e_2 of U = diag(1, 0)."""
    instance = Instance(np.diag([800.0, 0.0])[None], np.diag([1.0, 0.0])[None], causal=True)
    starts = np.array([[[1.0, 0.0]], [[np.cos(np.pi / 2 - 0.1), np.sin(np.pi / 2 - 0.1)]]])
    with np.errstate(over="ignore", invalid="ignore"):
        ends, converged = newton(instance, starts)
    assert converged.tolist() == [False, True]
    assert not np.any(np.isfinite(ends[0]))
    np.testing.assert_allclose(ends[1, 0], [0.0, 1.0], atol=1e-9)  # converged: the step below 1e-9


# --- distinct roots and the passes -----------------------------------------------------------------------------------
def test_roots_are_the_same_when_no_token_moves_by_more_than_same_root():
    """Four tokens each moved by 0.9 SAME_ROOT along e_1 (the whole state by 1.8 SAME_ROOT, every coordinate's
    column of tokens too): the same root. A token moved by exactly SAME_ROOT: the same root (the bound is
    inclusive); by the next float above it: a new one (the control)."""
    root = np.tile([1.0, 0.0], (4, 1))
    near = root - [0.9 * SAME_ROOT, 0.0]
    assert distinct(near[None], root[None]).shape == (0, 4, 2)
    assert distinct(np.stack([root, near]), np.zeros((0, 4, 2))).shape == (1, 4, 2)
    at_bound = np.zeros((1, 2)), np.array([[SAME_ROOT, 0.0]])
    assert len(distinct(at_bound[1][None], at_bound[0][None])) == 0
    beyond = np.array([[np.nextafter(SAME_ROOT, 1.0), 0.0]])
    np.testing.assert_array_equal(distinct(beyond[None], at_bound[0][None]), beyond[None])


def test_two_passes_by_default_each_deflating_the_roots_before_it():
    counts = [len(find_equilibria(MULTIHEAD, MULTIHEAD_START, rounds=rounds)) for rounds in (1, 2, 3)]
    assert counts == [1, 2, 3]  # one new root per pass from this start
    np.testing.assert_array_equal(find_equilibria(MULTIHEAD, MULTIHEAD_START),
                                  find_equilibria(MULTIHEAD, MULTIHEAD_START, rounds=2))
    # one pass is Newton's undeflated end
    ends, converged = newton(MULTIHEAD, MULTIHEAD_START)
    assert converged[0]
    np.testing.assert_array_equal(find_equilibria(MULTIHEAD, MULTIHEAD_START, rounds=1), ends)


def test_known_roots_are_deflated_from_the_first_pass_and_not_returned():
    first = find_equilibria(MULTIHEAD, MULTIHEAD_START, rounds=1)
    again = find_equilibria(MULTIHEAD, MULTIHEAD_START, rounds=1, known=first)
    assert len(again) == 1 and np.max(np.linalg.norm(again[0] - first[0], axis=-1)) > 0.1
    ends, converged = newton(MULTIHEAD, MULTIHEAD_START, roots=first)
    assert converged[0]
    np.testing.assert_array_equal(again, ends)
    # control: without the known root the first pass finds it again
    np.testing.assert_array_equal(find_equilibria(MULTIHEAD, MULTIHEAD_START, rounds=1), first)


@pytest.mark.parametrize("rounds", [0, -1])
def test_fewer_than_one_pass_is_refused(rounds):
    with pytest.raises(ValueError, match=f"^{re.escape(f'rounds={rounds} must be a positive number of passes.')}$"):
        find_equilibria(MULTIHEAD, MULTIHEAD_START, rounds=rounds)
