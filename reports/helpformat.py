"""The help format of every command line of the suite: each option's default stated in its help line."""

from __future__ import annotations

import argparse
from functools import partial


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's ``(default: ...)`` after every option, except where there is no value to state: ``None`` (the
    option is off unless given, as its help says), a flag's ``False`` and an empty list."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None or action.default is False or action.default == []:
            return action.help or ""
        return super()._get_help_string(action)


#: The parser class of every command and subcommand (``add_subparsers(parser_class=Parser)`` passes it on).
Parser = partial(argparse.ArgumentParser, formatter_class=DefaultsHelpFormatter)
