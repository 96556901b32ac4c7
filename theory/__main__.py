"""``python -m theory check [ID ...] [--json]``: run the symbolic checks of the paper's claims."""

from __future__ import annotations

import json
import sys
import time

from foundation.helpformat import Parser, command_parser, parse


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """``python -m theory ARGV``; ``prog``: the command's name as run (``consensus check``). SymPy and the checks are
    imported after parsing, so that ``--help`` and a bad argument answer at once."""
    parser = Parser(prog="python -m theory", description="Run the symbolic (SymPy) checks of the paper's claims.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    check = commands.add_parser("check", help="run the symbolic checks of the given claims (all by default)")
    check.add_argument("claims", nargs="*", metavar="ID",
                       help="claim ids, e.g. model.projection (default: every claim with a symbolic check; an "
                            "unknown id is refused, naming the known ones)")
    check.add_argument("--json", action="store_true",
                       help='print a JSON list of {"claim", "verdict", "method", "detail"}')
    check.add_argument("--records", action="store_true",
                       help="with --json: print the whole result records (expression, numbers, printed/corrected, seeds)")
    check.add_argument("--verbose", action="store_true", help="also print each verified expression")
    args = parse(parser, sys.argv[1:] if argv is None else list(argv), prog)
    from .claim_checks import run_checks

    try:
        started = time.perf_counter()
        results = run_checks(args.claims)
        elapsed = time.perf_counter() - started
    except KeyError as error:
        command_parser(parser, "check").error(error.args[0])
    if args.json:
        payload = [r.to_json() if args.records else
                   {"claim": r.claim, "verdict": r.verdict, "method": r.method, "detail": r.detail} for r in results]
        print(json.dumps(payload, indent=2))
    else:
        for r in results:
            print(f"{r.verdict:>11}  {r.claim:<30} {r.method:<12} {r.detail}")
            if r.printed:
                print(f"{'':13}printed:   {r.printed}\n{'':13}corrected: {r.corrected}")
            if args.verbose and r.expression:
                print("\n".join(f"{'':13}{line}" for line in r.expression.splitlines()))
        print(f"{len(results)} records in {elapsed:.1f} s")
    return 1 if any(r.verdict == "failed" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
