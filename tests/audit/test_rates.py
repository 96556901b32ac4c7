"""The exponential rate fit on synthetic decays with known rates."""

import numpy as np
import pytest

from empirical.audit.rates import blocks_to_fraction, compare_rates, fit_exponential


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
