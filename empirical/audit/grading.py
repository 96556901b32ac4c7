"""Grading the audit's measures: the thresholds (each with its reason), the verdicts holds / nearly / fails,
and the shape of one hypothesis of the audit table (:mod:`empirical.audit.checklist`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

#: "holds" for a matrix identity or symmetry: relative Frobenius distance below this. Reason: weights
#: are stored in float32 (relative rounding 6e-8); products of a few of them stay below 1e-6.
EXACT_TOL = 1e-6
#: "nearly" below this relative distance (a chosen cut-off, stated with each verdict): 10% of the norm.
NEARLY_TOL = 0.1
#: "nearly" for a per-head or per-state property when at least this share of heads / states has it.
NEARLY_SHARE = 0.9
#: Surface residuals of normalised float32 states: "holds" below this. Reason: float32 normalisation of
#: d <= 4096 entries accumulates relative errors ~ sqrt(d) * 6e-8 < 1e-5; 1e-4 leaves a margin.
SURFACE_TOL_FLOAT32 = 1e-4
#: "nearly" for the conclusion "E decays" when no exponential rate is resolved but the last E is at most this
#: fraction of the first (a chosen cut-off, stated with the verdict: E fell by at least a factor 10).
E_FALL_FACTOR = 0.1


def graded(value: float, exact: float = EXACT_TOL, nearly: float = NEARLY_TOL) -> str:
    """``holds`` up to ``exact``, ``nearly`` up to ``nearly``, else ``fails`` (a distance, smaller is better)."""
    return "holds" if value <= exact else "nearly" if value <= nearly else "fails"


def share_graded(share: float) -> str:
    """``holds`` when every head / state has the property, ``nearly`` for at least ``NEARLY_SHARE`` of them."""
    return "holds" if share >= 1.0 else "nearly" if share >= NEARLY_SHARE else "fails"


def worst(verdicts: list[str]) -> str:
    """The worst of several verdicts (fails before nearly before holds)."""
    return "fails" if "fails" in verdicts else "nearly" if "nearly" in verdicts else "holds"


def decay_graded(rate: dict[str, Any]) -> str:
    """The conclusion "E decays" from a rate summary: ``holds`` for a resolved positive exponential rate with E
    lower at the end; ``nearly`` when no such rate is resolved but E fell at least ``1 / E_FALL_FACTOR``-fold (a
    collapse within a few blocks to a floor, as trained Gemma 3 without FFN: 0.78 -> 0.006 in 2 blocks, then
    1e-3..2e-2, is no single exponential and its fitted rate can be negative); ``fails`` otherwise."""
    if rate["ci_low"] > 0 and rate["E_end"] < rate["E_start"]:
        return "holds"
    return "nearly" if rate["E_end"] <= E_FALL_FACTOR * rate["E_start"] else "fails"


def decay_numbers(rate: dict[str, Any], values: np.ndarray) -> str:
    """The numbers behind :func:`decay_graded`, E being ``[prompts, blocks + 1]``."""
    mean_e = np.mean(values, axis=0)
    numbers = (f"E {rate['E_start']:.3g} -> {rate['E_end']:.3g} (mean over prompts; lowest {mean_e.min():.3g} after "
               f"block {int(mean_e.argmin())}); rate {rate['rate']:.3g}/layer [{rate['ci_low']:.3g}, "
               f"{rate['ci_high']:.3g}], R^2 {rate['r2']:.2f}")
    if decay_graded(rate) == "nearly":
        return numbers + f"; E fell at least {1 / E_FALL_FACTOR:g}-fold, but not as one exponential over the blocks"
    return numbers


def decay_verdict(rate: dict[str, Any], values: np.ndarray) -> dict[str, str]:
    """The conclusion "E decays" from a rate summary and E (``[prompts, blocks + 1]``): ``verdict`` and
    ``numbers`` (see :func:`decay_graded`)."""
    return {"verdict": decay_graded(rate), "numbers": decay_numbers(rate, values)}


@dataclass(frozen=True)
class RunView:
    """One audited run (:func:`empirical.audit.measure.audit_adapter`) as the hypotheses read it, on prompts of
    ``tokens`` tokens; ``variant`` / ``name`` are set for the hypotheses judged per variant (with / without FFN)."""

    run: dict[str, Any]
    tokens: int
    name: str = ""
    variant: dict[str, Any] | None = None

    @property
    def layers(self) -> list[dict[str, Any]]:
        return self.run["weights"]["layers"]

    @property
    def heads(self) -> list[dict[str, Any]]:
        """Every head of every layer."""
        return [h for layer in self.layers for h in layer["heads"]]

    @property
    def width(self) -> int:
        return self.layers[0]["width"]

    @property
    def head_dim(self) -> int:
        return self.layers[0]["head_dim"]

    @property
    def norms(self) -> list[dict[str, Any]]:
        return self.run["weights"]["norms"]

    @property
    def norm_kind(self) -> str:
        return self.norms[0]["kind"]

    def per_variant(self) -> list[RunView]:
        """One view per audited variant of the run."""
        return [RunView(self.run, self.tokens, name, variant) for name, variant in self.run["variants"].items()]


@dataclass(frozen=True)
class Hypothesis:
    """One row of the audit table: a hypothesis of the paper, the results that need it, and how a run is judged:
    ``measure`` takes the numbers from the run, ``grade`` turns them into holds / nearly / fails, ``describe``
    into the text of the table's numbers column. ``title`` may name ``{variant}``; ``applies`` says whether the
    row exists for a run at all."""

    title: str
    needed_by: str
    measure: Callable[[RunView], Any]
    grade: Callable[[Any], str]
    describe: Callable[[Any], str]
    applies: Callable[[RunView], bool] = lambda view: True

    def row(self, view: RunView) -> dict[str, str]:
        """The table row of ``view``: hypothesis, needed_by, verdict, numbers."""
        measured = self.measure(view)
        return {"hypothesis": self.title.format(variant=view.name), "needed_by": self.needed_by,
                "verdict": self.grade(measured), "numbers": self.describe(measured)}
