"""Where the seeking search spends its CPU time: Thompson sampling over the sources of instances.

Hits of one source (a structure, a number of heads, of tokens, a dimension) are modelled as a Poisson process in
CPU time with an unknown rate; with a Gamma(a, b) prior the posterior after ``hits`` hits in ``seconds`` is
Gamma(a + hits, b + seconds) (conjugacy), and each choice takes the level whose sampled rate is highest
(W. R. Thompson, Biometrika 25 (1933) 285). The factors are sampled independently (a factored model: 4 + 2 + 4 + 3
levels are learnt in a few dozen instances, where the 96 joint combinations would not be).

The choices depend on measured CPU times, so a run's sequence of sources is not reproducible bit for bit; each
instance is, from the seed, structure and shape its record carries.
"""

from __future__ import annotations

import numpy as np

#: Prior of every level: one hit in half a CPU second, an optimistic rate (the best sources reach a few hits per
#: second) so that every level is tried before the sampler settles.
PRIOR_HITS = 1.0
PRIOR_SECONDS = 0.5


class ThompsonSampler:
    """Thompson sampling over the ``levels`` of one factor (a Gamma-Poisson model of hits per CPU second)."""

    def __init__(self, levels):
        if len(levels) == 0:
            raise ValueError("levels must not be empty")
        self.levels = list(levels)
        self.hits = np.zeros(len(self.levels))
        self.seconds = np.zeros(len(self.levels))

    def choose(self, rng: np.random.Generator):
        rates = rng.gamma(PRIOR_HITS + self.hits, 1.0 / (PRIOR_SECONDS + self.seconds))
        return self.levels[int(np.argmax(rates))]

    def record(self, level, hit: bool, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"seconds={seconds!r} must not be negative.")
        index = self.levels.index(level)
        self.hits[index] += float(hit)
        self.seconds[index] += seconds

    def summary(self) -> dict:
        """Per level: hits, CPU seconds spent."""
        return {str(level): {"hits": int(h), "cpu_seconds": float(s)}
                for level, h, s in zip(self.levels, self.hits, self.seconds)}


class FactoredSampler:
    """One :class:`ThompsonSampler` per factor (``factors``: name -> levels); a choice is one level of each."""

    def __init__(self, factors: dict):
        self.samplers = {name: ThompsonSampler(levels) for name, levels in factors.items()}

    def choose(self, rng: np.random.Generator) -> dict:
        return {name: sampler.choose(rng) for name, sampler in self.samplers.items()}

    def record(self, choice: dict, hit: bool, seconds: float) -> None:
        for name, level in choice.items():
            self.samplers[name].record(level, hit, seconds)

    def summary(self) -> dict:
        return {name: sampler.summary() for name, sampler in self.samplers.items()}
