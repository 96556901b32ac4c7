"""The record a stored witness gives its claim (sim.conjectures.replay.record_of), on made-up replays: its verdict,
detail, numbers, tables and figure for each path (refuted, not refuted, with the witness shown, with its figure
reaching or missing the attractor). The real witnesses' records are tested in test_witnesses.py (slower)."""

from pathlib import Path

import numpy as np
import pytest

from sim.conjectures import witnessview
from sim.conjectures.replay import Replay, record_of
from sim.conjectures.validated import ValidatedCertificate


def _outcome(refuted=True):
    certificate = ValidatedCertificate(True, "Krawczyk: unique zero", np.zeros((2, 2)),
                                       numbers={"box radius": 0.5, "eigenvalues": 2, "name": "x"},
                                       float64_parts=["the run from y0", "the distance"])
    return Replay("conj.value-full", refuted, "attractor reached", certificate,
                  numbers={"distance": 0.25, "steps": 7, "label": "y"})


DETAIL = ("stored witness w/chunk1.json: attractor reached. Certificate: Krawczyk: unique zero. "
          "Float64 parts: the run from y0; the distance.")


@pytest.mark.parametrize("refuted, verdict", [(True, "refuted"), (False, "failed")])
def test_a_replay_gives_its_verdict_detail_and_float_numbers(refuted, verdict):
    result = record_of(_outcome(refuted), "w/chunk1.json")
    assert (result.claim, result.method, result.verdict) == ("conj.value-full", "search", verdict)
    assert result.detail == DETAIL
    assert dict(result.numbers) == {"box radius": 0.5, "distance": 0.25}  # floats only, the replay's after
    assert result.tables == () and result.figures == ()


def test_the_replays_numbers_override_the_certificates():
    outcome = _outcome()
    outcome.numbers["box radius"] = 0.125
    assert record_of(outcome, "w.json").numbers["box radius"] == 0.125


@pytest.fixture
def shown(monkeypatch):
    """witnessview's tables and figure replaced by stand-ins that record their arguments."""
    calls = {}

    def tables(witness, outcome):
        calls["tables"] = (witness, outcome)
        return ("table",)

    def draw(witness, path, stem):
        calls["draw"] = (path, stem)
        calls["drawn"] = witness
        return "figure", {"figure_reaches_attractor": calls["reaches"], "figure_end_distance": 0.123456,
                          "figure_steps": 3, "figure_distance": 0.5}

    monkeypatch.setattr(witnessview, "tables", tables)
    monkeypatch.setattr(witnessview, "draw", draw)
    return calls


def test_a_witness_shown_without_a_folder_gets_its_tables_and_no_figure(shown):
    witness, outcome = {"claim": "conj.value-full"}, _outcome()
    result = record_of(outcome, "w/chunk1.json", witness)
    assert result.tables == ("table",) and result.figures == () and shown["tables"] == (witness, outcome)
    assert "draw" not in shown and result.verdict == "refuted"


@pytest.mark.parametrize("refuted", [True, False])
def test_a_figure_that_reaches_the_attractor_leaves_the_verdict(shown, tmp_path, refuted):
    shown["reaches"] = True
    witness = {"claim": "conj.value-full"}
    result = record_of(_outcome(refuted), "w/chunk1.json", witness, tmp_path / "new" / "figs")
    assert shown["draw"] == (tmp_path / "new" / "figs" / "witness-conj.value-full-chunk1.png", "chunk1")
    assert shown["drawn"] is witness
    assert (tmp_path / "new" / "figs").is_dir() and result.figures == ("figure",)  # the folder made, parents too
    assert result.verdict == ("refuted" if refuted else "failed") and result.detail == DETAIL
    assert dict(result.numbers) == {"box radius": 0.5, "distance": 0.25, "figure_end_distance": 0.123456,
                                    "figure_distance": 0.5}


@pytest.mark.parametrize("refuted", [True, False])
def test_a_figure_that_misses_the_attractor_fails_the_record_and_says_so(shown, tmp_path, refuted):
    shown["reaches"] = False
    result = record_of(_outcome(refuted), "w/chunk1.json", {"claim": "conj.value-full"}, tmp_path)
    assert result.verdict == "failed"
    assert result.detail == (f"FLAGGED: the figure's trajectory from y0 ends 0.123 from the attractor (more than "
                             f"{witnessview.REACHED:g}). " + DETAIL)
    assert Path(shown["draw"][0]).parent == tmp_path
