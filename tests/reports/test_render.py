"""The report's rendering side without a browser: formulas, the first-look summary, table cells."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from reports import render
from reports.formulas import AUDIT_FRAGMENTS, CLAIM_TEX, typeset_fragments
from reports.records import CheckResult
from reports.registry import CLAIMS_BY_ID

EMPIRICAL = Path(__file__).resolve().parents[2] / "empirical"


def test_every_claim_formula_belongs_to_a_registry_claim():
    assert set(CLAIM_TEX) <= set(CLAIMS_BY_ID)


def test_every_audit_fragment_is_written_by_the_audit():
    # a fragment the audit no longer writes would be dead (and its replacement silently lost)
    source = "\n".join(path.read_text() for path in EMPIRICAL.rglob("*.py"))
    assert [ascii_form for ascii_form, _ in AUDIT_FRAGMENTS if ascii_form not in source] == []


def test_fragments_become_inline_math_longest_first_and_the_rest_is_escaped():
    html = str(typeset_fragments("U_eta = I and P_eta < 1 & <b>"))
    assert html == ('<span class="math">\\(U_\\eta = I\\)</span> and <span class="math">\\(P_\\eta\\)</span> '
                    "&lt; 1 &amp; &lt;b&gt;")


def test_a_fragment_inside_a_longer_word_is_left_alone():
    # control for the test above: the same letters continuing a word are not a formula
    assert str(typeset_fragments("XP_etas and U_eta2")) == "XP_etas and U_eta2"


@pytest.mark.parametrize("value, expected", [
    ("holds", '<td class="grade g-holds">holds</td>'),
    ("fails", '<td class="grade g-fails">fails</td>'),
    ("not-run", '<td class="grade g-not-run">not-run</td>'),
    ("refuted", '<td class="grade v-refuted">refuted</td>'),
    (0.125, '<td class="num">0.125</td>'),
    ("holds only for h = 1", '<td>holds only for <span class="math">\\(h = 1\\)</span></td>'),
], ids=["holds", "fails", "not-run", "verdict", "number", "prose"])
def test_table_cell_gets_the_class_of_its_grade_and_keeps_the_word(value, expected):
    assert str(render._cell(value)) == expected


def _entry(claim, verdict, records=(), tests=()):
    return {"claim": CLAIMS_BY_ID[claim], "verdict": verdict, "records": list(records), "tests": list(tests)}


def test_first_look_lists_discrepancies_problems_not_run_with_commands_and_gaps():
    skipped = SimpleNamespace(nodeid="tests/x.py::test_big", outcome="skipped",
                              message="expensive check: run by `make report` (or pytest --full)")
    absent = SimpleNamespace(nodeid="tests/y.py::test_gpu", outcome="skipped", message="no GPU here")
    missing = CheckResult("emp.full", "empirical", "not-run", numbers={"missing": {"gpt2-xl": "python -m empirical run"}})
    entries = [
        _entry("full.wendel", "discrepancy", [CheckResult("full.wendel", "exact", "discrepancy", printed="a", corrected="b"),
                                              CheckResult("full.wendel", "exact", "not-run")]),
        _entry("conj.value-full", "refuted", [CheckResult("conj.value-full", "search", "refuted")]),
        _entry("causal.scalar", "failed", [CheckResult("causal.scalar", "symbolic", "failed")]),
        _entry("emp.rate", "not-run", tests=[skipped, absent]),
        _entry("emp.full", "not-run", [missing]),
        _entry("sim.fig1", "no check yet"),
        _entry("model.projection", "verified", [CheckResult("model.projection", "symbolic", "verified")]),
    ]
    first = render.overview(entries)
    assert [e["claim"].id for e, _ in first["discrepancies"]] == ["full.wendel"]
    assert [e["claim"].id for e in first["problems"]] == ["conj.value-full", "causal.scalar"]
    assert dict((e["claim"].id, commands) for e, commands in first["not_run"]) == {
        "emp.rate": ["python -m pytest --full tests/x.py::test_big", "tests/y.py::test_gpu: no GPU here"],
        "emp.full": ["python -m empirical run"]}
    assert [e["claim"].id for e in first["partly_run"]] == ["full.wendel"]
    assert [e["claim"].id for e in first["gaps"]] == ["sim.fig1"]


def test_missing_mathjax_bundle_leaves_tex_source_with_a_warning(monkeypatch, capsys):
    monkeypatch.setattr(render, "MATHJAX_BUNDLE", ("es5", "no-such-bundle.js"))
    assert render.mathjax_bundle() is None
    assert "formulas stay TeX source" in capsys.readouterr().err


def test_installed_mathjax_bundle_is_mathjax_3_with_its_licence_and_can_be_inlined():
    version, script, licence = render.mathjax_bundle()
    assert version.startswith("3.") and "MathJax" in script[:100_000] and "</script" not in script.lower()
    assert "Apache License" in licence and "Version 2.0" in licence
