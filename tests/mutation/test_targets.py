"""Every target `make mutants` names exists: the files mutmut mutates (pyproject.toml [tool.mutmut]) and the tests it
selects, cosmic-ray's files (tests/mutation/compiled.toml), and the modules of the Makefile's MUTANTS_SCOPE. A file
moved (sim/ split into subpackages) without these lists fails here, naming the stale entry, instead of silently
shrinking the mutation run. Negative control: the same check on an empty folder reports every entry."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
