"""``python -m empirical {prompts,run,bench}``: the paper's experiments from the command line (SPEC section 6)."""

from __future__ import annotations

import argparse
import json
import sys

from .prompts import PAPER_SEED, authors_prompts


def _prompts(args) -> int:
    print(json.dumps(authors_prompts(args.n, args.length, args.vocab_size, args.seed)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m empirical", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prompts = commands.add_parser("prompts", help="print the authors' random prompts as JSON")
    prompts.add_argument("--n", type=int, default=100)
    prompts.add_argument("--length", type=int, default=200)
    prompts.add_argument("--vocab-size", type=int, default=50257)
    prompts.add_argument("--seed", type=int, default=PAPER_SEED)
    prompts.set_defaults(handler=_prompts)
    from .audit_report import add_audit_parser  # `audit`: the hypothesis audit (empirical/audit.py)
    add_audit_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
