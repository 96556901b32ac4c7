"""Remark 4.3 (long) / 3.4 (ICML): the probability that l uniform tokens on S^n lie in a common open
hemisphere (Wendel 1962: N points in R^d, P = 2^{-(N-1)} sum_{k=0}^{d-1} C(N-1, k); here d = n + 1)."""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import comb, sqrt
from pathlib import Path

import numpy as np
import sympy as sp

from foundation.registration import claim_result, holding, named_check
from foundation.records import CheckResult, Figure, Table
from sim.field.hemisphere import in_open_hemisphere

from .results import Identity, evaluate_identities

PRINTED = ("P_{l,n} = 2^{-(l-1)} sum_{mu=0}^{n-1} C(l-1, mu) is the probability that l uniform tokens on S^n lie on "
           "a common hemisphere; in particular P_{l,n} = 1 whenever n >= l.")
CORRECTED = ("S^n lies in R^{n+1}, so Wendel's theorem with d = n+1 gives P_{l,n} = 2^{-(l-1)} sum_{mu=0}^{n} C(l-1, mu) "
             "(upper index n, not n-1). P_{l,n} = 1 iff n >= l-1, so 'P = 1 whenever n >= l' remains true (but is not "
             "sharp: l = n+1 tokens also lie on a hemisphere almost surely).")

#: (l, n) pairs: small cases with classical closed forms, and the paper's simulation sizes (fig. 2/5: 10
#: tokens on S^2; fig. 4: 50 tokens on S^499).
PAIRS = ((2, 1), (3, 1), (4, 2), (10, 2), (6, 3), (50, 499))
#: Two-sided Wilson interval at 99.9%: with six pairs, the family-wise miss rate is below 0.6%.
Z_SCORE = 3.2905


def printed_probability(l: int, n: int) -> Fraction:
    """The formula as printed: 2^{-(l-1)} sum_{mu=0}^{n-1} C(l-1, mu)."""
    return Fraction(sum(comb(l - 1, mu) for mu in range(n)), 2 ** (l - 1))


def wendel_probability(points: int, dimension: int) -> Fraction:
    """Wendel (1962): N = ``points`` symmetric points in R^d: 2^{-(N-1)} sum_{k=0}^{d-1} C(N-1, k)."""
    return Fraction(sum(comb(points - 1, k) for k in range(dimension)), 2 ** (points - 1))


@lru_cache(maxsize=None)
def cover_count(points: int, dimension: int) -> int:
    """Cover's (1965) count of the dichotomies of N points in general position in R^d separable by a
    hyperplane through 0, by its recursion C(N+1, d) = C(N, d) + C(N, d-1), C(1, d) = 2, C(N, 0) = 0 —
    a route independent of Wendel's closed form. P(common hemisphere) = C(N, d) / 2^N by sign symmetry."""
    if dimension == 0:
        return 0
    if points == 1:
        return 2
    return cover_count(points - 1, dimension) + cover_count(points - 1, dimension - 1)


def wilson_interval(successes: int, trials: int, z: float = Z_SCORE) -> tuple[float, float]:
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    # at p = 0 or 1 the exact interval ends at 0 or 1; rounding must not cut it short
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


def printed_sum(l: sp.Expr, n: sp.Expr) -> sp.Expr:
    """The formula as printed, symbolic: 2^{-(l-1)} sum_{mu=0}^{n-1} C(l-1, mu)."""
    mu = sp.Symbol("mu", integer=True, nonnegative=True)
    return sp.Sum(sp.binomial(l - 1, mu), (mu, 0, n - 1)).doit() / 2 ** (l - 1)


def corrected_sum(l: sp.Expr, n: sp.Expr) -> sp.Expr:
    """Wendel with d = n+1, symbolic: 2^{-(l-1)} sum_{mu=0}^{n} C(l-1, mu)."""
    return printed_sum(l, n + 1)


@named_check
def check_closed_forms(printed=printed_sum, corrected=corrected_sum) -> CheckResult:
    """full.wendel, exact: the corrected formula (d = n+1) against classical closed forms, symbolic in l: circle (n = 1)
    l / 2^{l-1}; S^2: (l^2 - l + 2) / 2^l; n = l - 1: 1. The printed formula against the same closed forms decides the
    verdict: ``discrepancy`` when it misses them and the corrected one meets them, ``verified`` when the printed one
    meets them, ``failed`` when the corrected one misses them (a regression of the suite's own formula).
    ``printed`` and ``corrected`` replace the formulas (negative controls)."""
    l = sp.Symbol("l", integer=True, positive=True)
    closed_forms = (("n = 1 (circle): l / 2^(l-1) (semicircle problem)", lambda f: f(l, 1) - l / 2 ** (l - 1)),
                    ("n = 2: (l^2 - l + 2) / 2^l", lambda f: f(l, 2) - (l ** 2 - l + 2) / 2 ** l),
                    ("n = l - 1: 1 (l tokens in R^l always share a hemisphere)", lambda f: f(l, l - 1) - 1))
    evaluated = {label: evaluate_identities([Identity(f"{label} formula, {name}", sp.expand_func(residual(formula)))
                                             for name, residual in closed_forms])
                 for label, formula in (("corrected", corrected), ("printed", printed))}
    expression = "\n".join(text for text, _ in evaluated.values())
    results = {label: failing for label, (_, failing) in evaluated.items()}
    numbers = {"printed, l = 2, n = 1": str(printed(sp.Integer(2), 1)),
               "corrected, l = 2, n = 1": str(corrected(sp.Integer(2), 1)),
               "printed closed forms missed": len(results["printed"]),
               "corrected closed forms missed": len(results["corrected"])}
    if results["corrected"]:
        return claim_result("failed", expression=expression, numbers=numbers,
                            detail="The suite's corrected formula misses the classical closed forms: "
                                   f"{'; '.join(results['corrected'])}.")
    if not results["printed"]:
        return claim_result("verified", expression=expression, numbers=numbers,
                            detail="The formula under test meets the classical closed forms.")
    return claim_result(
        "discrepancy", expression=expression, numbers=numbers, printed=PRINTED, corrected=CORRECTED,
        detail="The semicircle probability l/2^(l-1) (each token is the counter-clockwise end of a covering semicircle "
               "with probability 2^-(l-1), disjoint events) agrees with the formula for d = n+1, not with the printed "
               "one, which gives 2^-(l-1) on the circle (two tokens: printed 1/2, true 1) and 1 - 2^-(l-1) < 1 at "
               f"n = l - 1. Printed formula misses: {'; '.join(results['printed'])}. The corrected formula meets every "
               "closed form.")


@named_check
def check_monte_carlo(seed: int = 20250112, samples: int = 400, pairs=PAIRS, large_samples: int = 100,
                printed=printed_probability, in_hemisphere=in_open_hemisphere) -> CheckResult:
    """full.wendel: printed formula, Wendel with d = n+1, Cover's recursion, and a Monte Carlo estimate (LP
    hemisphere test, Wilson 99.9% interval) for each (l, n). ``printed`` replaces the formula under test,
    ``in_hemisphere`` the hemisphere test (a negative control breaks it: the check then fails)."""
    rng = np.random.default_rng(seed)
    rows, printed_fails, corrected_ok = [], [], True
    for l, n in pairs:
        count = samples if n < 100 else large_samples
        hits = 0
        for _ in range(count):
            y = rng.standard_normal((l, n + 1))
            hits += in_hemisphere(y / np.linalg.norm(y, axis=1, keepdims=True))
        low, high = wilson_interval(hits, count)
        p_printed = printed(l, n)
        p_wendel = wendel_probability(l, n + 1)
        p_cover = Fraction(cover_count(l, n + 1), 2 ** l)
        corrected_ok &= (p_wendel == p_cover) and low <= float(p_wendel) <= high
        if not (low <= float(p_printed) <= high) or p_printed != p_wendel:
            printed_fails.append((l, n))
        rows.append((l, n, float(p_printed), float(p_wendel), float(p_cover), hits / count, f"[{low:.4f}, {high:.4f}]", count))
    table = Table(TABLE_TITLE, ("l", "n", "printed (sum to n-1)", "Wendel, d = n+1",
                                                    "Cover recursion", "Monte Carlo", "Wilson 99.9% CI", "samples"),
                  tuple(rows))
    numbers = {"pairs": len(pairs), "printed differs at": [list(p) for p in printed_fails]}
    common = dict(tables=(table,), seeds={"monte_carlo": seed}, numbers=numbers, tolerance=Z_SCORE,
                  tolerance_reason="Wilson score interval with z = 3.29 (99.9% two-sided) per pair")
    if not corrected_ok:
        return claim_result("failed",
                            detail="Wendel with d = n+1 disagrees with Cover's recursion or lies outside a Monte Carlo "
                                   "interval.", **common)
    if not printed_fails:
        return claim_result(holding(),
                            detail="The formula under test equals Wendel's (d = n+1) and lies in every interval.",
                            **common)
    return claim_result(
        "discrepancy",
        detail="The printed sum stops at n-1, i.e. it is Wendel's formula for points in R^n, but S^n lies in R^{n+1}. "
               f"It is wrong at {printed_fails} (e.g. 2 points on the circle: printed 1/2, true 1; the paper's fig. 2 "
               "setting, 10 tokens on S^2: printed 10/512 = 0.0195, true 46/512 = 0.0898, Monte Carlo agrees with the "
               "latter). Wendel with d = n+1 equals Cover's recursion exactly and lies in every Monte Carlo interval.",
        printed=PRINTED, corrected=CORRECTED, **common)


#: The Monte Carlo table's title (:func:`check_monte_carlo`), which :func:`probability_series` reads.
TABLE_TITLE = "common-hemisphere probability"


def probability_series(result: CheckResult) -> dict[str, list]:
    """The columns :func:`plot_probabilities` draws, read from the Monte Carlo record's table: ``labels`` ("l, n"),
    ``printed``, ``true`` (Wendel, d = n+1), ``estimate`` (Monte Carlo) and its Wilson interval ``low``, ``high``
    (recomputed from the estimate and the sample count, as :func:`check_monte_carlo` computed it)."""
    tables = [t for t in result.tables if t.title == TABLE_TITLE]
    if not tables:
        raise ValueError(f"the record of {result.claim} ({result.method}) must hold the table {TABLE_TITLE!r} of "
                         "wendel.check_monte_carlo; it has " + repr([t.title for t in result.tables]) + ".")
    series = {key: [] for key in ("labels", "printed", "true", "estimate", "low", "high")}
    for l, n, printed, true, _cover, estimate, _interval, samples in tables[0].rows:
        low, high = wilson_interval(round(estimate * samples), samples)
        for key, value in zip(series, (f"l={l}, n={n}", printed, true, estimate, low, high)):
            series[key].append(value)
    return series


def plot_probabilities(result: CheckResult, path: Path | str) -> Figure:
    """Write the printed, the true (Wendel, d = n+1) and the Monte Carlo probabilities with their 99.9% Wilson
    intervals, one column per (l, n), to the PNG ``path``; the report's Figure of it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = probability_series(result)
    x = np.arange(len(series["labels"]))
    estimate = np.array(series["estimate"])
    figure, axes = plt.subplots(figsize=(6.4, 3.6))
    axes.errorbar(x, estimate, yerr=[estimate - series["low"], np.array(series["high"]) - estimate], fmt="o",
                  color="tab:blue", capsize=4, label="Monte Carlo, Wilson 99.9% interval")
    axes.plot(x - 0.15, series["true"], "D", color="tab:green", label="Wendel, d = n+1 (true)")
    axes.plot(x + 0.15, series["printed"], "x", color="tab:red", markersize=9, mew=2, label="as printed (sum to n-1)")
    axes.set_yscale("log")
    axes.set_ylim(5e-3, 1.6)
    axes.set_xticks(x, series["labels"], fontsize=8)
    axes.set_ylabel("P(common open hemisphere)")
    axes.legend(fontsize=8, loc="lower right")
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return Figure(str(path), "Probability that l uniform tokens on S^n lie in a common open hemisphere, log scale: "
                             "the printed formula, Wendel's with d = n+1, and Monte Carlo estimates with their 99.9% "
                             f"Wilson intervals (seed {result.seeds.get('monte_carlo')}).")
