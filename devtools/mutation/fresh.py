"""mutmut's crashed mutants, run again each in a fresh process (``python -m devtools.mutation fresh``).

mutmut 3.8.1 forks every mutant's test process from one that has already imported and run the suite. A mutant that
makes Numba compile a kernel for argument types it has not seen crashes that fork (SIGABRT), where a fresh process
compiles the kernel and the tests then fail on its wrong values: measured on 5 mutants of sim/field/dynamics.py in
the run of 2026-11-27 (a sixth segfaulted in a fresh process too: an undersized buffer written past its end, now
refused by the field). mutmut records such a mutant as "suspicious" or "segfault": neither killed nor survived, so
the summary can only call it a crash. ``rerun`` runs the same tests (mutmut's map of tests to functions,
``mutants/mutmut-stats.json``) with mutmut's pytest arguments in a new Python process per mutant and keeps each exit
code with the hash of the function it was measured on (``build/mutants/fresh.json``); the summary
(``apply_fresh``) counts a crashed mutant killed in a fresh process as killed, one whose tests pass there as a
survivor, and only while mutmut's result is still that crash for the same code; one that crashes the fresh process
too (a segmentation fault, an abort) is detected: the test command fails with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .summary import mutmut_function, mutmut_outcomes, read_results

FRESH = Path("build/mutants/fresh.json")
#: mutmut 3.8.1's own pytest arguments for a mutant's tests (mutmut/runners/harness.py), run from mutants/.
PYTEST_ARGS = ("--rootdir=.", "--tb=native", "-x", "-q", "-p", "no:randomly", "-p", "no:random-order")
#: A fresh run stopped after this long is recorded as timed out (exit code TIMED_OUT). Reason: mutmut's own limit
#: for these tests is 3 x (their time + 60 s) (pyproject.toml [tool.mutmut]); their slowest map (the field's
#: _weights, 115 tests) took 40 s in a fresh process here, so 600 s leaves a factor of 15 for a loaded machine.
TIMEOUT_SECONDS = 600.0
TIMED_OUT = 124
#: The signals with which a mutant's own code crashes a test process (abort, bus error, floating-point exception,
#: segmentation fault): crashed again in a fresh process, the mutant is detected, as the test command cannot pass
#: with it (one of the field's kernels given an array of the wrong rank writes past its end). Not SIGKILL, which is
#: how the machine stops a process for its memory or time.
CRASH_SIGNALS = (-6, -7, -8, -11)
#: A fresh run's exit code -> outcome: pytest's 1 (a test failed) and a crash by one of CRASH_SIGNALS are killed,
#: 0 (all passed) survived, a timeout detected (as mutmut's); anything else stays "other".
_OUTCOME = {1: "killed", 0: "survived", TIMED_OUT: "timeout", **{code: "killed" for code in CRASH_SIGNALS}}


def crashed(folder: Path, scope: Sequence[str]) -> list[str]:
    """The in-``scope`` mutants whose mutmut result under ``folder`` (mutants/) is a crash (outcome "other")."""
    return sorted(name for name, outcome in mutmut_outcomes(read_results(folder), tuple(scope)).items()
                  if outcome == "other")


def rerun(folder: Path, names: Sequence[str], *,
          run: Callable[..., subprocess.CompletedProcess] = subprocess.run) -> dict[str, dict[str, Any]]:
    """Each of ``names`` with its function's tests (mutmut's map in ``folder``/mutmut-stats.json) in a fresh
    ``python -m pytest`` in ``folder`` with MUTANT_UNDER_TEST set: name -> its exit code, the count of tests and
    the function's hash (mutmut's, of the code measured)."""
    stats = json.loads((folder / "mutmut-stats.json").read_text())
    results = {}
    for name in names:
        tests = sorted(stats["tests_by_mangled_function_name"].get(mutmut_function(name), ()))
        if not tests:
            raise ValueError(f"mutant {name!r} has no tests in {folder}/mutmut-stats.json; it cannot have crashed "
                             "in them.")
        try:
            code = run([sys.executable, "-m", "pytest", *PYTEST_ARGS, *tests], cwd=folder,
                       env={**os.environ, "MUTANT_UNDER_TEST": name}, timeout=TIMEOUT_SECONDS,
                       capture_output=True).returncode
        except subprocess.TimeoutExpired:
            code = TIMED_OUT
        results[name] = {"exit_code": code, "tests": len(tests),
                         "function_hash": stats["function_hashes"].get(mutmut_function(name))}
        print(f"{name}: exit code {code} in a fresh process ({_OUTCOME.get(code, 'other')})", flush=True)
    return results


def apply_fresh(outcomes: Mapping[str, str], fresh: Mapping[str, Mapping[str, Any]],
                function_hashes: Mapping[str, str]) -> tuple[dict[str, str], int]:
    """``outcomes`` with each crash that ``fresh`` (``rerun``'s record) ran again on the same code (mutmut's
    ``function_hashes`` now) replaced by its fresh outcome; and how many were replaced."""
    applied = dict(outcomes)
    replaced = 0
    for name, result in fresh.items():
        if outcomes.get(name) == "other" and result["function_hash"] == function_hashes.get(mutmut_function(name)):
            applied[name] = _OUTCOME.get(result["exit_code"], "other")
            replaced += 1
    return applied, replaced


def function_hashes(folder: Path) -> dict[str, str]:
    """mutmut's hash of each function's current code (``folder``/mutmut-stats.json), or nothing before its first
    run: what ``apply_fresh`` compares a fresh result's hash with."""
    stats = Path(folder) / "mutmut-stats.json"
    return json.loads(stats.read_text()).get("function_hashes", {}) if stats.exists() else {}


def read_fresh(path: Path = FRESH) -> dict[str, dict[str, Any]]:
    """``rerun``'s record, or nothing when there is none."""
    return json.loads(Path(path).read_text()) if Path(path).exists() else {}


def fresh_command(folder: Path, scope: Sequence[str], out: Path = FRESH) -> int:
    """Run the crashed mutants of ``scope`` again (``rerun``) and add their results to ``out``."""
    names = crashed(folder, scope)
    print(f"mutmut: {len(names)} crashed mutant(s) to run again in a fresh process", flush=True)
    record = {**read_fresh(out), **rerun(folder, names)}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False))
    return 0
