"""full.wendel: Remark 4.3 / 3.4 against Wendel (1962), Cover's recursion and Monte Carlo."""

import dataclasses
from fractions import Fraction

import pytest

from foundation.registration import check
from foundation.scale import report_scale
from theory import wendel


@check(wendel.check_closed_forms)
def test_printed_formula_misses_the_closed_forms_that_d_equal_n_plus_1_meets(record):
    result = record(wendel.check_closed_forms())
    assert result.verdict == "discrepancy"
    assert (result.printed, result.corrected) == (wendel.PRINTED, wendel.CORRECTED)
    # exact evidence: two tokens on the circle always share an open half-circle; the printed formula says 1/2
    assert (result.numbers["printed, l = 2, n = 1"], result.numbers["corrected, l = 2, n = 1"]) == ("1/2", "1")
    assert result.numbers["corrected closed forms missed"] == 0


@check(wendel.check_closed_forms, control=True)
def test_closed_form_check_verifies_a_correct_printed_formula():
    assert wendel.check_closed_forms(printed=wendel.corrected_sum).verdict == "verified"


@check(wendel.check_closed_forms, control=True)
def test_closed_form_check_fails_when_the_corrected_formula_is_wrong():
    assert wendel.check_closed_forms(corrected=wendel.printed_sum).verdict == "failed"


# A test of two helper formulas agreeing, not of the claim's statement: it marks no claim, so its pass adds no record
# to full.wendel (foundation/evidence.py); check_closed_forms and check_monte_carlo check the claim.
@pytest.mark.parametrize("points, dimension", [(1, 1), (2, 1), (5, 3), (10, 3), (30, 7), (50, 500)])
def test_wendel_closed_form_equals_cover_recursion(points, dimension):
    assert wendel.wendel_probability(points, dimension) == Fraction(wendel.cover_count(points, dimension), 2 ** points)


@check(wendel.check_monte_carlo)
def test_printed_formula_is_a_discrepancy_and_monte_carlo_confirms_the_corrected_one(record, tmp_path):
    result = wendel.check_monte_carlo()
    record(dataclasses.replace(result, figures=(wendel.plot_probabilities(result, tmp_path / "wendel.png"),)))
    assert result.verdict == "discrepancy"
    for l, n, printed, corrected, cover, estimate, interval, samples in result.tables[0].rows:
        low, high = (float(x) for x in interval.strip("[]").split(","))
        assert corrected == cover and low <= corrected <= high
    assert [10, 2] in result.numbers["printed differs at"]


@check(wendel.check_monte_carlo, control=True)
def test_monte_carlo_check_accepts_the_true_formula_and_flags_a_shifted_one():
    true = wendel.check_monte_carlo(samples=300, large_samples=30, printed=lambda l, n: wendel.wendel_probability(l, n + 1))
    shifted = wendel.check_monte_carlo(samples=300, large_samples=30, printed=lambda l, n: wendel.wendel_probability(l, n + 2))
    assert true.verdict == "supported"
    assert shifted.verdict == "discrepancy"


@check(wendel.check_monte_carlo, control=True)
def test_monte_carlo_check_fails_when_its_hemisphere_test_is_broken():
    """A hemisphere test that never says yes puts every Monte Carlo estimate at 0, outside the interval of the true
    probability (1 for two tokens on the circle): the suite's own machinery is wrong, a regression."""
    result = wendel.check_monte_carlo(samples=100, large_samples=10, in_hemisphere=lambda y: False)
    assert result.verdict == "failed"


@pytest.mark.full
@check(wendel.check_monte_carlo)
def test_monte_carlo_with_many_samples_and_gpt2_size(record, tmp_path):
    smoke = report_scale() == "smoke"  # a report build's smoke scale (foundation/scale.py): the path, on few samples
    result = wendel.check_monte_carlo(seed=20250113, samples=500 if smoke else 5000, large_samples=30 if smoke else 300,
                                pairs=(*wendel.PAIRS, (200, 1599)))
    record(dataclasses.replace(result, figures=(wendel.plot_probabilities(result, tmp_path / "wendel-full.png"),)))
    assert result.verdict == "discrepancy"


def test_plotted_series_put_the_true_values_inside_the_intervals_and_the_printed_ones_outside_at_10_2():
    series = wendel.probability_series(wendel.check_monte_carlo(samples=300, large_samples=30))
    assert len(series["labels"]) == len(wendel.PAIRS)
    assert all(low <= true <= high for low, true, high in zip(series["low"], series["true"], series["high"]))
    at = series["labels"].index("l=10, n=2")
    assert not series["low"][at] <= series["printed"][at] <= series["high"][at]
    # the interval is the one the table prints (recomputed from estimate and samples, not parsed)
    row = wendel.check_monte_carlo(samples=300, large_samples=30).tables[0].rows[at]
    assert row[6] == f"[{series['low'][at]:.4f}, {series['high'][at]:.4f}]"


def test_plot_of_a_record_without_the_monte_carlo_table_is_refused(tmp_path):
    # negative control for the series: the exact check's record has no probability table to plot
    with pytest.raises(ValueError, match="must hold the table 'common-hemisphere probability'"):
        wendel.plot_probabilities(wendel.check_closed_forms(), tmp_path / "none.png")
    assert not (tmp_path / "none.png").exists()


def test_plot_writes_a_png_of_the_monte_carlo_record(tmp_path):
    import matplotlib.image

    result = wendel.check_monte_carlo(samples=300, large_samples=30)
    figure = wendel.plot_probabilities(result, tmp_path / "wendel.png")
    height, width, _ = matplotlib.image.imread(figure.path).shape
    assert figure.path == str(tmp_path / "wendel.png") and width > height > 200
    assert "Wilson" in figure.caption and "seed 20250112" in figure.caption
