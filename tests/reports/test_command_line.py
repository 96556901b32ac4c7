"""One command line (issue 38, item 2): usage and errors naming `consensus COMMAND`, `--version`, nothing heavy
imported before parsing, `--json` wherever results are printed, a closed pipe ending quietly, defaults stated once,
`report`'s folder relative to the current one, bare `consensus` refused, exit codes documented (docs/cli.md).

Nothing here is timed: "--help in under a second" is checked as "torch, transformers, numba, sympy and dask are not
imported before parsing", which is what made it slow (the times are measured in the issue's report)."""

import argparse
import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from consensus import cli
from foundation.helpformat import DefaultsHelpFormatter

ROOT = Path(__file__).resolve().parents[2]
COMMAND_LINES = [[name] for name in cli.COMMANDS if name != "bench"] + [["bench", w] for w in cli.BENCHMARKS]
#: The modules that took `consensus run --help` to 6.5 s: none may be imported before a command's arguments parse.
HEAVY = ("torch", "transformers", "numba", "sympy", "dask", "distributed")
#: The commands that print results, each with one `--json` shape.
PRINTING = ("check", "run", "search", "replay", "figure", "compare", "prompts")


def _help(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        cli.main([*argv, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def _parsers(monkeypatch, capsys, argv) -> argparse.ArgumentParser:
    """The parser whose help `consensus ARGV --help` printed."""
    shown = []
    format_help = argparse.ArgumentParser.format_help
    monkeypatch.setattr(argparse.ArgumentParser, "format_help", lambda self: shown.append(self) or format_help(self))
    _help(capsys, argv)
    return shown[-1]


@pytest.mark.parametrize("argv", COMMAND_LINES, ids=" ".join)
def test_help_names_the_command_as_run(capsys, argv):
    assert _help(capsys, argv).startswith(f"usage: consensus {' '.join(argv)} ")


@pytest.mark.parametrize("argv", [["run", "--bogus"], ["search", "conj.value-full", "--out", "x", "--bogus"],
                                  ["report", "--scale", "huge"], ["compare", "a"], ["bench", "sim", "--part", "x"]],
                         ids=" ".join)
def test_an_argument_error_names_the_command_as_run(capsys, argv):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    err = capsys.readouterr().err
    command = " ".join(argv[:2] if argv[0] == "bench" else argv[:1])
    assert exit_.value.code == 2 and err.startswith(f"usage: consensus {command} ") and "python -m" not in err


def test_an_error_found_after_parsing_names_the_command_too(capsys):
    """`search` checks its claim after parsing (the families import NumPy); the error is the command's, not the
    package's top parser's (whose usage lists only the commands)."""
    with pytest.raises(SystemExit):
        cli.main(["search", "conj.nope", "--out", "x"])
    assert capsys.readouterr().err.startswith("usage: consensus search ")


def test_the_modules_keep_their_own_names(capsys):
    """Control: the same parser run as `python -m empirical` says so (the name comes from the entry point)."""
    from empirical.cli import main

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert capsys.readouterr().out.startswith("usage: python -m empirical run ")


def test_version_prints_the_installed_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"consensus {importlib.metadata.version(cli.DISTRIBUTION)}"


#: Runs every --help and one argument error in one process; prints the heavy modules imported by then.
IMPORTS = """
import sys
from consensus import cli
{before}
for argv in {argvs!r}:
    try:
        cli.main(argv)
    except SystemExit:
        pass
print(sorted(m for m in {heavy!r} if m in sys.modules))
"""


def _heavy_after_parsing(before: str = "") -> list[str]:
    argvs = [[*argv, "--help"] for argv in COMMAND_LINES] + [["run", "--model", "m", "--out", "x", "--passes", "x"],
                                                              ["check", "--bogus"], ["search", "c"]]
    code = IMPORTS.format(before=before, argvs=argvs, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1].replace("'", '"'))


def test_help_and_argument_errors_import_nothing_heavy():
    assert _heavy_after_parsing() == []


def test_control_the_import_check_sees_a_heavy_import():
    assert "torch" in _heavy_after_parsing("import empirical.run")


@pytest.mark.parametrize("command", PRINTING)
def test_every_command_that_prints_results_takes_json(monkeypatch, capsys, command):
    parser = _parsers(monkeypatch, capsys, [command])
    assert "--json" in parser._option_string_actions


def test_prompts_json_is_its_output(capsys):
    assert cli.main(["prompts", "--n", "2", "--length", "3", "--vocab-size", "50", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert len(printed) == 2 and all(len(p) == 3 for p in printed)


def test_compare_json_has_one_shape(tmp_path, capsys):
    report = {"claims": [{"claim": "causal.scalar", "verdict": "verified", "tests": [], "records": []}]}
    failed = {"claims": [{"claim": "causal.scalar", "verdict": "failed", "tests": [], "records": []}]}
    (tmp_path / "old.json").write_text(json.dumps(report))
    (tmp_path / "new.json").write_text(json.dumps(failed))
    shapes = []
    for new, status in (("old.json", 0), ("new.json", 1)):
        assert cli.main(["compare", str(tmp_path / "old.json"), str(tmp_path / new), "--json"]) == status
        shapes.append(json.loads(capsys.readouterr().out))
    assert [s["same"] for s in shapes] == [True, False] and {tuple(s) for s in shapes} == {
        ("same", "claims", "differences", "missing")}
    assert shapes[1]["differences"] == [{"line": "causal.scalar: verdict verified -> failed", "expected": None}]


def test_replay_json_has_one_shape(capsys):
    witness = sorted((ROOT / "sim" / "conjectures" / "witnesses").glob("*/*.json"))[0]
    status = cli.main(["replay", str(witness), "--json"])
    printed = json.loads(capsys.readouterr().out)
    assert set(printed) == {"witness", "claim", "refuted", "float64_evidence_only", "reason", "numbers", "certificate",
                            "hash_checked"}
    assert status == (0 if printed["refuted"] else 1) and set(printed["certificate"]) == {"certified", "reason",
                                                                                          "numbers"}


def test_run_json_has_one_shape():
    from empirical.cli import run_summary

    results = {"E_pass_end": [0.5, 0.1], "E_floor": 1e-7, "effective_floor": 1e-7, "twin": None, "precision": None,
               "verdict": "settled",
               "decision": {"verdict": "settled", "monotone": True, "cells": {"base": {"verdict": "settled"}}}}
    with_twin = {**results, "twin": {"prompts": 2, "divergence_max": 1e-6}, "verdict": "precision-limited",
                 "precision": {"dtype_verdict": "settled", "float64_verdict": "converging"}}
    shapes = [run_summary(r, Path("out")) for r in (results, with_twin)]
    assert list(shapes[0]) == list(shapes[1]) and shapes[0]["twin"] is None
    assert shapes[1]["twin"] == {"prompts": 2, "divergence_max": 1e-6, "effective_floor": 1e-7,
                                 "dtype_verdict": "settled", "float64_verdict": "converging"}
    assert (shapes[0]["verdict"], shapes[1]["verdict"]) == ("settled", "precision-limited")
    assert shapes[1]["grid_verdict"] == "settled"


def _ended_by_a_closed_pipe(command: list[str]) -> subprocess.CompletedProcess:
    """Run ``command`` with its stdout a pipe whose reader is gone before it writes (``| head`` that exited)."""
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()
    err = process.stderr.read().decode()
    return subprocess.CompletedProcess(command, process.wait(), "", err)


BIG_PROMPTS = ["prompts", "--n", "400", "--length", "400", "--json"]


@pytest.mark.parametrize("argv", [BIG_PROMPTS, ["check", "model.projection", "--json"]], ids=lambda a: a[0])
def test_a_closed_pipe_ends_the_command_quietly(argv):
    done = _ended_by_a_closed_pipe([sys.executable, "-m", "consensus", *argv])
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == cli.BROKEN_PIPE


def test_control_a_closed_pipe_without_the_entry_point_ends_in_a_traceback():
    """The check above can fail: the module's own entry point (no handling) prints Python's complaint."""
    done = _ended_by_a_closed_pipe([sys.executable, "-m", "empirical", *BIG_PROMPTS])
    assert "BrokenPipeError" in done.stderr


def _stated_twice(action: argparse.Action) -> bool:
    """Whether the help of ``action`` states a default of its own beside the one the formatter appends."""
    own = re.search(r"default(?!\)s)", (action.help or "").lower())
    appended = DefaultsHelpFormatter("x")._get_help_string(action) != (action.help or "")
    return bool(own) and appended


@pytest.mark.parametrize("argv", COMMAND_LINES, ids=" ".join)
def test_each_default_is_stated_once(monkeypatch, capsys, argv):
    parser = _parsers(monkeypatch, capsys, argv)
    twice = [a.option_strings[0] for a in parser._actions if a.option_strings and _stated_twice(a)]
    assert twice == []


def test_control_a_default_stated_twice_is_seen():
    parser = argparse.ArgumentParser()
    action = parser.add_argument("--alpha", type=float, default=0.001, help="the level (default 0.001)")
    assert _stated_twice(action)


def test_the_report_folder_is_relative_to_the_current_one(monkeypatch, tmp_path):
    import reports.__main__ as reports_main

    calls = []
    monkeypatch.setattr(reports_main, "build", lambda out, **kwargs: calls.append(out) or 0)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["report", "--no-bench"]) == 0
    assert calls[0].absolute() == tmp_path / "build" / "report"


def test_bare_consensus_prints_its_usage_to_stderr_and_exits_2(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([])
    captured = capsys.readouterr()
    assert exit_.value.code == 2 and captured.out == "" and captured.err.startswith("usage: consensus ")


def test_the_exit_codes_are_documented():
    text = (ROOT / "docs" / "cli.md").read_text()
    section = text.split("## Exit status")[1].split("\n## ")[0]
    for row in ("| 0 |", "| 1 |", "| 2 |", f"| {cli.BROKEN_PIPE} |"):
        assert row in section


@pytest.mark.parametrize("command", [["search"], ["suite"]])
def test_every_scheduler_option_warns_that_a_scheduler_without_tls_runs_anyones_code(capsys, command):
    assert "A scheduler without TLS runs the code of anyone who reaches it" in " ".join(_help(capsys, command).split())
