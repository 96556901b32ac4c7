"""The HTML report: one offline file with its figures, its style and the MathJax bundle inlined.

The math library is MathJax 3 (Apache-2.0), from the PyPI package ``django-static-mathjax`` (its static files
only; no Django needed). Its ``tex-svg-full.js`` typesets TeX to SVG paths, so no font file is needed and the
one file works offline; every TeX extension is in it, so nothing is fetched at run time.
"""

from __future__ import annotations

import base64
import importlib.resources
import json
import sys
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from . import formulas
from foundation.records import NO_CHECK
from foundation.registry import ORIGIN_LABELS
from foundation.scale import SCALE_DESCRIPTIONS

MATHJAX_PACKAGE = "django-static-mathjax"
#: MathJax's own folder inside the package's ``mathjax`` module (its package.json gives the MathJax version).
MATHJAX_ROOT = ("static", "mathjax")
#: The bundle in that folder: TeX input, SVG output, all extensions (2.3 MB).
MATHJAX_BUNDLE = ("es5", "tex-svg-full.js")
#: Audit grades (empirical/audit.py) and verdict words that a table cell may hold: cell text -> CSS class.
CELL_GRADES = {"holds": "g-holds", "nearly": "g-nearly", "fails": "g-fails", "not-run": "g-not-run",
               "not audited": "g-not-run", "verified": "v-verified", "discrepancy": "v-discrepancy",
               "refuted": "v-refuted", "failed": "v-failed", "supported": "v-supported",
               "unsupported": "v-unsupported"}


def mathjax_bundle() -> tuple[str, str, str] | None:
    """``(MathJax version, script, licence text)`` of the installed bundle, or None (with a warning) when it is
    missing. The report carries the licence (Apache-2.0 asks that recipients get a copy)."""
    try:
        root = importlib.resources.files("mathjax")
        for part in MATHJAX_ROOT:  # one part at a time: Python 3.10's Traversable.joinpath takes one
            root = root.joinpath(part)
        bundle = root
        for part in MATHJAX_BUNDLE:
            bundle = bundle.joinpath(part)
        script = bundle.read_text(encoding="utf-8")
        version = json.loads(root.joinpath("package.json").read_text(encoding="utf-8"))["version"]
        licence = root.joinpath("LICENSE").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, KeyError, ValueError) as error:
        print(f"warning: the report's formulas stay TeX source: {error} (pip install {MATHJAX_PACKAGE}; "
              "pyproject.toml lists it)", file=sys.stderr)
        return None
    if "</script" in script.lower():
        raise ValueError(f"{'/'.join(MATHJAX_BUNDLE)} of {MATHJAX_PACKAGE} {version} contains '</script': it cannot "
                         "be inlined into the report's <script> element.")
    return version, script, licence


#: The sidebar's order of verdict groups: what needs attention first, then what is open, then what holds.
SIDEBAR_ORDER = ("failed", "refuted", "discrepancy", "unsupported", "not-run", NO_CHECK, "supported", "verified")


def verdict_groups(entries: list[dict]) -> list[tuple[str, list[dict]]]:
    """The sidebar: ``(verdict, its claims in registry order)`` for each verdict some claim has, in
    :data:`SIDEBAR_ORDER`."""
    groups = [(verdict, [e for e in entries if e["verdict"] == verdict]) for verdict in SIDEBAR_ORDER]
    return [(verdict, claims) for verdict, claims in groups if claims]


def overview(entries: list[dict]) -> dict[str, list]:
    """What to look at first: the printed paper's discrepancies (claim entry, its discrepancy records), the paper's
    claims failed or refuted, apart from them the conjectures' outcomes, the claims not run grouped by the commands
    that would run them (each command block once, with every claim it runs), and the claims with no check."""
    return {
        "discrepancies": [(e, [r for r in e["records"] if r.verdict == "discrepancy"])
                          for e in entries if any(r.verdict == "discrepancy" for r in e["records"])],
        "problems": [e for e in entries if e["verdict"] in ("failed", "refuted", "unsupported")
                     and not e["claim"].conjecture],
        "conjectures": [e for e in entries if e["claim"].conjecture and e["verdict"] != NO_CHECK],
        "not_run": _by_commands([e for e in entries if e["verdict"] == "not-run"]),
        "partly_run": [e for e in entries if e["verdict"] != "not-run" and any(r.verdict == "not-run"
                                                                             for r in e["records"])],
        "gaps": [e for e in entries if e["verdict"] == NO_CHECK],
    }


def _by_commands(entries: list[dict]) -> list[tuple[list[str], list[dict]]]:
    """``(commands, the claims they would run)``: claims needing the same commands (the same absent weights) share
    one entry, in the order the first of them comes."""
    groups: dict[tuple[str, ...], list[dict]] = {}
    for entry in entries:
        groups.setdefault(tuple(_run_commands(entry)), []).append(entry)
    return [(list(commands), claims) for commands, claims in groups.items()]


def _run_commands(entry: dict) -> list[str]:
    """The commands that would run a claim's checks that did not run: ``pytest --full`` for a test skipped as
    expensive, the commands a not-run record names (``numbers["missing"]``: model -> command), else the reason."""
    commands = []
    for test in entry["tests"]:
        if test.outcome == "skipped":
            commands.append(f"python -m pytest --full {test.nodeid}" if "--full" in test.message
                            else f"{test.nodeid}: {test.message}")
    for record in entry["records"]:
        missing = record.numbers.get("missing") if record.verdict == "not-run" else None
        if isinstance(missing, dict):
            commands += [str(command) for command in missing.values()]
    if not entry["tests"] and not entry["records"]:  # none of its tests ran in this run
        commands.append(f"python -m pytest --claim {entry['claim'].id}")
    return list(dict.fromkeys(commands))


def render_html(*, entries: list[dict], sections: list, manifest: dict, counts: dict[str, int],
                mathjax: tuple[str, str, str] | None) -> str:
    """The report page; ``mathjax`` is :func:`mathjax_bundle`'s ``(version, script, licence)``, or None to leave the
    formulas as TeX source (the page then says so)."""
    return environment().get_template("report.html").render(
        entries=entries, sections=sections, manifest=manifest, counts=counts, no_check=NO_CHECK,
        scale_description=SCALE_DESCRIPTIONS.get(manifest.get("scale", "full"), ""),
        first=overview(entries), groups=verdict_groups(entries), origin_labels=ORIGIN_LABELS, model_equation=formulas.MODEL_EQUATION,
        css=Markup((Path(__file__).parent / "templates" / "report.css").read_text()),
        mathjax_version=mathjax[0] if mathjax else None, mathjax_script=Markup(mathjax[1]) if mathjax else None,
        mathjax_licence=mathjax[2] if mathjax else None,
    )


def environment() -> Environment:
    """The templates of ``reports/templates`` with the report's filters (figures, numbers, cells, formulas)."""
    env = Environment(loader=PackageLoader("reports", "templates"), autoescape=select_autoescape(["html"]))
    env.filters.update(png=_embed_png, number=_format_number, cell=_cell, fragments=formulas.typeset_fragments,
                       display_math=formulas.display_math)
    env.tests["graded"] = _graded
    return env


def _cell(value: Any) -> Markup:
    """A table cell: numbers right-aligned in tabular figures, audit grades and verdicts with their colour
    class (the word stays), other text with its audit formulas typeset."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Markup('<td class="num">') + escape(_format_number(value)) + Markup("</td>")
    text = str(value)
    grade = CELL_GRADES.get(text.strip())
    if grade:
        return Markup(f'<td class="grade {grade}">') + escape(text) + Markup("</td>")
    return Markup("<td>") + formulas.typeset_fragments(text) + Markup("</td>")


def _graded(table) -> bool:
    """Whether a table has a cell coloured by :data:`CELL_GRADES` (its section then shows the legend)."""
    return any(str(cell).strip() in CELL_GRADES for row in table.rows for cell in row)


def _embed_png(path: str) -> str | None:
    """A data: URI for a PNG, so the report works offline from a single file."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    return "data:image/png;base64," + base64.b64encode(data).decode()


def _format_number(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
