"""``python -m sim bench --part peers``: the comparison's bookkeeping, and a missing peer skipped with a visible
note."""

import numpy as np
import pytest

import sim.bench.peers as peer_bench
from sim.bench.peers import TARGETS, compare, problems, table
from sim.bench.peer_fields import Systems, available


def _tiny() -> Systems:
    """5 instances of problem (a) to t1 = 0.5 (seeded as the benchmark's)."""
    a = problems(quick=True)[0]
    return Systems("tiny (a)", a.P[:5], a.U[:5], False, a.y0[:5], 0.5, a.modulation)


def _results(problem):
    return {"benchmark": "test", "targets": list(TARGETS), "repeats": 1, "load_average_before": (0.0, 0.0, 0.0),
            "load_average_after": (0.0, 0.0, 0.0), "cpus": 2, "problems": [problem]}


def test_a_missing_peer_is_skipped_with_a_visible_note(monkeypatch):
    reason = "not installed: pip install -e '.[peers]'"
    monkeypatch.setattr(peer_bench, "available", lambda: {"diffrax": reason, "torchdiffeq": reason})
    problem = compare(_tiny(), repeats=1)
    assert problem["libraries"]["diffrax"] == {"skipped": f"diffrax {reason}"}
    text = table(_results(problem))
    assert f"SKIPPED: diffrax {reason}" in text and f"SKIPPED: torchdiffeq {reason}" in text
    # ours still runs at both accuracy levels, each run as accurate as its target
    for level in problem["levels"]:
        run = level["runs"]["ours"]
        assert run["worst_error"] <= level["target"] and run["seconds"] == np.median(run["timings"])
        assert level["ratios"] == {}


@pytest.mark.skipif(any(available().values()), reason="the extra .[peers] (diffrax, jax, torchdiffeq) is not installed")
def test_peers_run_at_equal_accuracy_and_report_compile_time_apart():
    problem = compare(_tiny(), repeats=1)
    assert problem["libraries"]["diffrax"]["compile_seconds"] > 0
    for level in problem["levels"]:
        assert set(level["runs"]) == {"ours", "diffrax", "torchdiffeq"}
        for name, run in level["runs"].items():
            assert run["worst_error"] <= level["target"], name  # equal accuracy: each meets the target
        ours = level["runs"]["ours"]["seconds"]
        assert level["ratios"]["diffrax"] == pytest.approx(level["runs"]["diffrax"]["seconds"] / ours)
    assert "x ours" in table(_results(problem))


def test_a_peer_that_fails_is_recorded_and_its_ladder_stops():
    reference = np.zeros((2, 3, 3))
    calls = []

    def run(tol):  # error 10 x tol, and the step budget spent below tol 1e-7
        calls.append(tol)
        if tol < 1e-7:
            raise RuntimeError("The maximum number of solver steps was reached.")
        return reference + 10 * tol

    tried = peer_bench._ladder(run, reference)
    failed = [entry for entry in tried.values() if "failed" in entry]
    assert len(failed) == 1 and "maximum number of solver steps" in failed[0]["failed"]
    assert np.isinf(failed[0]["worst_error"]) and min(calls) < 1e-7 and len(calls) == len(tried)
    assert peer_bench._loosest(tried, TARGETS[0]) is None  # 1e-7 needs tol 1e-8: never reached
