"""``python -m sim bench --part peers``: the comparison's bookkeeping, and a missing peer skipped with a visible
note."""

import numpy as np
import pytest

import sim.bench.peer_fields as peer_fields
import sim.bench.peers as peer_bench
from sim.bench.peers import TARGETS, compare, problems, table
from sim.bench.peer_fields import PREPARE, Systems, available
from tests.sim.installed import skip_unless_installed

PEERS = tuple(PREPARE)


def _tiny() -> Systems:
    """5 instances of problem (a) to t1 = 0.5 (seeded as the benchmark's)."""
    a = problems(quick=True)[0]
    return Systems("tiny (a)", a.P[:5], a.U[:5], False, a.y0[:5], 0.5, a.modulation)


def _results(problem):
    return {"benchmark": "test", "targets": list(TARGETS), "repeats": 1, "load_average_before": (0.0, 0.0, 0.0),
            "load_average_after": (0.0, 0.0, 0.0), "cpus": 2, "problems": [problem]}


def test_a_missing_peer_is_skipped_with_a_visible_note(monkeypatch):
    reason = "not installed: pip install -e '.[peers]'"
    monkeypatch.setattr(peer_bench, "available", lambda: {name: reason for name in PEERS})
    problem = compare(_tiny(), repeats=1)
    assert problem["libraries"]["diffrax"] == {"skipped": f"diffrax {reason}"}
    text = table(_results(problem))
    assert all(f"SKIPPED: {name} {reason}" in text for name in PEERS)
    # ours still runs at both accuracy levels, each run as accurate as its target
    for level in problem["levels"]:
        run = level["runs"]["ours"]
        assert run["worst_error"] <= level["target"] and run["seconds"] == np.median(run["timings"])
        assert level["ratios"] == {}


def _installed(name: str):
    """Skips visibly, naming the peer, when it is not installed; a peer that is installed must run."""
    skip_unless_installed(name, available()[name])


def _tiny_of_every_kind() -> list[Systems]:
    """3 instances of every problem of the benchmark (modulated heads; full and causal, one and several heads,
    S^2 and S^1), to t1 = 1."""
    return [Systems(f"tiny {s.name}", s.P[:3], s.U[:3], s.causal, s.y0[:3], 1.0, s.modulation)
            for s in problems(quick=False)]


@pytest.mark.parametrize("name", PEERS)
def test_each_installed_peer_integrates_every_problem_kind_to_the_end(name):
    """Our harness (the field in the peer's library, its solver's call) on every kind of bench problem: no
    exception, and the end states agree with ours. Nothing is caught here, so a failure of the harness (as
    diffrax's "Computation compiled for 14 inputs but called with 2" on the causal problem with JAX 0.10) fails."""
    _installed(name)
    for systems in _tiny_of_every_kind():
        ours = peer_bench._ours(systems)(1e-11)
        ends = PREPARE[name](systems).run(1e-8)
        assert ends.shape == systems.y0.shape and np.all(np.isfinite(ends)), systems.name
        assert np.max(np.abs(ends - ours)) < 1e-5, (name, systems.name)


_BUDGET_MESSAGES = {"diffrax": "maximum number of solver steps", "torchdiffeq": "max_num_steps exceeded",
                    "torchode": "torchode: REACHED_MAX_STEPS on 3 of 3 instances"}


@pytest.mark.parametrize("name", PEERS)
def test_a_peer_failure_is_recorded_in_the_peers_own_words(name, monkeypatch):
    """A run that stops early (its step budget, set to 3 steps here) is the peer's result, not ours: the ladder
    records it with the peer's own message and goes on with the benchmark."""
    _installed(name)
    monkeypatch.setattr(peer_fields, "PEER_MAX_STEPS", 3)
    systems = _tiny_of_every_kind()[2]  # causal
    tried = peer_bench._ladder(PREPARE[name](systems).run, np.zeros_like(systems.y0))
    failed = [entry["failed"] for entry in tried.values() if "failed" in entry]
    assert len(failed) == 1 and _BUDGET_MESSAGES[name] in failed[0], failed


def test_peers_run_at_equal_accuracy_and_report_compile_time_apart():
    for name, reason in available().items():
        skip_unless_installed(f"{name} (the extra .[peers])", reason)
    problem = compare(_tiny(), repeats=1)
    assert problem["libraries"]["diffrax"]["compile_seconds"] > 0
    for level in problem["levels"]:
        assert set(level["runs"]) == {"ours", *PEERS}
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


def test_threads_reach_every_library_and_the_table(monkeypatch):
    """``--threads N``: ours on N workers, the PyTorch peers on N threads (diffrax's XLA flags are per process)."""
    monkeypatch.setattr(peer_bench, "available", lambda: {name: (None if name == "torchdiffeq" and
                                                                 available()[name] is None else "absent")
                                                          for name in PEERS})
    problem = compare(_tiny(), repeats=1, threads=2)
    assert problem["libraries"]["ours"]["threads"] == "2 (workers)"
    if "skipped" not in problem["libraries"]["torchdiffeq"]:
        assert problem["libraries"]["torchdiffeq"]["threads"] == "2 (torch.set_num_threads)"
    assert problem["levels"][0]["runs"]["ours"]["worst_error"] <= TARGETS[0]
    assert "2 thread(s) per library" in table({**_results(problem), "threads": 2})


def test_a_ladder_that_buys_no_accuracy_stops_and_says_so():
    """A library whose worst error does not fall with its tolerance (a peer leaving the sphere) is not run down the
    whole ladder: after ``STALL`` coarse rungs without a decade of improvement it stops, marked as stalled."""
    reference = np.zeros((2, 3, 3))
    tried = peer_bench._ladder(lambda tol: reference + 1.8, reference)
    assert len(tried) == peer_bench.STALL + 1
    stalled = [entry["stalled"] for entry in tried.values() if "stalled" in entry]
    assert len(stalled) == 1 and "not converging to the reference" in stalled[0]
    problem = {"problem": "p", "libraries": {"ours": {"first_call_seconds": 0.0}, "peer": {"compile_seconds": 0.0,
               "ladder": {f"{tol:.3g}": entry for tol, entry in tried.items()}}},
               "levels": [{"target": target, "runs": {}} for target in TARGETS]}
    assert "not reached (worst error 1.8-1.8" in table(_results(problem))


def _fake_peer(calls):
    """A peer that records the keyword arguments it is prepared with and returns ours' ends at every tolerance."""

    def prepare(systems, **options):
        calls.append(options)
        ends = peer_bench._ours(systems)(1e-11)
        return peer_fields.PreparedPeer("fake", lambda tol: ends, 0.0, options["device"], "fake")
    return prepare


def test_the_chosen_peers_run_on_the_chosen_device(monkeypatch):
    """``--libraries`` and ``--device``: only the named peers are prepared, each with the device and thread count
    (ours on the CPU either way); a peer not named is neither run nor listed."""
    calls = []
    monkeypatch.setattr(peer_bench, "PREPARE", {"fake": _fake_peer(calls), "other": _fake_peer(calls)})
    monkeypatch.setattr(peer_bench, "available", lambda: {"fake": None, "other": None})
    problem = compare(_tiny(), repeats=1, threads=2, device="cuda", peers=("fake",))
    assert calls == [{"threads": 2, "device": "cuda"}]
    assert set(problem["libraries"]) == {"ours", "fake"} and problem["libraries"]["fake"]["threads"] == "cuda"
    assert set(problem["levels"][0]["runs"]) == {"ours", "fake"}
    # control: with no choice, every peer is prepared
    calls.clear()
    compare(_tiny(), repeats=1, device="cpu")
    assert calls == [{"threads": 1, "device": "cpu"}] * 2


def test_the_command_line_refuses_an_unknown_peer(capsys):
    from sim.__main__ import main

    with pytest.raises(SystemExit) as stop:
        main(["bench", "--part", "peers", "--libraries", "diffrax,nonesuch"])
    assert stop.value.code == 2
    assert "name peers among diffrax, torchdiffeq, torchode" in capsys.readouterr().err


def test_the_benchmark_records_the_device_and_the_versions(monkeypatch):
    monkeypatch.setattr(peer_bench, "problems", lambda quick: [_tiny()])
    monkeypatch.setattr(peer_bench, "available", lambda: {name: "absent" for name in PEERS})
    result = peer_bench.run_peer_benchmark(quick=True, device="cuda")
    assert result["device"] == "cuda" and set(result["versions"]) >= {"jax", "diffrax", "torch", "torchode"}
    assert "the peers on cuda" in table(result)
