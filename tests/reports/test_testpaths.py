"""The test command's ``testpaths`` (pyproject.toml) list the folders in a fail-fast order; none may be left out."""

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_folder_is_in_testpaths(pytestconfig):
    listed = {(pytestconfig.rootpath / path).resolve() for path in pytestconfig.getini("testpaths")}
    modules = [path.relative_to(TESTS) for path in TESTS.glob("**/test_*.py")]
    folders = {TESTS / module.parts[0] for module in modules if len(module.parts) > 1}
    assert folders - listed == set(), "test folders that `pytest` would not run: add them to testpaths in pyproject.toml"
    assert [m for m in modules if len(m.parts) == 1] == [], "test modules directly in tests/ would not run"


def test_the_smoke_folder_runs_first_under_make_test(pytestconfig):
    """`make test` names a broken E, causal mask or aggregation within a minute: tests/smoke is collected first, and
    xdist hands the files out in collection order (without --no-loadscope-reorder it starts with the files that hold
    the most tests)."""
    assert pytestconfig.getini("testpaths")[0] == "tests/smoke"
    makefile = (pytestconfig.rootpath / "Makefile").read_text()
    command = next(line for line in makefile.splitlines() if "-m pytest" in line and "--maxfail" in line)
    assert "--dist loadfile" in command and "--no-loadscope-reorder" in command
