"""The exponential rate fit on synthetic decays with known rates."""

import numpy as np
import pytest

from empirical.audit.rates import RateFit, blocks_to_fraction, compare_rates, fit_exponential


def _decays(rates, blocks=60, noise=0.05, seed=0):
    """E[p, k] = A_p exp(-r_p k) * exp(noise * N(0, 1)), A_p in [0.3, 0.9]."""
    rng = np.random.default_rng(seed)
    k = np.arange(blocks)
    amplitude = rng.uniform(0.3, 0.9, len(rates))[:, None]
    return amplitude * np.exp(-np.asarray(rates)[:, None] * k) * np.exp(noise * rng.normal(size=(len(rates), blocks)))


def test_fit_recovers_a_known_rate_without_noise():
    fit = fit_exponential(_decays([0.15] * 4, noise=0.0))
    assert fit.rate == pytest.approx(0.15, rel=1e-10)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.half_life == pytest.approx(np.log(2) / 0.15)


def test_confidence_interval_covers_the_true_mean_rate_with_noise():
    rng = np.random.default_rng(1)
    true = rng.normal(0.1, 0.01, 30)
    fit = fit_exponential(_decays(true, noise=0.1, seed=2))
    assert fit.ci_low <= np.mean(true) <= fit.ci_high
    assert fit.ci_high - fit.ci_low < 0.02
    np.testing.assert_allclose(fit.per_prompt, true, atol=5e-3)


def test_values_below_the_floor_are_left_out():
    e = _decays([0.5] * 3, blocks=80, noise=0.0)
    e[:, 40:] = 0.0  # exact zeros (float underflow or exact consensus)
    fit = fit_exponential(e)
    assert fit.rate == pytest.approx(0.5, rel=1e-9)


def test_comparison_tells_faster_slower_and_indistinguishable():
    fast = fit_exponential(_decays([0.2] * 10, noise=0.1, seed=3))
    slow = fit_exponential(_decays([0.1] * 10, noise=0.1, seed=4))
    same = fit_exponential(_decays([0.1] * 10, noise=0.1, seed=5))
    assert compare_rates(fast, slow).verdict == "faster"
    assert compare_rates(slow, fast).verdict == "slower"
    comparison = compare_rates(slow, same)
    assert comparison.verdict == "indistinguishable"
    assert comparison.ci_low < 0 < comparison.ci_high


def test_a_plateau_fits_worse_than_an_exponential():
    """Negative control: E levelling off at 0.3 is not an exponential decay: low R^2, small rate."""
    k = np.arange(60)
    plateau = np.tile(0.3 + 0.5 * np.exp(-0.3 * k), (5, 1))
    fit = fit_exponential(plateau)
    assert fit.r2 < 0.8
    assert fit.rate < 0.05


def test_blocks_to_fraction_reads_the_mean_curve():
    e = np.tile(np.exp(-0.1 * np.arange(50)), (3, 1))
    assert blocks_to_fraction(e, 0.5) == int(np.ceil(np.log(2) / 0.1))
    assert blocks_to_fraction(e, 1e-9) is None


@pytest.mark.parametrize(
    "values, kwargs, message",
    [
        pytest.param(np.ones((2, 2)), {}, "at least 3", id="too-short"),
        pytest.param(np.full((2, 5), np.nan), {}, "NaN", id="nan"),
        pytest.param(np.ones((2, 10)), {"start": 8}, "window", id="window"),
        pytest.param(np.zeros((2, 10)), {}, "above the floor", id="all-zero"),
    ],
)
def test_bad_inputs_are_rejected(values, kwargs, message):
    with pytest.raises(ValueError, match=message):
        fit_exponential(values, **kwargs)


# --- the rules at their edges ----------------------------------------------------------------------------------------
#: Student's t quantile at 0.975 with 2 degrees of freedom, in closed form: (2p - 1) / sqrt(2 p (1 - p)).
T_975_2 = 0.95 / np.sqrt(2 * 0.975 * 0.025)


def _fit(per_prompt, rate=0.1) -> RateFit:
    return RateFit(rate, 0.0, 0.0, np.asarray(per_prompt, dtype=float), 1.0, (0, 3), len(per_prompt))


def test_values_at_the_floor_are_left_out_and_the_floor_is_the_callers():
    # one prompt: 4 values, the last exactly at the given floor; fitted on the first 3 (rate log 2 per block)
    row = np.array([0.8, 0.4, 0.2, 0.1])
    assert fit_exponential(row, floor=0.1).rate == pytest.approx(np.log(2), rel=1e-12)
    assert fit_exponential(row, floor=0.1).per_prompt.shape == (1,)  # a 1-d row is one prompt
    row[3] = 0.15  # above the floor: fitted, the rate changes
    assert fit_exponential(row, floor=0.1).rate != pytest.approx(np.log(2), rel=1e-6)
    with pytest.raises(ValueError, match="above the floor"):  # only 2 values above the floor: nothing to fit
        fit_exponential([0.8, 0.4, 0.2, 0.1], floor=0.2)
    with pytest.raises(ValueError, match="above the floor"):  # the default floor 1e-6 leaves 2 values
        fit_exponential([0.8, 0.4, 1e-6, 1e-7])
    assert fit_exponential([0.8, 0.4, 2e-6, 1e-7]).prompts == 1  # 3 values above it


@pytest.mark.parametrize("floor", [0.0, -1e-6])
def test_a_floor_that_is_not_positive_is_refused(floor):
    with pytest.raises(ValueError, match="must be positive"):
        fit_exponential(np.ones((1, 4)), floor=floor)


def test_the_window_is_the_callers_and_recorded():
    e = np.array([[1.0, 1.0, 0.5, 0.25, 0.125, 1.0]])  # halving on blocks 1..4 only
    fit = fit_exponential(e, start=1, stop=5)
    assert fit.window == (1, 5) and fit.rate == pytest.approx(np.log(2), rel=1e-12)
    assert fit_exponential(e, start=0, stop=5).rate < 0.9 * np.log(2)  # block 0 read: the rate changes
    fit = fit_exponential(e, start=1)
    assert fit.window == (1, 6) and fit.rate < 0.9 * np.log(2)  # stop defaults to the last block + 1
    assert fit_exponential(e, start=0, stop=3).window == (0, 3)  # the smallest window: 3 blocks


@pytest.mark.parametrize("start, stop", [(-1, 4), (3, 5), (0, 7), (4, 4), (0, 2)])
def test_a_window_outside_the_blocks_or_shorter_than_three_is_refused(start, stop):
    with pytest.raises(ValueError, match="must hold at least 3 of the 6 blocks"):
        fit_exponential(np.ones((1, 6)), start=start, stop=stop)


def test_a_prompt_with_fewer_than_three_values_above_the_floor_is_left_out_of_the_mean():
    e = np.array([[1.0, 0.5, 0.25, 0.125], [1.0, 0.25, 0.0, 0.0], [1.0, 0.25, 0.0625, 0.0]])
    fit = fit_exponential(e)
    assert np.isnan(fit.per_prompt[1]) and fit.prompts == 2
    np.testing.assert_allclose(fit.per_prompt[[0, 2]], [np.log(2), np.log(4)], rtol=1e-12)
    assert fit.rate == pytest.approx(1.5 * np.log(2), rel=1e-12)
    assert fit.r2 == pytest.approx(1.0, abs=1e-12)


def test_the_interval_is_students_t_over_the_prompts_rates():
    e = np.exp(-np.outer([0.1, 0.2, 0.3], np.arange(5)))  # exact rates 0.1, 0.2, 0.3: mean 0.2, sd 0.1
    fit = fit_exponential(e)
    half = T_975_2 * 0.1 / np.sqrt(3)
    assert fit.rate == pytest.approx(0.2, rel=1e-12)
    assert (fit.ci_low, fit.ci_high) == pytest.approx((0.2 - half, 0.2 + half), rel=1e-10)
    one = fit_exponential(e[:1])  # one prompt: no interval
    assert np.isnan(one.ci_low) and np.isnan(one.ci_high) and one.rate == pytest.approx(0.1, rel=1e-12)


def test_the_r2_is_the_median_of_the_prompts():
    k = np.arange(6)
    bent = np.exp(-0.2 * k + 0.05 * (k - 2.5) ** 2)  # a curved log: R^2 below 1
    e = np.stack([np.exp(-0.2 * k), bent, bent * np.exp(0.1 * (k - 2.5) ** 2)])
    fits = [fit_exponential(row).r2 for row in e]
    assert fit_exponential(e).r2 == pytest.approx(np.median(fits), rel=1e-12)
    assert len(set(np.round(fits, 6))) == 3  # three different R^2: the median is the middle one


def test_the_half_life_is_log_2_over_a_positive_rate_and_infinite_otherwise():
    assert _fit([0.1], rate=0.5).half_life == pytest.approx(np.log(2) / 0.5, rel=1e-15)
    assert _fit([0.1], rate=0.0).half_life == np.inf and _fit([0.1], rate=-0.5).half_life == np.inf


def test_the_paired_comparison_at_its_edges():
    same = compare_rates(_fit([0.1, 0.2], rate=0.15), _fit([0.1, 0.2], rate=0.15))
    # equal rates prompt by prompt: difference 0 with a zero-width interval, which contains 0
    assert (same.difference, same.ci_low, same.ci_high, same.verdict) == (0.0, 0.0, 0.0, "indistinguishable")
    assert same.ratio == 1.0 and same.prompts == 2
    up = compare_rates(_fit([0.3, 0.5, 0.4], rate=0.4), _fit([0.1, 0.2, 0.3], rate=0.2))  # differences .2 .3 .1
    half = T_975_2 * 0.1 / np.sqrt(3)
    assert up.difference == pytest.approx(0.2, rel=1e-12) and up.prompts == 3 and up.ratio == 2.0
    assert (up.ci_low, up.ci_high) == pytest.approx((0.2 - half, 0.2 + half), rel=1e-10)
    assert up.verdict == "indistinguishable"  # 0.2 - 0.248 < 0
    tight = compare_rates(_fit([0.3, 0.31, 0.32]), _fit([0.1, 0.1, 0.1]))
    assert tight.verdict == "faster" and compare_rates(_fit([0.1, 0.1, 0.1]), _fit([0.3, 0.31, 0.32])).verdict == (
        "slower")
    assert compare_rates(_fit([0.1, 0.2], rate=0.3), _fit([0.1, 0.2], rate=0.0)).ratio == np.inf


def test_the_comparison_reads_only_prompts_finite_in_both_fits():
    first, second = _fit([0.3, np.nan, 0.5, 0.4]), _fit([0.1, 0.2, np.nan, 0.2])
    comparison = compare_rates(first, second)
    assert comparison.prompts == 2 and comparison.difference == pytest.approx(0.2, rel=1e-12)
    with pytest.raises(ValueError, match="at least 2 prompts"):
        compare_rates(_fit([0.3, np.nan, 0.5]), _fit([0.1, 0.2, np.nan]))
    with pytest.raises(ValueError, match="same prompts"):
        compare_rates(_fit([0.3, 0.2]), _fit([0.1, 0.2, 0.3]))


def test_blocks_to_fraction_reaches_the_fraction_inclusively_on_the_mean_of_the_prompts():
    e = np.array([[1.0, 0.75, 0.5, 0.25], [3.0, 1.25, 1.0, 0.75]])  # mean 2, 1, 0.75, 0.5
    assert blocks_to_fraction(e, 0.5) == 1 and blocks_to_fraction(e, 0.25) == 3
    assert blocks_to_fraction(e, np.nextafter(0.25, 0.0)) is None
    assert blocks_to_fraction([1.0, 0.5], 0.5) == 1  # one prompt given as a row
    for fraction in (0.0, 1.0):
        with pytest.raises(ValueError, match="must lie in"):
            blocks_to_fraction(e, fraction)


def test_float32_values_reach_the_fraction_in_float64():
    """Mean 0.5 + 2**-25 of float32 values: above half of the first mean in float64, exactly half in float32."""
    e = np.array([[1.0, 0.5], [1.0, 0.5 + 2.0 ** -24]], dtype=np.float32)
    assert blocks_to_fraction(e, 0.5) is None
    mean32 = np.mean(e, axis=0)  # control: the float32 mean rounds to 0.5 and would reach the fraction
    assert mean32[1] <= 0.5 * mean32[0]


def test_float32_values_are_fitted_in_float64():
    e = np.exp(-np.outer([0.1, 0.2, 0.3], np.arange(5))).astype(np.float32)
    single, double = fit_exponential(e), fit_exponential(e.astype(np.float64))
    np.testing.assert_array_equal(single.per_prompt, double.per_prompt)  # the same float64 arithmetic
    assert (single.rate, single.ci_low, single.ci_high) == (double.rate, double.ci_low, double.ci_high)


def test_three_blocks_are_enough_and_two_are_refused_for_their_count():
    assert fit_exponential(np.array([[1.0, 0.5, 0.25]])).rate == pytest.approx(np.log(2), rel=1e-12)
    with pytest.raises(ValueError, match="with at least 3 blocks; got"):
        fit_exponential(np.ones((4, 2)))


def test_more_prompts_than_blocks_and_two_prompts_get_an_interval():
    e = np.exp(-np.outer([0.1, 0.2, 0.3, 0.4], np.arange(3)))  # 4 prompts, 3 blocks
    fit = fit_exponential(e)
    assert fit.prompts == 4 and fit.r2 == pytest.approx(1.0, abs=1e-12)
    two = fit_exponential(e[:2])  # rates 0.1, 0.2; t_{0.975, 1} = tan(0.475 pi) (Cauchy)
    half = np.tan(0.475 * np.pi) * np.std([0.1, 0.2], ddof=1) / np.sqrt(2)
    assert (two.ci_low, two.ci_high) == pytest.approx((0.15 - half, 0.15 + half), rel=1e-9)
