"""The one entry point ``consensus``: every subcommand listed and routed to its ``python -m`` command, nothing of
the suite imported before a command is chosen, and every ``--help`` complete with its defaults."""

import argparse
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from consensus import cli

ROOT = Path(__file__).resolve().parents[2]
#: The subcommands issue 28 asks for (more may be added).
REQUIRED = ("check", "run", "plot", "search", "replay", "report", "bench", "prompts", "audit", "suite", "figure")
#: Commands added by other work (issues 26, 27): their --help is checked once their package has them.
PENDING = {"plot": "empirical", "replay": "sim"}


def test_help_lists_every_subcommand(capsys):
    assert cli.main(["--help"]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.split("commands:")[1].splitlines()[2:]
              if line.startswith("    ") and not line.startswith("     ")}
    assert set(REQUIRED) <= listed and listed == set(cli.COMMANDS)


def test_the_console_script_is_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["consensus"] == "consensus.cli:main"
    assert "consensus*" in project["tool"]["setuptools"]["packages"]["find"]["include"]


def test_importing_the_entry_point_imports_nothing_of_the_suite():
    code = ("import sys, consensus.cli; print(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('theory', 'sim', 'empirical', 'reports')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("argv, module, forwarded", [
    *[pytest.param([name, "--x"], f"{package}.__main__", [command, "--x"], id=name)
      for name, (package, command, _) in cli.COMMANDS.items() if package],
    pytest.param(["bench", "sim", "--quick"], "sim.__main__", ["bench", "--quick"], id="bench-sim"),
    pytest.param(["bench", "empirical"], "empirical.__main__", ["bench"], id="bench-empirical"),
    pytest.param(["bench", "search", "--t1", "2"], "sim.__main__", ["search-bench", "--t1", "2"], id="bench-search"),
])
def test_each_subcommand_runs_its_package_command(monkeypatch, argv, module, forwarded):
    calls = []

    class Package:
        @staticmethod
        def main(arguments, prog):
            calls.append(arguments)
            return 7

    monkeypatch.setattr(cli.importlib, "import_module", lambda name: calls.append(name) or Package)
    assert cli.main(argv) == 7 and calls == [module, forwarded]


@pytest.mark.parametrize("argv, message", [
    pytest.param(["nope"], "argument COMMAND: 'nope' must be one of check, run", id="unknown-command"),
    pytest.param(["bench"], "consensus bench: error: argument WHICH: must be one of sim, empirical, search",
                 id="bench-without-which"),
    pytest.param(["bench", "gpu"], "must be one of sim, empirical, search", id="bench-unknown"),
])
def test_a_bad_subcommand_is_refused_naming_the_choices(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_bench_help_lists_the_benchmarks_and_names_the_program_as_run(capsys, flag):
    assert cli.main(["bench", flag], prog="python -m consensus") == 0
    shown = capsys.readouterr().out
    assert shown.startswith("usage: python -m consensus bench [-h] WHICH")
    assert all(f"python -m {package} {command}" in shown for package, command in cli.BENCHMARKS.values())


def test_a_command_gives_the_same_output_as_its_module(capsys):
    assert cli.main(["prompts", "--n", "2", "--length", "3", "--vocab-size", "50"]) == 0
    ours = json.loads(capsys.readouterr().out)
    module = subprocess.run([sys.executable, "-m", "empirical", "prompts", "--n", "2", "--length", "3",
                             "--vocab-size", "50"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert ours == json.loads(module.stdout) and len(ours) == 2 and len(ours[0]) == 3


def _helped_parser(monkeypatch, capsys, argv) -> tuple[argparse.ArgumentParser, str]:
    """The parser whose help ``consensus ARGV --help`` printed, and the text."""
    shown = []
    format_help = argparse.ArgumentParser.format_help
    monkeypatch.setattr(argparse.ArgumentParser, "format_help", lambda self: shown.append(self) or format_help(self))
    with pytest.raises(SystemExit) as exit_:
        cli.main([*argv, "--help"])
    assert exit_.value.code == 0
    return shown[-1], capsys.readouterr().out


def _undocumented(parser: argparse.ArgumentParser, text: str) -> list[str]:
    """The options of ``parser`` whose help line is missing, or misses its default."""
    flat = " ".join(text.split())
    missing = []
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        if not action.help:
            missing.append(f"{action.option_strings[0]}: no help")
        elif action.default not in (None, False, [], argparse.SUPPRESS) and f"(default: {action.default})" not in flat:
            missing.append(f"{action.option_strings[0]}: default {action.default!r} not shown")
    return missing


COMMAND_LINES = [[name] for name in cli.COMMANDS if name != "bench"] + [["bench", w] for w in cli.BENCHMARKS]


@pytest.mark.parametrize("argv", COMMAND_LINES, ids=" ".join)
def test_every_help_states_each_option_and_its_default(monkeypatch, capsys, argv):
    if argv[0] in PENDING:
        package = __import__(f"{PENDING[argv[0]]}.__main__", fromlist=["main"])
        with pytest.raises(SystemExit):
            package.main([argv[0], "--help"])
        if "invalid choice" in capsys.readouterr().err:
            pytest.skip(f"`python -m {PENDING[argv[0]]} {argv[0]}` is not in this tree yet (issues 26, 27)")
    parser, text = _helped_parser(monkeypatch, capsys, argv)
    assert _undocumented(parser, text) == []


def test_the_undocumented_check_sees_a_hidden_default():
    parser = argparse.ArgumentParser()
    parser.add_argument("--passes", type=int, default=10, help="passes")
    assert _undocumented(parser, parser.format_help()) == ["--passes: default 10 not shown"]


@pytest.mark.parametrize("package", ["theory", "sim", "empirical", "reports"])
def test_each_package_describes_itself_in_whole_sentences(capsys, package):
    with pytest.raises(SystemExit):
        __import__(f"{package}.__main__", fromlist=["main"]).main(["--help"])
    description = capsys.readouterr().out.split("\n\n")[1]
    assert description.rstrip().endswith(".") and "``" not in description and "SPEC" not in description


def test_run_as_a_module_it_names_itself_as_it_was_run(capsys):
    """`python -m consensus check --help` says `usage: python -m consensus check` (docs/cli.md: usage names the command
    as it was run); the control: the entry point says `consensus check`."""
    done = subprocess.run([sys.executable, "-m", "consensus", "check", "--help"], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    assert done.stdout.startswith("usage: python -m consensus check ")
    refused = subprocess.run([sys.executable, "-m", "consensus"], cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode == 2 and "python -m consensus: error: a COMMAND is required" in refused.stderr
    with pytest.raises(SystemExit):
        cli.main(["check", "--help"])
    assert capsys.readouterr().out.startswith("usage: consensus check ")
