"""Mutation testing of the core modules: the summary `make mutants` writes, and the report's section on it.

`make mutants` runs mutmut (configuration: ``[tool.mutmut]`` in pyproject.toml), then
``python -m reports.mutation DIR OUT`` reads mutmut's results (``DIR/<package>/<module>.py.meta``) and the
checked-in list of equivalent mutants (tests/mutation/equivalent.toml: mutant name -> one-line reason) and writes
``OUT`` (build/mutants/summary.json). The score of a module is detected / non-equivalent mutants, where detected
= killed + timed out (a mutant that makes the tests hang is caught by the per-test time limit) and a mutant no
selected test reaches counts as undetected. A listed
equivalent counts apart only while it survives: one that a test now kills, or that no longer exists, is
reported as stale, never dropped silently.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path
from typing import Any, Mapping

from .records import ReportSection, Table

SUMMARY = Path("build/mutants/summary.json")
EQUIVALENTS = Path("tests/mutation/equivalent.toml")
#: The outcomes a mutant can have in the summary (mutmut's statuses, "equivalent" for a listed survivor).
OUTCOMES = ("killed", "timeout", "survived", "equivalent", "no tests", "not checked", "other")
#: mutmut's exit codes (mutmut/stats.py) -> outcome; anything else (segfault, suspicious, ...) is "other".
_OUTCOME_BY_EXIT_CODE = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", None: "not checked",
                         36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout"}


def module_name(mutant: str) -> str:
    """The module of a mutmut mutant name ("sim.manifold.xǁSphereǁproject__mutmut_3" -> "sim.manifold")."""
    head = mutant.split("__mutmut_")[0]
    parts = head.split(".")
    if len(parts) < 2:
        raise ValueError(f"mutant={mutant!r} must be a mutmut name 'package.module.function__mutmut_N'.")
    return ".".join(parts[:-1])


def summarise(exit_codes: Mapping[str, int | None], equivalents: Mapping[str, str], *,
              scope: tuple[str, ...] = ("*",), seconds: float | None = None) -> dict[str, Any]:
    """The per-module counts of ``exit_codes`` (mutant name -> mutmut's exit code) with ``equivalents`` (mutant
    name -> reason) applied, over the mutants that match a glob of ``scope`` (the names `mutmut run` was given);
    ``seconds`` the run's wall time, if measured."""
    exit_codes = {name: code for name, code in exit_codes.items()
                  if any(fnmatch.fnmatchcase(name, glob) for glob in scope)}
    modules: dict[str, dict[str, Any]] = {}
    for mutant, code in sorted(exit_codes.items()):
        outcome = _OUTCOME_BY_EXIT_CODE.get(code, "other")
        if outcome == "survived" and mutant in equivalents:
            outcome = "equivalent"
        entry = modules.setdefault(module_name(mutant), {**{o: 0 for o in OUTCOMES}, "survivors": []})
        entry[outcome] += 1
        if outcome in ("survived", "no tests"):
            entry["survivors"].append(mutant)
    for entry in modules.values():
        entry["total"] = sum(entry[o] for o in OUTCOMES)
        entry["score"] = _score(entry)
    totals = {o: sum(m[o] for m in modules.values()) for o in (*OUTCOMES, "total")}
    totals["score"] = _score(totals)
    stale = {name: reason for name, reason in sorted(equivalents.items())
             if _OUTCOME_BY_EXIT_CODE.get(exit_codes.get(name, -1), "other") != "survived"}
    return {"modules": modules, "totals": totals, "equivalents": dict(sorted(equivalents.items())),
            "stale_equivalents": stale, "scope": list(scope), "seconds": seconds}


def _score(counts: Mapping[str, int]) -> float | None:
    """detected / non-equivalent mutants, those no test reaches included (None when there were none)."""
    detected = counts["killed"] + counts["timeout"]
    considered = detected + counts["survived"] + counts["no tests"]
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


def read_equivalents(path: Path = EQUIVALENTS) -> dict[str, str]:
    """The checked-in equivalent mutants: ``[equivalent]`` table of mutant name -> one-line reason."""
    import tomllib  # Python >= 3.11, like mutmut's own configuration reading; only `make mutants` calls this

    table = tomllib.loads(Path(path).read_text()).get("equivalent", {})
    missing = [name for name, reason in table.items() if not str(reason).strip()]
    if missing:
        raise ValueError(f"every equivalent mutant in {path} must give its reason; these do not: {missing}.")
    return dict(table)


def section(summary_path: Path = SUMMARY) -> ReportSection:
    """The report's section: per module killed / timed out / survived / equivalent / untested and the score;
    when ``summary_path`` does not exist, how to produce it."""
    title = "Mutation testing of the core modules"
    if not Path(summary_path).exists():
        return ReportSection(title, f"No mutation run yet ({SUMMARY} does not exist): `make mutants` runs "
                                    "mutmut over the core modules and writes it (about an hour on 2 cores).", order=90)
    summary = json.loads(Path(summary_path).read_text())
    rows = []
    for name, m in [*sorted(summary["modules"].items()), ("all", summary["totals"])]:
        score = "-" if m["score"] is None else f"{100 * m['score']:.1f}%"
        rows.append((name, m["total"], m["killed"], m["timeout"], m["survived"], m["equivalent"], m["no tests"],
                     m["not checked"] + m["other"], score))
    seconds = summary.get("seconds")
    text = ("mutmut changes one operator, constant or call at a time in the core modules and reruns the tests that "
            "reach the changed function; a mutant the tests notice is killed. Score = (killed + timed out) / "
            "(killed + timed out + survived + reached by no test); equivalent mutants (no test can tell them from the original) are "
            "counted apart, each with its reason in tests/mutation/equivalent.toml. Numba kernels (@njit) are not "
            "mutated: mutmut leaves decorated functions alone.")
    if summary.get("scope", ["*"]) != ["*"]:
        text += " Mutants in scope (mutmut's names): " + ", ".join(f"`{g}`" for g in summary["scope"]) + "."
    if seconds is not None:
        text += f" Wall time of the run: {seconds / 60:.0f} min."
    if summary["stale_equivalents"]:
        text += (" Listed as equivalent but no longer surviving (stale entries to remove): "
                 + ", ".join(summary["stale_equivalents"]) + ".")
    survivors = [(s,) for m in summary["modules"].values() for s in m["survivors"]]
    tables = [Table("Mutants per module", ("module", "mutants", "killed", "timed out", "survived", "equivalent",
                                           "no test reaches it", "not run", "score"), tuple(rows))]
    if survivors:
        tables.append(Table("Surviving mutants and those no test reaches (`mutmut show NAME`)", ("mutant",), tuple(survivors)))
    return ReportSection(title, text, tables=tuple(tables), order=90)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.mutation",
                                     description="Summarise a mutmut run into build/mutants/summary.json.")
    parser.add_argument("results", type=Path, help="mutmut's results folder (mutants/)")
    parser.add_argument("out", type=Path, help="the summary to write (build/mutants/summary.json)")
    parser.add_argument("--equivalents", type=Path, default=EQUIVALENTS)
    parser.add_argument("--scope", nargs="+", default=["*"], help="the mutant-name globs `mutmut run` was given")
    parser.add_argument("--seconds", type=float, default=None, help="the run's measured wall time")
    args = parser.parse_args(argv)
    summary = summarise(read_results(args.results), read_equivalents(args.equivalents),
                        scope=tuple(args.scope), seconds=args.seconds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1, ensure_ascii=False))
    t = summary["totals"]
    print(f"{t['total']} mutants: {t['killed']} killed, {t['timeout']} timed out, {t['survived']} survived, "
          f"{t['equivalent']} equivalent, {t['no tests']} untested; score {t['score']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
