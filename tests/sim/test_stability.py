"""Asymptotic stability of consensus for constant P (full.autonomous, Remark 4.1; sim/figures/stability.py): verified
at the shipped horizon and tolerances and unchanged at twice the horizon, half the tolerances and each threshold
halved or doubled; a distance to z that grows (the time-reversed model) refutes it, a horizon too short leaves it
unsupported."""

import pytest

import sim.figures.stability as stability
from foundation.registration import check
from sim.field.dynamics import AttentionField
from sim.field.reversed import TimeReversed
from sim.figures.stability import (ATTRACTION_RATIO, HORIZON, TOLERANCES, check_asymptotic_stability,
                                   perturbed_runs)


@pytest.fixture(scope="module")
def shipped_run():
    return perturbed_runs()


@check(check_asymptotic_stability)
def test_perturbed_consensus_stays_within_its_perturbation_and_returns(shipped_run, record):
    result = record(check_asymptotic_stability(shipped_run))
    assert result.verdict == "supported", result.detail
    assert result.numbers["max_final_over_initial_diameter"] <= ATTRACTION_RATIO


def reversed_field(**heads):
    """A broken model: the attention field with its sign flipped (time reversed), so a consensus repels."""
    return TimeReversed(AttentionField(**heads))


@check("full.autonomous", method="numeric", control=True)
def test_stability_check_rejects_the_time_reversed_model():
    """Negative control: the perturbations grow by orders (V of eq. 7 with v = z rises), so the same check does not
    support the Remark (unsupported: a rise contradicts full.lyapunov's monotone V, not stability, which allows
    delta < eps)."""
    result = check_asymptotic_stability(perturbed_runs(reversed_field))
    assert result.verdict == "unsupported" and result.numbers["max_distance_growth"] > 10
    assert "grew by a factor" in result.detail and "no refutation" in result.detail


def test_a_horizon_too_short_leaves_attractivity_unsupported_not_refuted():
    """At t = 2 the diameter has fallen only to 0.1 of its start: not yet attracted, and nothing contradicted."""
    result = check_asymptotic_stability(perturbed_runs(horizon=2.0))
    assert result.verdict == "unsupported" and result.numbers["max_final_over_initial_diameter"] > ATTRACTION_RATIO
    assert "t = 2" in result.detail


@check(check_asymptotic_stability)
@pytest.mark.parametrize("setting", [dict(horizon=2 * HORIZON), dict(tolerances=tuple(x / 2 for x in TOLERANCES))],
                         ids=["twice-the-horizon", "half-the-tolerances"])
def test_stability_verdict_holds_at_twice_the_horizon_and_half_the_tolerances(setting):
    assert check_asymptotic_stability(perturbed_runs(**setting)).verdict == "supported"


@check(check_asymptotic_stability)
@pytest.mark.parametrize("name", ["STABILITY_TOL", "ATTRACTION_RATIO"])
@pytest.mark.parametrize("factor", [0.5, 2.0])
def test_stability_verdict_holds_at_each_threshold_halved_and_doubled(shipped_run, name, factor, verdict_at):
    assert verdict_at(check_asymptotic_stability, shipped_run, stability, name, factor) == "supported"
