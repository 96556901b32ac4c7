"""``python -m devtools.mutation``: summarise a mutation run, run mutmut on what is left of it (``resume``), its
crashed mutants in fresh processes (``fresh``) or cosmic-ray's session (``compiled``), or measure what a command
costs (``measure``); `make mutants` calls all five (devtools/mutation/__init__.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .compiled import run_session
from .fresh import FRESH, apply_fresh, fresh_command, function_hashes, read_fresh
from .resume import resume
from .summary import EQUIVALENTS, measure, mutmut_outcomes, read_cosmic_ray, read_equivalents, read_results, summarise


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["measure"]:
        return _measure_command(argv[1:])
    if argv[:1] == ["compiled"]:
        return _compiled_command(argv[1:])
    if argv[:1] == ["resume"]:
        return _resume_command(argv[1:])
    if argv[:1] == ["fresh"]:
        return _fresh_command(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m devtools.mutation",
                                     description="Summarise a mutmut run into build/mutants/summary.json.")
    parser.add_argument("results", type=Path, help="mutmut's results folder (mutants/)")
    parser.add_argument("out", type=Path, help="the summary to write (build/mutants/summary.json)")
    parser.add_argument("--equivalents", type=Path, default=EQUIVALENTS)
    parser.add_argument("--scope", nargs="+", default=["*"], help="the mutant-name globs `mutmut run` was given")
    parser.add_argument("--cosmic-ray", type=Path, default=None, help="cosmic-ray's session of the compiled code")
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="the project the session's module paths are relative to (its git repository)")
    parser.add_argument("--run", type=Path, action="append", default=[],
                        help="what a segment of the run cost (`measure`'s record; repeat for each segment)")
    parser.add_argument("--fresh", type=Path, default=FRESH,
                        help="crashed mutants run again in a fresh process (`fresh`'s record), if any")
    args = parser.parse_args(argv)
    outcomes = mutmut_outcomes(read_results(args.results), tuple(args.scope))
    outcomes, fresh = apply_fresh(outcomes, read_fresh(args.fresh), function_hashes(args.results))
    if args.cosmic_ray is not None:
        outcomes.update(read_cosmic_ray(args.cosmic_ray, args.root))
    runs = tuple(json.loads(path.read_text()) for path in args.run)
    summary = summarise(outcomes, read_equivalents(args.equivalents), scope=tuple(args.scope), runs=runs,
                        fresh=fresh)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1, ensure_ascii=False))
    t = summary["totals"]
    print(f"{t['total']} mutants: {t['killed']} killed, {t['timeout']} timed out, {t['survived']} survived, "
          f"{t['equivalent']} equivalent, {t['no tests']} untested; score {t['score']}", file=sys.stderr)
    return 0


def _measure_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.mutation measure",
                                     description="Run a command and record its revision, wall and CPU time, load.")
    parser.add_argument("out", type=Path, help="the record to write (build/mutants/run.json)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    record = measure(command)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1))
    print(f"{record['seconds'] / 60:.1f} min wall, {record['cpu_seconds'] / 60:.1f} min CPU, load average "
          f"{record['load_average']['mean']:.1f} at {record['revision']}", file=sys.stderr)
    return record["exit_code"]


def _compiled_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.mutation compiled",
                                     description="Run cosmic-ray's session over the Numba-compiled code.")
    parser.add_argument("config", type=Path, help="cosmic-ray's configuration (tests/mutation/compiled.toml)")
    parser.add_argument("session", type=Path, help="the session file to make (build/mutants/compiled.sqlite)")
    parser.add_argument("--survivors", action="store_true",
                        help="also run the surviving mutants of a resumed session again (after adding tests)")
    args = parser.parse_args(argv)
    return run_session(args.config, args.session, survivors=args.survivors)


def _fresh_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.mutation fresh",
                                     description="Run mutmut's crashed mutants of the scope again, each in a fresh "
                                                 "process (devtools/mutation/fresh.py).")
    parser.add_argument("scope", nargs="+", help="the mutant-name globs of the scope (the Makefile's MUTANTS_SCOPE)")
    args = parser.parse_args(argv)
    return fresh_command(Path("mutants"), args.scope)


def _resume_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.mutation resume",
                                     description="Run mutmut on the scope's mutants that have no result for their "
                                                 "current code (devtools/mutation/resume.py).")
    parser.add_argument("--survivors", action="store_true",
                        help="also run the surviving and untested mutants not listed as equivalent (after adding tests)")
    parser.add_argument("scope", nargs="+", help="the mutant-name globs of the scope (the Makefile's MUTANTS_SCOPE)")
    args = parser.parse_args(argv)
    return resume(args.scope, survivors=args.survivors)


if __name__ == "__main__":
    raise SystemExit(main())
