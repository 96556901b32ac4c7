"""The collapse test: does E go to 0? Stated in docs/empirical.md ("The collapse test") before it was run on
any trained model; no constant here was chosen by looking at the runs it decides. Its second version (the later
half's own trend, and no verdict resting on the floor of a dtype other than float64 without a float64 twin) answers
a referee's synthetic counter-examples, stated in that section; it was written before it met any run.

The test reads the mean over the prompts of E after *every* block, ``E[0]`` (the embeddings) then
``E[(k - 1) * L + b]`` for pass ``k`` and block ``b = 1..L``, and the run's effective floor (a number, or one
value per measurement). Values within ``margin`` x the floor are censored (they say "at most that", never their
value). At horizon ``H`` it reads passes ``1..min(K, H)``; its window is the last ``window`` octaves of depth, and
the window's later half its last ``ceil(W / 2)`` passes. In the window each pass gives ``y`` = the mean log E of its
blocks (censored values at their bound) and ``x`` = the mean log depth of its blocks; the least-squares slope of
``y`` on ``x`` is the exponent ``p`` of ``E ~ depth^p``, with one-sided bounds from the larger of the ordinary and
the Newey-West standard errors. The *tail* is the same fit over the later half's passes without a censored value
(when there are at least 3). Verdicts:

* ``converging``: the later half of the window is at the floor (every value censored), or ``p_hi < -threshold``
  at the horizon and the tail's ``p_hi < -threshold`` too (E still falls at the end of the window, not only on
  average over it); ``at_floor`` when a value of the later half is censored (the verdict rests on the floor);
* ``settled``: ``p_lo > -threshold`` with no censored value in the window, and the tail not falling faster than
  ``depth^-threshold`` (its ``p_hi >= -threshold``): a level, a rise, or a decay slower than ``depth^-threshold``,
  well above the floor, that is not turning into a fall at the end;
* ``undecided``: otherwise, or the run is shorter than the horizon (and not at the floor).

:func:`decide_grid` recomputes the verdict with each constant halved and doubled (one at a time): a verdict only
where every cell agrees, else ``sensitive``. A run with a float64 twin is also decided on its twinned prompts twice
(:func:`precision_check`): in its dtype with its effective floor, and in float64 with float64's floor; where the two
grid verdicts differ, the run's verdict (:func:`run_verdict`) is ``precision-limited``. So is a run in a dtype other
than float64 without a twin whose convergence rests on its floor: at the floor its dtype cannot tell E -> 0 from E
settling at a level below ``margin`` x the floor.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Sequence

import numpy as np
from scipy import stats

from .settings import ALPHA, HORIZON, LEVEL_RATIO, THRESHOLD, WINDOW  # noqa: F401 (re-exported)

#: Values at most this factor above the effective floor are censored. Reason: SPEC section 5 (nothing is decided
#: below 10 x the effective floor); the grid doubles it and never halves it.
FLOOR_MARGIN = 10.0

VERDICTS = ("converging", "settled", "undecided")
#: A run's verdict over the grid: one of VERDICTS where every cell agrees, else "sensitive".
GRID_VERDICTS = (*VERDICTS, "sensitive")
#: A run's verdict: its grid's, or "precision-limited" where its dtype and its float64 twin decide differently.
RUN_VERDICTS = (*GRID_VERDICTS, "precision-limited")


@dataclass(frozen=True)
class CollapseRule:
    """The test's constants: ``horizon`` (passes read), ``window`` (octaves of depth), ``threshold`` (an exponent),
    ``alpha`` (each one-sided test), ``margin`` (times the effective floor) and ``level_ratio`` (the least
    ``(E - c) / c`` at the end of the window, ``c`` the level E's slowing fall implies)."""

    horizon: int = HORIZON
    window: float = WINDOW
    threshold: float = THRESHOLD
    alpha: float = ALPHA
    margin: float = FLOOR_MARGIN
    level_ratio: float = LEVEL_RATIO

    def __post_init__(self) -> None:
        if not isinstance(self.horizon, int) or self.horizon < 1:
            raise ValueError(f"horizon={self.horizon!r} must be a positive integer (passes).")
        if not self.window > 0:
            raise ValueError(f"window={self.window!r} must be a positive number of octaves of depth.")
        if not 0 < self.threshold < 10:
            raise ValueError(f"threshold={self.threshold!r} must lie in (0, 10) (an exponent of depth).")
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"alpha={self.alpha!r} must lie in (0, 0.5).")
        if not 0 < self.level_ratio < math.inf:
            raise ValueError(f"level_ratio={self.level_ratio!r} must be a positive number.")
        if not self.margin >= FLOOR_MARGIN:
            raise ValueError(f"margin={self.margin!r} must be at least {FLOOR_MARGIN:g} (SPEC section 5: nothing is "
                             "decided below 10 x the effective floor).")
        if self.window_passes < 3:
            raise ValueError(f"horizon={self.horizon} and window={self.window:g} leave {self.window_passes} passes in "
                             "the window; the trend needs at least 3.")

    @property
    def window_passes(self) -> int:
        """``W``: the passes of the horizon deeper than ``horizon * 2^-window``."""
        return self.horizon - math.floor(self.horizon * 2.0 ** -self.window)

    def grid(self) -> dict[str, "CollapseRule"]:
        """The base and every constant halved and doubled, one at a time (the margin only doubled: halving it would
        decide below SPEC's 10 x the floor)."""
        cells = {"base": self}
        for name in ("horizon", "window", "threshold", "alpha", "level_ratio"):
            value = getattr(self, name)
            cells[f"{name} x 0.5"] = replace(self, **{name: max(1, value // 2) if name == "horizon" else value / 2})
            cells[f"{name} x 2"] = replace(self, **{name: 2 * value})
        cells["margin x 2"] = replace(self, margin=2 * self.margin)
        return cells

    def describe(self) -> str:
        return (f"converging when the exponent p of E ~ depth^p over the last {self.window:g} octave(s) of "
                f"{self.horizon} passes (every block; the larger of the ordinary and Newey-West errors) is below "
                f"-{self.threshold:g} at one-sided level {self.alpha:g} over that window and over its later half, "
                f"and E's falling part is at least {self.level_ratio:g} x the level its slowing fall implies (E = c + a "
                f"depth^q through the window's two halves), or when E stays within {self.margin:g} x the effective "
                "floor for that later half (in a dtype other than float64, confirmed by a float64 twin); settled when p "
                "is above "
                f"-{self.threshold:g} at that level, the later half not falling faster, with no value within "
                f"{self.margin:g} x the floor; recomputed with each constant halved and doubled (a verdict only where "
                "all agree)")


@dataclass(frozen=True)
class Decision:
    """One cell's decision: ``verdict`` at pass ``decided_at`` (the last pass read; ``None`` when undecided),
    ``reason`` in words, the window's passes, the exponent ``p`` and its one-sided bounds (``None`` where no trend
    was fitted), the tail's (the later half's passes without a censored value; ``None`` where fewer than 3), the
    window's geometric-mean ``level`` and largest value, the censored values in it, ``at_floor`` (a ``converging``
    verdict with a censored value in the later half: it rests on the floor), and the rule."""

    verdict: str
    decided_at: int | None
    reason: str
    passes_read: int
    window: tuple[int, int] | None
    exponent: float | None
    exponent_low: float | None
    exponent_high: float | None
    level: float | None
    window_max: float | None
    censored: int
    rule: CollapseRule
    tail_exponent: float | None = None
    tail_exponent_low: float | None = None
    tail_exponent_high: float | None = None
    level_ratio: float | None = None
    at_floor: bool = False

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "window": list(self.window) if self.window else None, "rule": asdict(self.rule)}


def _values(E: Sequence[float], layers: int, floor: float | Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """``(E, floor)`` as arrays of the same length (checked)."""
    if not isinstance(layers, int) or layers < 1:
        raise ValueError(f"layers={layers!r} must be a positive integer.")
    E = np.asarray(E, dtype=np.float64)
    if E.ndim != 1 or len(E) < 1 + layers or (len(E) - 1) % layers:
        raise ValueError(f"E must hold the embeddings' E and whole passes of {layers} blocks (1 + passes x {layers} "
                         f"values); got {E.size}.")
    if not np.all(np.isfinite(E)):
        raise ValueError("E must be finite: E from non-finite activations is not a measurement.")
    f = np.asarray(floor, dtype=np.float64)
    if f.ndim == 0:
        f = np.full(E.shape, float(f))
    elif f.ndim != 1 or len(f) < len(E):
        raise ValueError(f"floor must be a number or one value per measurement of E ({len(E)}); got shape {f.shape}.")
    f = f[: len(E)]
    if not np.all(np.isfinite(f)) or not np.all(f > 0):
        raise ValueError(f"floor={floor!r} must be positive and finite (the run's effective floor of E).")
    return E, f


def _trend(x: np.ndarray, y: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """Least-squares slope of ``y`` on ``x`` and its one-sided bounds at level ``alpha``: the larger of the ordinary
    and the Newey-West (Bartlett, floor(4 (n / 100)^(2/9)) lags) standard errors, t with n - 2 degrees of freedom."""
    n = len(x)
    xc = x - x.mean()
    sxx = float(xc @ xc)
    slope = float(xc @ (y - y.mean())) / sxx
    residuals = y - y.mean() - slope * xc
    se_ols = math.sqrt(float(residuals @ residuals) / (n - 2) / sxx)
    lags = int(4 * (n / 100) ** (2 / 9))
    g = xc * residuals
    S = float(g @ g) + sum(2 * (1 - lag / (lags + 1)) * float(g[lag:] @ g[:-lag]) for lag in range(1, lags + 1))
    se_nw = math.sqrt(max(S, 0.0) * n / (n - 2)) / sxx
    se = max(se_ols, se_nw)
    q = float(stats.t.ppf(1 - alpha, n - 2))
    return slope, slope - q * se, slope + q * se


def decide(E: Sequence[float], layers: int, floor: float | Sequence[float],
           rule: CollapseRule = CollapseRule()) -> Decision:
    """One cell: the test with ``rule`` on the mean E after every block ``E`` (``1 + passes x layers`` values;
    passes beyond ``rule.horizon`` are not read) given the effective ``floor`` (a number or one per value)."""
    E, f = _values(E, layers, floor)
    passes = (len(E) - 1) // layers
    n = min(passes, rule.horizon)
    W = rule.window_passes
    none = dict(window=None, exponent=None, exponent_low=None, exponent_high=None, level=None, window_max=None,
                censored=0)
    if n < W:
        return Decision("undecided", None, f"{n} passes read; the window needs {W}", n, rule=rule, **none)
    values = E[1: 1 + n * layers].reshape(n, layers)[n - W:]
    bounds = rule.margin * f[1: 1 + n * layers].reshape(n, layers)[n - W:]
    censored = values <= bounds
    window = dict(window=(n - W + 1, n), level=float(np.exp(np.log(np.maximum(values, bounds)).mean())),
                  window_max=float(values.max()), censored=int(censored.sum()))
    no_trend = dict(exponent=None, exponent_low=None, exponent_high=None)
    half = math.ceil(W / 2)
    later = censored[W - half:]
    if later.all():
        return Decision("converging", n, f"every value of passes {n - half + 1}-{n} is within {rule.margin:g} x the "
                        "effective floor: E reached the floor and stayed there", n, rule=rule, **window, **no_trend,
                        at_floor=True)
    if n < rule.horizon:
        return Decision("undecided", None, f"the run has {n} of the horizon's {rule.horizon} passes", n, rule=rule,
                        **window, **no_trend)
    y = np.log(np.maximum(values, bounds)).mean(1)
    x = np.log(np.add.outer(np.arange(n - W, n), np.arange(1, layers + 1) / layers)).mean(1)
    p, low, high = _trend(x, y, rule.alpha)
    clear = np.flatnonzero(~later.any(1)) + W - half  # the later half's passes without a censored value
    tail_p, tail_low, tail_high = _trend(x[clear], y[clear], rule.alpha) if len(clear) >= 3 else (None, None, None)
    level_ratio = _level_ratio(x, y, censored, W - half, clear, tail_p, rule.alpha)
    trend = dict(exponent=p, exponent_low=low, exponent_high=high, tail_exponent=tail_p, tail_exponent_low=tail_low,
                 tail_exponent_high=tail_high, level_ratio=level_ratio)
    stated = (f"exponent {p:.3g} (one-sided {100 * (1 - rule.alpha):g}% bounds {low:.3g}, {high:.3g}) over passes "
              f"{n - W + 1}-{n}")
    tail = ("" if tail_p is None else
            f"; over the later half's {len(clear)} passes without a censored value {tail_p:.3g} ({tail_low:.3g}, "
            f"{tail_high:.3g})")
    falling = high < -rule.threshold and (tail_high is None or tail_high < -rule.threshold)
    if falling and (level_ratio is None or level_ratio >= rule.level_ratio):
        return Decision("converging", n, f"{stated}{tail}: E falls faster than depth^-{rule.threshold:g} to the end "
                        "of the window", n, rule=rule, **window, **trend, at_floor=bool(later.any()))
    if low > -rule.threshold and (tail_high is None or tail_high >= -rule.threshold) and not censored.any():
        return Decision("settled", n, f"{stated}{tail}: E falls slower than depth^-{rule.threshold:g} (or not at all) "
                        f"at a level of {window['level']:.3g}", n, rule=rule, **window, **trend)
    if falling:
        why = (f"the fall slows down as E nears a level: E - c = {level_ratio:.3g} x c at the end of the window (E = c "
               f"+ a depth^q through its two halves), below {rule.level_ratio:g}")
    elif high < -rule.threshold:
        why = f"the later half's bounds hold -{rule.threshold:g}: the fall slows down (E may be nearing a level)"
    elif low > -rule.threshold:
        why = (f"{int(censored.sum())} values within {rule.margin:g} x the floor" if censored.any() else
               f"the later half falls faster than depth^-{rule.threshold:g}: E may be starting to fall")
    else:
        why = f"the bounds hold -{rule.threshold:g}"
    return Decision("undecided", None, f"{stated}{tail}: {why}", n, rule=rule, **window, **trend)


def _level_ratio(x: np.ndarray, y: np.ndarray, censored: np.ndarray, first_later: int, clear: np.ndarray,
                 tail_p: float | None, alpha: float) -> float | None:
    """``(E - c) / c`` at the end of the window for the level ``c`` that E's slowing fall implies, or ``None`` where
    none is implied. ``x``, ``y``: each window pass's mean log depth and mean log E; ``censored : shape=[W, layers]``;
    the later half begins at ``first_later``; ``clear`` its passes without a censored value, ``tail_p`` their
    exponent. With E = c + a depth^q, the exponent of E at depth k is p(k) = q (1 - c / E(k)); the window's first and
    later halves give (p1, E1) and (p2, E2), hence q = (p1 E1 - p2 E2) / (E1 - E2) and c = E2 (1 - p2 / q). A level is
    implied only where E falls (E1 > E2) ever more slowly (p1 < p2 < 0) and c > 0: a power law keeps its exponent, a
    geometric decay steepens."""
    first = np.flatnonzero(~censored[:first_later].any(1))  # the first half's passes without a censored value
    if tail_p is None or len(first) < 3:
        return None
    p1 = _trend(x[first], y[first], alpha)[0]
    E1, E2 = math.exp(float(y[first].mean())), math.exp(float(y[clear].mean()))
    if not (E1 > E2 and p1 < tail_p < 0):
        return None
    q = (p1 * E1 - tail_p * E2) / (E1 - E2)
    level = E2 * (1 - tail_p / q)
    return (E2 - level) / level if level > 0 else None


def needs_more_passes(E: Sequence[float], layers: int, floor: float | Sequence[float], rule: CollapseRule) -> bool:
    """Whether more passes could change ``rule``'s decision: undecided with fewer passes than its horizon."""
    decision = decide(E, layers, floor, rule)
    return decision.verdict == "undecided" and decision.passes_read < rule.horizon


def pass_ends(E_mean: Sequence[float], layers: int, passes: int) -> list[float]:
    """``e_0 .. e_passes``: the mean E after the embeddings, then after the last block of every pass."""
    if len(E_mean) < passes * layers + 1:
        raise ValueError(f"E_mean holds {len(E_mean)} values; {passes} passes of {layers} blocks need "
                         f"{passes * layers + 1}.")
    return [float(E_mean[k * layers]) for k in range(passes + 1)]


@dataclass(frozen=True)
class GridDecision:
    """The test over :meth:`CollapseRule.grid`: ``verdict`` (the cells' where all agree, else ``sensitive``), every
    cell's decision, and the findings beside it: whether the pass ends never rise by more than the floor
    (``monotone``, ``rises``), the first pass at the floor (all its values censored at the base margin), the final E."""

    verdict: str
    cells: dict[str, Decision]
    monotone: bool
    rises: tuple[int, ...]
    first_at_floor: int | None
    E_final: float
    passes_run: int

    @property
    def base(self) -> Decision:
        return self.cells["base"]

    @property
    def rests_on_floor(self) -> bool:
        """Whether a ``converging`` cell read a censored value in its later half: below ``margin`` x the floor the
        values cannot tell E -> 0 from E settling at a level there."""
        return any(d.verdict == "converging" and d.at_floor for d in self.cells.values())

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "cells": {name: d.to_json() for name, d in self.cells.items()},
                "monotone": self.monotone, "rises": list(self.rises), "first_at_floor": self.first_at_floor,
                "E_final": self.E_final, "passes_run": self.passes_run, "rests_on_floor": self.rests_on_floor}


def decide_grid(E: Sequence[float], layers: int, floor: float | Sequence[float],
                rule: CollapseRule = CollapseRule()) -> GridDecision:
    """:func:`decide` in every cell of ``rule.grid()`` on the same values."""
    values, f = _values(E, layers, floor)
    cells = {name: decide(values, layers, f, cell) for name, cell in rule.grid().items()}
    verdicts = {d.verdict for d in cells.values()}
    passes = (len(values) - 1) // layers
    ends = values[::layers]
    rises = tuple(k for k in range(2, passes + 1) if ends[k] > ends[k - 1] + f[k * layers])
    at_floor = (values[1:] <= rule.margin * f[1:]).reshape(passes, layers).all(1)
    first = next((k + 1 for k in range(passes) if at_floor[k]), None)
    return GridDecision(verdicts.pop() if len(verdicts) == 1 else "sensitive", cells, not rises, rises, first,
                        float(ends[-1]), passes)


def grid_needs_more_passes(E: Sequence[float], layers: int, floor: float | Sequence[float],
                           rule: CollapseRule = CollapseRule()) -> bool:
    """Whether more passes could change a cell of ``rule``'s grid (the longest needs twice the horizon)."""
    return any(needs_more_passes(E, layers, floor, cell) for cell in rule.grid().values())


@dataclass(frozen=True)
class PrecisionCheck:
    """A run and its float64 twin decided on the same (twinned) prompts: ``dtype`` is the grid decision of the run's
    mean E over those prompts with the run's effective floor, ``float64`` the twin's with its own floor (measured on
    the float64 copy as the run's is: :mod:`empirical.floor`); they ``agree`` when the two grid verdicts are the same."""

    prompts: int
    dtype: GridDecision
    float64: GridDecision
    float64_floor: float

    @property
    def agree(self) -> bool:
        return self.dtype.verdict == self.float64.verdict

    def to_json(self) -> dict[str, Any]:
        return {"prompts": self.prompts, "agree": self.agree, "dtype_verdict": self.dtype.verdict,
                "float64_verdict": self.float64.verdict, "float64_floor": self.float64_floor,
                "dtype": self.dtype.to_json(), "float64": self.float64.to_json()}


def precision_check(E_dtype: Sequence[float], E_float64: Sequence[float], layers: int, prompts: int,
                    floor: float | Sequence[float], floor_float64: float,
                    rule: CollapseRule = CollapseRule()) -> PrecisionCheck:
    """:func:`decide_grid` on the run's mean E over its twinned ``prompts`` (``E_dtype``, with its effective
    ``floor``) and on its float64 twin's (``E_float64``, the same measurements, with ``floor_float64``)."""
    if len(E_dtype) != len(E_float64):
        raise ValueError(f"the run's E ({len(E_dtype)} values) and its twin's ({len(E_float64)}) must be the same "
                         "measurements.")
    return PrecisionCheck(prompts, decide_grid(E_dtype, layers, floor, rule),
                          decide_grid(E_float64, layers, floor_float64, rule), floor_float64)


def run_verdict(grid: GridDecision, precision: PrecisionCheck | None, dtype: str) -> str:
    """A run's verdict: ``precision-limited`` where its dtype and its float64 twin disagree, or where a run in
    ``dtype`` (not float64) converges only by resting on its floor (nothing is decided below ``margin`` x the floor)
    without a float64 twin that converges on its twinned prompts: a twin agreeing on ``undecided`` says nothing about
    E -> 0 below the floor (in float64, the finest floor any floating-point run has, resting on it is accepted); else
    its grid's."""
    if precision is not None and not precision.agree:
        return "precision-limited"
    confirmed = precision is not None and precision.float64.verdict == "converging"
    if dtype != "float64" and grid.verdict == "converging" and grid.rests_on_floor and not confirmed:
        return "precision-limited"
    return grid.verdict
