"""The README's picture of the report (docs/images/report.png): made by ``python -m reports.screenshot`` from a
report, with the verdict counts it shows in a sidecar (docs/images/report.json), and checked against today's full
report (``build/report/verdicts.json`` of ``make report``, or the verdicts.json named by
CONSENSUS_SCREENSHOT_VERDICTS)."""

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from reports import screenshot
from tests.reports.test_report_browser import built  # noqa: F401  (the fixture: a small suite's report)

ROOT = Path(__file__).resolve().parents[2]
README_PICTURE = ROOT / "docs" / "images" / "report.png"
TODAY = Path(os.environ.get("CONSENSUS_SCREENSHOT_VERDICTS", ROOT / "build" / "report" / "verdicts.json"))


def _verdicts(tmp_path, counts) -> Path:
    path = tmp_path / "verdicts.json"
    path.write_text(json.dumps({"counts": counts, "manifest": {"git_revision": "abc"}}))
    return path


@pytest.fixture
def needs_chromium():
    if shutil.which("chromium") is None and shutil.which("chromium-browser") is None:
        if os.environ.get("CONSENSUS_REQUIRE_BROWSER"):
            pytest.fail("CONSENSUS_REQUIRE_BROWSER is set but no chromium is installed (apt-get install chromium)")
        pytest.skip("headless Chromium not installed (apt-get install chromium); CI installs it")


def test_screenshot_command_writes_the_first_screen_and_the_counts_it_shows(built, tmp_path, needs_chromium):
    import matplotlib.image

    out = tmp_path / "images" / "report.png"
    assert screenshot.main(["--report", str(built), "--out", str(out)]) == 0
    pixels = matplotlib.image.imread(out)
    assert pixels.shape[:2] == (screenshot.WINDOW[1], screenshot.WINDOW[0]) and np.std(pixels) > 0.05  # not blank
    data = json.loads(screenshot.sidecar_path(out).read_text())
    assert data["counts"] == json.loads((built / "verdicts.json").read_text())["counts"] and data["full_checks"] is False
    assert screenshot.stale_counts(screenshot.sidecar_path(out), built / "verdicts.json") == []


def test_stale_counts_name_every_verdict_whose_count_changed(tmp_path):
    # negative control for the README check: a picture of other counts is found out, verdict by verdict
    picture = tmp_path / "report.json"
    picture.write_text(json.dumps({"counts": {"verified": 30, "discrepancy": 3, "not-run": 4}}))
    today = _verdicts(tmp_path, {"verified": 31, "discrepancy": 3, "refuted": 1, "not-run": 4})
    assert screenshot.stale_counts(picture, today) == ["refuted: 0 in the picture, 1 in the report",
                                                       "verified: 30 in the picture, 31 in the report"]
    assert screenshot.stale_counts(picture, _verdicts(tmp_path, {"verified": 30, "discrepancy": 3, "not-run": 4})) == []


def test_screenshot_of_a_folder_without_a_report_is_refused(tmp_path, capsys):
    assert screenshot.main(["--report", str(tmp_path), "--out", str(tmp_path / "x.png")]) == 2
    assert "index.html must exist: build the report first" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_readme_picture_shows_the_counts_of_todays_full_report():
    if not TODAY.is_file():
        pytest.skip(f"{TODAY} is absent: `make report` writes it (or name one in CONSENSUS_SCREENSHOT_VERDICTS)")
    sidecar = screenshot.sidecar_path(README_PICTURE)
    assert sidecar.is_file(), f"{sidecar} is missing: python -m reports.screenshot --report {TODAY.parent}"
    stale = screenshot.stale_counts(sidecar, TODAY)
    assert not stale, (f"docs/images/report.png shows other counts than {TODAY} ({'; '.join(stale)}): "
                       f"python -m reports.screenshot --report {TODAY.parent}")


def test_readme_picture_counts_every_claim_of_the_registry():
    """Without a report at hand (CI): the picture was made from a full-checks report of today's claims, so a claim
    added or removed since makes it stale."""
    from foundation.registry import CLAIMS

    shown = json.loads(screenshot.sidecar_path(README_PICTURE).read_text())
    assert shown["full_checks"] is True, "the README's picture must show a report with the expensive checks"
    assert sum(shown["counts"].values()) == len(CLAIMS), (
        f"docs/images/report.png counts {sum(shown['counts'].values())} claims, the registry has {len(CLAIMS)}: "
        "python -m reports.screenshot --report build/report after make report")
