"""The figures of Theorems 4.1, 5.1 and 5.2 (sim/figures/theorems.py): the quantity that vanishes at the consensus
falls below the consensus tolerance on every seeded start; a run that has not got there (the time-reversed model, a
horizon too short) leaves the theorem unsupported, never refuted; the verdict holds at twice the horizon, at half the
integrator's tolerances and at the consensus tolerance halved or doubled."""

import numpy as np
import pytest

import sim.figures.theorems as theorems
from foundation.registration import check
from sim.field.manifold import Ellipsoid
from sim.figures.theorems import (HORIZON, TOLERANCES, check_causal_identity_figure, check_causal_symmetric_figure,
                                  check_full_convergence_figure, make_theorem_figure, scene, simulate)

CLAIMS = ["full.convergence", "causal.identity", "causal.symmetric"]


@pytest.fixture(scope="module")
def figure_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("theorem-figures")


def _made(claim, figure_dir, record):
    result = record(make_theorem_figure(claim, figure_dir))
    assert result.verdict == "supported", result.detail
    assert (figure_dir / f"{claim}.png").stat().st_size > 10_000
    return result


@check(check_full_convergence_figure)
def test_full_convergence_figure_E_vanishes_from_every_hemisphere_start(figure_dir, record):
    _made("full.convergence", figure_dir, record)


@check(check_causal_identity_figure)
def test_causal_identity_figure_every_token_reaches_the_first(figure_dir, record):
    _made("causal.identity", figure_dir, record)


@check(check_causal_symmetric_figure)
def test_causal_symmetric_figure_every_token_reaches_v(figure_dir, record):
    _made("causal.symmetric", figure_dir, record)


def test_the_recorded_seed_reproduces_the_starts():
    """causal.identity draws its two heads, then its starts, from default_rng([seed, claim index]) as recorded."""
    seeds = theorems.CHECKS["causal.identity"](simulate("causal.identity", horizon=0.2)).seeds
    rng = np.random.default_rng([seeds["figure"], seeds["figure.claim_index"]])
    theorems._modulated_heads(rng, 2)
    starts = Ellipsoid().random_point(rng, (theorems.STARTS, theorems.TOKENS, theorems.DIM))
    np.testing.assert_array_equal(starts, scene("causal.identity").y0)


@check("full.convergence", method="figure", control=True)
@check("causal.identity", method="figure", control=True)
@check("causal.symmetric", method="figure", control=True)
@pytest.mark.parametrize("claim", CLAIMS)
def test_theorem_figures_leave_the_time_reversed_model_unsupported(claim, tmp_path):
    """Negative control: with the field's sign flipped the tokens spread; the same check does not verify, and says
    unsupported (a finite run never refutes a limit)."""
    result = make_theorem_figure(claim, tmp_path, reverse=True)
    assert result.verdict == "unsupported" and result.numbers["max_final"] > 0.1


@check("causal.identity", method="figure", control=True)
def test_causal_identity_figure_leaves_a_full_mask_unsupported():
    """Negative control: with full attention the first token moves and the tokens meet away from y_1(0) (1.49
    from it at the horizon), so the same check, which measures from y_1(0), does not support Thm 5.1."""
    result = check_causal_identity_figure(simulate("causal.identity", full_mask=True))
    assert result.verdict == "unsupported" and result.numbers["max_final"] > 0.1


def test_a_horizon_too_short_leaves_the_theorem_unsupported_not_refuted():
    """causal.identity at a quarter of the horizon (t = 7.5): max_j |y_j - y_1(0)| is still 0.23."""
    result = check_causal_identity_figure(simulate("causal.identity", horizon=HORIZON / 4))
    assert result.verdict == "unsupported" and result.numbers["max_final"] > 0.1
    assert "t = 7.5" in result.detail


@pytest.mark.parametrize("claim", [pytest.param(c, marks=pytest.mark.claim(c, method="figure")) for c in CLAIMS])
@pytest.mark.parametrize("setting", [dict(horizon=2 * HORIZON), dict(tolerances=tuple(x / 2 for x in TOLERANCES))],
                         ids=["twice-the-horizon", "half-the-tolerances"])
def test_theorem_figure_verdict_holds_at_twice_the_horizon_and_half_the_tolerances(claim, setting):
    """Each run marks its claim: a verdict that changes fails the claim in the report, not only the test."""
    assert theorems.CHECKS[claim](simulate(claim, **setting)).verdict == "supported"


@pytest.mark.parametrize("claim", CLAIMS)
@pytest.mark.parametrize("factor", [0.5, 2.0])
def test_theorem_figure_verdict_holds_at_the_consensus_tolerance_halved_and_doubled(claim, factor, verdict_at):
    assert verdict_at(theorems.CHECKS[claim], simulate(claim), theorems, "CONSENSUS_TOL", factor) == "supported"
