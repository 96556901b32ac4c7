"""Figures of the convergence theorems (claims ``full.convergence``, ``causal.identity``, ``causal.symmetric``,
method ``figure``): a quantity that is zero exactly at the theorem's consensus, along seeded random starts in the
theorem's domain, on a log scale, written as ``<claim>.png``. The check reads the plotted numbers: ``verified``
when the quantity falls below CONSENSUS_TOL at the horizon on every start, ``unsupported`` otherwise (with the horizon
and the value reached). Never ``refuted``: each theorem is a limit as t -> oo and none of these quantities is monotone
(E, max_j |y_j - y_1| and max_i (1 - v^T y_i) may rise before they fall: Fig. 6's V_2), so a finite run cannot
contradict it.

* full.convergence (Thm 4.1): full attention, U = I, h = 2, P_eta(t) = D_eta(t) P'_eta bounded and uniformly
  continuous; 8 starts in a random open hemisphere; E (eq. 9).
* causal.identity (Thm 5.1): causal, U = I, h = 2, the same P; 8 starts uniform on the sphere (y_j = -y_1 has
  probability 0); max_j |y_j - y_1(0)| (with U = I the first token attends to itself alone and stays at y_1(0),
  so the quantity is the theorem's; measured against y_1(0) rather than y_1(t), a full mask, which moves y_1, is
  caught: under full attention the tokens also meet, elsewhere).
* causal.symmetric (Thm 5.2): causal, h = 1, U symmetric with simple top eigenvalue 1 > 0 and eigenvector v;
  8 starts in D^l(v); max_i (1 - v^T y_i).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
from scipy.stats import special_ortho_group

from foundation.registration import claim_result, named_check, registrations
from foundation.records import CheckResult, Figure

from sim.field.dynamics import AttentionField, misalignment, top_eigenvector
from sim.figures.plots import CONSENSUS_REASON, CONSENSUS_TOL, finite_run_verdict, verdict_sentence
from sim.field.manifold import Ellipsoid
from sim.field.modulation import CosineDiagonal, Modulated
from sim.field.reversed import TimeReversed
from sim.solvers import AdaptiveStepSize, Dopri5, SaveAt, solve

#: Every random draw of a figure (its system and starts) comes from numpy's ``default_rng([SEED, k])``, k the claim's
#: index in ``sorted(CHECKS)`` (both recorded in each result's seeds).
SEED = 51
#: SAMPLES over HORIZON: a longer horizon keeps the spacing (0.2) of the samples.
STARTS, TOKENS, DIM, HORIZON, SAMPLES = 8, 6, 4, 30.0, 151
#: Dopri5's (rtol, atol); tests/sim/test_theorem_figures.py shows each verdict unchanged at half of them and at twice
#: the horizon.
TOLERANCES = (1e-10, 1e-10)


@dataclass(frozen=True)
class Scene:
    """One theorem's figure: its system, its starts ``shape=[STARTS, TOKENS, DIM]`` and the plotted quantity
    ``shape=[...]`` of ``y : shape=[..., TOKENS, DIM]`` (zero exactly at the consensus)."""

    field: AttentionField
    y0: np.ndarray
    quantity: Callable[[np.ndarray], np.ndarray]
    label: str
    caption: str


def _modulated_heads(rng: np.random.Generator, heads: int) -> tuple[Modulated, ...]:
    """P_eta(t) = D_eta(t) P'_eta: P' entries ~ U(-1, 1), D_kk(t) = 2 cos(omega_k t + phi_k) (bounded, uniformly
    continuous), omega ~ U(0, 2 pi), phi ~ U(0, 2 pi)."""
    return tuple(Modulated(rng.uniform(-1.0, 1.0, (DIM, DIM)),
                           CosineDiagonal(np.full(DIM, 2.0), rng.uniform(0, 2 * np.pi, DIM),
                                          rng.uniform(0, 2 * np.pi, DIM), np.zeros(DIM, dtype=bool)))
                 for _ in range(heads))


def seeds(claim: str) -> dict[str, int]:
    """The seed of ``claim``'s draws, as recorded: ``default_rng([seeds["figure"], seeds["figure.claim_index"]])``."""
    return {"figure": SEED, "figure.claim_index": sorted(CHECKS).index(claim)}


def scene(claim: str, *, full_mask: bool = False) -> Scene:
    """The seeded system and starts of ``claim``'s figure (see the module docstring); ``full_mask`` gives a causal
    claim's system full attention (a negative control: the same draws, the mask broken)."""
    causal = not full_mask
    seed = seeds(claim)
    rng = np.random.default_rng([seed["figure"], seed["figure.claim_index"]])
    sphere = Ellipsoid()
    if claim == "full.convergence":
        v = sphere.random_point(rng, (DIM,))
        return Scene(AttentionField(P=_modulated_heads(rng, 2)),
                     sphere.random_point_in_hemisphere(v, rng, (STARTS, TOKENS, DIM)), misalignment,
                     "E (eq. 9)", "full attention, U = I, h = 2, time-varying P; starts in a random open hemisphere")
    if claim == "causal.identity":
        heads = _modulated_heads(rng, 2)
        y0 = sphere.random_point(rng, (STARTS, TOKENS, DIM))
        return Scene(AttentionField(P=heads, causal=causal), y0,
                     lambda y: np.max(np.linalg.norm(y - y0[:, :1, :], axis=-1), axis=-1), "max_j |y_j - y_1(0)|",
                     "causal, U = I, h = 2, time-varying P; starts uniform on the sphere")
    Q = special_ortho_group.rvs(DIM, random_state=rng)
    U = Q @ np.diag([1.0, *rng.uniform(-1.0, 0.8, DIM - 1)]) @ Q.T
    _, v = top_eigenvector(U)
    return Scene(AttentionField(P=_modulated_heads(rng, 1), U=(U,), causal=causal),
                 sphere.random_point_in_hemisphere(v, rng, (STARTS, TOKENS, DIM)),
                 lambda y: np.max(1.0 - y @ v, axis=-1), "max_i (1 - v^T y_i)",
                 "causal, h = 1, random symmetric U (top eigenvalue 1, simple), time-varying P; starts in D^l(v)")


def simulate(claim: str, *, reverse: bool = False, full_mask: bool = False, horizon: float = HORIZON,
             tolerances: tuple[float, float] = TOLERANCES) -> dict[str, Any]:
    """The plotted quantity along every start, ``Q : shape=[STARTS, samples]`` at ``t : shape=[samples]`` over
    [0, ``horizon``] (samples spaced as SAMPLES over HORIZON), Dopri5 at (rtol, atol) = ``tolerances``.
    ``reverse`` flips the field's sign, ``full_mask`` drops a causal claim's mask (negative controls)."""
    setup = scene(claim, full_mask=full_mask)
    field = setup.field if not reverse else TimeReversed(setup.field)
    ts = np.linspace(0.0, horizon, round((SAMPLES - 1) * horizon / HORIZON) + 1)
    rtol, atol = tolerances
    ys = solve(field, Dopri5(), 0.0, horizon, setup.y0, saveat=SaveAt(ts=ts),
               controller=AdaptiveStepSize(rtol=rtol, atol=atol)).ys
    return {"claim": claim, "t": ts.tolist(), "Q": setup.quantity(ys).T.tolist(), "label": setup.label,
            "caption": setup.caption, "reversed": reverse, "seeds": seeds(claim)}


def plot(data: dict[str, Any], path: Path) -> Figure:
    """Write the quantity over time (log scale) to ``path``; the report's Figure of it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.0, 3.6))
    for row in np.array(data["Q"]):
        axes.plot(data["t"], np.maximum(row, 1e-300), color="tab:blue", linewidth=0.8)
    axes.set_yscale("log")
    axes.set_xlabel("t")
    axes.set_ylabel(data["label"])
    axes.set_title(f"{data['claim']}: {data['label']} along {len(data['Q'])} seeded starts", fontsize=10)
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    seed = data["seeds"]
    return Figure(str(path), f"{data['label']} over t in [0, {data['t'][-1]:g}], log scale: {data['caption']} "
                             f"({len(data['Q'])} starts, seed [{seed['figure']}, {seed['figure.claim_index']}]).")


def _decide(data: dict[str, Any], figures: tuple[Figure, ...]) -> CheckResult:
    """``supported`` (a run proves no theorem) when the quantity ``Q : shape=[starts, samples]`` is at most
    CONSENSUS_TOL at the horizon on every start, else ``unsupported`` (module docstring: a finite run never refutes these limits)."""
    Q = np.array(data["Q"])
    T = data["t"][-1]
    numbers = {"starts": int(Q.shape[0]), "max_initial": float(Q[:, 0].max()), "max_final": float(Q[:, -1].max()),
               "T": T}
    verdict = finite_run_verdict(contradicted=False, shown=numbers["max_final"] <= CONSENSUS_TOL)
    return claim_result(
        verdict,
        detail=f"{data['caption']}: {data['label']} goes from at most {numbers['max_initial']:.3g} to at most "
               f"{numbers['max_final']:.1e} at t = {T:g} on all {Q.shape[0]} starts."
               + verdict_sentence(verdict, horizon=T, missed=f"{data['label']} = {numbers['max_final']:.2e} > "
                                  f"{CONSENSUS_TOL:g} on some start"),
        numbers=numbers, tolerance=CONSENSUS_TOL, tolerance_reason=CONSENSUS_REASON, figures=figures,
        seeds=data["seeds"])


@named_check
def check_full_convergence_figure(data: dict[str, Any], figures: tuple[Figure, ...] = ()) -> CheckResult:
    """Thm 4.1: E -> 0 from every start in an open hemisphere."""
    return _decide(data, figures)


@named_check
def check_causal_identity_figure(data: dict[str, Any], figures: tuple[Figure, ...] = ()) -> CheckResult:
    """Thm 5.1: every token tends to y_1 from a start off {y_j = -y_1}."""
    return _decide(data, figures)


@named_check
def check_causal_symmetric_figure(data: dict[str, Any], figures: tuple[Figure, ...] = ()) -> CheckResult:
    """Thm 5.2: every token tends to v from a start in D^l(v)."""
    return _decide(data, figures)


#: Each figure's claim -> its check, as the registry ties them (each check is registered for one claim).
CHECKS = {c.claim: c.function for check in (check_full_convergence_figure, check_causal_identity_figure,
                                             check_causal_symmetric_figure) for c in registrations(check)}


def make_theorem_figure(claim: str, out: Path, *, reverse: bool = False) -> CheckResult:
    """Simulate ``claim``'s figure, write ``out/<claim>.png`` and return its check's record."""
    data = simulate(claim, reverse=reverse)
    out.mkdir(parents=True, exist_ok=True)
    return CHECKS[claim](data, (plot(data, out / f"{claim}.png"),))
