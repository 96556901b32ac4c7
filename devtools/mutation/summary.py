"""The summary of a mutation run (mutmut's results, cosmic-ray's session, the equivalents) and the report's
section on it; the package docstring (devtools/mutation/__init__.py) describes the whole run."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import resource
import subprocess
import time
from pathlib import Path
from typing import Any, Mapping

from foundation.records import ReportSection, Table

from .compiled import LEFT_TO_MUTMUT, mutant_anchor, session_sources

SUMMARY = Path("build/mutants/summary.json")
#: The last whole run's summary, kept in the repository (copied from SUMMARY after a complete `make mutants`; it
#: names its revisions): what the report shows in a tree where `make mutants` has not run.
RECORDED = Path("docs/mutation-summary.json")
EQUIVALENTS = Path("tests/mutation/equivalent.toml")
#: The outcomes a mutant can have in the summary (mutmut's statuses, "equivalent" for a listed survivor).
OUTCOMES = ("killed", "timeout", "survived", "equivalent", "no tests", "excluded", "not checked", "other")
#: mutmut's exit codes (mutmut/stats.py) -> outcome; anything else (segfault, suspicious, ...) is "other".
_OUTCOME_BY_EXIT_CODE = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", None: "not checked",
                         36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout"}


def mutmut_function(mutant: str) -> str:
    """mutmut's key of a mutant's function: "sim.field.manifold.xǁSphereǁproject__mutmut_3" ->
    "sim.field.manifold.xǁSphereǁproject" (its map of tests and its function hashes are keyed so)."""
    return mutant.rpartition("__mutmut_")[0]


def module_name(mutant: str) -> str:
    """The module of a mutant: mutmut's "sim.field.manifold.xǁSphereǁproject__mutmut_3" or cosmic-ray's (as named by
    ``read_cosmic_ray``) "sim.field.kernels:sphere_drift@+6:7:core/NumberReplacer#0" -> "sim.field.manifold",
    "sim.field.kernels"."""
    module = ""
    if "__mutmut_" in mutant:
        module = mutmut_function(mutant).rpartition(".")[0]
    elif "@" in mutant:
        head, colon, _ = mutant.split("@")[0].partition(":")
        module = head if colon else ""
    if module:
        return module
    raise ValueError(f"mutant={mutant!r} must be a mutmut name 'package.module.function__mutmut_N' or a "
                     "cosmic-ray one 'package.module:function@+row:col:operator#k'.")


def mutmut_outcomes(exit_codes: Mapping[str, int | None], scope: tuple[str, ...] = ("*",)) -> dict[str, str]:
    """mutant name -> outcome from mutmut's exit codes, for the mutants that match a glob of ``scope`` (the names
    `mutmut run` was given)."""
    return {name: _OUTCOME_BY_EXIT_CODE.get(code, "other") for name, code in exit_codes.items()
            if any(fnmatch.fnmatchcase(name, glob) for glob in scope)}


def summarise(outcomes: Mapping[str, str], equivalents: Mapping[str, str], *, scope: tuple[str, ...] = ("*",),
              runs: tuple[Mapping[str, Any], ...] = (), fresh: int = 0) -> dict[str, Any]:
    """The per-module counts of ``outcomes`` (mutant name -> one of OUTCOMES but "equivalent") with
    ``equivalents`` (mutant name -> reason) applied; ``scope`` the globs mutmut ran, ``runs`` what the run's
    segments cost (``measure``'s records), if measured; ``fresh`` how many of the outcomes are those of crashed
    mutants run again in a fresh process (devtools/mutation/fresh.py)."""
    unknown = set(outcomes.values()) - set(OUTCOMES) | ({"equivalent"} & set(outcomes.values()))
    if unknown:
        raise ValueError(f"outcomes must be among {OUTCOMES} (not 'equivalent': the list decides); got {unknown}.")
    modules: dict[str, dict[str, Any]] = {}
    for mutant, outcome in sorted(outcomes.items()):
        if outcome == "survived" and mutant in equivalents:
            outcome = "equivalent"
        entry = modules.setdefault(module_name(mutant), {**{o: 0 for o in OUTCOMES}, "survivors": []})
        entry[outcome] += 1
        if outcome in ("survived", "no tests", "other"):
            entry["survivors"].append(mutant)
    for entry in modules.values():
        entry["total"] = sum(entry[o] for o in OUTCOMES)
        entry["score"] = _score(entry)
    totals = {o: sum(m[o] for m in modules.values()) for o in (*OUTCOMES, "total")}
    totals["score"] = _score(totals)
    # stale: killed now, or gone; a mutant not run yet (an interrupted session) is neither
    stale = {name: reason for name, reason in sorted(equivalents.items())
             if outcomes.get(name) not in ("survived", "not checked")}
    return {"modules": modules, "totals": totals, "equivalents": dict(sorted(equivalents.items())),
            "stale_equivalents": stale, "scope": list(scope), "runs": [dict(run) for run in runs], "fresh": fresh}


def _score(counts: Mapping[str, int]) -> float | None:
    """detected / non-equivalent mutants, those no test reaches and those whose tests crashed without a verdict
    included (None when there were none)."""
    detected = counts["killed"] + counts["timeout"]
    considered = detected + counts["survived"] + counts["no tests"] + counts["other"]
    return detected / considered if considered else None


def read_results(folder: Path) -> dict[str, int | None]:
    """mutant name -> exit code from mutmut's ``*.py.meta`` files under ``folder`` (its ``mutants/``)."""
    metas = sorted(Path(folder).rglob("*.py.meta"))
    if not metas:
        raise FileNotFoundError(f"folder={str(folder)!r} must hold mutmut's *.py.meta results (run `make mutants`).")
    codes: dict[str, int | None] = {}
    for meta in metas:
        codes.update(json.loads(meta.read_text())["exit_code_by_key"])
    return codes


#: How pytest-timeout fails a test that ran past the test command's --timeout (tests/mutation/compiled.toml): the
#: mutant timed out, as when cosmic-ray's own time limit stops the command.
PYTEST_TIMEOUT = re.compile(r"Failed: Timeout \(>[\d.]+s\) from pytest-timeout")


def read_cosmic_ray(session: Path, root: Path = Path(".")) -> dict[str, str]:
    """mutant name -> outcome from a cosmic-ray session (its SQLite file); a mutant its operator filter skipped
    is "excluded" (the reasons are in tests/mutation/compiled.toml), a timeout (cosmic-ray's or pytest-timeout's) is
    "timeout"; one left to mutmut (``compiled.leave_to_mutmut``) is not listed: mutmut's results count it.

    A mutant is named ``module:anchor@+offset:col:operator#k``: the function, method or class around it (or
    ``<name>`` of the top-level statement), its row counted from that anchor's first line
    (``compiled.mutant_anchor``, on the source the session was made from: ``compiled.session_sources``), its
    column and operator, and k numbering the mutants of that operator at that place. cosmic-ray's own rows and
    occurrences count from the top of the file, so an edit anywhere above would rename a mutant; these names
    change only when the anchor itself is edited, when its mutants must be read again anyway."""
    import sqlite3

    if not Path(session).exists():
        raise FileNotFoundError(f"session={str(session)!r} must be a cosmic-ray session (run `make mutants`).")
    query = ("SELECT s.module_path, s.definition_name, s.start_pos_row, s.start_pos_col, s.operator_name, s.occurrence, "
             "r.worker_outcome, r.test_outcome, r.output FROM mutation_specs s LEFT JOIN work_results r USING (job_id)")
    with sqlite3.connect(f"file:{session}?mode=ro", uri=True) as db:
        rows = db.execute(query).fetchall()
    texts = session_sources(session, {row[0] for row in rows}, root)
    outcomes, places = {}, {}
    for path, function, row, col, operator, occurrence, worker, test, output in sorted(rows, key=_by_occurrence):
        module = str(Path(path).with_suffix("")).replace("/", ".")
        anchor, first = mutant_anchor(texts[path], function, row)
        place = f"{module}:{anchor}@+{row - first}:{col}:{operator}"
        places[place] = places.get(place, -1) + 1
        worker, test = (None if v is None else v.lower() for v in (worker, test))  # cosmic-ray stores "KILLED"
        if worker == "skipped" and output == LEFT_TO_MUTMUT:
            continue
        if worker is None:
            outcome = "not checked"
        elif worker == "skipped":
            outcome = "excluded"
        elif test == "killed":
            outcome = "timeout" if output == "timeout" or PYTEST_TIMEOUT.search(output or "") else "killed"
        elif test == "survived":
            outcome = "survived"
        else:
            outcome = "other"
        outcomes[f"{place}#{places[place]}"] = outcome
    return outcomes


def _by_occurrence(row: tuple) -> tuple:
    """A session row's order among the mutants of its file and operator: cosmic-ray's occurrence count."""
    path, _, _, _, operator, occurrence = row[:6]
    return path, operator, occurrence


def revision(folder: Path = Path(".")) -> str:
    """The git commit checked out in ``folder``, with "+modified" when tracked files differ from it, or "unknown"
    outside a git work tree."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True).stdout

    try:
        commit = git("rev-parse", "HEAD").strip()
        modified = git("status", "--porcelain", "--untracked-files=no").strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+modified" if modified else "")


def measure(command: list[str], *, interval: float = 30.0) -> dict[str, Any]:
    """Run ``command`` and return what it cost: its exit code, the revision it ran on (read before it starts:
    cosmic-ray modifies the tree while it runs), wall seconds, CPU seconds (user + system of every process it
    started and waited for) and the 1-minute load average sampled every ``interval`` seconds."""
    if not command:
        raise ValueError("command must name the program to run (after `--`).")
    measured = revision()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    process = subprocess.Popen(command)
    load = [os.getloadavg()[0]]
    while True:
        try:
            code = process.wait(timeout=interval)
            break
        except subprocess.TimeoutExpired:
            load.append(os.getloadavg()[0])
    seconds = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"command": command, "exit_code": code, "revision": measured, "seconds": seconds, "cpu_seconds": cpu,
            "load_average": {"mean": sum(load) / len(load), "max": max(load), "samples": len(load)},
            "cores": os.cpu_count()}


def read_equivalents(path: Path = EQUIVALENTS) -> dict[str, str]:
    """The checked-in equivalent mutants: ``[equivalent]`` table of mutant name -> one-line reason."""
    import tomllib  # Python >= 3.11, like mutmut's own configuration reading; only `make mutants` calls this

    table = tomllib.loads(Path(path).read_text()).get("equivalent", {})
    missing = [name for name, reason in table.items() if not str(reason).strip()]
    if missing:
        raise ValueError(f"every equivalent mutant in {path} must give its reason; these do not: {missing}.")
    return dict(table)


def section(summary_path: Path = SUMMARY, recorded: Path = RECORDED) -> ReportSection:
    """The report's section: per module killed / timed out / survived / equivalent / untested and the score;
    when ``summary_path`` does not exist, the run ``recorded`` in the repository, said to be that, or how to
    produce one."""
    title = "Mutation testing of the core modules"
    origin = ""
    if not Path(summary_path).exists():
        if not Path(recorded).exists():
            return ReportSection(title, f"No mutation run yet ({SUMMARY} does not exist): `make mutants` runs "
                                        "mutmut over the core modules and writes it (docs/mutation.md gives "
                                        "the time measured).", order=90)
        summary_path = recorded
        origin = (f"No mutation run in this tree ({SUMMARY} does not exist): shown is the last whole run, recorded "
                  f"in {RECORDED} at the revisions named below; `make mutants` measures this tree. ")
    summary = json.loads(Path(summary_path).read_text())
    rows = []
    for name, m in [*sorted(summary["modules"].items()), ("all", summary["totals"])]:
        score = "-" if m["score"] is None else f"{100 * m['score']:.1f}%"
        rows.append((name, m["total"], m["killed"], m["timeout"], m["survived"], m["equivalent"], m["no tests"],
                     m["excluded"], m["other"], m["not checked"], score))
    text = origin + ("mutmut changes one operator, constant or call at a time in the core modules and reruns the tests that "
            "reach the changed function; a mutant the tests notice is killed. Score = (killed + timed out) / "
            "(killed + timed out + survived + reached by no test + crashed: its test process died without a "
            "verdict); equivalent mutants (no test can tell them from the original) are "
            "counted apart, each with its reason in tests/mutation/equivalent.toml. mutmut leaves decorated "
            "functions alone, so the Numba kernels (sim.field.kernels, sim.field.instances, sim.solvers.compiled) are mutated by "
            "cosmic-ray, in git clones of the tree; their tests run with NUMBA_DISABLE_JIT=1 (the same loops in "
            "Python); operators excluded there by construction (tests/mutation/compiled.toml) are counted as "
            "excluded.")
    if summary.get("scope", ["*"]) != ["*"]:
        text += " Mutants in scope (mutmut's names): " + ", ".join(f"`{g}`" for g in summary["scope"]) + "."
    text += " " + _cost(summary.get("runs", []))
    if summary["stale_equivalents"]:
        text += (" Listed as equivalent but no longer surviving (stale entries to remove): "
                 + ", ".join(summary["stale_equivalents"]) + ".")
    if summary.get("fresh"):
        text += (f" {summary['fresh']} mutants whose test process crashed in mutmut's fork were run again, each in a "
                 "fresh process (devtools/mutation/fresh.py), and are counted by that run's verdict.")
    survivors = [(s,) for m in summary["modules"].values() for s in m["survivors"]]
    tables = [Table("Mutants per module", ("module", "mutants", "killed", "timed out", "survived", "equivalent",
                                           "no test reaches it", "excluded", "crashed", "not run", "score"),
                    tuple(rows))]
    if survivors:
        tables.append(Table("Surviving mutants, crashed ones and those no test reaches (`mutmut show NAME`)",
                            ("mutant",), tuple(survivors)))
    return ReportSection(title, text, tables=tuple(tables), order=90)


def _cost(runs: list[Mapping[str, Any]]) -> str:
    """What the run cost, in words: revision, wall and CPU time, load average (over its segments)."""
    if not runs:
        return "The run's cost was not measured."
    revisions = sorted({run["revision"] for run in runs})
    cpu = [run["cpu_seconds"] for run in runs]
    loads = [run["load_average"] for run in runs if run.get("load_average")]
    text = (f"Measured at revision {', '.join(revisions)}" + (f" in {len(runs)} segments" if len(runs) > 1 else "")
            + f": {sum(run['seconds'] for run in runs) / 60:.0f} min of wall time, ")
    text += ("CPU time not measured" if None in cpu else f"{sum(cpu) / 60:.0f} min of CPU time")
    if loads:
        mean = sum(load["mean"] * load["samples"] for load in loads) / sum(load["samples"] for load in loads)
        text += (f", load average {mean:.1f} (at most {max(load['max'] for load in loads):.1f}) on "
                 f"{runs[0].get('cores')} cores: the machine was shared, which inflates the wall time")
    return text + "."
