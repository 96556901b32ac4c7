"""Asymptotic stability of consensus for constant P (full.autonomous, Remark 4.1; sim/figures/stability.py)."""

from foundation.registration import check
from sim.field.dynamics import AttentionField
from sim.field.reversed import TimeReversed
from sim.figures.stability import ATTRACTION_RATIO, check_asymptotic_stability, perturbed_runs


@check(check_asymptotic_stability)
def test_perturbed_consensus_stays_within_its_perturbation_and_returns(record):
    result = record(check_asymptotic_stability(perturbed_runs()))
    assert result.verdict == "verified", result.detail
    assert result.numbers["max_final_over_initial_diameter"] <= ATTRACTION_RATIO


def reversed_field(**heads):
    """A broken model: the attention field with its sign flipped (time reversed), so a consensus repels."""
    return TimeReversed(AttentionField(**heads))


@check("full.autonomous", method="numeric", control=True)
def test_stability_check_rejects_the_time_reversed_model():
    """Negative control: the perturbations grow by orders, so the same check says refuted."""
    result = check_asymptotic_stability(perturbed_runs(reversed_field))
    assert result.verdict == "refuted" and result.numbers["max_distance_growth"] > 10
