"""The figures of Theorems 4.1, 5.1 and 5.2 (sim/figures/theorems.py): the quantity that vanishes at the consensus
falls below the consensus tolerance on every seeded start; the time-reversed model is refuted."""

import pytest

from foundation.registration import check
from sim.figures.theorems import (check_causal_identity_figure, check_causal_symmetric_figure,
                                  check_full_convergence_figure, make_theorem_figure)


@pytest.fixture(scope="module")
def figure_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("theorem-figures")


def _made(claim, figure_dir, record):
    result = record(make_theorem_figure(claim, figure_dir))
    assert result.verdict == "verified", result.detail
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


@check("full.convergence", method="figure", control=True)
@check("causal.identity", method="figure", control=True)
@check("causal.symmetric", method="figure", control=True)
@pytest.mark.parametrize("claim", ["full.convergence", "causal.identity", "causal.symmetric"])
def test_theorem_figures_reject_the_time_reversed_model(claim, tmp_path):
    """Negative control: with the field's sign flipped the tokens spread; the same check says refuted."""
    result = make_theorem_figure(claim, tmp_path, reverse=True)
    assert result.verdict == "refuted" and result.numbers["max_final"] > 0.1
