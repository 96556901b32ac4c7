"""The step-size controllers' rules, one decision per test: ``rule.adapt(error, step) -> (accepted, next_step)``."""

import numpy as np
import pytest

from sim import AdaptiveStepSize, ConstantStepSize, Dopri5

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
    rule = ConstantStepSize().rule(Dopri5(), 0.25)
    assert rule.adapt(None, 0.25) == (True, 0.25)
    assert rule.adapt(None, 0.1) == (True, 0.25)  # a step shortened to land on a save time changes nothing
