"""Collapse decided by a stated test, not by a horizon.

A run's *pass-end mean E* ``e_k`` is the mean over the prompts of E after the last block of pass ``k``
(``e_0``: the embeddings). The rule reads ``e_1, e_2, ...`` in order and stops at the first pass where
one of two tests decides:

* **collapsed** at pass ``k``: ``e_k < threshold``;
* **stalled** at pass ``k >= 2 window``: the median of the last ``window`` pass ends is not below
  ``(1 - min_fall)`` times the median of the ``window`` pass ends before them (E stopped falling, or
  falls slower than ``-log(1 - min_fall) / window`` per pass), while still above the threshold;
* **undecided**: neither by ``max_passes`` (the verdict needs a longer run), or the threshold is within
  ``FLOOR_MARGIN`` of the dtype's floor (:mod:`empirical.floor`), where rounding, not the dynamics, would
  decide (so a stall, always above the threshold, is never read within that margin of the floor either).

The rule is sequential: its decision at pass ``k`` reads ``e_1 .. e_k`` only, so a longer maximum
cannot change a decision already reached; :func:`decide_twice` shows what doubling the maximum *and* the
plateau window does. Whether E is monotone is reported beside the decision, as a separate finding: a
collapse may go up and down on its way (trained Gemma 3 270M with FFN does).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, replace
from typing import Any, Sequence

#: The collapse threshold of the paper's claims "mean E -> 0". Reason: mean E < 1e-3 is a mean cosine to
#: the first token above 0.999 (a mean angle under 2.6 degrees), about three orders of magnitude below the
#: embeddings' E (0.5-0.95 for the authors' random prompts), and at least FLOOR_MARGIN times every float32 floor
#: measured (~1e-7-3e-6 on every model; on an H100 2.4e-6 for GPT-2 XL, 3.0e-6 for GPT-Neo 2.7B). In bfloat16 it
#: is for the tiny collapsing models (8e-6) and GPT-Neo 2.7B (8.0e-5 on an H100), not for GPT-2 XL (2.6e-4 on
#: an H100): its bfloat16 runs are undecided by rule, hence float32 by default (docs/empirical.md).
THRESHOLD = 1e-3
#: Passes in each of the two windows the plateau test compares. Reason: trained Gemma 3 270M with FFN (8 prompts
#: x 200 tokens, float32) swings by up to a factor of 2 between consecutive pass ends (0.247 -> 0.530 -> 0.606)
#: and lingers between 0.0013 and 0.0057 from pass 26 to 37 before falling below 1e-3 at pass 38; with windows of 4
#: the test called that a stall at pass 31 (and with windows of 8 did not: a verdict that changed with the
#: window); the medians of 8 passes ride over both, and so do those of 16.
WINDOW = 8
#: The least fall of the window median, per window, that counts as still falling. Reason: 10% per 8 passes
#: is a rate of 0.013 per pass; from E = 0.5 it would need about 470 passes to reach the threshold, nine
#: times the paper's 50.
MIN_FALL = 0.1
#: The threshold (and a stalled median) must exceed the floor by this factor to be read as the dynamics.
#: Reason: bfloat16 runs of the tiny collapsing models stall between 0.96 and 1.15 times the measured
#: floor; a factor of 10 keeps every decision an order of magnitude clear of rounding.
FLOOR_MARGIN = 10.0
#: The maximum of passes of the paper's protocol (the GPU profile: 50 passes, our choice; not printed).
MAX_PASSES = 50

VERDICTS = ("collapsed", "stalled", "undecided")


@dataclass(frozen=True)
class CollapseRule:
    """The stated test: ``threshold`` on the pass-end mean E, the plateau test's ``window`` (passes) and
    ``min_fall`` (fraction per window), and ``max_passes``."""

    threshold: float = THRESHOLD
    window: int = WINDOW
    min_fall: float = MIN_FALL
    max_passes: int = MAX_PASSES

    def __post_init__(self) -> None:
        if not 0 < self.threshold < 1:
            raise ValueError(f"threshold={self.threshold!r} must lie in (0, 1) (E lies in [0, 2]; "
                             "collapse means E near 0).")
        if not isinstance(self.window, int) or self.window < 1:
            raise ValueError(f"window={self.window!r} must be a positive integer (passes).")
        if not 0 < self.min_fall < 1:
            raise ValueError(f"min_fall={self.min_fall!r} must lie in (0, 1).")
        if not isinstance(self.max_passes, int) or self.max_passes < 1:
            raise ValueError(f"max_passes={self.max_passes!r} must be a positive integer.")

    def doubled(self) -> "CollapseRule":
        """The same test with twice the maximum of passes and twice the plateau window."""
        return replace(self, window=2 * self.window, max_passes=2 * self.max_passes)

    def describe(self) -> str:
        return (f"collapsed when the pass-end mean E falls below {self.threshold:g}; stalled when the median of the "
                f"last {self.window} pass ends is not {100 * self.min_fall:g}% below the median of the {self.window} "
                f"before them; at most {self.max_passes} passes; no decision within a factor {FLOOR_MARGIN:g} of the "
                "dtype's floor of E")


@dataclass(frozen=True)
class Decision:
    """What the rule says of one run: ``verdict`` (collapsed / stalled / undecided) at pass ``decided_at``
    (``None`` when undecided), ``reason`` in words, and the findings beside it: the first pass with E below the
    threshold (``None`` if none), whether the pass ends never rise by more than the floor (``monotone``, with
    the passes where they rise), the final E and the passes read."""

    verdict: str
    decided_at: int | None
    reason: str
    first_below_threshold: int | None
    monotone: bool
    rises: tuple[int, ...]
    E_final: float
    passes_read: int
    floor: float
    rule: CollapseRule

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "rises": list(self.rises), "rule": asdict(self.rule)}


def pass_ends(E_mean: Sequence[float], layers: int, passes: int) -> list[float]:
    """``e_0 .. e_passes``: the mean E after the embeddings, then after the last block of every pass."""
    if len(E_mean) < passes * layers + 1:
        raise ValueError(f"E_mean holds {len(E_mean)} values; {passes} passes of {layers} blocks need "
                         f"{passes * layers + 1}.")
    return [float(E_mean[k * layers]) for k in range(passes + 1)]


def decide(ends: Sequence[float], floor: float, rule: CollapseRule = CollapseRule()) -> Decision:
    """The rule's decision on pass ends ``ends`` (``e_0 .. e_K``; passes beyond ``rule.max_passes`` are not read),
    given the dtype's ``floor`` of E (manifest ``floor.E_floor``)."""
    if len(ends) < 2:
        raise ValueError(f"ends must hold the embeddings' E and at least one pass end; got {len(ends)} values.")
    if not floor >= 0:
        raise ValueError(f"floor={floor!r} must be a non-negative number (the run's manifest floor.E_floor).")
    if any(not math.isfinite(e) for e in ends):
        raise ValueError("ends must be finite: E from non-finite activations is not a measurement.")
    e = list(ends[: rule.max_passes + 1])
    read = len(e) - 1
    below = next((k for k in range(1, read + 1) if e[k] < rule.threshold), None)
    rises = tuple(k for k in range(2, read + 1) if e[k] > e[k - 1] + floor)
    findings = dict(first_below_threshold=below, monotone=not rises, rises=rises, E_final=e[-1], floor=floor,
                    rule=rule)
    if rule.threshold < FLOOR_MARGIN * floor:
        return Decision("undecided", None, f"the threshold {rule.threshold:g} is within a factor {FLOOR_MARGIN:g} of "
                        f"the dtype's floor of E ({floor:.2g}): rounding would decide; run in float32 (--dtype "
                        "float32) or state a larger threshold", passes_read=read, **findings)
    for k in range(1, read + 1):
        if e[k] < rule.threshold:
            return Decision("collapsed", k, f"mean E {e[k]:.3g} < {rule.threshold:g} at pass {k}", passes_read=read,
                            **findings)
        if k >= 2 * rule.window:
            earlier = statistics.median(e[k - 2 * rule.window + 1: k - rule.window + 1])
            later = statistics.median(e[k - rule.window + 1: k + 1])
            if later > (1 - rule.min_fall) * earlier:
                return Decision("stalled", k, f"the median pass-end E of passes {k - rule.window + 1}-{k} "
                                f"({later:.3g}) is not {100 * rule.min_fall:g}% below that of passes {k - 2 * rule.window + 1}-"
                                f"{k - rule.window} ({earlier:.3g})", passes_read=read, **findings)
    return Decision("undecided", None, f"neither below {rule.threshold:g} nor stalled within {read} passes"
                    + ("" if read >= rule.max_passes else f" (the run has {read} of the rule's {rule.max_passes})"),
                    passes_read=read, **findings)


def needs_more_passes(ends: Sequence[float], floor: float, rule: CollapseRule) -> bool:
    """Whether a run with pass ends ``ends`` must go on for ``rule`` to decide (undecided, and short of the maximum)."""
    decision = decide(ends, floor, rule)
    return decision.verdict == "undecided" and decision.passes_read < rule.max_passes and \
        rule.threshold >= FLOOR_MARGIN * floor


@dataclass(frozen=True)
class TwoHorizons:
    """The rule's decision and the doubled rule's (twice the maximum and the window) on the same run; the verdict
    stands only when both agree, else it is ``undecided`` (a verdict that changes with the horizon is none)."""

    base: Decision
    doubled: Decision

    @property
    def verdict(self) -> str:
        return self.base.verdict if self.base.verdict == self.doubled.verdict else "undecided"

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "base": self.base.to_json(), "doubled": self.doubled.to_json()}


def decide_twice(ends: Sequence[float], floor: float, rule: CollapseRule = CollapseRule()) -> TwoHorizons:
    """:func:`decide` with ``rule`` and with ``rule.doubled()`` on the same pass ends."""
    return TwoHorizons(decide(ends, floor, rule), decide(ends, floor, rule.doubled()))
