"""The generated report in a real browser (Debian's headless Chromium): figures load, one row per claim, the
formulas are typeset by the MathJax bundled into the file (no request leaves it), the summary is on the first
screen, and audit cells and verdicts carry their colours beside their words.

In CI (CONSENSUS_REQUIRE_BROWSER=1, set by .ci/run) a missing browser fails the test; elsewhere it is
skipped with the reason shown.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from foundation.registry import CLAIMS
from reports.formulas import AUDIT_FRAGMENTS
from reports.pytest_plugin import FULL_ENV

pytest_plugins = ["pytester"]

SUITE = '''
import pytest
from reports.formulas import AUDIT_FRAGMENTS
from foundation.records import CheckResult, Figure, ReportSection, Table

def _png(tmp_path, name):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [2, 1, 0])
    path = tmp_path / name
    fig.savefig(path)
    return str(path)

def test_with_figures(record, tmp_path):
    record(CheckResult("sim.fig2", "figure", "supported", figures=(Figure(_png(tmp_path, "a.png"), "paths", "Fig. 2"),)))
    record(CheckResult("sim.fig3", "figure", "verified", figures=(Figure(_png(tmp_path, "b.png"), "V", "Fig. 3"),)))

def test_findings(record):
    record(CheckResult("full.wendel", "exact", "discrepancy", detail="the printed sum stops at n-1",
                       printed="P = 2^{-(l-1)} sum_{mu=0}^{n-1} C(l-1, mu)",
                       corrected="P = 2^{-(l-1)} sum_{mu=0}^{n} C(l-1, mu)"))
    record(CheckResult("conj.value-full", "search", "refuted", detail="a stored witness replays"))

@pytest.mark.claim("emp.rate", method="empirical")
@pytest.mark.full
def test_expensive():
    raise AssertionError("skipped without --full")

def test_audit_section(report_section):
    report_section(ReportSection(
        "Theory meets practice", "Every audit formula: " + "; ".join(a for a, _ in AUDIT_FRAGMENTS) + ".",
        tables=(Table("Hypothesis -> holds / nearly / fails", ("hypothesis", "model (trained)", "threshold"),
                      (("P_eta bounded", "holds", 0.5), ("U_eta symmetric", "nearly", 0.1),
                       ("U_eta = I", "fails", 1e-6), ("h = 1", "not-run", "-"))),)))
'''

ROOT = Path(__file__).resolve().parents[2]
GRADES = {"holds": "g-holds", "nearly": "g-nearly", "fails": "g-fails", "not-run": "g-not-run"}


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    executable = _chromium()
    if executable is None:
        if os.environ.get("CONSENSUS_REQUIRE_BROWSER"):
            pytest.fail("CONSENSUS_REQUIRE_BROWSER is set but no chromium is installed (apt-get install chromium)")
        pytest.skip("headless Chromium not installed (apt-get install chromium); CI installs it")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed: pip install -e '.[test]'")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"],
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """SUITE run once by pytest with the report plugin, its expensive test skipped as under `make test` (a
    subprocess importing this tree's packages): the report's folder, with index.html and verdicts.json."""
    folder = tmp_path_factory.mktemp("suite")
    (folder / "test_suite.py").write_text(SUITE)
    (folder / "pytest.ini").write_text("[pytest]\nmarkers =\n    claim: a registry claim\n    full: expensive\n")
    env = {key: value for key, value in os.environ.items() if key != FULL_ENV}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "reports.pytest_plugin", "--report-dir", "out", "-q",
                          "-p", "no:cacheprovider", "test_suite.py"], cwd=folder, env=env, capture_output=True, text=True)
    assert run.returncode == 0 and "3 passed, 1 skipped" in run.stdout, run.stdout + run.stderr
    return folder / "out"


@pytest.fixture
def report(built, tmp_path):
    """A copy of the built report for a test that breaks it on purpose: its index.html."""
    return shutil.copytree(built, tmp_path / "out") / "index.html"


@pytest.fixture(scope="module")
def opened(browser, built):
    """The built report open in Chromium (shared by the tests that only read it) and the URLs it requested."""
    requests = []
    page = _open(browser, built / "index.html", requests)
    yield page, requests
    page.close()


def _open(browser, index, requests=None):
    """The page at a laptop's first screen (1280 x 800), after its figure and formula self-checks ran."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    if requests is not None:
        page.on("request", lambda request: requests.append(request.url))
    page.goto(index.as_uri())
    page.wait_for_function("document.body.dataset.figures !== undefined")
    page.wait_for_function("document.body.dataset.mathTypeset !== undefined", timeout=60_000)
    return page


def _math(page) -> tuple[int, int, int]:
    data = page.evaluate("({...document.body.dataset})")
    return int(data["mathFormulas"]), int(data["mathTypeset"]), int(data["mathErrors"])


def _on_first_screen(page, selector: str) -> bool:
    """Whether the element's top edge is inside the viewport before any scrolling."""
    return page.evaluate("s => { const r = document.querySelector(s).getBoundingClientRect();"
                         " return window.scrollY === 0 && r.top >= 0 && r.top < window.innerHeight; }", selector)


def test_report_opens_in_chromium_with_all_figures_and_one_row_per_claim(opened, built):
    page, _ = opened
    figures = int(page.evaluate("document.body.dataset.figures"))
    broken = int(page.evaluate("document.body.dataset.brokenFigures"))
    rows = page.eval_on_selector_all("#claims tbody tr", "rows => rows.map(r => r.dataset.claim)")
    conjectures = page.eval_on_selector_all("#conjectures tbody tr", "rows => rows.map(r => r.dataset.claim)")
    assert (figures, broken) == (2, 0)
    # the theorems' table and the conjectures' own table: every claim once, in the registry's order
    assert rows == [c.id for c in CLAIMS if not c.id.startswith("conj.")]
    assert conjectures == [c.id for c in CLAIMS if c.id.startswith("conj.")] != []
    assert "all loaded" in page.inner_text("#figure-status")
    data = json.loads((built / "verdicts.json").read_text())
    assert len(data["claims"]) == len(CLAIMS)


def test_broken_figure_is_detected_by_the_page_check(report, browser):
    # Negative control for the check above: a corrupted image must be counted as broken.
    html = report.read_text().replace("data:image/png;base64,", "data:image/png;base64,AAAA", 1)
    report.write_text(html)
    page = _open(browser, report)
    assert int(page.evaluate("document.body.dataset.brokenFigures")) == 1


def test_formulas_are_typeset_as_svg_by_the_bundled_mathjax_offline(opened, built):
    page, requests = opened
    formulas, typeset, errors = _math(page)
    # eq. 6, each claim's formula twice (claims table, evidence) and every audit fragment at least once
    assert formulas >= 1 + 2 * sum(bool(claim.formula) for claim in CLAIMS) + len(AUDIT_FRAGMENTS)
    assert (typeset, errors) == (formulas, 0)
    svg = page.eval_on_selector_all(".math", "fs => fs.filter(f => f.querySelector('mjx-container svg path, "
                                             "mjx-container svg use')).length")
    assert svg == formulas
    text = page.inner_text("body")
    assert "\\(" not in text and "\\[" not in text
    audit_prose = page.inner_text("section.extra p.prose")
    assert not [ascii_form for ascii_form, _ in AUDIT_FRAGMENTS if ascii_form in audit_prose]
    assert "typeset by MathJax 3." in page.inner_text("#math-status")
    assert "Apache License" in page.text_content("#third-party")  # the bundle's licence travels with it
    assert requests == [(built / "index.html").as_uri()]  # one file: nothing else is fetched, MathJax included
    # verdicts.json keeps the ASCII statements
    data = json.loads((built / "verdicts.json").read_text())
    assert all("\\" not in claim["statement"] for claim in data["claims"])


def test_report_built_without_the_mathjax_bundle_fails_the_render_check(pytester, browser, monkeypatch):
    # Negative control: the package's bundle not found, so the formulas stay TeX source and the check says so.
    monkeypatch.setattr("reports.render.MATHJAX_BUNDLE", ("es5", "no-such-bundle.js"))
    monkeypatch.delenv(FULL_ENV, raising=False)
    pytester.makepyfile(test_suite=SUITE)
    pytester.runpytest("-p", "reports.pytest_plugin", "--report-dir", "out")
    page = _open(browser, pytester.path / "out" / "index.html")
    formulas, typeset, _ = _math(page)
    assert formulas > 0 and typeset == 0
    assert "\\(" in page.inner_text("body")
    assert "FORMULAS NOT TYPESET" in page.inner_text("#math-status")


def test_tex_error_is_detected_by_the_render_check(report, browser):
    # Negative control: a formula with a mistyped macro (\dott for \dot) must be counted as a TeX error.
    report.write_text(report.read_text().replace("\\dot y_1 = 0", "\\dott y_1 = 0", 1))
    page = _open(browser, report)
    assert _math(page)[2] == 1
    assert "FORMULAS NOT TYPESET" in page.inner_text("#math-status")


def test_summary_of_findings_is_on_the_first_screen(opened):
    page, _ = opened
    assert _on_first_screen(page, "#first-look")
    for part in ("#first-discrepancies", "#first-problems", "#first-conjectures", "#first-not-run"):
        assert _on_first_screen(page, f"{part} h3"), part
    assert "full.wendel" in page.inner_text("#first-discrepancies")
    assert "conj.value-full" in page.inner_text("#first-conjectures")
    not_run = page.inner_text("#first-not-run")
    assert "emp.rate" in not_run and "python -m pytest --full test_suite.py::test_expensive" in not_run
    # the first-screen check itself fails on a page whose summary is moved below the claims (negative control;
    # put back after, the page is shared)
    page.evaluate("window.firstLookBefore = document.getElementById('first-look').nextElementSibling;"
                  "document.body.appendChild(document.getElementById('first-look'))")
    try:
        assert not _on_first_screen(page, "#first-look")
    finally:
        page.evaluate("document.body.insertBefore(document.getElementById('first-look'), window.firstLookBefore)")
    assert _on_first_screen(page, "#first-look")


def test_audit_cells_and_verdicts_carry_their_colour_and_word(opened):
    page, _ = opened
    cells = page.eval_on_selector_all(
        "section.extra table.data tbody td",
        "tds => tds.map(td => [td.innerText.trim(), td.className, getComputedStyle(td).backgroundColor])")
    graded = {text: (cls, colour) for text, cls, colour in cells if "grade" in cls}
    assert {text: cls.split()[-1] for text, (cls, _) in graded.items()} == GRADES  # the word stays the text
    colours = {colour for _, colour in graded.values()}
    assert len(colours) == 4 and "rgba(0, 0, 0, 0)" not in colours
    # a cell that is no grade (a hypothesis, a number, "-") gets no grade colour
    assert all("grade" not in cls for text, cls, _ in cells if text not in GRADES)
    legend = page.inner_text("#legend")
    assert all(word in legend for word in (*GRADES, "verified", "discrepancy", "refuted", "failed", "supported",
                                           "unsupported"))
    verdict = page.eval_on_selector("#claims tr[data-claim='full.wendel'] .verdict",
                                    "v => [v.innerText, v.className, getComputedStyle(v).backgroundColor]")
    assert verdict[0].endswith("discrepancy") and "v-discrepancy" in verdict[1] and verdict[2] != "rgba(0, 0, 0, 0)"


def test_prose_is_set_in_a_proportional_font_and_code_in_monospace(opened):
    page, _ = opened
    prose = page.eval_on_selector("section.extra p.prose", "p => getComputedStyle(p).fontFamily")
    command = page.eval_on_selector("#first-not-run code.command", "c => getComputedStyle(c).fontFamily")
    assert "mono" not in prose.lower() and "mono" in command.lower()


# --- navigation: the sidebar of claims by verdict, the verdict filter, deep links ------------------------------

FILTER_HOOK = 'boxes.forEach(function (b) { b.addEventListener("change", apply); });'


def _sidebar(page) -> dict[str, tuple[int, list[str]]]:
    """The sidebar as the reader sees it: verdict -> (the count it shows, the claims it links to)."""
    groups = page.eval_on_selector_all(
        "#sidebar .verdict-group",
        "gs => gs.map(g => [g.querySelector('input').value, g.querySelector('.count').innerText,"
        " Array.from(g.querySelectorAll('li a')).map(a => a.getAttribute('href'))])")
    return {verdict: (int(count), [href.removeprefix("#claim-") for href in hrefs]) for verdict, count, hrefs in groups}


def _shown_claims(page) -> set[str]:
    """The claims whose evidence section is displayed (a hidden one has no layout box)."""
    return set(page.eval_on_selector_all("section.claim", "ss => ss.filter(s => s.getClientRects().length > 0)"
                                                          ".map(s => s.id.replace(/^claim-/, ''))"))


def _shown_rows(page) -> set[str]:
    return set(page.eval_on_selector_all("#claims tbody tr, #conjectures tbody tr",
                                         "rs => rs.filter(r => r.getClientRects().length > 0).map(r => r.dataset.claim)"))


def _targeted(page) -> tuple[str | None, float]:
    """The id of the element the URL's fragment targets (``:target``) and that element's top in the viewport."""
    return page.evaluate("() => { const t = document.querySelector(':target');"
                         " return [t ? t.id : null, t ? t.getBoundingClientRect().top : -1]; }")


def test_sidebar_groups_every_claim_under_its_verdict_with_its_count(opened, built):
    page, _ = opened
    data = json.loads((built / "verdicts.json").read_text())
    expected = {}
    for claim in data["claims"]:
        expected.setdefault(claim["verdict"], []).append(claim["claim"])
    sidebar = _sidebar(page)
    assert sidebar == {verdict: (len(ids), ids) for verdict, ids in expected.items()}
    assert {verdict: count for verdict, (count, _) in sidebar.items()} == data["counts"]
    assert list(sidebar)[:3] == ["refuted", "discrepancy", "not-run"]  # what needs attention comes first
    # beside the first look, not over it, on a laptop's first screen
    box = page.eval_on_selector("#sidebar", "s => s.getBoundingClientRect().toJSON()")
    first = page.eval_on_selector("#first-look", "f => f.getBoundingClientRect().left")
    assert box["left"] == 0 and box["width"] > 150 and box["right"] <= first and _on_first_screen(page, "#sidebar")
    # negative control: a claim moved to another verdict's list is seen (put back after, the page is shared)
    move = ("([from, to]) => document.querySelector(`#sidebar .verdict-group[data-verdict='${to}'] ul`).appendChild("
            "document.querySelector(`#sidebar .verdict-group[data-verdict='${from}'] li`))")
    page.evaluate(move, ["verified", "refuted"])
    try:
        assert _sidebar(page) != {verdict: (len(ids), ids) for verdict, ids in expected.items()}
    finally:
        page.evaluate("() => document.querySelector(\"#sidebar .verdict-group[data-verdict='verified'] ul\")"
                      ".prepend(document.querySelector(\"#sidebar .verdict-group[data-verdict='refuted'] li:last-child\"))")
    assert _sidebar(page) == {verdict: (len(ids), ids) for verdict, ids in expected.items()}


def test_verdict_filter_hides_the_claims_of_a_verdict_and_shows_them_again(opened, built):
    page, _ = opened
    verified = {c["claim"] for c in json.loads((built / "verdicts.json").read_text())["claims"] if c["verdict"] == "verified"}
    everything = _shown_claims(page)
    assert verified and verified < everything and _shown_rows(page) == everything
    box = page.locator("#sidebar input.verdict-filter[value='verified']")
    box.uncheck()
    try:
        assert _shown_claims(page) == everything - verified
        assert _shown_rows(page) == everything - verified  # the tables' rows too
        assert page.evaluate("document.body.dataset.hiddenVerdicts") == "verified"
    finally:
        box.check()
    assert _shown_claims(page) == everything and _shown_rows(page) == everything


def test_verdict_filter_without_its_script_hides_nothing(report, browser):
    # Negative control for the filter test: with the boxes wired to nothing, unticking one hides no claim.
    html = report.read_text()
    assert FILTER_HOOK in html
    report.write_text(html.replace(FILTER_HOOK, ""))
    page = _open(browser, report)
    everything = _shown_claims(page)
    page.locator("#sidebar input.verdict-filter[value='verified']").uncheck()
    assert _shown_claims(page) == everything
    page.close()


def test_deep_link_targets_its_claim_and_scrolls_it_into_view(browser, built):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto((built / "index.html").as_uri() + "#claim-sim.fig3")
    page.wait_for_function("document.body.dataset.mathTypeset !== undefined", timeout=60_000)
    target, top = _targeted(page)
    assert target == "claim-sim.fig3" and 0 <= top < 100 and page.evaluate("window.scrollY") > 0
    # each claim heading links to itself
    page.click("#claim-full\\.wendel h3 a.self-link")
    assert page.evaluate("location.hash") == "#claim-full.wendel"
    target, top = _targeted(page)
    assert target == "claim-full.wendel" and 0 <= top < 100
    # a link followed to a claim the filter hides shows its verdict again and lands on it
    page.locator("#sidebar input.verdict-filter[value='verified']").uncheck()
    assert "sim.fig3" not in _shown_claims(page)
    page.evaluate("location.hash = '#claim-sim.fig3'")
    page.wait_for_function("document.getElementById('claim-sim.fig3').getClientRects().length > 0")
    assert page.locator("#sidebar input.verdict-filter[value='verified']").is_checked()
    target, top = _targeted(page)
    assert target == "claim-sim.fig3" and 0 <= top < 100
    page.close()


def test_deep_link_to_a_report_without_claim_anchors_lands_nowhere(report, browser):
    # Negative control for the deep-link test: without the claim-<id> anchors the fragment targets nothing.
    report.write_text(report.read_text().replace('id="claim-', 'id="x-claim-'))
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(report.as_uri() + "#claim-sim.fig3")
    page.wait_for_function("document.body.dataset.mathTypeset !== undefined", timeout=60_000)
    assert _targeted(page)[0] is None and page.evaluate("window.scrollY") == 0
    page.close()
