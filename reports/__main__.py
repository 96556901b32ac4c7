"""``python -m reports build [--out DIR]``: the full verification, writing ``DIR/index.html``;
``python -m reports compare OLD NEW [--expected FILE]``: do two ``verdicts.json`` say the same (``reports.compare``)?

The top of the package: it orchestrates (benchmarks, then pytest with the report plugin) and imports the layers
below it; nothing imports it.

Checks the output folder and the pytest arguments first (seconds), then runs the benchmarks (their results
become report sections), then the whole pytest suite with the expensive checks included and the ``thorough``
Hypothesis profile. DIR may be any folder, inside the project or not, absolute or relative to the current one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from .build import (EXTRA_SECTIONS_DIR_ENV, MEMORY_BOUND_ENV, SECTION_REVISION_KEY, ReportInputError,
                    check_reused_sections, read_section)
from foundation.files import write_json
from foundation.helpformat import Parser, parse
from foundation.manifest import git_revision
from foundation.memory import GIB, MEMORY_LEDGER_ENV, over_bound, read_ledger, run_measured
from foundation.scale import REPORT_SCALE_ENV, SCALE_DESCRIPTIONS, SCALES, default_scale
from foundation.outputs import OutputError, check_output_folder, claim_output_folder, output_lock
from .checkout import BUILD_FOLDER_ENV, FULL_ENV, report_prerequisites

ROOT = Path(__file__).resolve().parent.parent

#: ``build``'s output folder, relative to the current folder (as every command's output folder; not to the
#: installed source).
DEFAULT_OUT = Path("build") / "report"

#: Benchmarks whose JSON becomes a report section: (name, module). Each takes --out and --section.
BENCHMARKS = (("sim-bench", "sim"), ("empirical-bench", "empirical"))


def pytest_command(out: Path, pytest_args: list[str]) -> list[str]:
    """The report's pytest command. Its root, configuration and plugin are named explicitly: left to itself pytest
    takes the common folder of its arguments as the root, and with an ``out`` outside the project it found no
    ``pyproject.toml``, so no plugin and no ``--report-dir`` option."""
    return [sys.executable, "-m", "pytest", "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"),
            "-p", "reports.pytest_plugin", f"--report-dir={out}", *pytest_args]


def check_pytest_arguments(out: Path, pytest_args: list[str], env: dict[str, str]) -> tuple[int, list[str]]:
    """Parse the arguments and collect the tests they select (``--collect-only``, no report), so that a bad argument
    or a test module that does not import fails before the benchmarks; return pytest's exit status (0: usable) and
    the selected tests' ids."""
    checked = subprocess.run([*pytest_command(out, pytest_args), "--collect-only", "-q", "--no-report"], cwd=ROOT,
                             env=env, capture_output=True, text=True)
    if checked.returncode == 0:
        return 0, [line for line in checked.stdout.splitlines() if "::" in line]
    lines = (checked.stdout + checked.stderr).strip().splitlines()
    print("\n".join(lines[-30:]), file=sys.stderr)
    if checked.returncode == 5:
        print(f"error: the pytest arguments {pytest_args} select no tests; nothing would be verified.",
              file=sys.stderr)
    else:
        print(f"error: pytest refused the arguments {pytest_args} (exit status {checked.returncode}, above); "
              "nothing was run.", file=sys.stderr)
    return checked.returncode, []


def run_benchmark(name: str, module: str, out: Path, sections: Path, revision: str, env: dict[str, str]) -> None:
    """Run one benchmark; keep its section stamped with ``revision``, or none if it failed (never an old one)."""
    section = sections / f"{name}.section.json"
    section.unlink(missing_ok=True)
    command = [sys.executable, "-m", module, "bench", "--out", str(out / f"{name}.json"), "--section", str(section)]
    print("+", " ".join(command), flush=True)
    status = run_measured(command, f"benchmark {name}", cwd=ROOT, env=env)
    try:
        if status != 0:
            raise ReportInputError(f"benchmark {name} failed with exit status {status}")
        raw = read_section(section)
    except ReportInputError as error:
        section.unlink(missing_ok=True)
        print(f"{error}; the report will lack its section", file=sys.stderr)
        return
    write_json(section, {**raw, SECTION_REVISION_KEY: revision})


def default_memory_bound() -> int:
    """Half of this machine's memory, in bytes: the report must leave the other half to whatever else runs."""
    import psutil

    return psutil.virtual_memory().total // 2


def previous_stages(ledger: Path) -> list[dict[str, Any]]:
    """The stages the previous build in this folder recorded in ``ledger`` (``foundation.memory.read_ledger``); none
    when there was none, or when its ledger is torn (a killed build): the estimates then say they have nothing."""
    try:
        return read_ledger(ledger)
    except ValueError:
        return []


def stage_estimates(stages: list[dict[str, Any]]) -> str:
    """What the previous build's ``stages`` took, as the time a rebuild from nothing needs; or a note that there is
    no previous build to estimate from."""
    if not stages:
        return "no earlier build in this folder to estimate the time from"
    total = sum(s["seconds"] or 0 for s in stages if s["kind"] != "test-process")
    process = max((s["seconds"] or 0 for s in stages if s["kind"] == "test-process"), default=0)
    return (f"the last build here took {(total + process) / 60:.0f} min from nothing ({len(stages)} stages; runs and "
            "audits kept under build/ are reused and cost nothing)")


#: The module whose jobs (the report's model runs and audits) the build runs alone before the tests, and the test
#: files that read what they leave: the jobs run only when the selected tests include one of these.
REPORT_JOBS = "empirical.report_jobs"
JOB_READERS = ("tests/empirical/test_claims.py", "tests/audit/test_audit_full.py")


def run_report_jobs(env: dict[str, str], previous: list[dict[str, Any]]) -> None:
    """Run each of the report's model jobs (``python -m empirical.report_jobs``) as a stage of its own, alone, with
    progress and the time left as the last build in this folder measured it (its ``previous`` stages). A failed
    job is reported and left to the tests, which make what is missing themselves (in a child process) and fail
    where it fails."""
    listed = subprocess.run([sys.executable, "-m", REPORT_JOBS, "--list"], cwd=ROOT, env=env, capture_output=True,
                            text=True)
    if listed.returncode != 0:
        print(f"error: the report's jobs could not be listed:\n{listed.stderr[-2000:]}", file=sys.stderr)
        return
    names = listed.stdout.split("\n")
    names = [name for name in names if name]
    last = {s["stage"]: s["seconds"] for s in previous}
    for index, name in enumerate(names, start=1):
        left = [last.get(f"job {n}") for n in names[index - 1:]]
        eta = (f"about {sum(left) / 60:.0f} min left by the last build" if all(t is not None for t in left)
               else "time left unknown (no earlier build measured these jobs)")
        print(f"[job {index}/{len(names)}] {name}: {eta}", flush=True)
        status = run_measured([sys.executable, "-m", REPORT_JOBS, "--run", name], f"job {name}", cwd=ROOT, env=env)
        if status != 0:
            print(f"job {name} failed (exit status {status}); its tests will say why", file=sys.stderr)


def build(out: Path, *, run_benchmarks: bool, pytest_args: list[str], weights_env: dict[str, str] | None = None,
          scale: str = "full", max_rss: int | None = None, run_jobs: bool = True) -> int:
    """Run the benchmarks and the full test suite; return pytest's exit status (2: no checkout to run the tests
    from (:func:`reports.checkout.report_prerequisites`, nothing run), an unusable ``out`` or reused section, 4 or 5: pytest arguments refused before anything ran; 3: the report's peak memory exceeded ``max_rss``
    bytes, default half of the machine). ``weights_env`` names folders of trained paper-model weights to the tests
    (``--weights-dir``; empirical.sources.weights_dirs_environment); ``scale``: ``foundation.scale``; ``run_jobs``: the model jobs before
    the tests (:func:`run_report_jobs`)."""
    missing = report_prerequisites(ROOT)
    if missing is not None:
        print(f"error: {missing}", file=sys.stderr)
        return 2
    try:
        with output_lock(out, command="reports build"):
            return _build(out, run_benchmarks=run_benchmarks, pytest_args=pytest_args, weights_env=weights_env,
                          scale=scale, max_rss=max_rss, run_jobs=run_jobs)
    except OutputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _build(out: Path, *, run_benchmarks: bool, pytest_args: list[str], weights_env: dict[str, str] | None,
           scale: str, max_rss: int | None, run_jobs: bool) -> int:
    """:func:`build`, its folder locked (a second build into it is refused at once)."""
    revision = git_revision(ROOT)
    try:
        output = check_output_folder(out, command="reports build", settings={
            "pytest_args": pytest_args, **({"scale": scale} if scale == "smoke" else {})})
        sections = output.path / "sections"
        if sections.is_dir():
            check_reused_sections(sections, revision, known=tuple(name for name, _ in BENCHMARKS),
                                  reused=not run_benchmarks)
    except (OutputError, ReportInputError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    out = claim_output_folder(output)
    sections.mkdir(exist_ok=True)
    if output.resumed:
        print(f"rebuilding the report in {out} (written before by the same command and settings)", flush=True)
    ledger, bound = out / "memory.jsonl", default_memory_bound() if max_rss is None else max_rss
    previous = previous_stages(ledger)
    print(f"report build, {scale} scale ({SCALE_DESCRIPTIONS[scale]}): {stage_estimates(previous)}", flush=True)
    if ledger.exists():
        ledger.replace(out / "memory.previous.jsonl")
    env = {**os.environ, **(weights_env or {}), EXTRA_SECTIONS_DIR_ENV: str(sections), FULL_ENV: "1",
           BUILD_FOLDER_ENV: str(out), MEMORY_LEDGER_ENV: str(ledger), MEMORY_BOUND_ENV: str(bound),
           REPORT_SCALE_ENV: scale}
    env.setdefault("HYPOTHESIS_PROFILE", "ci" if scale == "smoke" else "thorough")
    if run_benchmarks or run_jobs:
        status, selected = check_pytest_arguments(out, pytest_args, env)  # (a typo fails before minutes of work)
        if status != 0:
            return status
    for name, module in BENCHMARKS if run_benchmarks else ():
        run_benchmark(name, module, out, sections, revision, env)
    if run_jobs and any(test.startswith(JOB_READERS) for test in selected):
        run_report_jobs(env, previous)
    command = pytest_command(out, pytest_args)
    print("+", " ".join(command), flush=True)
    status = subprocess.run(command, cwd=ROOT, env=env).returncode
    print(f"report: {out / 'index.html'}")
    too_much = over_bound(read_ledger(ledger), bound)
    if too_much:
        print(f"error: {too_much}", file=sys.stderr)
        return 3
    return status


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """``python -m reports ARGV``; ``prog``: the command's name as run (``consensus report``)."""
    parser = Parser(prog="python -m reports", description="Build the verification report (the full verification: "
                    "benchmarks, then every test) or compare the verdicts of two reports.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    build_parser = commands.add_parser("build", help="run the full verification and write the HTML report")
    build_parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                              help="output folder for index.html and verdicts.json, any folder, relative to the "
                                   "current one; one written by other "
                                   "settings (another command, other pytest arguments) is refused")
    build_parser.add_argument("--no-bench", action="store_true",
                              help="skip the benchmarks (the sections they wrote into OUT/sections at this revision "
                                   "are kept)")
    build_parser.add_argument("--weights-dir", action="append", default=[], metavar="MODEL=DIR",
                              help="a folder with trained weights of gpt2-xl or EleutherAI/gpt-neo-2.7B (repeatable; "
                                   "default: CONSENSUS_WEIGHTS_GPT2_XL / CONSENSUS_WEIGHTS_GPT_NEO_2_7B, then the "
                                   "Hugging Face cache)")
    build_parser.add_argument("--scale", choices=("auto", *SCALES), default="auto",
                              help="full: every check at the report's stated sizes (the paper's architectures take "
                                   "hours on a 2-core CPU, minutes on a GPU); short: the same without the model runs "
                                   "of the paper's architectures (their claims not-run); smoke: every full check on "
                                   "tiny sizes, minutes (the plumbing, not the verdicts: what CI runs); auto: full "
                                   "with a CUDA device, else short")
    build_parser.add_argument("--max-rss", type=float, metavar="GIB",
                              help="fail (exit 3) when the report's peak resident memory exceeds this many GiB "
                                   "(default: half of this machine's memory)")
    build_parser.add_argument("--no-jobs", action="store_true",
                              help="skip the model jobs before the tests (the tests make what they miss, each model "
                                   "in a child process beside the test process)")
    build_parser.add_argument("pytest_args", nargs="*", help="extra arguments for pytest (after --)")
    compare_parser = commands.add_parser(
        "compare", help="exit 0 when two verdicts.json hold the same claims, verdicts and records (numbers within "
                        "their stated tolerances), else 1, printing the differences")
    compare_parser.add_argument("old", type=Path, help="the reference verdicts.json")
    compare_parser.add_argument("new", type=Path, help="the verdicts.json to compare with it")
    compare_parser.add_argument("--expected", type=Path, metavar="FILE",
                                help="a TOML file of the differences a change means to make ([[expected]] tables: "
                                     "line, reason); they are reported as expected and must all be found")
    compare_parser.add_argument("--json", action="store_true",
                                help='print one JSON object: {"same", "claims", "differences": [{"line", '
                                     '"expected"}], "missing"}')
    args = parse(parser, sys.argv[1:] if argv is None else list(argv), prog)
    if args.command == "compare":
        from .compare import main as compare

        return compare(args.old, args.new, args.expected, as_json=args.json)
    return build_from_arguments(args, build_parser)


def build_from_arguments(args: argparse.Namespace, build_parser: argparse.ArgumentParser) -> int:
    """``build`` with the parsed arguments of ``build``: the weights folders read, ``--scale auto`` resolved (full
    with a CUDA device, :func:`foundation.scale.default_scale`), ``--max-rss`` checked; a bad value exits 2."""
    weights_env = {}
    if args.weights_dir:
        from empirical.sources import parse_weights_dirs, weights_dirs_environment  # (torch: only when named)

        try:
            weights_env = weights_dirs_environment(parse_weights_dirs(args.weights_dir))
        except ValueError as error:
            build_parser.error(str(error))
    if args.scale == "auto":
        import torch  # (after parsing: --help stays light)

        args.scale = default_scale(torch.cuda.is_available())
    if args.max_rss is not None and not args.max_rss > 0:
        build_parser.error(f"--max-rss {args.max_rss} must be a positive number of GiB.")
    return build(args.out, run_benchmarks=not args.no_bench, pytest_args=args.pytest_args, weights_env=weights_env,
                 scale=args.scale, max_rss=None if args.max_rss is None else int(args.max_rss * GIB),
                 run_jobs=not args.no_jobs)


if __name__ == "__main__":
    sys.exit(main())
