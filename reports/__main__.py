"""``python -m reports build [--out DIR]``: the full verification, writing ``DIR/index.html``;
``python -m reports compare OLD NEW [--expected FILE]``: do two ``verdicts.json`` say the same (``reports.compare``)?

The top of the package: it orchestrates (benchmarks, then pytest with the report plugin) and imports the layers
below it; nothing imports it.

Checks the output folder and the pytest arguments first (seconds), then runs the benchmarks (their results
become report sections), then the whole pytest suite with the expensive checks included and the ``thorough``
Hypothesis profile. DIR may be any folder, inside the project or not, absolute or relative to the current one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .build import EXTRA_SECTIONS_DIR_ENV, SECTION_REVISION_KEY, ReportInputError, check_reused_sections, read_section
from .helpformat import Parser
from .manifest import git_revision
from .outputs import OutputError, check_output_folder, claim_output_folder, output_lock
from .pytest_plugin import BUILD_FOLDER_ENV, FULL_ENV
from .weights_dirs import parse_weights_dirs, weights_dirs_environment

ROOT = Path(__file__).resolve().parent.parent

#: Benchmarks whose JSON becomes a report section: (name, module). Each takes --out and --section.
BENCHMARKS = (("sim-bench", "sim"), ("empirical-bench", "empirical"))


def pytest_command(out: Path, pytest_args: list[str]) -> list[str]:
    """The report's pytest command. Its root, configuration and plugin are named explicitly: left to itself pytest
    takes the common folder of its arguments as the root, and with an ``out`` outside the project it found no
    ``pyproject.toml``, so no plugin and no ``--report-dir`` option."""
    return [sys.executable, "-m", "pytest", "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"),
            "-p", "reports.pytest_plugin", f"--report-dir={out}", *pytest_args]


def check_pytest_arguments(out: Path, pytest_args: list[str], env: dict[str, str]) -> int:
    """Parse the arguments and collect the tests they select (``--collect-only``, no report), so that a bad argument
    or a test module that does not import fails before the benchmarks; return pytest's exit status (0: usable)."""
    checked = subprocess.run([*pytest_command(out, pytest_args), "--collect-only", "-q", "--no-report"], cwd=ROOT,
                             env=env, capture_output=True, text=True)
    if checked.returncode == 0:
        return 0
    lines = (checked.stdout + checked.stderr).strip().splitlines()
    print("\n".join(lines[-30:]), file=sys.stderr)
    if checked.returncode == 5:
        print(f"error: the pytest arguments {pytest_args} select no tests; nothing would be verified.",
              file=sys.stderr)
    else:
        print(f"error: pytest refused the arguments {pytest_args} (exit status {checked.returncode}, above); "
              "nothing was run.", file=sys.stderr)
    return checked.returncode


def run_benchmark(name: str, module: str, out: Path, sections: Path, revision: str, env: dict[str, str]) -> None:
    """Run one benchmark; keep its section stamped with ``revision``, or none if it failed (never an old one)."""
    section = sections / f"{name}.section.json"
    section.unlink(missing_ok=True)
    command = [sys.executable, "-m", module, "bench", "--out", str(out / f"{name}.json"), "--section", str(section)]
    print("+", " ".join(command), flush=True)
    status = subprocess.run(command, cwd=ROOT, env=env).returncode
    try:
        if status != 0:
            raise ReportInputError(f"benchmark {name} failed with exit status {status}")
        raw = read_section(section)
    except ReportInputError as error:
        section.unlink(missing_ok=True)
        print(f"{error}; the report will lack its section", file=sys.stderr)
        return
    section.write_text(json.dumps({**raw, SECTION_REVISION_KEY: revision}, indent=1))


def build(out: Path, *, run_benchmarks: bool, pytest_args: list[str], weights_env: dict[str, str] | None = None) -> int:
    """Run the benchmarks and the full test suite; return pytest's exit status (2: an unusable ``out`` or reused
    section, 4 or 5: pytest arguments refused before anything ran). ``weights_env`` names folders of trained
    paper-model weights to the tests (``--weights-dir``; reports/weights_dirs.py)."""
    try:
        with output_lock(out, command="reports build"):
            return _build(out, run_benchmarks=run_benchmarks, pytest_args=pytest_args, weights_env=weights_env)
    except OutputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _build(out: Path, *, run_benchmarks: bool, pytest_args: list[str], weights_env: dict[str, str] | None) -> int:
    """:func:`build`, its folder locked (a second build into it is refused at once)."""
    revision = git_revision(ROOT)
    try:
        output = check_output_folder(out, command="reports build", settings={"pytest_args": pytest_args})
        sections = output.path / "sections"
        if not run_benchmarks and sections.is_dir():
            check_reused_sections(sections, revision)
    except (OutputError, ReportInputError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    out = claim_output_folder(output)
    sections.mkdir(exist_ok=True)
    if output.resumed:
        print(f"rebuilding the report in {out} (written before by the same command and settings)", flush=True)
    env = {**os.environ, **(weights_env or {}), EXTRA_SECTIONS_DIR_ENV: str(sections), FULL_ENV: "1",
           BUILD_FOLDER_ENV: str(out)}
    env.setdefault("HYPOTHESIS_PROFILE", "thorough")
    if run_benchmarks:
        status = check_pytest_arguments(out, pytest_args, env)  # (without benchmarks pytest itself fails as fast)
        if status != 0:
            return status
        for name, module in BENCHMARKS:
            run_benchmark(name, module, out, sections, revision, env)
    command = pytest_command(out, pytest_args)
    print("+", " ".join(command), flush=True)
    status = subprocess.run(command, cwd=ROOT, env=env).returncode
    print(f"report: {out / 'index.html'}")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m reports", description="Build the verification report (the full verification: "
                    "benchmarks, then every test) or compare the verdicts of two reports.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    build_parser = commands.add_parser("build", help="run the full verification and write the HTML report")
    build_parser.add_argument("--out", type=Path, default=ROOT / "build" / "report",
                              help="output folder for index.html and verdicts.json, any folder; one written by other "
                                   "settings (another command, other pytest arguments) is refused")
    build_parser.add_argument("--no-bench", action="store_true",
                              help="skip the benchmarks (the sections they wrote into OUT/sections at this revision "
                                   "are kept)")
    build_parser.add_argument("--weights-dir", action="append", default=[], metavar="MODEL=DIR",
                              help="a folder with trained weights of gpt2-xl or EleutherAI/gpt-neo-2.7B (repeatable; "
                                   "default: CONSENSUS_WEIGHTS_GPT2_XL / CONSENSUS_WEIGHTS_GPT_NEO_2_7B, then the "
                                   "Hugging Face cache)")
    build_parser.add_argument("pytest_args", nargs="*", help="extra arguments for pytest (after --)")
    compare_parser = commands.add_parser(
        "compare", help="exit 0 when two verdicts.json hold the same claims, verdicts and records (numbers within "
                        "their stated tolerances), else 1, printing the differences")
    compare_parser.add_argument("old", type=Path, help="the reference verdicts.json")
    compare_parser.add_argument("new", type=Path, help="the verdicts.json to compare with it")
    compare_parser.add_argument("--expected", type=Path, metavar="FILE",
                                help="a TOML file of the differences a change means to make ([[expected]] tables: "
                                     "line, reason); they are reported as expected and must all be found")
    args = parser.parse_args(argv)
    if args.command == "compare":
        from .compare import main as compare

        return compare(args.old, args.new, args.expected)
    try:
        weights_env = weights_dirs_environment(parse_weights_dirs(args.weights_dir))
    except ValueError as error:
        parser.error(str(error))
    return build(args.out, run_benchmarks=not args.no_bench, pytest_args=args.pytest_args, weights_env=weights_env)


if __name__ == "__main__":
    sys.exit(main())
