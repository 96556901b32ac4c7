"""``python -m sim bench --quick``: both problems run, answers agree, and the report section states each target."""

import json

import numpy as np
import pytest

from sim.bench.solvers import report_section, run_benchmark, write_outputs


@pytest.fixture(scope="module")
def quick_results():
    return run_benchmark(quick=True)


def test_both_problems_reach_equal_accuracy_on_the_manifold(quick_results):
    a, b = quick_results["a"], quick_results["b"]
    assert a["equal_accuracy"] and b["equal_accuracy"]
    assert a["ours"]["worst_error"] <= a["scipy"]["worst_error"]
    for run in (a["ours"], a["larger_batch"], b["ours"], *b["wall"]["runs"].values()):
        assert run["max_drift"] <= 1e-12  # the drift target
    assert set(b["wall"]["runs"]) == {"workers=1", f"workers={b['workers']}"}


def test_throughputs_are_ratios_measured_side_by_side(quick_results):
    rhs = quick_results["b"]["rhs"]
    assert rhs["fraction_of_matmul"] == pytest.approx(rhs["gflops"] / rhs["matmul_gflops"])
    wall = quick_results["b"]["wall"]
    for run in wall["runs"].values():
        work = run["evaluations"] * rhs["flops_per_evaluation"]
        for entry in run["rounds"]:  # each solve against the matmul held over a window as long as the solve
            assert entry["wall_over_bound"] == pytest.approx(entry["seconds"] * entry["held_gflops"] * 1e9 / work)
            assert entry["held_gflops"] <= entry["best_gflops"] * (1 + 1e-9)
        paired = [entry["wall_over_bound"] for entry in run["rounds"]]
        assert run["wall_over_bound"] == pytest.approx(np.median(paired))
        assert run["wall_over_best_single_bound"] == pytest.approx(
            min(entry["seconds"] for entry in run["rounds"]) * wall["matmul_best_gflops"] * 1e9 / work)
        assert run["evaluations"] == quick_results["b"]["ours"]["evaluations"]  # the same run, timed again


def test_speed_up_uses_the_median_of_our_timings(quick_results):
    a = quick_results["a"]
    assert len(a["ours"]["timings"]) == 5 and a["ours"]["seconds"] == np.median(a["ours"]["timings"])
    assert a["speedup_per_instance"] == pytest.approx(
        a["scipy"]["seconds_per_instance"] / (a["ours"]["seconds"] / a["instances"]))


def test_report_section_names_every_target_and_flags_a_quick_run(quick_results, tmp_path):
    section = report_section(quick_results)
    rows = section["tables"][0]["rows"]
    assert all(row[3] in ("met", "NOT met", "") for row in rows)
    assert sum("wall time" in row[0] and row[2] == "<= 1.5" for row in rows) == 2  # workers = 1 and N
    assert "QUICK RUN" in section["text"]
    write_outputs(quick_results, out=tmp_path / "bench.json", section=tmp_path / "section.json")
    assert json.loads((tmp_path / "bench.json").read_text())["summary"]["quick"] is True
    assert json.loads((tmp_path / "section.json").read_text())["title"] == section["title"]
