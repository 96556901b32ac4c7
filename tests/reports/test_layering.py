"""The ground floor and the report in layers: every module of ``foundation`` (registry, records, registration, evidence,
manifest, files, ...) imports nothing of ours outside it; the report (``reports``) sits on it, in layers: the
formulas, the rendering, the build, the pytest plugin on the build, the orchestration (__main__) on top; no cycle.
Read from the source (every import, also those inside functions), with negative controls. Which packages may import
the foundation or the report is the import table's (docs/layout.md, tests/reports/test_layout.py)."""

from pathlib import Path

import pytest

from tests.reports.test_layout import imports_in

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("foundation", "theory", "sim", "empirical", "reports", "tests")
#: The ground floor's layer: every module of the foundation package, which may import each other (without a cycle).
FOUNDATION = 0
#: Each module of reports and its layer: a module may import only modules of lower layers (the foundation's among
#: them). A new module must be placed here.
LAYERS = {
    "reports": 1, "reports.formulas": 1, "reports.named_checks": 1, "reports.checkout": 1, "reports.render": 2,
    "reports.build": 3, "reports.compare": 3, "reports.screenshot": 3,
    "reports.pytest_plugin": 4,
    "reports.__main__": 5,
}


def layer_of(module: str, layers: dict[str, int]) -> int | None:
    """The layer of ``module``: the foundation's for any module of that package, else its entry (None: unplaced)."""
    return FOUNDATION if module.split(".")[0] == "foundation" else layers.get(module)


def imports_of(source: str, module: str) -> set[str]:
    """The modules of ours (``PACKAGES``) that ``source`` (the text of ``module``) imports, anywhere in it (``from .
    import x`` names a module, so each imported name is listed too)."""
    found = set()
    for target, name, _ in imports_in(source, module, is_package=module in ("reports", "foundation")):
        found.update([target, f"{target}.{name}"] if name else [target])
    return {name for name in found if name.split(".")[0] in PACKAGES}


def graph_of(sources: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the modules among ``sources`` it imports."""
    return {module: {m for m in imports_of(text, module) if m in sources and m != module}
            for module, text in sources.items()}


def violations(sources: dict[str, str], layers: dict[str, int]) -> list[str]:
    """What breaks the layering: an unplaced module of reports, a foundation module importing one of ours outside
    the foundation, a module of reports importing a higher or equal layer of reports, and import cycles. (A module
    of reports importing theory, sim or empirical is the import table's to judge.)"""
    found = [f"{m} has no layer (add it to LAYERS)" for m in sources if layer_of(m, layers) is None]
    for module, text in sources.items():
        rank = layer_of(module, layers)
        if rank is None:
            continue
        for target in sorted(imports_of(text, module)):
            if target == module:
                continue
            if rank == FOUNDATION:
                if target.split(".")[0] != "foundation":
                    found.append(f"foundation module {module} imports {target}")
                continue
            target_rank = layer_of(target, layers) if target.split(".")[0] in ("foundation", "reports") else None
            if target_rank is not None and target_rank >= rank:
                found.append(f"{module} (layer {rank}) imports {target} (layer {target_rank})")
    found += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph_of(sources))]
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each module that lies on one (depth-first search)."""
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                found.append(path[path.index(target):] + [target] if target in path else [node, target])
            elif target not in state:
                visit(target, [*path, target])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def floor_sources() -> dict[str, str]:
    """Module name -> source, for every module of foundation and reports."""
    sources = {}
    for package in ("foundation", "reports"):
        for path in sorted((ROOT / package).glob("*.py")):
            name = package if path.stem == "__init__" else f"{package}.{path.stem}"
            sources[name] = path.read_text()
    return sources


def test_the_foundation_and_the_report_are_layered_without_cycles():
    assert violations(floor_sources(), LAYERS) == []


@pytest.mark.parametrize("module, edit, expected", [
    ("foundation.records", "from reports.build import write_report\n",
     "foundation module foundation.records imports reports.build"),
    ("foundation.registry", "from theory import wendel\n", "foundation module foundation.registry imports theory"),
    ("reports.render", "from .build import write_report\n", "reports.render (layer 2) imports reports.build (layer 3)"),
    ("reports.build", "from .pytest_plugin import FULL_ENV\n", "reports.build (layer 3) imports reports.pytest_plugin"),
    ("reports.pytest_plugin", "from .__main__ import build\n",
     "reports.pytest_plugin (layer 4) imports reports.__main__"),
    # foundation modules may import each other, never in a circle (records imports registry)
    ("foundation.registry", "from .records import VERDICTS\n",
     "import cycle: foundation.records -> foundation.registry"),
], ids=["foundation-imports-build", "foundation-imports-theory", "render-imports-build", "build-imports-plugin",
        "plugin-imports-main", "cycle"])
def test_negative_control_each_kind_of_violation_is_found(module, edit, expected):
    sources = floor_sources()
    sources[module] = edit + sources[module]
    found = violations(sources, LAYERS)
    assert any(v.startswith(expected) for v in found), found


def test_negative_control_an_unplaced_module_is_found():
    sources = {**floor_sources(), "reports.extra": "import os\n", "foundation.extra": "import os\n"}
    assert violations(sources, LAYERS) == ["reports.extra has no layer (add it to LAYERS)"]


def test_the_empirical_runs_record_the_report_manifests_revision():
    """One manifest: the empirical runs' environment takes its git revision (with -dirty) from foundation.manifest."""
    from empirical.run import environment
    from foundation.manifest import git_revision

    assert environment()["git_revision"] == git_revision(ROOT)
