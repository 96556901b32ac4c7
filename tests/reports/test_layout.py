"""Imports go only the ways docs/layout.md allows, and no private name is imported across modules.

The rule is the table "package | may import" in docs/layout.md, read here; every module of every package (of the
project root's folders with an ``__init__.py``, tests/ aside) is read with ``ast``, imports inside functions
included. The registry's check names ("module:qualname", ``Claim.checks``) are imports by string: each is read as
an import of the module that resolves them (:data:`RESOLVER`) and held to its row, and the ground floor (a row that
may import nothing of ours) resolves no name by string at all. Negative controls: the checker run on small planted
trees must report an upward import, a private import, a sibling subpackage its row does not list, a package
without a row, a check name pointing up or into the tests, and a ground-floor ``importlib.import_module``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Iterable

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYOUT = ROOT / "docs" / "layout.md"
#: Folders of the project that are not packages under the rule (the tests may import anything).
NOT_RULED = ("tests",)


def import_rules(markdown: str) -> dict[str, set[str]]:
    """Row name -> the row names it may import, from the markdown table headed ``| package | may import |``
    (names in backticks; other words in a cell are commentary)."""
    lines = markdown.splitlines()
    header = next((i for i, line in enumerate(lines)
                   if re.fullmatch(r"\|\s*package\s*\|\s*may import\s*\|", line.strip())), None)
    if header is None:
        raise ValueError("the layout page must hold a table headed '| package | may import |'")
    rules = {}
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        (name,) = re.findall(r"`([\w.]+)`", cells[0])
        rules[name] = set(re.findall(r"`([\w.]+)`", cells[1]))
    return rules


def package_modules(root: Path) -> dict[str, Path]:
    """Module name -> file, for every module of every package folder (one with ``__init__.py``) under ``root``."""
    modules = {}
    for init in sorted(root.glob("*/__init__.py")):
        if init.parent.name in NOT_RULED:
            continue
        for path in sorted(init.parent.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imports_in(source: str, module: str, is_package: bool) -> list[tuple[str, str | None, int]]:
    """Every import in ``source`` (the text of ``module``), anywhere in it: (module imported, name imported from it
    or None, line). Relative imports are made absolute."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found += [(base, alias.name, node.lineno) for alias in node.names]
    return found


def row_of(module: str, rules: dict[str, set[str]]) -> str | None:
    """The longest row containing ``module`` (the row itself or a module below it), or None."""
    rows = [row for row in rules if module == row or module.startswith(row + ".")]
    return max(rows, key=len, default=None)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _within(row: str, other: str) -> bool:
    """``row`` is ``other`` or lies below it (``sim.field`` within ``sim``)."""
    return row == other or row.startswith(other + ".")


def _related(row: str, other: str) -> bool:
    """``row`` and ``other`` are one package's rows above or below each other (``sim``, ``sim.field``)."""
    return _within(row, other) or _within(other, row)


def violations(root: Path, rules: dict[str, set[str]]) -> list[str]:
    """What breaks the rule in the packages under ``root``: a package without a row, a row naming no package, an
    import of a row its row does not allow, and a private name imported from another module."""
    modules = package_modules(root)
    found = [f"package {name} has no row in the table" for name in modules if "." not in name and name not in rules]
    found += [f"row {row} names no package or module" for row in rules if row not in modules]
    for module, path in modules.items():
        row = row_of(module, rules)
        for target, name, line in imports_in(path.read_text(), module, path.name == "__init__.py"):
            where = f"{path.relative_to(root)}:{line}"
            imported = f"{target}.{name}" if name and f"{target}.{name}" in modules else target
            private = [part for part in (*target.split("."), name or "") if _private(part)]
            if private and row_of(target, rules) is not None:
                found.append(f"{where}: {module} imports the private {private[-1]} of {target}")
            target_row = row_of(imported, rules)
            if row is None or target_row is None or _related(row, target_row):
                continue
            if not any(_within(target_row, allowed) for allowed in rules[row]):
                found.append(f"{where}: {module} ({row}) imports {imported} ({target_row}), which its row does not "
                             "allow")
    return list(dict.fromkeys(found))  # one line for ``from x import a, b``


#: The module that resolves the registry's check names: each name is an import of it.
RESOLVER = "reports.named_checks"


def name_violations(names: Iterable[str], modules: Iterable[str], rules: dict[str, set[str]],
                    resolver: str = RESOLVER) -> list[str]:
    """Each check name ``module:qualname`` read as an import of ``resolver``: a name whose module is no module of
    the ruled packages (a test module among them) or lies in a row that the resolver's row does not allow."""
    modules, row, found = set(modules), row_of(resolver, rules), []
    for name in names:
        module = name.partition(":")[0]
        target_row = row_of(module, rules)
        if module not in modules or target_row is None:
            found.append(f"check name {name}: {module} is no module of the ruled packages (the tests are none)")
        elif not _related(row, target_row) and not any(_within(target_row, allowed) for allowed in rules[row]):
            found.append(f"check name {name}: {resolver} ({row}) may not import {module} ({target_row})")
    return found


def dynamic_imports(source: str) -> list[int]:
    """The lines of ``source`` that import a module named by a string: ``importlib.import_module(...)``,
    ``import_module(...)`` or ``__import__(...)``."""
    calls = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)]
    return sorted(node.lineno for node in calls
                  if (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                  or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__")))


def ground_floor_string_imports(root: Path, rules: dict[str, set[str]]) -> list[str]:
    """Dynamic imports in the modules of a row that may import nothing of ours (the ground floor)."""
    return [f"{path.relative_to(root)}:{line}: {module} resolves a module by name on the ground floor"
            for module, path in package_modules(root).items()
            if (row := row_of(module, rules)) is not None and not rules[row]
            for line in dynamic_imports(path.read_text())]


def registry_check_names() -> list[str]:
    from foundation.registry import CLAIMS

    return [name for claim in CLAIMS for name in claim.check_names]


def test_every_import_follows_the_layout_table():
    assert violations(ROOT, import_rules(LAYOUT.read_text())) == []


def test_every_check_name_of_the_registry_is_an_allowed_import_of_its_resolver():
    rules = import_rules(LAYOUT.read_text())
    modules = package_modules(ROOT)
    assert RESOLVER in modules
    assert name_violations(registry_check_names(), modules, rules) == []
    assert ground_floor_string_imports(ROOT, rules) == []


@pytest.mark.parametrize("name, expected", [
    ("tests.properties.strategies:instances",
     "check name tests.properties.strategies:instances: tests.properties.strategies is no module of the ruled "
     "packages (the tests are none)"),
    ("consensus.cli:main",
     "check name consensus.cli:main: reports.named_checks (reports) may not import consensus.cli (consensus)"),
], ids=["into-the-tests", "upward"])
def test_negative_control_a_planted_check_name_is_reported(name, expected):
    """The registry's names with one planted: a name in the tests, and one on a floor above the report."""
    rules = import_rules(LAYOUT.read_text())
    assert name_violations([*registry_check_names(), name], package_modules(ROOT), rules) == [expected]


def test_negative_control_check_names_in_a_planted_tree(tmp_path):
    """The resolver ``top.right`` may import ``base``, not its sibling ``top.left``."""
    modules = package_modules(_tree(tmp_path, PLANTED))
    assert name_violations(["base.core:shared"], modules, PLANTED_RULES, "top.right") == []
    assert name_violations(["top.left.work:run"], modules, PLANTED_RULES, "top.right") == [
        "check name top.left.work:run: top.right (top.right) may not import top.left.work (top.left)"]


def test_negative_control_a_ground_floor_string_import_is_reported(tmp_path):
    edit = {"base/core.py": PLANTED["base/core.py"] + "\n\ndef find(name):\n    import importlib\n\n"
                                                     "    return importlib.import_module(name)\n"}
    assert ground_floor_string_imports(_tree(tmp_path, PLANTED), PLANTED_RULES) == []
    assert ground_floor_string_imports(_tree(tmp_path, {**PLANTED, **edit}), PLANTED_RULES) == [
        "base/core.py:12: base.core resolves a module by name on the ground floor"]


def test_the_table_rows_as_the_layout_page_writes_them():
    """The reading of the table itself: backticked names only, commentary ignored, an empty cell allows nothing."""
    rules = import_rules(LAYOUT.read_text())
    assert rules["foundation"] == set()
    assert rules["consensus"] == {"theory", "sim", "empirical", "reports", "foundation"}


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


#: A planted project: ``base`` at the bottom, ``top`` on it with two subpackages; ``top.left`` may use ``top.right``.
PLANTED = {"base/__init__.py": "", "base/core.py": "def shared():\n    return 1\n\n\ndef _hidden():\n    return 2\n",
           "top/__init__.py": "from .left import run\n", "top/left/__init__.py": "from .work import run\n",
           "top/left/work.py": "from base.core import shared\nfrom top.right import helper\n\n\ndef run():\n"
                               "    return shared() + helper()\n",
           "top/right/__init__.py": "def helper():\n    return 3\n"}
PLANTED_RULES = {"base": set(), "top": {"base"}, "top.left": {"base", "top.right"}, "top.right": {"base"}}


def test_the_planted_tree_as_written_breaks_no_rule(tmp_path):
    assert violations(_tree(tmp_path, PLANTED), PLANTED_RULES) == []


@pytest.mark.parametrize("edit, expected", [
    ({"base/core.py": PLANTED["base/core.py"] + "\n\ndef late():\n    from top.left.work import run\n    return run()\n"},
     "base/core.py:10: base.core (base) imports top.left.work (top.left), which its row does not allow"),
    ({"top/left/work.py": "from base.core import _hidden\n"},
     "top/left/work.py:1: top.left.work imports the private _hidden of base.core"),
    ({"top/right/__init__.py": "from top.left import run\n"},
     "top/right/__init__.py:1: top.right (top.right) imports top.left (top.left), which its row does not allow"),
    ({"extra/__init__.py": ""}, "package extra has no row in the table"),
], ids=["upward-import-inside-a-function", "private-import", "sibling-subpackage-not-listed", "package-without-row"])
def test_negative_control_a_planted_violation_is_reported(tmp_path, edit, expected):
    assert expected in violations(_tree(tmp_path, {**PLANTED, **edit}), PLANTED_RULES)


def test_negative_control_a_stale_row_is_reported(tmp_path):
    rules = {**PLANTED_RULES, "top.gone": set()}
    assert violations(_tree(tmp_path, PLANTED), rules) == ["row top.gone names no package or module"]


def unlisted_folders(root: Path, markdown: str) -> list[str]:
    """Package folders (with ``__init__.py``, outside ``NOT_RULED``) that the layout page's folder table (rows
    ``| `path/` | ... |``) does not name, as ``path/``."""
    listed = set(re.findall(r"^\|\s*`([\w/.-]+/)`\s*\|", markdown, flags=re.M))
    folders = {init.parent.relative_to(root).as_posix() + "/"
               for top in root.glob("*/__init__.py") if top.parent.name not in NOT_RULED
               for init in top.parent.rglob("__init__.py")}
    return sorted(folders - listed)


def test_the_folder_table_names_every_package_folder():
    """Every package and subpackage (sim/field/, empirical/audit/, ...) has its row on the layout page."""
    assert unlisted_folders(ROOT, LAYOUT.read_text()) == []


def test_negative_control_an_unlisted_subpackage_is_reported(tmp_path):
    _tree(tmp_path, {"pkg/__init__.py": "", "pkg/part/__init__.py": ""})
    assert unlisted_folders(tmp_path, "| `pkg/` | a package |\n") == ["pkg/part/"]
