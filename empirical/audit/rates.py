"""Convergence rates of the misalignment E along the depth of a looped transformer.

E is measured after every block: ``E[p, k]`` for prompt ``p`` and block index ``k = 0..K*L``
(``k = 0``: the embeddings). The fit is exponential, ``E[p, k] ~ A_p exp(-r_p k)``, by least squares
on ``log E`` over a window of block indices, per prompt; the rate ``r`` (per layer) is the mean of
the per-prompt rates with a Student-t 95% confidence interval over prompts. Two variants run on the
same prompts are compared by the paired differences of their per-prompt rates.

A model-free companion: the first block index at which the mean E falls to a fraction of its start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

#: Values of E at or below this are left out of the log fit when no measured floor is given (runs made before
#: floors were measured; every fit of the audit and of a run folder passes the floor of E measured for its dtype,
#: empirical.floor). Reason: E is computed from float32 activations, where cosines carry errors ~1e-7 to 1.5e-6
#: (widths 32 to 2560), so E below 1e-6 is rounding, not decay.
E_FLOOR = 1e-6
#: Confidence level of the intervals over prompts.
CONFIDENCE = 0.95


@dataclass(frozen=True)
class RateFit:
    """An exponential fit of E per layer: ``rate`` (1/layers) with its CI over prompts.

    ``per_prompt`` are the prompts' rates (``nan`` where fewer than 3 points lay above the floor);
    ``r2`` the median coefficient of determination of the per-prompt log-linear fits; ``window``
    the block indices ``[start, stop)`` fitted; ``half_life`` ``log 2 / rate`` in layers.
    """

    rate: float
    ci_low: float
    ci_high: float
    per_prompt: np.ndarray  # shape [prompts]
    r2: float
    window: tuple[int, int]
    prompts: int

    @property
    def half_life(self) -> float:
        return float(np.log(2.0) / self.rate) if self.rate > 0 else float("inf")


def fit_exponential(values: np.ndarray, *, start: int = 0, stop: int | None = None,
                    floor: float = E_FLOOR) -> RateFit:
    """Fit ``E[p, k] ~ A_p exp(-r_p k)`` over ``start <= k < stop`` for each prompt (``values``: ``[prompts, K]``)."""
    e = np.asarray(values, dtype=np.float64)
    if e.ndim == 1:
        e = e[None, :]
    if e.ndim != 2 or e.shape[1] < 3:
        raise ValueError(f"values must have shape [prompts, blocks] with at least 3 blocks; got {e.shape}.")
    if np.any(np.isnan(e)):
        raise ValueError("values must not contain NaN: E from non-finite activations is not a measurement.")
    stop = e.shape[1] if stop is None else stop
    if not 0 <= start < stop <= e.shape[1] or stop - start < 3:
        raise ValueError(f"window [start={start}, stop={stop}) must hold at least 3 of the {e.shape[1]} blocks.")
    if floor <= 0:
        raise ValueError(f"floor={floor!r} must be positive (log E is fitted).")
    layers = np.arange(e.shape[1], dtype=np.float64)
    rates = np.full(e.shape[0], np.nan)
    r2s = np.full(e.shape[0], np.nan)
    for p, row in enumerate(e):
        k = layers[start:stop]
        v = row[start:stop]
        keep = v > floor
        if np.count_nonzero(keep) < 3:
            continue
        slope, intercept, r_value, _, _ = stats.linregress(k[keep], np.log(v[keep]))
        rates[p] = -slope
        r2s[p] = r_value**2
    valid = rates[np.isfinite(rates)]
    if valid.size == 0:
        raise ValueError("no prompt has 3 values of E above the floor in the window: nothing to fit.")
    mean = float(np.mean(valid))
    if valid.size > 1:
        half_width = float(stats.t.ppf(0.5 + CONFIDENCE / 2, valid.size - 1) * np.std(valid, ddof=1) / np.sqrt(valid.size))
    else:
        half_width = float("nan")
    return RateFit(mean, mean - half_width, mean + half_width, rates, float(np.nanmedian(r2s)),
                   (start, stop), int(valid.size))


@dataclass(frozen=True)
class RateComparison:
    """Paired comparison of two variants' rates on the same prompts: ``difference = rate_a - rate_b``.

    ``verdict``: ``"faster"`` if the CI of the mean paired difference lies above 0 (variant a
    converges faster), ``"slower"`` if below, ``"indistinguishable"`` if it contains 0.
    """

    difference: float
    ci_low: float
    ci_high: float
    ratio: float
    verdict: str
    prompts: int


def compare_rates(first: RateFit, second: RateFit) -> RateComparison:
    """Compare two fits made on the same prompts, prompt by prompt."""
    if first.per_prompt.shape != second.per_prompt.shape:
        raise ValueError("the two fits must come from the same prompts (equal numbers of per-prompt rates); got "
                         f"{first.per_prompt.shape} and {second.per_prompt.shape}.")
    both = np.isfinite(first.per_prompt) & np.isfinite(second.per_prompt)
    differences = first.per_prompt[both] - second.per_prompt[both]
    if differences.size < 2:
        raise ValueError("at least 2 prompts with finite rates in both fits are needed for a confidence interval.")
    mean = float(np.mean(differences))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, differences.size - 1) * np.std(differences, ddof=1)
                 / np.sqrt(differences.size))
    low, high = mean - half, mean + half
    verdict = "faster" if low > 0 else "slower" if high < 0 else "indistinguishable"
    ratio = first.rate / second.rate if second.rate != 0 else float("inf")
    return RateComparison(mean, low, high, float(ratio), verdict, int(differences.size))


def blocks_to_fraction(values: np.ndarray, fraction: float) -> int | None:
    """The first block index where the mean over prompts of E is at most ``fraction`` of its value at 0."""
    if not 0 < fraction < 1:
        raise ValueError(f"fraction={fraction!r} must lie in (0, 1).")
    mean = np.mean(np.atleast_2d(np.asarray(values, dtype=np.float64)), axis=0)
    hits = np.flatnonzero(mean <= fraction * mean[0])
    return int(hits[0]) if hits.size else None
