"""``python -m sim bench --quick``: both problems run, answers agree, and the report section states each target."""

import json

import numpy as np
import pytest

import sim.bench.solvers as bench_solvers
import sim.field.dynamics as dynamics
from sim.bench.solvers import field_flops, report_section, run_benchmark, write_outputs
from sim.field.dynamics import AttentionField
from sim.figures.scenarios import causal_random_example, uniform_box_tokens


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
            assert entry["wall_over_field_products_bound"] == pytest.approx(
                entry["seconds"] * entry["field_products_gflops"] * 1e9 / work)
        paired = [entry["wall_over_bound"] for entry in run["rounds"]]
        assert run["wall_over_bound"] == pytest.approx(np.median(paired))
        assert run["wall_over_field_products_bound"] == pytest.approx(
            np.median([entry["wall_over_field_products_bound"] for entry in run["rounds"]]))
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


def test_the_timed_field_products_are_those_the_bound_counts(monkeypatch):
    """The products timed for the field's own rate do the FLOPs of ``field_flops``, no more and no fewer."""
    field = causal_random_example(4, dim=40).field
    y = uniform_box_tokens(np.random.default_rng(0), (7, 9, 40))
    counted = []

    def counting_matmul(a, b, out=None):
        counted.append(2.0 * np.prod(np.broadcast_shapes(a.shape[:-2], b.shape[:-2])) * a.shape[-2] * a.shape[-1]
                       * b.shape[-1])
        return np.matmul(a, b, out=out)

    monkeypatch.setattr(dynamics, "matmul", counting_matmul)
    monkeypatch.setattr(bench_solvers, "field_matmul", counting_matmul)
    bench_solvers._field_products(field, y)(y)
    assert sum(counted) == field_flops(7, 9, 40, field.heads, True)


def test_the_field_products_refuse_value_matrices():
    """Negative control: a field with U_eta != I has other products; timing the U = I ones would be wrong."""
    field = AttentionField(P=(np.eye(3),), U=(2.0 * np.eye(3),))
    with pytest.raises(ValueError, match="U_eta = I"):
        bench_solvers._field_products(field, np.zeros((2, 10, 3)))
