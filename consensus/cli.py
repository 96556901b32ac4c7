"""``consensus COMMAND ...``: one entry point for the suite's commands, each a ``python -m PACKAGE COMMAND``.

The chosen package's command line is imported only once a command is chosen, so this module imports nothing of the
suite (and ``consensus --help`` answers at once); ``python -m theory|sim|empirical|reports ...`` keep working.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

#: command -> (package, that package's command, what it does).
COMMANDS = {
    "check": ("theory", "check", "run the symbolic (SymPy) checks of the paper's claims"),
    "run": ("empirical", "run", "loop a transformer for many passes, measuring token consensus E after every block"),
    "plot": ("empirical", "plot", "plot E over depth for one or more run folders"),
    "suite": ("empirical", "suite", "run every model variant of the paper's figures 7-10 (resumable, on Dask)"),
    "prompts": ("empirical", "prompts", "print the authors' random prompts as JSON"),
    "audit": ("empirical", "audit", "measure which of the theorems' hypotheses a real transformer satisfies"),
    "figure": ("sim", "figure", "simulate, check and plot one of the paper's figures 1-6"),
    "search": ("sim", "search", "search a conjecture (conj.*) for certified counterexamples (seeking; "
                                 "--method random: on Dask)"),
    "replay": ("sim", "replay", "re-check a stored witness and print its certificate"),
    "compile": ("sim", "compile", "compile the Numba code into its on-disk cache ahead of its first use (once)"),
    "report": ("reports", "build", "the full verification (about 80 minutes on 2 cores): the HTML report and "
                                   "verdicts.json"),
    "compare": ("reports", "compare", "compare the verdicts.json of two reports"),
    "bench": (None, None, "a benchmark: sim (the solvers), empirical (the cost of E), search (a search's solver)"),
    "gpu-checks": (None, None, "every GPU check in one call: the paper's protocol on GPT-2 XL and GPT-Neo 2.7B, the "
                               "loop against cuBLAS, the peers on the GPU"),
}
#: The commands that are no one package's command: what each runs.
SCRIPTS = {"bench": "python -m sim|empirical bench, sim search-bench",
           "gpu-checks": "python -m empirical gpu-checks, then sim bench --part peers"}
#: The distribution whose version ``consensus --version`` prints (``[project] name`` in pyproject.toml).
DISTRIBUTION = "consensus-verification"
#: The exit status after a reader of the output went away (``consensus check --json | head -1``): 128 + SIGPIPE,
#: what a shell reports for a program that SIGPIPE ended.
BROKEN_PIPE = 141
#: ``consensus bench WHICH`` -> (package, command).
BENCHMARKS = {"sim": ("sim", "bench"), "empirical": ("empirical", "bench"), "search": ("sim", "search-bench")}


def parser(prog: str = "consensus") -> argparse.ArgumentParser:
    """The top-level parser, named ``prog`` (as the command was run): it lists the commands; each command's own
    options are its package's."""
    top = argparse.ArgumentParser(
        prog=prog, description="The verification suite of 'Consensus is all you get' (ICML 2025).",
        epilog="`consensus COMMAND --help` shows a command's options and their defaults. Exit status: 0 ok, 1 a "
               "check failed or a witness refuted nothing, 2 bad input (docs/cli.md).")
    top.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, (package, command, text) in COMMANDS.items():
        where = f"python -m {package} {command}" if package else SCRIPTS[name]
        commands.add_parser(name, help=f"{text} ({where})", add_help=False)
    return top


def bench_parser(prog: str) -> argparse.ArgumentParser:
    """``consensus bench``'s parser, named ``prog``: it lists the benchmarks; each one's options are its package's."""
    bench = argparse.ArgumentParser(prog=prog, description="A benchmark of the suite (docs/simulation.md, "
                                    "docs/empirical.md, docs/searches.md).",
                                    epilog=f"`{prog} WHICH --help` shows a benchmark's options.")
    which = bench.add_subparsers(dest="which", metavar="WHICH", title="benchmarks")
    for name, (package, command) in BENCHMARKS.items():
        which.add_parser(name, help=f"python -m {package} {command}", add_help=False)
    return bench


def version() -> str:
    """The installed distribution's version (``importlib.metadata``), or a note that it is not installed."""
    from importlib.metadata import PackageNotFoundError, version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return "(not installed: run from a checkout without `pip install -e .`)"


def main(argv: list[str] | None = None, prog: str = "consensus") -> int:
    """Run ``consensus`` with ``argv`` (default: the process's); return the exit status. ``prog``: the command as it
    was run (``python -m consensus`` from ``consensus/__main__.py``), which usage, help and errors name. A reader
    that closes the output early (``| head``) ends the command quietly with :data:`BROKEN_PIPE`, here, once for every
    command."""
    try:
        status = _main(sys.argv[1:] if argv is None else list(argv), prog)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # Python's recipe (docs of the signal module): stdout to devnull, so that the flush at exit raises nothing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE


def _main(argv: list[str], prog: str) -> int:
    top = parser(prog)
    if not argv:
        top.error(f"a COMMAND is required (`{prog} --help` lists them)")
    if argv[0] in ("-h", "--help"):
        top.print_help()
        return 0
    if argv[0].startswith("-"):
        top.parse_args(argv)  # --version: print and exit 0; an unknown option: exit 2
        top.error(f"a COMMAND is required before {argv[0]}")
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        top.error(f"argument COMMAND: {name!r} must be one of {', '.join(COMMANDS)}")
    package, command, _ = COMMANDS[name]
    prog = f"{top.prog} {name}"
    if name == "bench":
        bench = bench_parser(prog)
        if rest[:1] in (["-h"], ["--help"]):
            bench.print_help()
            return 0
        if not rest or rest[0] not in BENCHMARKS:
            bench.error(f"argument WHICH: must be one of {', '.join(BENCHMARKS)}")
        prog = f"{prog} {rest[0]}"
        (package, command), rest = BENCHMARKS[rest[0]], rest[1:]
    if name == "gpu-checks":  # a script of several packages' commands (consensus/gpu_script.py)
        from .gpu_script import main as gpu_script

        return gpu_script(rest, prog=prog)
    return importlib.import_module(f"{package}.__main__").main([command, *rest], prog=prog)
