"""The step-size controllers' rules, one decision per test: ``rule.adapt(error, step) -> (accepted, next_step)``."""

import numpy as np
import pytest

from sim import AdaptiveStepSize, ConstantStepSize, Dopri5
from sim.solvers import stepsize

CONTROLLER = AdaptiveStepSize(rtol=1e-6, atol=1e-6)
EXPONENT = -1.0 / (Dopri5.embedded_order + 1)


def _errors(norm: float) -> np.ndarray:
    """Per-instance mean squared scaled errors whose combined (max) norm is ``norm``."""
    return np.array([norm**2, (norm / 2) ** 2])


def test_an_error_norm_above_one_is_rejected_and_the_step_shrinks():
    rule = CONTROLLER.rule(Dopri5(), 0.1)
    accepted, next_step = rule.adapt(_errors(4.0), 0.1)
    assert not accepted
    assert next_step == pytest.approx(0.1 * max(CONTROLLER.min_factor, CONTROLLER.safety * 4.0**EXPONENT))


def test_a_huge_error_shrinks_the_step_by_min_factor_at_most():
    accepted, next_step = CONTROLLER.rule(Dopri5(), 0.1).adapt(_errors(1e12), 0.1)
    assert not accepted and next_step == pytest.approx(0.1 * CONTROLLER.min_factor)


def test_an_error_norm_below_one_is_accepted_and_the_step_grows():
    accepted, next_step = CONTROLLER.rule(Dopri5(), 0.1).adapt(_errors(1e-3), 0.1)
    assert accepted
    assert next_step == pytest.approx(0.1 * min(CONTROLLER.max_factor, CONTROLLER.safety * 1e-3**EXPONENT))


def test_a_zero_error_grows_the_step_by_max_factor():
    accepted, next_step = CONTROLLER.rule(Dopri5(), 0.1).adapt(_errors(0.0), 0.1)
    assert accepted and next_step == pytest.approx(0.1 * CONTROLLER.max_factor)


def test_the_step_after_a_rejection_does_not_grow():
    rule = CONTROLLER.rule(Dopri5(), 0.1)
    _, shorter = rule.adapt(_errors(4.0), 0.1)
    accepted, next_step = rule.adapt(_errors(1e-3), shorter)
    assert accepted and next_step == pytest.approx(shorter)
    assert rule.adapt(_errors(1e-3), next_step)[1] > next_step  # the one after grows again


def test_a_step_shortened_to_land_on_a_save_time_keeps_the_proposal():
    rule = CONTROLLER.rule(Dopri5(), 0.1)
    accepted, next_step = rule.adapt(_errors(1e-3), 0.01)  # 0.01 < the proposed 0.1, and it would grow
    assert accepted and next_step == 0.1


def test_control_without_the_landing_rule_the_proposal_would_shrink():
    """Negative control of the test above: the same small step, taken as the proposal itself, sets the next one."""
    accepted, next_step = CONTROLLER.rule(Dopri5(), 0.01).adapt(_errors(1e-3), 0.01)
    assert accepted and next_step < 0.1


def test_constant_steps_are_always_accepted_with_the_same_step():
    rule = ConstantStepSize(0.25).rule(Dopri5(), 0.25)
    assert rule.adapt(None, 0.25) == (True, 0.25)
    assert rule.adapt(None, 0.1) == (True, 0.25)  # a step shortened to land on a save time changes nothing


def _scipy_initial_step(field, t0, y0, span, rtol, atol):
    """SciPy's own starting step for RK45 (``select_initial_step``, error estimator order 4) on one instance."""
    from scipy.integrate._ivp.common import select_initial_step

    def fun(t, z):
        return field(t, z.reshape(y0.shape)).ravel()

    return select_initial_step(fun, t0, y0.ravel(), t0 + span, np.inf, fun(t0, y0.ravel()), 1, 4, rtol, atol)


@pytest.mark.parametrize("case", ["generic", "short span", "tight tolerance", "loose tolerance", "at rest",
                                  "near rest"])
def test_the_starting_step_is_scipys_on_one_instance(case):
    """Hairer, Norsett & Wanner's starting step, as SciPy computes it, in each of its regimes: the generic one,
    a span shorter than the first guess, a guess limited by 100 h0, a state at rest (f = 0: h0 = 1e-6 and the
    fallback h1 = max(1e-6, 1e-3 h0)), and one a rounding away from rest (h0 = 1e-6, the first step 100 h0)."""
    from sim import AttentionField

    rng = np.random.default_rng(5)
    field = AttentionField(P=(rng.normal(size=(3, 3)), rng.normal(size=(3, 3))), U=(np.eye(3), -np.eye(3)))
    y0 = rng.standard_normal((1, 4, 3))
    y0 /= np.linalg.norm(y0, axis=-1, keepdims=True)
    rtol, atol, span, t0 = 1e-6, 1e-9, 3.0, 0.5
    if case == "short span":
        span = 1e-4
    elif case == "tight tolerance":
        rtol, atol = 1e-13, 1e-13
    elif case == "loose tolerance":  # d0 = |y / (atol + rtol |y|)| below 1
        rtol, atol = 1.0, 1.0
    elif case == "at rest":
        y0 = np.broadcast_to(np.array([0.0, 0.0, 1.0]), y0.shape).copy()  # consensus: dy/dt = 0
    elif case == "near rest":
        y0 = np.broadcast_to(np.array([0.0, 0.0, 1.0]), y0.shape) + 1e-10 * rng.standard_normal(y0.shape)
        y0 /= np.linalg.norm(y0, axis=-1, keepdims=True)
    controller = AdaptiveStepSize(rtol=rtol, atol=atol)
    ours = controller.initial_step(field, Dopri5(), t0, y0, field(t0, y0), span)
    assert ours == pytest.approx(_scipy_initial_step(field, t0, y0, span, rtol, atol), rel=1e-12)
    expected_regime = {"short span": ours == span, "at rest": ours == pytest.approx(1e-6),
                       "near rest": ours == pytest.approx(1e-4),
                       "generic": 0 < ours < span, "tight tolerance": 0 < ours < 1e-2,
                       "loose tolerance": 1e-3 < ours <= span}
    assert expected_regime[case], ours


def test_the_starting_step_of_a_batch_is_set_by_its_worst_instance():
    """norm="max": the batch starts with the step of its hardest instance (here the fast one), not an average."""
    from sim import AttentionField

    field = AttentionField(P=(4.0 * np.eye(3),))
    rng = np.random.default_rng(6)
    slow = np.tile(np.array([0.0, 0.0, 1.0]), (4, 1)) + 1e-3 * rng.standard_normal((4, 3))
    fast = rng.standard_normal((4, 3))
    y0 = np.stack([slow, fast])
    y0 /= np.linalg.norm(y0, axis=-1, keepdims=True)
    controller = AdaptiveStepSize(rtol=1e-6, atol=1e-9)
    batch = controller.initial_step(field, Dopri5(), 0.0, y0, field(0.0, y0), 5.0)
    alone = [_scipy_initial_step(field, 0.0, y0[b:b + 1], 5.0, 1e-6, 1e-9) for b in range(2)]
    assert alone[1] < alone[0] / 1.4
    assert batch == pytest.approx(alone[1], rel=1e-12)  # its d1, d2 are the batch's largest: exactly its own step


def test_an_error_norm_of_exactly_one_is_accepted():
    accepted, _ = CONTROLLER.rule(Dopri5(), 0.1).adapt(_errors(1.0), 0.1)
    assert accepted


def test_a_landing_step_after_a_rejection_keeps_the_proposal():
    """After a rejection the factor is capped at 1; a step shortened to land on a save time or t1 then leaves the
    proposal as it was (factor >= 1), not shrunk to the shortened step."""
    rule = CONTROLLER.rule(Dopri5(), 0.1)
    rejected, proposal = rule.adapt(_errors(4.0), 0.1)
    accepted, next_step = rule.adapt(_errors(1e-3), proposal / 3)
    assert not rejected and accepted and next_step == proposal


# The rule's functions themselves (sim/solvers/stepsize.py), at the boundaries of their comparisons: SciPy's
# select_initial_step compares d0, d1 < 1e-5 strictly and d1, d2 <= 1e-15 inclusively. Both integrators call these
# functions, so a fault in one moves both alike and only such direct tests can see it.
SAFETY, MIN_FACTOR, MAX_FACTOR = 0.9, 0.2, 10.0


def test_the_first_guess_is_1e_6_when_either_norm_is_below_1e_5_and_the_ratio_at_1e_5():
    assert stepsize.first_guess(1e-6, 1.0, 1e4) == 1e-6
    assert stepsize.first_guess(1.0, 1e-6, 1e4) == 1e-6
    assert stepsize.first_guess(1e-5, 1.0, 1e4) == pytest.approx(1e-7, rel=1e-15)  # at the threshold: 0.01 d0 / d1
    assert stepsize.first_guess(1.0, 1e-5, 1e4) == pytest.approx(1e3, rel=1e-15)
    assert stepsize.first_guess(1.0, 1e-5, 50.0) == 50.0  # at most the span


def test_the_starting_step_at_rest_is_a_thousandth_of_h0_at_least_1e_6():
    assert stepsize.starting_step(1.0, 0.0, 0.0, 1e3, 4) == pytest.approx(1e-3, rel=1e-15)
    assert stepsize.starting_step(1e-4, 0.0, 0.0, 1e3, 4) == 1e-6
    # 1e-15 itself counts as at rest, for either norm (SciPy's <=)
    assert stepsize.starting_step(1.0, 1e-15, 0.0, 1e3, 4) == pytest.approx(1e-3, rel=1e-15)
    assert stepsize.starting_step(1.0, 0.0, 1e-15, 1e3, 4) == pytest.approx(1e-3, rel=1e-15)
    assert stepsize.starting_step(1.0, 2e-15, 0.0, 1e3, 4) == 100.0  # just above: (0.01 / d1)^(1/5) ~ 355, 100 h0


def test_a_shortened_step_whose_error_asks_for_less_is_not_given_the_proposal():
    """A step shortened to land (0.01 < the proposed 0.1) with an error norm of 0.9: the factor 0.9 * 0.9^(-1/5) < 1
    shrinks the step taken; the proposal is kept only when the factor would grow it."""
    accepted, following = stepsize.next_step(0.9, 0.01, 0.1, False, SAFETY, MIN_FACTOR, MAX_FACTOR, EXPONENT)
    assert accepted and following == pytest.approx(0.01 * SAFETY * 0.9**EXPONENT, rel=1e-15)
    assert following < 0.01


def test_a_step_longer_than_the_proposal_grows_from_itself():
    """Only a shortened step (below the proposal) keeps the proposal; a longer one is scaled like any other."""
    accepted, following = stepsize.next_step(1e-3, 0.2, 0.1, False, SAFETY, MIN_FACTOR, MAX_FACTOR, EXPONENT)
    assert accepted and following == pytest.approx(0.2 * SAFETY * 1e-3**EXPONENT, rel=1e-15)
