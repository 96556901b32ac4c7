"""The help format of every command line of the suite: each option's default stated once, in its help line; the
parsing that names a command as it was run (``consensus run`` or ``python -m empirical run``); and the argument
types that refuse a bad value while the arguments are parsed (one line, exit status 2, before any work starts).
"""

from __future__ import annotations

import argparse
import math
from functools import partial
from pathlib import Path
from typing import Callable

from .outputs import OutputError, check_writable_folder

#: Seeds are integers in 0..2^63 - 1: numpy's generators refuse negative ones, Python's random would take -5 as 5,
#: and torch wraps larger ones.
SEED_LIMIT = 2**63


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's ``(default: ...)`` after every option, except where there is no value to state: ``None`` (the
    option is off unless given, as its help says), a flag's ``False`` and an empty list. A help line states no
    default of its own (``tests/reports/test_command_line.py`` fails on one that does)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None or action.default is False or action.default == []:
            return action.help or ""
        return super()._get_help_string(action)


#: The parser class of every command and subcommand (``add_subparsers(parser_class=Parser)`` passes it on).
Parser = partial(argparse.ArgumentParser, formatter_class=DefaultsHelpFormatter)


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands' parsers of ``parser`` by name (none when it has no subcommands)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def parse(parser: argparse.ArgumentParser, argv: list[str], prog: str | None = None) -> argparse.Namespace:
    """Parse ``argv`` (``COMMAND ARGS...``) with a package's ``parser``. ``prog``: the name the command was run by,
    e.g. ``consensus report`` for ``python -m reports build`` run by the ``consensus`` entry point; its usage, help
    and errors then say so. An unrecognised argument is refused by the command's parser, whose usage names the
    command's options (argparse leaves it to the top parser, whose usage lists only the commands)."""
    commands = _commands(parser)
    chosen = commands.get(argv[0]) if argv else None
    if chosen is not None and prog:
        chosen.prog = prog
    args, extras = parser.parse_known_args(argv)
    if extras:
        (chosen or parser).error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def command_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of ``command`` among ``parser``'s subcommands: errors found after parsing go through it, so that
    they name the command's usage."""
    return _commands(parser)[command]


def positive_integer(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; it must be a positive integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be a positive integer (>= 1)")
    return value


def at_most(most: int) -> Callable[[str], int]:
    """An argparse type: an integer in 1..``most``."""

    def parse_bounded(text: str) -> int:
        value = positive_integer(text)
        if value > most:
            raise argparse.ArgumentTypeError(f"{value} must be at most {most:.0e}" if most >= 10**6 else
                                             f"{value} must be at most {most}")
        return value

    return parse_bounded


def positive_number(unit: str) -> Callable[[str], float]:
    """An argparse type: a finite number > 0 of ``unit`` (infinity is refused: a bound that never ends a loop)."""

    def parse_positive(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number; it must be a positive number of "
                                             f"{unit}") from None
        if not 0 < value < math.inf:
            raise argparse.ArgumentTypeError(f"{value} must be a finite positive number of {unit}")
        return value

    return parse_positive


def seed(text: str) -> int:
    """An argparse type: a seed, an integer in 0..2^63 - 1 (:data:`SEED_LIMIT`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; a seed is an integer in 0..2^63 - 1") from None
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"{value} must be an integer in 0..2^63 - 1")
    return value


def output_file(text: str) -> Path:
    """An argparse type: the path of a file a command writes when it ends, checked before it starts: not a folder,
    and in a folder this user can write to or create (``foundation.outputs.check_writable_folder``; nothing is
    created)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} must be a file to write; it is a folder")
    try:
        check_writable_folder(path.parent, option="its folder")
    except OutputError as error:
        raise argparse.ArgumentTypeError(f"{text}: {error}") from None
    return path
