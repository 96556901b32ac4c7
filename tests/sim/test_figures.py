"""Figures 1-6 of the paper (sec. 6.1 / ICML 5.1): each is simulated with the printed matrices, its observation
checked on the numbers, and the figure handed to the report beside the paper's figure number.

The default run uses the paper's systems with fewer trajectories/instances for Figs. 4-6 (``size="fast"``);
``--full`` adds the paper's sizes (Fig. 4: 100 trajectories of 50 tokens in R^500).
"""

import json

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from foundation.registration import check
from foundation.scale import report_scale
from sim.field.reversed import TimeReversed
from sim.figures.numbers import measure_figure2, measure_figure3, measure_figure4, measure_figure5, measure_figure6
from sim.figures.plots import (check_figure2, check_figure3, check_figure4, figure_data, make_figure, simulate_figure2,
                               simulate_figure5)
from sim.figures.scenarios import full_attention_example, symmetric_value_example


#: The paper's sizes of the full checks; at the smoke scale of a report build (foundation/scale.py) the fast ones.
FULL_SIZE = "fast" if report_scale() == "smoke" else "full"


@pytest.fixture(scope="session")
def figure_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("sim-figures")


def _made(number, figure_dir, size, record):
    output = make_figure(number, figure_dir / size, size=size)
    assert output.png.stat().st_size > 10_000
    written = json.loads(output.data_path.read_text())
    assert written["figure"] == number and written["check"]["verdict"] == output.result.verdict
    result = record(output.result)
    assert result.verdict == "verified", result.detail
    assert result.figures[0].paper_figure == f"Fig. {number}"
    return result


@check("sim.fig1", method="figure")
def test_figure1_norms_of_the_printed_P_are_bounded_and_periodic(figure_dir, record):
    _made(1, figure_dir, "fast", record)


@check("sim.fig2", method="figure")
def test_figure2_tokens_stay_in_the_hemisphere_and_meet(figure_dir, record):
    result = _made(2, figure_dir, "fast", record)
    assert result.numbers["min_t_min_i_v.y_i"] > 0
    assert result.numbers["max_drift"] <= 1e-12


@check("sim.fig3", method="figure")
def test_figure3_lyapunov_function_never_increases(figure_dir, record):
    _made(3, figure_dir, "fast", record)


@check("sim.fig4", method="figure")
def test_figure4_misalignment_vanishes_on_every_trajectory_reduced(figure_dir, record):
    """The paper's system at 4 of its 100 trajectories (BLAS on one thread: the machine is shared)."""
    with threadpool_limits(limits=1, user_api="blas"):
        result = _made(4, figure_dir, "fast", record)
    assert result.numbers["first_token_motion"] <= 1e-12  # U = I, causal: the first token is fixed


@pytest.mark.full
@check("sim.fig4", method="figure")
def test_figure4_misalignment_vanishes_on_all_100_trajectories(figure_dir, record):
    result = _made(4, figure_dir, FULL_SIZE, record)
    assert result.numbers["trajectories"] == (100 if FULL_SIZE == "full" else 4)


@check("sim.fig5", method="figure")
def test_figure5_tokens_stay_in_the_hemisphere_of_v_and_converge_to_v(figure_dir, record):
    _made(5, figure_dir, "fast", record)


@check("sim.fig6", method="figure")
def test_figure6_V1_is_monotone_and_V2_is_not(figure_dir, record):
    result = _made(6, figure_dir, "fast", record)
    assert result.numbers["instances_V2_increasing"] > 0


@pytest.mark.full
@check("sim.fig5", method="figure")
@check("sim.fig6", method="figure")
def test_figures5_and_6_on_1000_initial_states(figure_dir, record):
    for number in (5, 6):
        _made(number, figure_dir, FULL_SIZE, record)


@pytest.fixture(scope="module")
def reversed_figure2():
    """The Fig. 2-3 run of the time-reversed model (tokens repel)."""
    return simulate_figure2(201, field=TimeReversed(full_attention_example()))


@check("sim.fig2", method="figure", control=True)
@check("sim.fig3", method="figure", control=True)
def test_figure_checks_reject_the_time_reversed_model(reversed_figure2):
    data = reversed_figure2
    assert check_figure2(data).verdict == "refuted"
    assert check_figure3(data).verdict == "refuted"
    assert np.max(np.diff(data["V"])) > 1e-3


def test_figure_checks_report_an_unmet_hypothesis_instead_of_a_verdict():
    """Initial tokens outside H+(v) (here: v flipped) are not a counterexample: the check says so."""
    data = dict(simulate_figure2(51))
    data["v"] = [-x for x in data["v"]]
    result = check_figure2(data)
    assert result.verdict == "not-run"
    assert result.detail.startswith("hypothesis not met")


@check("sim.fig4", method="figure", control=True)
def test_figure4_check_rejects_misalignment_that_levels_off():
    """E that decays but stalls at 5e-3 (below the final-value bound) is not E -> 0: the check says refuted."""
    t = np.linspace(0.0, 150.0, 301)
    stalled = 0.005 + np.exp(-0.1 * t)
    data = {"t": t.tolist(), "E": [stalled.tolist(), np.exp(-0.05 * t).tolist()], "trajectories": 2,
            "first_token_motion": 0.0, "evaluations": 0, "max_drift": 0.0}
    result = check_figure4(data)
    assert result.numbers["max_final_E"] <= 1e-2
    assert result.verdict == "refuted"


# --- the numeric checks: the numbers of each figure's own solution (sim/figures/numbers.py) ---------------------
@check(measure_figure2)
def test_figure2_numbers_margin_stays_positive_and_diameter_vanishes(record):
    result = record(measure_figure2(figure_data(2, "fast")))
    assert result.verdict == "verified", result.detail
    assert result.numbers["min_t_min_i_v.y_i"] > 0.05 and result.numbers["diameter(T)"] <= 1e-3


@check(measure_figure3)
def test_figure3_numbers_largest_increase_of_V_is_round_off(record):
    result = record(measure_figure3(figure_data(3, "fast")))
    assert result.verdict == "verified", result.detail


@check(measure_figure4)
def test_figure4_numbers_final_E_is_small_on_every_trajectory(record):
    with threadpool_limits(limits=1, user_api="blas"):
        result = record(measure_figure4(figure_data(4, "fast")))
    assert result.verdict == "verified", result.detail


@check(measure_figure5)
def test_figure5_numbers_margin_stays_positive_and_tokens_reach_v(record):
    result = record(measure_figure5(figure_data(5, "fast")))
    assert result.verdict == "verified", result.detail


@check(measure_figure6)
def test_figure6_numbers_V1_monotone_V2_not_and_both_vanish(record):
    result = record(measure_figure6(figure_data(6, "fast")))
    assert result.verdict == "verified", result.detail


@check("sim.fig2", method="numeric", control=True)
@check("sim.fig3", method="numeric", control=True)
def test_figure2_and_3_numbers_reject_the_time_reversed_model(reversed_figure2):
    """Negative control: repelling tokens leave H+(v), spread, and V increases."""
    assert measure_figure2(reversed_figure2).verdict == "refuted"
    result = measure_figure3(reversed_figure2)
    assert result.verdict == "refuted" and result.numbers["largest_increase_V"] > 1e-3


@check("sim.fig4", method="numeric", control=True)
def test_figure4_numbers_reject_misalignment_that_levels_off():
    """Negative control: E that stalls at 5e-3 on one trajectory (small at the end, no longer decaying)."""
    t = np.linspace(0.0, 150.0, 301)
    data = {"t": t.tolist(), "E": [(0.005 + np.exp(-0.1 * t)).tolist(), np.exp(-0.05 * t).tolist()]}
    result = measure_figure4(data)
    assert result.numbers["max_final_E"] <= 1e-2 and result.verdict == "refuted"


@check("sim.fig5", method="numeric", control=True)
@check("sim.fig6", method="numeric", control=True)
def test_figure5_and_6_numbers_reject_the_time_reversed_model():
    """Negative control: with the field's sign flipped the tokens leave D^l(v) and V_1 increases."""
    data = simulate_figure5("fast", 101, field=TimeReversed(symmetric_value_example()))
    assert measure_figure5(data).verdict == "refuted"
    result = measure_figure6(data)
    assert result.verdict == "refuted" and result.numbers["max_increase_V1_all"] > 1e-3
