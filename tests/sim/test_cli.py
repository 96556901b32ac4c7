"""The command-line contract of SPEC section 6: ``python -m sim figure N --out DIR``."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_figure_command_writes_the_png_and_its_data(tmp_path):
    completed = subprocess.run([sys.executable, "-m", "sim", "figure", "1", "--json", "--out", str(tmp_path)], cwd=ROOT,
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["verdict"] == "verified"
    assert (tmp_path / "fig1.png").stat().st_size > 10_000
    data = json.loads((tmp_path / "fig1.json").read_text())
    assert data["figure"] == 1 and len(data["data"]["t"]) == len(data["data"]["norm_P1"])


def test_figure_command_rejects_an_unknown_figure(tmp_path):
    completed = subprocess.run([sys.executable, "-m", "sim", "figure", "7", "--out", str(tmp_path)], cwd=ROOT,
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 2
    assert "invalid choice" in completed.stderr
