"""The installed package: test-only tools are no runtime dependencies, and `consensus report` without a checkout
refuses with a sentence saying what it needs (reports/checkout.py, docs/cli.md "Installed without a checkout")."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from consensus import cli
from reports import __main__ as report_command
from reports.checkout import REPORT_MODULES, report_prerequisites

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: The product packages, installed by pip (pyproject.toml [tool.setuptools]).
PACKAGES = ("foundation", "theory", "sim", "empirical", "reports", "consensus")
#: Tools only the tests (and the report, which runs them) use.
TEST_TOOLS = ("pytest", "hypothesis", "pytest-timeout", "pytest-xdist", "pytest-randomly", "playwright", "mutmut",
              "cosmic-ray")
#: The one product module that pytest loads (it is a pytest plugin; nothing else imports it but tests).
PYTEST_PLUGIN = ROOT / "reports" / "pytest_plugin.py"


def requirement_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower()


def tool_imports(source: str) -> set[str]:
    """The top-level names of the test tools that ``source`` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else []
        found |= {name.split(".")[0] for name in names if name.split(".")[0] in ("pytest", "hypothesis")}
    return found


def test_no_test_tool_is_a_runtime_dependency():
    runtime = {requirement_name(r) for r in PYPROJECT["project"]["dependencies"]}
    assert runtime and runtime.isdisjoint(TEST_TOOLS)
    report = {requirement_name(r) for r in PYPROJECT["project"]["optional-dependencies"]["report"]}
    assert report == set(REPORT_MODULES.values())
    assert any(r.startswith("consensus-verification[report,") for r in PYPROJECT["project"]["optional-dependencies"]["test"])


def test_no_product_module_imports_a_test_tool_but_the_pytest_plugin():
    importing = {path.relative_to(ROOT).as_posix(): found for package in PACKAGES
                 for path in sorted((ROOT / package).rglob("*.py"))
                 if path != PYTEST_PLUGIN and (found := tool_imports(path.read_text()))}
    assert importing == {}


def test_control_an_import_of_a_test_tool_is_found_even_inside_a_function():
    assert tool_imports("import numpy\n\ndef f():\n    from hypothesis import given\n    import pytest.mark\n") == \
        {"hypothesis", "pytest"}
    assert tool_imports("from .pytest_plugin import FULL_ENV\nimport numpy\n") == set()


def test_the_command_lines_run_without_pytest_or_hypothesis():
    """With both made unimportable, the entry point and the report command's module import and answer."""
    code = ("import sys; sys.modules['pytest'] = sys.modules['hypothesis'] = None\n"
            "import reports.__main__, reports.compare\n"
            "from consensus import cli\n"
            "sys.exit(cli.main(['compare', '--help']))\n")
    ran = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert ran.returncode == 0 and "usage:" in ran.stdout, ran.stderr


def test_a_checkout_has_what_the_report_needs():
    assert report_prerequisites(ROOT) is None


def test_an_installed_package_without_tests_is_told_what_the_report_needs(tmp_path):
    """Control: a root as pip installs it (the packages, no tests/, no pyproject.toml) is refused, naming both."""
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    message = report_prerequisites(tmp_path)
    assert message is not None and message.startswith("consensus report needs a checkout of the project and its test "
                                                      "extra")
    assert "tests (the test suite)" in message and "pyproject.toml" in message and "pip install -e '.[test]'" in message


def test_a_missing_report_package_is_named(tmp_path, monkeypatch):
    (tmp_path / "tests").mkdir()
    (tmp_path / "pyproject.toml").write_text("")
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None if name == "hypothesis" else object())
    assert "lacks the package hypothesis;" in report_prerequisites(tmp_path)


def test_consensus_report_without_a_checkout_exits_2_with_the_message(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(report_command, "ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["report", "--no-bench", "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: consensus report needs a checkout of the project and its test extra")
    assert not (tmp_path / "out").exists()  # nothing written
