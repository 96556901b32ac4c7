"""The help format of every command line of the suite: each option's default stated once, in its help line; and
the parsing that names a command as it was run (``consensus run`` or ``python -m empirical run``)."""

from __future__ import annotations

import argparse
from functools import partial


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
