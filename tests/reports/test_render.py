"""The report's rendering side without a browser: formulas, the first-look summary, table cells."""

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

from reports import formulas, render
from reports.formulas import AUDIT_FRAGMENTS, STATEMENT_FRAGMENTS, typeset_fragments
from foundation.records import NO_CHECK, VERDICTS, CheckResult
from foundation.registry import CLAIMS_BY_ID, ORIGIN_LABELS
from theory.wendel import CORRECTED as WENDEL_CORRECTED
from theory.wendel import PRINTED as WENDEL_PRINTED

EMPIRICAL = Path(__file__).resolve().parents[2] / "empirical"
THEORY = EMPIRICAL.parent / "theory"


def test_a_claims_formula_is_typeset_beside_its_statement():
    """The formula is the claim's own (``Claim.formula``): the page shows it as display math with the statement;
    a claim without one (causal.reparam) shows its statement alone (negative control)."""
    with_formula, without = _entry("full.invariance", "verified"), _entry("causal.reparam", "verified")
    assert with_formula["claim"].formula and not without["claim"].formula
    page = render.render_html(entries=[with_formula, without], sections=[], manifest={}, counts={}, mathjax=None)
    assert str(formulas.display_math(with_formula["claim"].formula)) in page
    assert page.count('<div class="math display">') == 1 + page.count(str(formulas.display_math(
        with_formula["claim"].formula)))  # eq. 6 on the first screen, and the one claim's formula


def test_every_statement_fragment_is_written_by_a_check():
    # a fragment no printed or corrected statement holds any more would be dead
    source = "\n".join(path.read_text() for folder in (THEORY, EMPIRICAL) for path in folder.rglob("*.py"))
    assert [ascii_form for ascii_form, _ in STATEMENT_FRAGMENTS if ascii_form not in source] == []


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



SKIPPED = SimpleNamespace(nodeid="tests/x.py::test_big", outcome="skipped",
                          message="expensive check: run by `make report` (or pytest --full)")
ABSENT = SimpleNamespace(nodeid="tests/y.py::test_gpu", outcome="skipped", message="no GPU here")
GPT2 = {"gpt2-xl": "python -m empirical suite --profile gpu --only gpt2-xl-trained-no-ffn ..."}


def _missing(claim):
    return CheckResult(claim, "empirical", "not-run", numbers={"missing": GPT2})


def _first_look_entries():
    return [
        _entry("full.wendel", "discrepancy", [CheckResult("full.wendel", "exact", "discrepancy", printed=WENDEL_PRINTED,
                                                          corrected=WENDEL_CORRECTED),
                                              CheckResult("full.wendel", "exact", "not-run")]),
        _entry("conj.value-full", "refuted", [CheckResult("conj.value-full", "search", "refuted")]),
        _entry("conj.gradient-equilibria", "supported", [CheckResult("conj.gradient-equilibria", "search", "supported")]),
        _entry("causal.scalar", "failed", [CheckResult("causal.scalar", "symbolic", "failed")]),
        _entry("emp.rate", "not-run", tests=[SKIPPED, ABSENT]),
        _entry("emp.full", "not-run", [_missing("emp.full")]),
        _entry("emp.no-ffn", "not-run", [_missing("emp.no-ffn")]),
        _entry("sim.fig1", "no check yet"),
        _entry("model.projection", "verified", [CheckResult("model.projection", "symbolic", "verified")]),
    ]


def test_first_look_lists_discrepancies_problems_not_run_with_commands_and_gaps():
    first = render.overview(_first_look_entries())
    assert [e["claim"].id for e, _ in first["discrepancies"]] == ["full.wendel"]
    assert [e["claim"].id for e in first["partly_run"]] == ["full.wendel"]
    assert [e["claim"].id for e in first["gaps"]] == ["sim.fig1"]


def test_first_look_keeps_the_papers_failures_apart_from_the_conjectures():
    first = render.overview(_first_look_entries())
    assert [e["claim"].id for e in first["problems"]] == ["causal.scalar"]
    assert [(e["claim"].id, e["verdict"]) for e in first["conjectures"]] == [
        ("conj.value-full", "refuted"), ("conj.gradient-equilibria", "supported")]


def test_first_look_shows_each_command_once_with_every_claim_it_runs():
    groups = [(commands, [e["claim"].id for e in claims]) for commands, claims in
              render.overview(_first_look_entries())["not_run"]]
    assert groups == [
        (["python -m pytest --full tests/x.py::test_big", "tests/y.py::test_gpu: no GPU here"], ["emp.rate"]),
        ([GPT2["gpt2-xl"]], ["emp.full", "emp.no-ffn"])]


def _first_look(entries) -> str:
    """The report's first screen (templates/first_look.html) for ``entries``."""
    return render.environment().get_template("first_look.html").render(first=render.overview(entries),
                                                                        origin_labels=ORIGIN_LABELS,
                                                                        manifest={"pytest_exitstatus": 0})


def test_the_conjectures_are_labelled_by_origin_on_the_first_screen_and_in_their_table():
    first = _first_look(_first_look_entries())
    conjectures = first[first.index('id="first-conjectures"'):]
    assert "conj.value-full</code></a> (this suite&#39;s own reading)" in conjectures
    assert "conj.gradient-equilibria</code></a> (the paper&#39;s)" in conjectures
    conjectures_only = [e for e in _first_look_entries() if e["claim"].conjecture]
    page = render.render_html(entries=conjectures_only, sections=[], manifest={}, counts={}, mathjax=None)
    table = page[page.index('<table id="conjectures">'):]
    table = table[:table.index("</table>")]
    assert '<td class="origin origin-suite">this suite&#39;s own reading</td>' in table
    assert '<td class="origin origin-paper">the paper&#39;s</td>' in table


def test_a_conjecture_refuted_by_proof_is_not_called_a_certified_counterexample():
    """thm2's reading 2 is refuted by a proof and has no witness: the first screen says so, a refutation by a stored
    witness (the control) stays a certified counterexample, and the report defines refuted as either."""
    perp = "conj.karagodin-thm2-perp-projection"
    entries = [_entry(perp, "refuted", [CheckResult(perp, "proof", "refuted"), CheckResult(perp, "search", "not-run")]),
               _entry("conj.value-full", "refuted", [CheckResult("conj.value-full", "search", "refuted")])]
    first = _first_look(entries)
    conjectures = first[first.index('id="first-conjectures"'):]
    assert f"{perp}</code></a> (cited by the paper):\n            refuted by proof (no witness)" in conjectures
    control = "conj.value-full</code></a> (this suite&#39;s own reading):\n            certified counterexample"
    assert control in conjectures
    page = render.render_html(entries=entries, sections=[], manifest={}, counts={}, mathjax=None)
    definition = " ".join(page[page.index("<h2>Conjectures</h2>"):page.index('<table id="conjectures">')].split())
    assert "that replays, or a proof that the statement fails" in definition
    assert "<b>not-run</b> means no check that could settle it ran, or its search can certify no witness" in definition


def test_first_screen_typesets_the_printed_formulas_as_the_table_does():
    first = _first_look(_first_look_entries())
    assert str(typeset_fragments(WENDEL_PRINTED)) in first and r"\sum_{\mu=0}^{n-1} \binom{l-1}{\mu}" in first
    assert r"\sum_{\mu=0}^{n} \binom{l-1}{\mu}" in first  # the corrected statement too
    assert "sum_{mu=0}" not in first  # no ASCII form left
    assert first.count(GPT2["gpt2-xl"].replace("...", "")) == 1  # the shared command block once
    conjectures = first[first.index('id="first-conjectures"'):]
    assert "conj.value-full" in conjectures and "causal.scalar" not in conjectures


def test_missing_mathjax_bundle_leaves_tex_source_with_a_warning(monkeypatch, capsys):
    monkeypatch.setattr(render, "MATHJAX_BUNDLE", ("es5", "no-such-bundle.js"))
    assert render.mathjax_bundle() is None
    assert "formulas stay TeX source" in capsys.readouterr().err


def test_installed_mathjax_bundle_is_mathjax_3_with_its_licence_and_can_be_inlined():
    version, script, licence = render.mathjax_bundle()
    assert version.startswith("3.") and "MathJax" in script[:100_000] and "</script" not in script.lower()
    assert "Apache License" in licence and "Version 2.0" in licence


def test_each_claim_section_names_the_checks_its_registry_entry_names():
    """The reader goes from the report to the code: the claim's section lists ``Claim.checks``; a claim naming none
    gets no such line."""
    wendel = _entry("full.wendel", "verified", [CheckResult("full.wendel", "exact", "verified")])
    page = render.render_html(entries=[wendel], sections=[], manifest={}, counts={}, mathjax=None)
    section = page[page.index('<section class="claim" id="claim-full.wendel"'):]
    section = section[:section.index("</section>")]
    names = CLAIMS_BY_ID["full.wendel"].check_names
    assert names and all(f"<code>{name}</code>" in section for name in names)
    unnamed = dict(wendel, claim=dataclasses.replace(CLAIMS_BY_ID["full.wendel"], checks=()))
    page = render.render_html(entries=[unnamed], sections=[], manifest={}, counts={}, mathjax=None)
    assert 'class="checks"' not in page


def test_sidebar_order_places_every_verdict_once():
    # a verdict missing from SIDEBAR_ORDER would drop its claims from the sidebar without a word
    assert sorted(render.SIDEBAR_ORDER) == sorted({*VERDICTS, NO_CHECK}) and len(set(render.SIDEBAR_ORDER)) == 8


def test_verdict_groups_put_failures_first_and_keep_the_registry_order_inside_a_group():
    entries = [_entry("full.wendel", "verified"), _entry("sim.fig2", "failed"), _entry("sim.fig3", "verified")]
    groups = [(verdict, [e["claim"].id for e in claims]) for verdict, claims in render.verdict_groups(entries)]
    assert groups == [("failed", ["sim.fig2"]), ("verified", ["full.wendel", "sim.fig3"])]
    page = render.render_html(entries=entries, sections=[], manifest={}, counts={}, mathjax=None)
    assert page.count('<div class="verdict-group"') == 2 and 'href="#claim-sim.fig3"' in page


def test_the_first_screen_says_what_each_problem_verdict_means():
    """failed: the suite's check; refuted: a contradiction; unsupported: a finite run against a limit, never a
    refutation (not 'the measurement contradicts the claim')."""
    first = _first_look([_entry("causal.scalar", "failed", [CheckResult("causal.scalar", "symbolic", "failed")]),
                         _entry("full.wendel", "refuted", [CheckResult("full.wendel", "exact", "refuted")]),
                         _entry("full.convergence", "unsupported",
                                [CheckResult("full.convergence", "numeric", "unsupported")])])
    problems = first[first.index('id="first-problems"'):first.index('id="first-conjectures"')]
    lines = {claim: line for line in problems.split("<li>")[1:] for claim in ("causal.scalar", "full.wendel",
                                                                               "full.convergence") if claim in line}
    assert "a check of the suite failed" in lines["causal.scalar"]
    assert "the measurement contradicts the claim" in lines["full.wendel"]
    assert "a finite run went against it within its horizon (never a refutation)" in lines["full.convergence"]
    assert "contradicts" not in lines["full.convergence"]
