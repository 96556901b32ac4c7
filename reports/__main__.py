"""``python -m reports build [--out DIR]``: the full verification, writing ``DIR/index.html``.

Runs the benchmarks first (their results become report sections), then the whole pytest suite
with the expensive checks included and the ``thorough`` Hypothesis profile.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from .build import EXTRA_SECTIONS_DIR_ENV
from .pytest_plugin import FULL_ENV

ROOT = Path(__file__).resolve().parent.parent

#: Benchmarks whose JSON becomes a report section: (name, module). Each takes --out and --section.
BENCHMARKS = (("sim-bench", "sim"), ("empirical-bench", "empirical"))


def build(out: Path, *, run_benchmarks: bool, pytest_args: list[str], weights_env: dict[str, str] | None = None) -> int:
    """Run the benchmarks and the full test suite; return pytest's exit status. ``weights_env`` names folders
    of trained paper-model weights to the tests (``--weights-dir``; see empirical/sources.py)."""
    out = out.resolve()
    sections = out / "sections"
    sections.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **(weights_env or {}), EXTRA_SECTIONS_DIR_ENV: str(sections), FULL_ENV: "1"}
    env.setdefault("HYPOTHESIS_PROFILE", "thorough")
    if run_benchmarks:
        for name, module in BENCHMARKS:
            command = [sys.executable, "-m", module, "bench", "--out", str(out / f"{name}.json"),
                       "--section", str(sections / f"{name}.section.json")]
            print("+", " ".join(command), flush=True)
            status = subprocess.run(command, cwd=ROOT, env=env).returncode
            if status != 0:
                print(f"benchmark {name} failed with exit status {status}; the report will lack its section",
                      file=sys.stderr)
    command = [sys.executable, "-m", "pytest", "--report-dir", str(out), *pytest_args]
    print("+", " ".join(command), flush=True)
    status = subprocess.run(command, cwd=ROOT, env=env).returncode
    print(f"report: {out / 'index.html'}")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="run the full verification and write the HTML report")
    build_parser.add_argument("--out", type=Path, default=ROOT / "build" / "report",
                              help="output folder for index.html and verdicts.json (default: build/report)")
    build_parser.add_argument("--no-bench", action="store_true", help="skip the benchmarks")
    build_parser.add_argument("--weights-dir", action="append", default=[], metavar="MODEL=DIR",
                              help="a folder with trained weights of gpt2-xl or EleutherAI/gpt-neo-2.7B (repeatable; "
                                   "default: CONSENSUS_WEIGHTS_GPT2_XL / CONSENSUS_WEIGHTS_GPT_NEO_2_7B, then the "
                                   "Hugging Face cache)")
    build_parser.add_argument("pytest_args", nargs="*", help="extra arguments for pytest (after --)")
    args = parser.parse_args(argv)
    from empirical.sources import parse_weights_dirs, weights_environment

    try:
        weights_env = weights_environment(parse_weights_dirs(args.weights_dir))
    except ValueError as error:
        parser.error(str(error))
    return build(args.out, run_benchmarks=not args.no_bench, pytest_args=args.pytest_args, weights_env=weights_env)


if __name__ == "__main__":
    sys.exit(main())
