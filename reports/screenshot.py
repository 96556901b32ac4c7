"""``python -m reports.screenshot [--report DIR] [--out PNG]``: the README's picture of the report's first screen.

Opens ``DIR/index.html`` in Debian's headless Chromium at a laptop's first screen (1280 x 800, after MathJax has
typeset), writes the PNG, and beside it a sidecar ``PNG`` with the suffix ``.json`` holding the verdict counts of
``DIR/verdicts.json`` the picture shows, with the report's git revision and whether the expensive checks ran.
:func:`stale_counts` compares a sidecar with a report's ``verdicts.json``; tests/reports/test_screenshot.py fails
when the README's picture shows other counts than today's full report (``build/report``, written by ``make report``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from foundation.files import write_json
from foundation.helpformat import Parser

#: The report the README's picture is made from: the full verification (``make report``), the one readers get.
DEFAULT_REPORT = Path("build/report")
DEFAULT_OUT = Path("docs/images/report.png")
#: A laptop's first screen, as the first-screen browser test sees it.
WINDOW = (1280, 800)
#: Milliseconds of page time Chromium grants the page before the picture: MathJax typesets in about 2 s.
VIRTUAL_TIME_MS = 30_000


def sidecar_path(png: Path) -> Path:
    """Where the counts a picture was made from are stored: ``report.png`` -> ``report.json``."""
    return Path(png).with_suffix(".json")


def sidecar(verdicts: dict[str, Any], report: Path) -> dict[str, Any]:
    """What a picture shows, read from the report's ``verdicts.json``: its counts, revision and kind of run."""
    manifest = verdicts.get("manifest", {})
    return {"counts": verdicts["counts"], "git_revision": manifest.get("git_revision"),
            "full_checks": manifest.get("full_checks"), "scale": manifest.get("scale"),
            "report_created": manifest.get("created"),
            "report": str(report)}


def stale_counts(sidecar_file: Path, verdicts_file: Path) -> list[str]:
    """The verdicts whose count differs between a picture's sidecar and a report's ``verdicts.json``, as
    ``"verdict: N in the picture, M in the report"``; empty when the picture shows the report's counts."""
    shown = json.loads(Path(sidecar_file).read_text())["counts"]
    today = json.loads(Path(verdicts_file).read_text())["counts"]
    return [f"{verdict}: {shown.get(verdict, 0)} in the picture, {today.get(verdict, 0)} in the report"
            for verdict in sorted({*shown, *today}) if shown.get(verdict, 0) != today.get(verdict, 0)]


def chromium() -> str:
    """The headless browser's executable; raises ``FileNotFoundError`` saying how to install it."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        raise FileNotFoundError("no chromium on PATH: install Debian's (apt-get install chromium).")
    return executable


def take_screenshot(report: Path, out: Path) -> dict[str, Any]:
    """Write the first screen of ``report/index.html`` to ``out`` and its sidecar; return the sidecar's data."""
    index, verdicts_file = Path(report) / "index.html", Path(report) / "verdicts.json"
    for path in (index, verdicts_file):
        if not path.is_file():
            raise FileNotFoundError(f"{path} must exist: build the report first (make report).")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
               "--disable-background-networking", f"--window-size={WINDOW[0]},{WINDOW[1]}",
               f"--virtual-time-budget={VIRTUAL_TIME_MS}", f"--screenshot={out.resolve()}", index.resolve().as_uri()]
    run = subprocess.run(command, capture_output=True, text=True, timeout=180)
    if run.returncode != 0 or not out.is_file():
        raise RuntimeError(f"chromium wrote no screenshot (exit status {run.returncode}): {run.stderr[-2000:]}")
    data = sidecar(json.loads(verdicts_file.read_text()), Path(report))
    write_json(sidecar_path(out), data)
    return data


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m reports.screenshot", description=__doc__.split("\n\n")[0].split(": ", 1)[1])
    parser.add_argument("--report", type=Path, default=DEFAULT_REPORT, help="the report folder (index.html, verdicts.json)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the PNG; its counts go to the same name .json")
    args = parser.parse_args(argv)
    try:
        data = take_screenshot(args.report, args.out)
    except (FileNotFoundError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"{args.out} (counts {data['counts']}, revision {data['git_revision']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
