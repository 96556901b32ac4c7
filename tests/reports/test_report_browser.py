"""The generated report in a real browser (Debian's headless Chromium): figures load, one row per claim.

In CI (CONSENSUS_REQUIRE_BROWSER=1, set by .ci/run) a missing browser fails the test; elsewhere it is
skipped with the reason shown.
"""

import json
import os
import shutil

import pytest

from reports.registry import CLAIMS

pytest_plugins = ["pytester"]

SUITE = '''
import pytest
from reports.records import CheckResult, Figure

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
    record(CheckResult("sim.fig2", "figure", "verified", figures=(Figure(_png(tmp_path, "a.png"), "paths", "Fig. 2"),)))
    record(CheckResult("sim.fig3", "figure", "verified", figures=(Figure(_png(tmp_path, "b.png"), "V", "Fig. 3"),)))
'''


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
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


def test_report_opens_in_chromium_with_all_figures_and_one_row_per_claim(pytester, browser):
    pytester.makepyfile(test_suite=SUITE)
    pytester.runpytest("-p", "reports.pytest_plugin", "--report-dir", "out").assert_outcomes(passed=1)
    index = pytester.path / "out" / "index.html"
    page = browser.new_page()
    page.goto(index.as_uri())
    page.wait_for_function("document.body.dataset.figures !== undefined")
    figures = int(page.evaluate("document.body.dataset.figures"))
    broken = int(page.evaluate("document.body.dataset.brokenFigures"))
    rows = page.eval_on_selector_all("#claims tbody tr", "rows => rows.map(r => r.dataset.claim)")
    conjectures = page.eval_on_selector_all("#conjectures tbody tr", "rows => rows.map(r => r.dataset.claim)")
    assert (figures, broken) == (2, 0)
    # the theorems' table and the conjectures' own table: every claim once, in the registry's order
    assert rows == [c.id for c in CLAIMS if not c.id.startswith("conj.")]
    assert conjectures == [c.id for c in CLAIMS if c.id.startswith("conj.")] != []
    assert "all loaded" in page.inner_text("#figure-status")
    data = json.loads((pytester.path / "out" / "verdicts.json").read_text())
    assert len(data["claims"]) == len(CLAIMS)


def test_broken_figure_is_detected_by_the_page_check(pytester, browser):
    # Negative control for the check above: a corrupted image must be counted as broken.
    pytester.makepyfile(test_suite=SUITE)
    pytester.runpytest("-p", "reports.pytest_plugin", "--report-dir", "out")
    index = pytester.path / "out" / "index.html"
    html = index.read_text().replace("data:image/png;base64,", "data:image/png;base64,AAAA", 1)
    index.write_text(html)
    page = browser.new_page()
    page.goto(index.as_uri())
    page.wait_for_function("document.body.dataset.figures !== undefined")
    assert int(page.evaluate("document.body.dataset.brokenFigures")) == 1
