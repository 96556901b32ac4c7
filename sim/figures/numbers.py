"""The numeric checks of Figs. 2-6 (claims ``sim.fig2`` .. ``sim.fig6``, method ``numeric``): the numbers,
measured on each figure's own solution (``sim.figures.plots.figure_data``), that decide the statement the paper prints
beside the figure. Pure functions of the figure's data; each returns one ``CheckResult`` with the deciding numbers
and the tolerance they are compared with, by the rules of ``sim.figures.plots`` (its module docstring): ``refuted``
only when the run contradicts a statement about finite times beyond the integration error, ``unsupported`` when a
limit was not reached within the horizon, ``verified`` otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from foundation.registration import claim_result, named_check
from foundation.records import CheckResult

from sim.figures.plots import (CONSENSUS_REASON, CONSENSUS_TOL, E_FLOOR_REASON, FIG4_REASON, FIG4_TOL, MONOTONE_REASON,
                               MONOTONE_TOL, SEEDS, figure3_sentence, figure3_verdict, figure4_verdict, figure5_sentence,
                               figure5_verdict, figure6_sentence, figure6_verdict, finite_run_verdict,
                               last_quarter_slopes, left_hemisphere, verdict_sentence)

#: Consensus read off the tokens' diameter max_ij |y_i - y_j| at the horizon.
DIAMETER_TOL = 1e-3
DIAMETER_REASON = ("Consensus is asymptotic: a diameter max_ij |y_i - y_j| below 1e-3 at the horizon, from about 2 "
                   "(tokens spread over a hemisphere) at t = 0, is three orders of decrease; the integration error "
                   "(rtol <= 1e-9) is far below it.")


def _diameter(y: np.ndarray) -> float:
    """max_ij |y_i - y_j| of tokens ``y : shape=[l, d]``."""
    return float(np.max(np.linalg.norm(y[:, None, :] - y[None, :, :], axis=-1)))


@named_check
def measure_figure2(data: dict[str, Any]) -> CheckResult:
    """Fig. 2 (data ``y : shape=[time, l, 3]``, ``v : shape=[3]``): the hemisphere margin min_t min_i v^T y_i(t)
    is positive (start and remain in H+(v)) and the diameter at the horizon is below DIAMETER_TOL; ``refuted`` when
    it falls below -MONOTONE_TOL (a token left H+(v)), ``unsupported`` when the diameter has not fallen that far."""
    y, v = np.array(data["y"]), np.array(data["v"])
    margin = y @ v
    numbers = {"min_i_v.y_i(0)": float(margin[0].min()), "min_t_min_i_v.y_i": float(margin.min()),
               "diameter(0)": _diameter(y[0]), "diameter(T)": _diameter(y[-1]), "T": data["t"][-1]}
    verdict = finite_run_verdict(contradicted=left_hemisphere(margin.min()),
                                 shown=margin.min() > 0 and numbers["diameter(T)"] <= DIAMETER_TOL)
    return claim_result(
        verdict,
        detail=f"On the Fig. 2 solution the smallest v^T y_i over all samples and tokens is "
               f"{numbers['min_t_min_i_v.y_i']:.3g} (> 0: the tokens start and remain in H+(v)) and the tokens' "
               f"diameter goes from {numbers['diameter(0)']:.3g} to {numbers['diameter(T)']:.2e} at t = "
               f"{data['t'][-1]:g}."
               + verdict_sentence(verdict, horizon=data["t"][-1], missed=f"diameter {numbers['diameter(T)']:.2e} > "
                                  f"{DIAMETER_TOL:g} or a margin {margin.min():.1e} within {MONOTONE_TOL:g} of the "
                                  "boundary", contradiction=f"a token left H+(v) (v^T y_i = {margin.min():.3g})"),
        numbers=numbers, tolerance=DIAMETER_TOL, tolerance_reason=DIAMETER_REASON,
        seeds={"fig2.initial": SEEDS["fig2.initial"]})


@named_check
def measure_figure3(data: dict[str, Any]) -> CheckResult:
    """Fig. 3 (data ``V : shape=[time]``, eq. 7/10 with v = (1, 0, 0)): the largest increase of V between samples
    is at most MONOTONE_TOL and V(T) < V(0) (``figure3_verdict``)."""
    V = np.array(data["V"])
    largest = float(np.max(np.diff(V)))
    numbers = {"largest_increase_V": largest, "V(0)": float(V[0]), "V(T)": float(V[-1]), "samples": int(V.size)}
    verdict = figure3_verdict(V)
    return claim_result(
        verdict,
        detail=f"Along the Fig. 2 solution the largest increase of V between consecutive samples is {largest:.2e} "
               f"(of {V.size} samples) and V goes from {V[0]:.3f} to {V[-1]:.3f}."
               + figure3_sentence(V, data["t"][-1], verdict),
        numbers=numbers, tolerance=MONOTONE_TOL, tolerance_reason=MONOTONE_REASON,
        seeds={"fig2.initial": SEEDS["fig2.initial"]})


@named_check
def measure_figure4(data: dict[str, Any]) -> CheckResult:
    """Fig. 4 (data ``E : shape=[trajectory, time]``): E at the horizon is at most FIG4_TOL on every trajectory,
    and log E still falls at rate >= FIG4_MIN_RATE over the last quarter of the horizon on every trajectory (E at
    the float64 floor E_FLOOR counts as converged; ``figure4_verdict``)."""
    E, t = np.array(data["E"]), np.array(data["t"])
    slopes, _ = last_quarter_slopes(E, t)
    slowest = float(slopes.max())
    numbers = {"trajectories": int(E.shape[0]), "max_final_E": float(E[:, -1].max()),
               "slowest_log_E_slope_last_quarter": slowest, "T": float(t[-1])}
    verdict = figure4_verdict(E, slopes)
    return claim_result(
        verdict,
        detail=f"E at t = {t[-1]:g} is at most {numbers['max_final_E']:.2e} on all {E.shape[0]} trajectories, and "
               f"the slowest decay of log E over the last quarter has slope {slowest:.3g} (-inf: at the float64 "
               "floor, converged)."
               + verdict_sentence(verdict, horizon=t[-1], missed=f"largest E(T) {numbers['max_final_E']:.2e} (bound "
                                  f"{FIG4_TOL:g}), slowest slope {slowest:.3g}"),
        numbers=numbers, tolerance=FIG4_TOL, tolerance_reason=f"{FIG4_REASON} {E_FLOOR_REASON}",
        seeds={"fig4.matrices": SEEDS["fig4.matrices"], "fig4.initial": SEEDS["fig4.initial"]})


@named_check
def measure_figure5(data: dict[str, Any]) -> CheckResult:
    """Figs. 5 (all instances): the margin min over time, instances and tokens of v^T y_i is positive, and the
    largest 1 - v^T y_i at the horizon (= |y_i - v|^2 / 2 on the sphere) is at most CONSENSUS_TOL
    (``figure5_verdict``)."""
    numbers = {"instances": data["instances"], "min_t_min_i_v.y_i_all": data["min_alignment_all"],
               "final_max_i_1-v.y_i_all": data["final_max_V_all"],
               "final_max_i_|y_i-v|_all": float(np.sqrt(2.0 * data["final_max_V_all"])), "T": data["t"][-1]}
    verdict = figure5_verdict(data)
    return claim_result(
        verdict,
        detail=f"On {data['instances']} initial states in D^l(v) the smallest v^T y_i over time and tokens is "
               f"{data['min_alignment_all']:.3g} and every token ends within {numbers['final_max_i_|y_i-v|_all']:.1e}"
               f" of v at t = {data['t'][-1]:g}."
               + figure5_sentence(data, verdict),
        numbers=numbers, tolerance=CONSENSUS_TOL, tolerance_reason=CONSENSUS_REASON,
        seeds={"fig5.initial": SEEDS["fig5.initial"]})


@named_check
def measure_figure6(data: dict[str, Any]) -> CheckResult:
    """Fig. 6 (all instances): V_1 never increases by more than MONOTONE_TOL, V_2 does on some instance, and every
    1 - v^T y_i (V_2 among them) is at most CONSENSUS_TOL at the horizon (``figure6_verdict``)."""
    numbers = {"instances": data["instances"], "max_increase_V1_all": data["max_increase_V1_all"],
               "instances_V2_increasing": data["instances_V2_increasing"],
               "max_increase_V2": data["max_increase_V2"], "final_max_V_all": data["final_max_V_all"]}
    verdict = figure6_verdict(data)
    return claim_result(
        verdict,
        detail=f"On {data['instances']} initial states: largest increase of V_1 {data['max_increase_V1_all']:.1e}; "
               f"V_2 increases by more than {MONOTONE_TOL:g} on {data['instances_V2_increasing']} of them (largest "
               f"{data['max_increase_V2']:.3g}); largest V_i at the horizon {data['final_max_V_all']:.1e}."
               + figure6_sentence(data, verdict),
        numbers=numbers, tolerance=MONOTONE_TOL,
        tolerance_reason=f"{MONOTONE_REASON} V -> 0 is read at the horizon to {CONSENSUS_TOL:g}: {CONSENSUS_REASON}",
        seeds={"fig5.initial": SEEDS["fig5.initial"]})
