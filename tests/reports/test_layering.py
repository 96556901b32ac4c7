"""The reports package in layers: the foundation (registry, records, checks, evidence, manifest, files) imports
nothing of ours above it; the build sits on it, the pytest plugin on the build, the orchestration (__main__) on top;
no cycle. Read from the source (every import, also those inside functions), with a negative control."""

from pathlib import Path

import pytest

from tests.reports.test_layout import imports_in

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("theory", "sim", "empirical", "reports", "tests")
#: Each module of reports and its layer: a module may import only modules of lower layers, foundation modules also
#: each other (without a cycle). A new module must be placed here.
LAYERS = {
    "reports": 0, "reports.registry": 0, "reports.records": 0, "reports.checks": 0, "reports.evidence": 0,
    "reports.manifest": 0, "reports.files": 0, "reports.outputs": 0, "reports.helpformat": 0, "reports.weights_dirs": 0,
    "reports.memory": 0, "reports.scale": 0, "reports.dask_tls": 0, "reports.checkout": 0,
    "reports.formulas": 1, "reports.render": 2,
    "reports.build": 3, "reports.compare": 3, "reports.screenshot": 3,
    "reports.pytest_plugin": 4,
    "reports.__main__": 5,
}
FOUNDATION = 0


def imports_of(source: str, module: str) -> set[str]:
    """The modules of ours (``PACKAGES``) that ``source`` (the text of ``module``) imports, anywhere in it (``from .
    import x`` names a module, so each imported name is listed too)."""
    found = set()
    for target, name, _ in imports_in(source, module, is_package=module == "reports"):
        found.update([target, f"{target}.{name}"] if name else [target])
    return {name for name in found if name.split(".")[0] in PACKAGES}


def graph_of(sources: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the modules among ``sources`` it imports."""
    return {module: {m for m in imports_of(text, module) if m in sources and m != module}
            for module, text in sources.items()}


def violations(sources: dict[str, str], layers: dict[str, int]) -> list[str]:
    """What breaks the layering: an unplaced module, a foundation module importing one of ours outside the
    foundation, an import of a higher or equal layer (above the foundation), and import cycles."""
    found = [f"{m} has no layer (add it to LAYERS)" for m in sources if m not in layers]
    for module, text in sources.items():
        rank = layers.get(module)
        if rank is None:
            continue
        for target in sorted(imports_of(text, module)):
            if target == module or target.split(".")[0] != "reports":
                if rank == FOUNDATION and target != module:
                    found.append(f"foundation module {module} imports {target}")
                continue
            if target not in layers:
                continue
            if layers[target] > rank or (layers[target] == rank and rank != FOUNDATION):
                found.append(f"{module} (layer {rank}) imports {target} (layer {layers[target]})")
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


def reports_sources() -> dict[str, str]:
    sources = {}
    for path in sorted((ROOT / "reports").glob("*.py")):
        name = "reports" if path.stem == "__init__" else f"reports.{path.stem}"
        sources[name] = path.read_text()
    return sources


def test_reports_is_layered_without_cycles():
    assert violations(reports_sources(), LAYERS) == []


def test_package_code_imports_only_the_foundation_of_reports():
    """theory, sim and empirical use the registry, records, checks, files and manifest, never the build, the plugin
    or the orchestration."""
    wrong = []
    for package in ("theory", "sim", "empirical"):
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            wrong += [f"{module} imports {t}" for t in imports_of(path.read_text(), module)
                      if t.split(".")[0] == "reports" and LAYERS.get(t, FOUNDATION) != FOUNDATION]
    assert wrong == []


@pytest.mark.parametrize("module, edit, expected", [
    ("reports.records", "from .build import write_report\n",
     "reports.records (layer 0) imports reports.build (layer 3)"),
    ("reports.registry", "from theory import wendel\n", "foundation module reports.registry imports theory"),
    ("reports.build", "from .pytest_plugin import FULL_ENV\n", "reports.build (layer 3) imports reports.pytest_plugin"),
    ("reports.pytest_plugin", "from .__main__ import build\n",
     "reports.pytest_plugin (layer 4) imports reports.__main__"),
    # foundation modules may import each other, never in a circle (records imports registry)
    ("reports.registry", "from .records import VERDICTS\n", "import cycle: reports.records -> reports.registry"),
], ids=["foundation-imports-build", "foundation-imports-theory", "build-imports-plugin", "plugin-imports-main",
        "cycle"])
def test_negative_control_each_kind_of_violation_is_found(module, edit, expected):
    sources = reports_sources()
    sources[module] = edit + sources[module]
    found = violations(sources, LAYERS)
    assert any(v.startswith(expected) for v in found), found


def test_negative_control_an_unplaced_module_is_found():
    sources = {**reports_sources(), "reports.extra": "import os\n"}
    assert violations(sources, LAYERS) == ["reports.extra has no layer (add it to LAYERS)"]


def test_the_empirical_runs_record_the_report_manifests_revision():
    """One manifest: the empirical runs' environment takes its git revision (with -dirty) from reports.manifest."""
    from empirical.run import environment
    from reports.manifest import git_revision

    assert environment()["git_revision"] == git_revision(ROOT)
