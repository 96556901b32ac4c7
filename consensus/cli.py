"""``consensus COMMAND ...``: one entry point for the suite's commands, each a ``python -m PACKAGE COMMAND``.

The chosen package's command line is imported only once a command is chosen, so this module imports nothing of the
suite (and ``consensus --help`` answers at once); ``python -m theory|sim|empirical|reports ...`` keep working.
"""

from __future__ import annotations

import argparse
import importlib
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
    "search": ("sim", "search", "search a conjecture (conj.*) for certified counterexamples, on Dask"),
    "replay": ("sim", "replay", "re-check a stored witness and print its certificate"),
    "compile": ("sim", "compile", "compile the Numba code into its on-disk cache ahead of its first use (once)"),
    "report": ("reports", "build", "the full verification (about an hour): the HTML report and verdicts.json"),
    "compare": ("reports", "compare", "compare the verdicts.json of two reports"),
    "bench": (None, None, "a benchmark: sim (the solvers), empirical (the cost of E), search (a search's solver)"),
}
#: ``consensus bench WHICH`` -> (package, command).
BENCHMARKS = {"sim": ("sim", "bench"), "empirical": ("empirical", "bench"), "search": ("sim", "search-bench")}


def parser() -> argparse.ArgumentParser:
    """The top-level parser: it lists the commands; each command's own options are its package's."""
    top = argparse.ArgumentParser(
        prog="consensus", description="The verification suite of 'Consensus is all you get' (ICML 2025).",
        epilog="`consensus COMMAND --help` shows a command's options and their defaults.")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, (package, command, text) in COMMANDS.items():
        where = f"python -m {package} {command}" if package else "python -m sim|empirical bench, sim search-bench"
        commands.add_parser(name, help=f"{text} ({where})", add_help=False)
    return top


def main(argv: list[str] | None = None) -> int:
    """Run ``consensus`` with ``argv`` (default: the process's); return the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    top = parser()
    if not argv or argv[0] in ("-h", "--help"):
        top.print_help()
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        top.error(f"argument COMMAND: {name!r} must be one of {', '.join(COMMANDS)}")
    package, command, _ = COMMANDS[name]
    if name == "bench":
        if not rest or rest[0] not in BENCHMARKS:
            top.error(f"argument WHICH of `consensus bench WHICH`: must be one of {', '.join(BENCHMARKS)}")
        (package, command), rest = BENCHMARKS[rest[0]], rest[1:]
    return importlib.import_module(f"{package}.__main__").main([command, *rest])
