"""Peak resident memory of the report's stages: measured, recorded in a ledger, and held to a bound.

The report runs its heavy work (benchmarks, model runs, audits) in processes of their own, so that what one stage
allocated is returned to the system before the next starts (``empirical.isolation``). Each such process is a
*stage*: its peak resident set size (RSS) is read from the kernel when it ends (``os.wait4``'s ``ru_maxrss``, or the
process's own ``getrusage`` for the test process itself) and appended, one JSON line per stage, to the *ledger*
named by :data:`MEMORY_LEDGER_ENV`. The build shows the ledger in the report's manifest and refuses a peak above
its bound.

What runs at once: the benchmarks and the report's model jobs run alone, one after another, beside only the small
``python -m reports`` process that waits for them; then the test process runs, and while it runs at most one child
stage (a model run or an audit it finds missing) at a time, waiting for it. Each entry carries the resident memory of
the process that waited for it (``beside_rss_bytes``, measured as the stage started: a waiting process does not
grow). So the report's peak is at most the largest stage's peak plus what waited beside it (:func:`report_peak`).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

#: The environment variable naming the ledger file (JSON lines); unset: nothing is recorded.
MEMORY_LEDGER_ENV = "CONSENSUS_MEMORY_LEDGER"
#: Stage kinds: a benchmark runs alone; the test process runs with at most one child stage at a time.
ALONE, TEST_PROCESS, CHILD = "alone", "test-process", "child"
KINDS = (ALONE, TEST_PROCESS, CHILD)
GIB = 2 ** 30


def _rss_bytes(maxrss: int) -> int:
    """``ru_maxrss`` in bytes: kilobytes on Linux, bytes on macOS."""
    return int(maxrss) if sys.platform == "darwin" else int(maxrss) * 1024


def own_peak_bytes() -> int:
    """The peak RSS of this process so far, in bytes: Linux's ``VmHWM``, the high-water mark of this process's own
    memory. Not ``ru_maxrss`` there: a process started by ``vfork`` and ``exec`` (Python's ``subprocess`` and
    ``multiprocessing``'s spawn) inherits its parent's high-water mark in it (measured: every reused run's child
    reported the 3.8 GiB of the test process that started it). Elsewhere ``ru_maxrss``, an upper bound."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return _rss_bytes(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def own_rss_bytes() -> int:
    """This process's resident memory now, in bytes (Linux ``/proc``; elsewhere its peak so far, an upper bound)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return own_peak_bytes()
    return pages * os.sysconf("SC_PAGE_SIZE")


def record_stage(stage: str, peak_bytes: int, kind: str, seconds: float | None = None,
                 ledger: Path | str | None = None, beside_bytes: int | None = None) -> dict[str, Any] | None:
    """Append ``stage`` (a name a reader understands), its peak RSS and its ``kind`` (one of :data:`KINDS`) to the
    ledger (``ledger``, else :data:`MEMORY_LEDGER_ENV`); nothing when neither names one. ``beside_bytes``: the RSS
    of the process waiting for it. One short line written with ``O_APPEND``: stages of concurrent
    processes do not interleave. Returns the entry written."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} must be one of {KINDS}.")
    path = ledger or os.environ.get(MEMORY_LEDGER_ENV)
    if not path:
        return None
    entry = {"stage": stage, "kind": kind, "peak_rss_bytes": int(peak_bytes),
             "seconds": None if seconds is None else round(seconds, 1),
             "beside_rss_bytes": None if beside_bytes is None else int(beside_bytes)}
    with open(path, "a", encoding="utf-8") as ledger_file:
        ledger_file.write(json.dumps(entry) + "\n")
    return entry


def read_ledger(path: Path | str) -> list[dict[str, Any]]:
    """The stages recorded in ``path``, in order; an absent ledger has none. A line that is not a stage (a torn
    write of a killed process) is refused naming the file."""
    path = Path(path)
    if not path.is_file():
        return []
    stages = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            entry = json.loads(line)
            valid = entry["kind"] in KINDS and isinstance(entry["stage"], str) and entry["peak_rss_bytes"] >= 0
        except (ValueError, KeyError, TypeError):
            valid = False
        if not valid:
            raise ValueError(f"memory ledger {path}, line {number}, is not a stage record; delete the file and "
                             "rebuild the report.")
        stages.append(entry)
    return stages


def run_measured(command: Sequence[str], stage: str, kind: str = ALONE, **popen) -> int:
    """Run ``command`` to its end (``subprocess.Popen`` arguments in ``popen``), record its peak RSS (that of the
    largest process of its tree the kernel accounts to it) as ``stage``, and return its exit status. The figure is
    at least this process's own peak (Linux hands a child started by ``vfork`` the high-water mark of its parent):
    the build measures its stages from the small ``python -m reports`` process, never from a large one."""
    beside = own_rss_bytes()
    started = time.monotonic()
    process = subprocess.Popen(command, **popen)
    try:
        _, status, usage = os.wait4(process.pid, 0)
    except BaseException:
        process.kill()
        process.wait()
        raise
    process.returncode = os.waitstatus_to_exitcode(status)
    record_stage(stage, _rss_bytes(usage.ru_maxrss), kind, time.monotonic() - started,
                 ledger=(popen.get("env") or os.environ).get(MEMORY_LEDGER_ENV), beside_bytes=beside)
    return process.returncode


def report_peak(stages: list[dict[str, Any]]) -> int:
    """An upper bound of the report's peak RSS in bytes: the largest stage's peak plus the RSS of the process that
    waited beside it (for a child that does not say, the test process's own peak)."""
    process = max((s["peak_rss_bytes"] for s in stages if s["kind"] == TEST_PROCESS), default=0)

    def total(stage: dict[str, Any]) -> int:
        beside = stage.get("beside_rss_bytes")
        return stage["peak_rss_bytes"] + (process if beside is None and stage["kind"] == CHILD else beside or 0)

    return max([total(s) for s in stages] + [0])


def summary(stages: list[dict[str, Any]], bound_bytes: int | None = None) -> dict[str, Any]:
    """What the report's manifest records: every stage, the report's peak, the largest single stage and the bound."""
    return {
        "stages": stages,
        "report_peak_rss_bytes": report_peak(stages),
        "largest_stage_rss_bytes": max((s["peak_rss_bytes"] for s in stages), default=0),
        "bound_rss_bytes": bound_bytes,
    }


def over_bound(stages: list[dict[str, Any]], bound_bytes: int) -> str | None:
    """Why the report's peak exceeds ``bound_bytes`` (naming the stages that make it), or ``None`` within it."""
    peak = report_peak(stages)
    if peak <= bound_bytes:
        return None
    heaviest = sorted(stages, key=lambda s: -s["peak_rss_bytes"])[:3]
    named = ", ".join(f"{s['stage']} ({s['kind']}) {s['peak_rss_bytes'] / GIB:.2f} GiB" for s in heaviest)
    return (f"the report's peak resident memory, {peak / GIB:.2f} GiB, exceeds the bound of {bound_bytes / GIB:.2f} "
            f"GiB; the largest stages: {named}")
