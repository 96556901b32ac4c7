"""The report's memory: stages measured in processes of their own, the ledger, the bound, and a planted leak.

`make report` was killed by the kernel at 23.2 GB when one process ran the models one after another; the fix runs
each model run and audit in a child process (empirical/isolation.py) and holds the report's peak to a bound
(foundation/memory.py). Each test here can fail: the negative controls show the measurement sees what it must.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from empirical.isolation import in_child
from foundation.memory import (ALONE, CHILD, GIB, MEMORY_LEDGER_ENV, TEST_PROCESS, over_bound, own_peak_bytes, read_ledger,
                            record_stage, report_peak, run_measured, summary)

ROOT = Path(__file__).resolve().parents[2]
MIB = 2 ** 20
#: What the planted allocations hold: far above the noise of a Python process's peak (tens of MiB), small enough
#: for the 2-core CI machine.
PLANTED = 300 * MIB

_KEPT: list = []  # the planted leak: a module-level list that keeps what it is given


def keep_bytes(count: int) -> int:
    """Allocate ``count`` bytes, touch every page (so they are resident) and keep them in a module-level list."""
    block = bytearray(count)
    block[::4096] = b"\x01" * len(block[::4096])
    _KEPT.append(block)
    return len(_KEPT)


def naive_peak_bytes() -> int:
    """The child's ``ru_maxrss`` in bytes (Linux): the figure that inherits the parent's high-water mark."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def fail_in_child() -> None:
    raise ValueError("raised in the child")


def test_ledger_records_and_reads_stages(tmp_path, monkeypatch):
    ledger = tmp_path / "memory.jsonl"
    monkeypatch.setenv(MEMORY_LEDGER_ENV, str(ledger))
    record_stage("benchmark sim-bench", 3 * GIB, ALONE, 12.0)
    record_stage("run a", 2 * GIB, CHILD)
    record_stage("pytest (the test process)", 1 * GIB, TEST_PROCESS)
    stages = read_ledger(ledger)
    assert [s["stage"] for s in stages] == ["benchmark sim-bench", "run a", "pytest (the test process)"]
    assert report_peak(stages) == 3 * GIB  # the benchmark alone beats the test process with its child (1 + 2)
    record_stage("run b", 2.5 * GIB, CHILD)
    assert report_peak(read_ledger(ledger)) == 3.5 * GIB  # now the test process's peak with its largest child
    record_stage("run c", 2.5 * GIB, CHILD, beside_bytes=0.25 * GIB)  # what waited beside it, measured: less
    assert report_peak(read_ledger(ledger)) == 3.5 * GIB
    record_stage("run d", 3.5 * GIB, CHILD, beside_bytes=0.25 * GIB)
    assert report_peak(read_ledger(ledger)) == 3.75 * GIB
    assert summary(read_ledger(ledger), 4 * GIB)["largest_stage_rss_bytes"] == 3.5 * GIB


def test_nothing_is_recorded_without_a_ledger(monkeypatch):
    monkeypatch.delenv(MEMORY_LEDGER_ENV, raising=False)
    assert record_stage("run a", GIB, CHILD) is None


def test_a_torn_ledger_line_is_refused_naming_the_file(tmp_path):
    ledger = tmp_path / "memory.jsonl"
    ledger.write_text(json.dumps({"stage": "a", "kind": CHILD, "peak_rss_bytes": 1}) + "\n{\"stage\": \"b\", \"ki")
    with pytest.raises(ValueError, match=r"memory.jsonl, line 2"):
        read_ledger(ledger)
    with pytest.raises(ValueError, match="kind"):
        record_stage("a", 1, "sideways")


def test_the_previous_ledger_read_once_gives_the_builds_estimate(tmp_path):
    """The build reads the previous ledger once (``previous_stages``) for its estimate and its jobs' time left: an
    absent or torn ledger gives no stages and the note; a whole one the time from nothing, the test process's
    stage counted once as its longest."""
    from reports.__main__ import previous_stages, stage_estimates

    ledger = tmp_path / "memory.jsonl"
    assert previous_stages(ledger) == []
    ledger.write_text(json.dumps({"stage": "a", "kind": CHILD, "peak_rss_bytes": 1}) + "\n{\"stage\": \"b\", \"ki")
    assert previous_stages(ledger) == []
    assert stage_estimates([]) == "no earlier build in this folder to estimate the time from"
    stages = [{"stage": "job a", "kind": ALONE, "peak_rss_bytes": 1, "seconds": 600.0},
              {"stage": "run b", "kind": CHILD, "peak_rss_bytes": 1, "seconds": 300.0},
              {"stage": "pytest (the test process)", "kind": TEST_PROCESS, "peak_rss_bytes": 1, "seconds": 900.0}]
    ledger.write_text("".join(json.dumps(stage) + "\n" for stage in stages))
    assert previous_stages(ledger) == stages
    assert stage_estimates(stages).startswith("the last build here took 30 min from nothing (3 stages;")


def test_the_bound_names_the_stages_that_break_it():
    stages = [{"stage": "run gpt-neo", "kind": CHILD, "peak_rss_bytes": 11 * GIB, "seconds": 1.0},
              {"stage": "pytest (the test process)", "kind": TEST_PROCESS, "peak_rss_bytes": 2 * GIB, "seconds": 1.0}]
    assert over_bound(stages, 13 * GIB) is None  # at the bound: within it
    why = over_bound(stages, 12 * GIB)
    assert why is not None and "13.00 GiB" in why and "run gpt-neo" in why


def test_a_measured_command_reports_its_own_peak(tmp_path):
    """Measured from a small process, as `python -m reports build` starts its stages (a forked child starts with
    the high-water mark of the process that forked it, so the measuring process must be small). Control: a command
    that allocates nothing."""
    ledger = tmp_path / "memory.jsonl"
    allocate = f"b = bytearray({PLANTED}); b[::4096] = b'x' * len(b[::4096])"
    measure = ("import sys; from foundation.memory import run_measured; "
               "sys.exit(run_measured([sys.executable, '-c', sys.argv[1]], sys.argv[2]))")
    for name, command in (("allocates", allocate), ("allocates nothing", "pass")):
        subprocess.run([sys.executable, "-c", measure, command, name], cwd=ROOT, check=True,
                       env={MEMORY_LEDGER_ENV: str(ledger), "PATH": "/usr/bin:/bin"})
    big, nothing = read_ledger(ledger)
    assert big["peak_rss_bytes"] >= PLANTED > PLANTED // 2 > nothing["peak_rss_bytes"]


def test_a_run_in_a_child_leaves_nothing_in_this_process(tmp_path, monkeypatch):
    """The child keeps its allocation in a module-level list (a leak); this process's peak does not see it, the
    ledger does. Control: the same leak in this process raises its peak."""
    ledger = tmp_path / "memory.jsonl"
    monkeypatch.setenv(MEMORY_LEDGER_ENV, str(ledger))
    before = own_peak_bytes()
    assert in_child("planted leak", keep_bytes, PLANTED) == 1
    assert own_peak_bytes() < before + PLANTED // 3
    stage = read_ledger(ledger)[0]
    assert stage["peak_rss_bytes"] >= PLANTED and 0 < stage["beside_rss_bytes"] < before + PLANTED // 3
    with pytest.raises(ValueError, match="raised in the child"):
        in_child("fails", fail_in_child)
    # control: kept here, the same allocation is this process's
    try:
        keep_bytes(PLANTED)
        assert own_peak_bytes() >= before + PLANTED // 3 or before >= PLANTED  # (a peak already above it hides it)
    finally:
        _KEPT.clear()


def test_a_child_is_measured_without_its_parents_peak(tmp_path, monkeypatch):
    """A child started while this process holds 300 MiB records its own peak, not this process's (a spawned child
    inherits its parent's high-water mark in ru_maxrss: the control reads that figure in the child)."""
    ledger = tmp_path / "memory.jsonl"
    monkeypatch.setenv(MEMORY_LEDGER_ENV, str(ledger))
    try:
        keep_bytes(PLANTED)
        inherited = in_child("naive", naive_peak_bytes)
        in_child("own", int)
    finally:
        _KEPT.clear()
    _, own = read_ledger(ledger)
    # the control: the child's ru_maxrss carries this process's peak (which holds the 300 MiB); the recorded figure,
    # the child's own (an interpreter with torch imported, ~0.3 GiB), lies well below it
    assert sys.platform != "linux" or inherited >= own["peak_rss_bytes"] + PLANTED // 2
    assert own["beside_rss_bytes"] >= PLANTED


PLANTED_LEAK_TEST = f'''
_KEPT = []

def test_keeps_a_model_in_a_module_level_list():
    block = bytearray({PLANTED})
    block[::4096] = b"\\x01" * len(block[::4096])
    _KEPT.append(block)
'''


def test_report_build_fails_on_a_planted_leak(tmp_path):
    """`python -m reports build` (as CI's smoke run calls it) exits 3, naming the test process, when a test keeps
    300 MiB in a module-level list under a bound of 250 MiB; the same build under a bound of 4 GiB passes."""
    tests = tmp_path / "planted"
    tests.mkdir()
    (tests / "test_planted.py").write_text(PLANTED_LEAK_TEST)

    def build(out: str, bound_gib: float) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "reports", "build", "--out", str(tmp_path / out), "--no-bench",
                               "--no-jobs", "--scale", "smoke", "--max-rss", str(bound_gib), "--", str(tests), "-q",
                               "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True)

    leaking = build("leaking", 0.25)
    assert leaking.returncode == 3, leaking.stdout[-2000:] + leaking.stderr[-2000:]
    assert "exceeds the bound" in leaking.stderr and "pytest (the test process)" in leaking.stderr
    within = build("within", 4)
    assert within.returncode == 0, within.stdout[-2000:] + within.stderr[-2000:]
    manifest = json.loads((tmp_path / "within" / "verdicts.json").read_text())["manifest"]
    assert manifest["scale"] == "smoke" and manifest["memory"]["report_peak_rss_bytes"] >= PLANTED
