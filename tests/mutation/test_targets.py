"""Every target `make mutants` names exists: the files mutmut mutates (pyproject.toml [tool.mutmut]) and the tests it
selects, cosmic-ray's files (tests/mutation/compiled.toml), and the modules of the Makefile's MUTANTS_SCOPE. A file
moved (sim/ split into subpackages) without these lists fails here, naming the stale entry, instead of silently
shrinking the mutation run. Negative control: the same check on an empty folder reports every entry."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The modules whose Numba dispatchers are checked against mutmut's wrapper (every module that calls njit).
COMPILED_MODULES = ("sim.field.kernels", "sim.field.instances", "sim.solvers.compiled")


def scope_modules(makefile: str) -> list[str]:
    """The modules of the mutant-name globs of ``MUTANTS_SCOPE`` ('sim.solvers.euler.*' -> 'sim.solvers.euler')."""
    match = re.search(r"^MUTANTS_SCOPE := (.*?)\n(?=\S)", makefile, re.M | re.S)
    globs = re.findall(r"'([^']+)'", match.group(1))
    return [re.split(r"\.(?:x[ǁ_]|\*)", glob)[0] for glob in globs]


def stale_targets(root: Path, pyproject: str, compiled: str, makefile: str) -> list[str]:
    """The targets named in the three configurations that no file under ``root`` matches."""
    mutmut = tomllib.loads(pyproject)["tool"]["mutmut"]
    stale = [f"[tool.mutmut] only_mutate {glob}" for glob in mutmut["only_mutate"] if not list(root.glob(glob))]
    stale += [f"[tool.mutmut] test selection {test}" for test in mutmut["pytest_add_cli_args_test_selection"]
              if not (root / test.split("::")[0]).is_file()]
    stale += [f"compiled.toml module-path {path}" for path in tomllib.loads(compiled)["cosmic-ray"]["module-path"]
              if not (root / path).is_file()]
    stale += [f"MUTANTS_SCOPE module {module}" for module in scope_modules(makefile)
              if not (root / (module.replace(".", "/") + ".py")).is_file()]
    return stale


def _configurations() -> tuple[str, str, str]:
    return ((ROOT / "pyproject.toml").read_text(), (ROOT / "tests/mutation/compiled.toml").read_text(),
            (ROOT / "Makefile").read_text())


def test_every_mutation_target_exists():
    assert stale_targets(ROOT, *_configurations()) == []


def test_the_scope_names_the_modules_of_its_globs():
    modules = scope_modules((ROOT / "Makefile").read_text())
    assert "sim.solvers.controllers" in modules and "foundation.records" in modules and len(modules) == 35
    assert "empirical.decision" in modules and "empirical.floor" in modules
    assert "sim.conjectures.validated" in modules and "sim.conjectures.replay" in modules
    assert "sim.conjectures.families" in modules and "sim.conjectures.equilibria" in modules
    assert "empirical.audit.heads" in modules
    assert {"empirical.audit.measure", "empirical.audit.states", "empirical.audit.weights", "empirical.audit.store",
            "empirical.audit.report"} <= set(modules)


def test_negative_control_every_target_is_stale_in_an_empty_folder(tmp_path):
    pyproject, compiled, makefile = _configurations()
    stale = stale_targets(tmp_path, pyproject, compiled, makefile)
    assert "compiled.toml module-path sim/field/kernels.py" in stale and "MUTANTS_SCOPE module sim.field.manifold" in stale
    assert "[tool.mutmut] only_mutate sim/solvers/*.py" in stale
    assert len(stale) == sum(len(entries) for entries in (
        tomllib.loads(pyproject)["tool"]["mutmut"]["only_mutate"],
        tomllib.loads(pyproject)["tool"]["mutmut"]["pytest_add_cli_args_test_selection"],
        tomllib.loads(compiled)["cosmic-ray"]["module-path"], scope_modules(makefile)))


def wrapped_compiled_functions(pyproject: str, modules: tuple[str, ...] = COMPILED_MODULES) -> list[str]:
    """The functions Numba compiles in ``modules`` (each module's dispatchers, by their Python function) that mutmut
    would wrap under ``pyproject``: an undecorated function of a file it mutates. mutmut replaces such a function by a
    wrapper Numba cannot compile, so every test that runs the compiled code fails in mutmut's first (stats) run."""
    import importlib
    import inspect

    from numba.core.dispatcher import Dispatcher

    from devtools.mutation.compiled import mutmut_lines, mutmut_mutates

    wrapped = set()
    for name in modules:
        for dispatcher in vars(importlib.import_module(name)).values():
            if not isinstance(dispatcher, Dispatcher):
                continue
            function = dispatcher.py_func
            path = Path(inspect.getsourcefile(function)).resolve().relative_to(ROOT).as_posix()
            first = function.__code__.co_firstlineno  # a decorated function's code starts at its decorator
            if mutmut_mutates(path, pyproject) and any(start == first for start, _ in mutmut_lines(
                    (ROOT / path).read_text())):
                wrapped.add(f"{path}:{function.__qualname__}")
    return sorted(wrapped)


def test_no_function_numba_compiles_is_wrapped_by_mutmut():
    assert wrapped_compiled_functions((ROOT / "pyproject.toml").read_text()) == []


def test_negative_control_without_do_not_mutate_the_step_size_rule_is_wrapped():
    """The configuration as it was when `make mutants` failed in its stats run (2026-11-27): the step-size rule's
    three functions, compiled by a call to njit in sim/solvers/compiled.py, are named."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    without = "[tool.mutmut]\nonly_mutate = [" + ", ".join(f'"{glob}"' for glob in config["only_mutate"]) + "]\n"
    assert wrapped_compiled_functions(without) == ["sim/solvers/stepsize.py:first_guess",
                                                   "sim/solvers/stepsize.py:next_step",
                                                   "sim/solvers/stepsize.py:starting_step"]


def test_the_compiled_modules_are_every_module_that_imports_numba():
    importing = {path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
                 for package in ("foundation", "theory", "sim", "empirical", "reports", "consensus")
                 for path in (ROOT / package).rglob("*.py") if "from numba import" in path.read_text()}
    assert importing == set(COMPILED_MODULES)
