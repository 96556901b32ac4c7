"""mutmut's run of the scope, resumed: only the mutants with no result for their function's current code.

mutmut 3.8.1 keeps each mutant's result in ``mutants/<path>.py.meta`` and, when it regenerates the mutants of an edited
file, keeps the results of the functions whose code is unchanged (it compares each function's hash) and clears the
others'. But ``mutmut run NAMES`` runs every named mutant again, result or not, so `make mutants` with the scope's
globs reran all of them: hours of CPU on 2 cores since the audit joined the scope (docs/mutation.md,
"Measurements"), lost whenever a run was interrupted. ``resume`` names only the functions with a mutant still to run (``FUNCTION__mutmut_*``:
the named function's mutants run again, and mutmut looks up the tests of a glob safely, where an exact name of a
function no test reaches is a KeyError), then names again those whose results the regeneration cleared, until none
is left.

A result kept from an earlier run stands for the tests of that run: after a test was removed or weakened, start
afresh (`make mutants-fresh`). A test only added can kill a survivor: ``--survivors`` (`make mutants
AGAIN=--survivors`) runs the functions of the survivors not listed as equivalent again.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from .summary import mutmut_function, mutmut_outcomes, read_equivalents, read_results

#: At most this many calls of mutmut: the pending ones, then those whose results the first call's regeneration
#: cleared; a third finds none left unless mutmut leaves a mutant undecided (a crash), reported then.
ROUNDS = 3


def pending_functions(folder: Path, scope: Sequence[str], *, survivors: bool = False,
                      equivalents: Mapping[str, str] | None = None) -> list[str]:
    """The globs ``FUNCTION__mutmut_*`` of the in-``scope`` functions with a mutant without a result under ``folder``
    (mutmut's ``mutants/``), with ``survivors`` also those with a mutant that survived or that no test reached and
    is not listed in ``equivalents`` (default: tests/mutation/equivalent.toml); the ``scope`` itself when ``folder``
    holds no result yet (a first run)."""
    try:
        results = read_results(folder)
    except FileNotFoundError:
        return list(scope)
    again = {"not checked", "survived", "no tests"} if survivors else {"not checked"}
    listed = (read_equivalents() if equivalents is None else equivalents) if survivors else {}
    return sorted({mutmut_function(name) + "__mutmut_*"
                   for name, outcome in mutmut_outcomes(results, tuple(scope)).items()
                   if outcome in again and not (outcome == "survived" and name in listed)})


def mutmut_run(names: list[str]) -> int:
    """``mutmut run NAMES`` with the mutmut installed beside this Python (the project's virtual environment)."""
    return subprocess.call([str(Path(sys.executable).with_name("mutmut")), "run", *names])


def probe(folder: Path, scope: Sequence[str]) -> list[str]:
    """One in-``scope`` mutant that a test killed, by its exact name: run alone when nothing is left, it makes mutmut
    regenerate the mutants of edited files (clearing the results of changed functions) at the cost of one mutant
    (mutmut stops on names that match no mutant, and has no command that only regenerates)."""
    outcomes = mutmut_outcomes(read_results(folder), tuple(scope))
    return [min(name for name, outcome in outcomes.items() if outcome == "killed")]


def resume(scope: Sequence[str], folder: Path = Path("mutants"), *, survivors: bool = False,
           run: Callable[[list[str]], int] = mutmut_run) -> int:
    """Run mutmut (``run(names)``: ``mutmut run NAMES``) until every mutant of ``scope`` has a result for its
    current code (first, with ``survivors``, the functions of the unlisted survivors and untested mutants again);
    returns 0, mutmut's exit code when it fails, or 1 when mutants stay undecided."""
    names = pending_functions(folder, scope, survivors=survivors)
    for _ in range(ROUNDS):
        print(f"mutmut: {len(names)} function(s) with mutants to run" if names else
              "mutmut: no mutant to run; checking for edited functions", flush=True)
        code = run(names or probe(folder, scope))
        if code != 0:
            return code
        left = pending_functions(folder, scope)
        if not left:
            return 0
        if left == names:
            print(f"mutmut left {len(left)} function(s) undecided after running them: {', '.join(left[:5])}",
                  flush=True)
            return 1
        names = left
    return 1
