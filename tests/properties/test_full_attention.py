"""Full attention (Thm 4.1 / ICML 3.2, Lemma 4.1, Remark 4.1) on generated instances, with negative controls."""

from hypothesis import example, given

from foundation.registration import check
from tests.properties import strategies as S
from sim.properties.conclusions import (check_attention_bounds, check_consensus_returns, check_full_convergence,
                                     check_full_invariance, check_full_lyapunov)
from tests.properties.control import budget, control_record, find_violation, observe
from tests.properties.models import ReversedProjection, UnnormalisedAttention


# --- full.invariance -----------------------------------------------------------------------------
@check(check_full_invariance)
@budget(0.5)
@given(S.full_attention_instances())
def test_tokens_stay_in_their_open_hemisphere(instance):
    holds, numbers = observe("tokens stay in their open hemisphere",
                             check_full_invariance(instance))
    assert holds, numbers


@check(check_full_invariance, control=True)
def test_invariance_check_rejects_the_reversed_projection(record):
    instance, tries = find_violation(S.full_attention_instances(max_dim=16),
                                     lambda i: not check_full_invariance(i, ReversedProjection).holds)
    outcome = observe("invariance check rejects the reversed projection",
                      check_full_invariance(instance, ReversedProjection))
    assert not outcome.holds, outcome.numbers
    assert check_full_invariance(instance).holds, "the same instance must pass with the model as printed"
    record(control_record("the reversed projection (y y^T W - I) f", instance, tries, outcome))



# --- full.lyapunov -------------------------------------------------------------------------------
@check(check_full_lyapunov)
@budget(0.5)
@given(S.full_attention_instances())
def test_hemisphere_lyapunov_function_never_increases(instance):
    holds, numbers = observe("hemisphere lyapunov function never increases",
                             check_full_lyapunov(instance))
    assert holds, numbers


@check(check_full_lyapunov, control=True)
@budget(0.25)
@given(S.full_attention_instances(max_dim=16))
def test_lyapunov_check_rejects_the_reversed_projection_on_every_instance(instance):
    # Reversing the field reverses the sign of the Danskin derivative: V increases strictly off consensus.
    holds, numbers = observe("lyapunov check rejects the reversed projection on every instance",
                             check_full_lyapunov(instance, ReversedProjection))
    assert not holds, numbers


# --- full.convergence ----------------------------------------------------------------------------
@check(check_full_convergence)
@budget(0.5)
@given(S.full_attention_instances())
def test_tokens_in_a_hemisphere_reach_consensus(instance):
    holds, numbers = observe("tokens in a hemisphere reach consensus",
                             check_full_convergence(instance))
    assert holds, numbers


@check(check_full_convergence, control=True)
def test_convergence_check_rejects_the_reversed_projection(record):
    instance, tries = find_violation(S.full_attention_instances(max_dim=16),
                                     lambda i: not check_full_convergence(i, ReversedProjection).holds,
                                     max_examples=5)
    outcome = observe("convergence check rejects the reversed projection",
                      check_full_convergence(instance, ReversedProjection))
    assert not outcome.holds, outcome.numbers
    assert check_full_convergence(instance).holds, "the same instance must pass with the model as printed"
    record(control_record("the reversed projection (y y^T W - I) f", instance, tries, outcome))



@check(check_full_convergence, control=True)
@budget(0.25)
@given(S.antipodal_configurations())
# Regression: failed (the tokens met) when the line was a random one and the horizon 400 sqrt(d): rounding
# errors left the unstable equilibrium. The line is now a coordinate axis (exact in floating point).
@example(S.AntipodalConfiguration(dim=2, heads=1, seed=0, p_bound=0.0, harmonics=0, signs=(1, -1, -1)))
def test_tokens_in_no_common_hemisphere_need_not_meet(instance):
    # Outside the hypotheses: tokens +-y on a line are an equilibrium that never meets (E stays >= 2/l).
    holds, numbers = observe("tokens in no common hemisphere need not meet",
                             check_full_convergence(instance))
    assert not holds, numbers


# --- full.bounds ---------------------------------------------------------------------------------
@check("full.bounds", method="property")
@given(S.full_attention_instances())
def test_attention_weights_lie_within_the_bounds_of_lemma_4_1(instance):
    holds, numbers = observe("attention weights lie within the bounds of lemma 4 1",
                             check_attention_bounds(instance))
    assert holds, numbers


@check("full.bounds", method="property", control=True)
def test_bounds_check_rejects_a_dropped_normaliser(record):
    instance, tries = find_violation(S.full_attention_instances(),
                                     lambda i: not check_attention_bounds(i, UnnormalisedAttention).holds)
    outcome = observe("bounds check rejects a dropped normaliser",
                      check_attention_bounds(instance, UnnormalisedAttention))
    assert not outcome.holds, outcome.numbers
    assert check_attention_bounds(instance).holds, "the same instance must pass with the model as printed"
    record(control_record("attention without the normaliser Z_i", instance, tries, outcome))



# --- full.autonomous (Remark 4.1) ----------------------------------------------------------------
@check(check_consensus_returns)
@budget(0.5)
@given(S.consensus_perturbations())
def test_perturbed_consensus_returns_without_moving_away(instance):
    holds, numbers = observe("perturbed consensus returns without moving away",
                             check_consensus_returns(instance))
    assert holds, numbers


@check(check_consensus_returns, control=True)
@budget(0.25)
@given(S.consensus_perturbations(max_dim=16))
# Regression (representative; found in a random run, instance not printed): for d = 2 both tokens could be
# moved along the same unit tangent by the same radius, i.e. start at one consensus point, where the reversed
# field is at rest too. Perturbation sizes now differ per token.
@example(S.ConsensusPerturbation(dim=2, tokens=2, heads=1, seed=0, p_bound=0.0, radius=0.001))
def test_return_check_rejects_the_reversed_projection_on_every_instance(instance):
    # Reversed, the Lyapunov function max_i (1 - <z, y_i>_W) increases strictly: the perturbation grows.
    holds, numbers = observe("return check rejects the reversed projection on every instance",
                             check_consensus_returns(instance, ReversedProjection))
    assert not holds, numbers


# --- what the proof of Thm 4.1 uses --------------------------------------------------------------
@budget(0.1)
@given(S.full_attention_instances(max_dim=16))
def test_hemisphere_properties_need_only_positive_weights(instance):
    """The proof of Thm 4.1 uses alpha_ij > 0 only: without the normaliser Z_i (a broken *model*, which the bounds
    check rejects) invariance and the Lyapunov decrease still hold, so these checks rightly do not reject it. A
    fact about the proof's hypotheses, not a check of the claims (their statements are about the normalised
    model): it marks no claim."""
    holds, numbers = check_full_invariance(instance, UnnormalisedAttention)
    assert holds, numbers
    holds, numbers = check_full_lyapunov(instance, UnnormalisedAttention)
    assert holds, numbers
