"""The gradient case (Hyp. 3.1, Thm 3.1, sec. 3.3): the potential along solutions, with negative controls."""

from hypothesis import given

from foundation.registration import check
from tests.properties import strategies as S
from sim.properties.conclusions import check_potential_monotone
from tests.properties.control import budget, control_record, find_violation, observe
from tests.properties.models import ReversedProjection


@check("grad.convergence", method="property")
@budget(0.5)
@given(S.gradient_instances())
def test_potential_never_decreases_and_the_solution_comes_to_rest(instance):
    holds, numbers = observe("potential never decreases and the solution comes to rest",
                             check_potential_monotone(instance))
    assert holds, numbers


@check("grad.convergence", method="property", control=True)
@budget(0.25)
@given(S.gradient_instances(max_dim=16))
def test_potential_check_rejects_the_reversed_projection_on_every_instance(instance):
    # Reversed, dPhi/dt = -|grad Phi|_g^2 < 0 off equilibria.
    holds, numbers = observe("potential check rejects the reversed projection on every instance",
                             check_potential_monotone(instance, ReversedProjection))
    assert not holds, numbers


@check("grad.convergence", method="property", control=True)
def test_potential_check_rejects_a_metric_other_than_p(record):
    # W = I != P: the field is no longer the gradient of Phi for g, and Phi can decrease.
    instance, tries = find_violation(S.gradient_instances(max_dim=16),
                                     lambda i: not check_potential_monotone(i, metric_is_P=False).holds)
    outcome = observe("potential check rejects a metric other than P",
                      check_potential_monotone(instance, metric_is_P=False))
    assert not outcome.holds, outcome.numbers
    assert check_potential_monotone(instance).holds, "the same instance must pass with W = P"
    record(control_record("W = I != P (outside Hyp. 3.1)", instance, tries, outcome,
                          counterpart="The same instance passes with W = P."))
