"""``consensus search`` by the seeking search writes its folder by the rules of every command's (foundation.outputs),
as the random search does: the folder checked before the search starts, locked, claimed with ``settings.json``, every
file written atomically, and a witness index that lists only the witnesses this search wrote.

The search itself is a stand-in (``seek`` returns hits made of two stored witnesses of conj.value-full, whose
replay takes milliseconds): what is tested is the folder, not the search (tests/sim/test_karagodin.py runs the real
one)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from foundation import files
from foundation.outputs import LOCK_HOLDER, SETTINGS_FILE, output_lock
from sim.__main__ import main
from sim.conjectures import seeking
from sim.conjectures.replay import load
from sim.conjectures.witness_index import INDEX

CLAIM = "conj.value-full"
STORED = sorted((Path(seeking.__file__).parent / "witnesses" / CLAIM).glob("chunk*.json"))


@pytest.fixture
def searches(monkeypatch):
    """``seek`` stood in for: each call finds the hits of ``hits[0]`` stored witnesses (set it to change them)
    and is counted in ``calls``."""
    state = {"hits": [2], "calls": []}

    def seek(claim, budget, seed, max_instances=None):
        state["calls"].append(seed)
        hits = []
        for k, path in enumerate(STORED[:state["hits"][0]]):
            witness = json.loads(path.read_text())
            hits.append({"P": witness["P"], "U": witness["U"], "equilibrium": witness["equilibrium"],
                         "seed": [seed, k], "structure": "random"})
        return {"search": "seek", "claim": claim, "seed": seed, "budget_seconds": budget, "cpu_seconds": 1.0,
                "instances": len(hits), "hits": len(hits), "hit_records": hits, "misses": []}

    monkeypatch.setattr(seeking, "seek", seek)
    return state


def search(out: Path, *options: str) -> int:
    return main(["search", CLAIM, "--budget", "5", "--out", str(out), "--quiet", *options])


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_a_folder_holding_other_files_is_refused_before_the_search(tmp_path, searches, capsys):
    (tmp_path / "summary.json").write_text("{}")
    assert search(tmp_path) == 2
    assert "must be empty or hold a settings.json" in _one_error(capsys)
    assert searches["calls"] == [] and (tmp_path / "summary.json").read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_a_file_as_the_folder_is_refused_before_the_search(tmp_path, searches, capsys):
    (tmp_path / "notes.txt").write_text("a file")
    assert search(tmp_path / "notes.txt") == 2
    assert "notes.txt must be a folder; it is a file" in _one_error(capsys)
    assert searches["calls"] == []


def test_a_folder_of_other_settings_is_refused_and_kept(tmp_path, searches, capsys):
    assert search(tmp_path, "--seed", "0") == 0
    capsys.readouterr()
    summary = (tmp_path / "summary.json").read_bytes()
    assert json.loads((tmp_path / SETTINGS_FILE).read_text())["settings"]["seed"] == 0
    assert search(tmp_path, "--seed", "3") == 2
    assert "with other settings (seed: 0 there, 3 here)" in _one_error(capsys)
    assert searches["calls"] == [0] and (tmp_path / "summary.json").read_bytes() == summary


def test_a_second_writer_is_refused_at_once(tmp_path, searches, capsys):
    with output_lock(tmp_path, command="another search"):
        assert search(tmp_path) == 2
    assert f"is being written by pid {os.getpid()} (`another search`" in _one_error(capsys)
    assert searches["calls"] == []


def test_the_lock_is_held_while_the_search_runs(tmp_path, searches, monkeypatch):
    held = []
    stand_in = seeking.seek
    monkeypatch.setattr(seeking, "seek", lambda *a, **k: held.append((tmp_path / LOCK_HOLDER).is_file()) or
                        stand_in(*a, **k))
    assert search(tmp_path) == 0
    assert held == [True] and not (tmp_path / LOCK_HOLDER).exists()


def test_the_index_lists_only_the_witnesses_this_search_wrote(tmp_path, searches, capsys):
    assert search(tmp_path) == 0
    folder = tmp_path / "witnesses" / CLAIM
    planted = folder / "planted.json"
    planted.write_text(STORED[0].read_text())  # a valid witness, put there by someone else
    assert search(tmp_path) == 0  # the same settings: searched again
    index = json.loads((folder / INDEX).read_text())["sha256"]
    assert sorted(index) == ["seek-0-0-l2-d2-h1.json", "seek-0-1-l3-d4-h1.json"]
    assert all(load(folder / name) for name in index)  # hash-checked and valid
    with pytest.raises(ValueError, match="planted.json: not listed in the index beside it"):
        load(planted)
    assert planted.exists()  # not ours to remove


def test_a_rerun_replaces_the_earlier_runs_witnesses_and_says_so(tmp_path, searches, capsys):
    assert search(tmp_path) == 0
    searches["hits"][0] = 1
    capsys.readouterr()
    assert search(tmp_path) == 0
    folder = tmp_path / "witnesses" / CLAIM
    assert sorted(p.name for p in folder.iterdir()) == [INDEX, "seek-0-0-l2-d2-h1.json"]
    assert "removed seek-0-1-l3-d4-h1.json, a witness of the earlier search" in capsys.readouterr().err
    assert list(json.loads((folder / INDEX).read_text())["sha256"]) == ["seek-0-0-l2-d2-h1.json"]


def test_a_write_cut_short_leaves_the_earlier_summary_whole(tmp_path, searches, monkeypatch):
    """The disk fills while the rerun writes its summary: the earlier run's summary is whole, and no temporary file
    is left (each file is written to a temporary file and renamed, foundation.files.atomic_write)."""
    assert search(tmp_path) == 0
    before = (tmp_path / "summary.json").read_bytes()
    write_json = seeking.write_json

    def no_space(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def filling(path, data, **options):
        if path.name == "summary.json":
            monkeypatch.setattr(files._Hashing, "write", no_space)
        return write_json(path, data, **options)

    monkeypatch.setattr(seeking, "write_json", filling)
    with pytest.raises(OSError, match="No space left"):
        search(tmp_path)
    assert (tmp_path / "summary.json").read_bytes() == before
    assert [p.name for p in tmp_path.rglob(".*")] == []
