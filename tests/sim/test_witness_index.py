"""Witness files are hash-checked against the index beside them (sim/conjectures/witness_index.py): a witness changed
after it was written, or added beside an index that does not list it, is refused in one line; one without an index
replays as before and says it was not hash-checked. Every stored witness folder carries an index that matches."""

import json
import shutil
from pathlib import Path

import pytest

from sim.__main__ import main
from sim.conjectures.replay import load
from sim.conjectures.witness_index import INDEX, check_indexed, witness_files, write_index

STORED = Path(__file__).parents[2] / "sim" / "conjectures" / "witnesses"
#: A small stored witness (fast to replay): the d = 2 refutation of Karagodin et al.'s conjecture.
WITNESS = STORED / "conj.karagodin-thm1.5" / "two-tokens-l2-d2-h1.json"


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / WITNESS.parent.name
    shutil.copytree(WITNESS.parent, folder)
    return folder / WITNESS.name


def test_every_stored_witness_folder_has_a_matching_index():
    folders = [folder for folder in STORED.iterdir() if folder.is_dir()]
    assert folders
    for folder in folders:
        recorded = json.loads((folder / INDEX).read_text())["sha256"]
        assert sorted(recorded) == [path.name for path in witness_files(folder)], folder
        assert all(check_indexed(path) for path in witness_files(folder))


def test_an_untouched_copy_replays_hash_checked(tmp_path, capsys):
    path = _copy(tmp_path)
    assert check_indexed(path) is True
    assert main(["replay", str(path)]) == 0
    assert f"hash-checked against {INDEX}" in capsys.readouterr().out


def test_a_flipped_byte_is_refused_naming_the_file(tmp_path, capsys):
    path = _copy(tmp_path)
    data = bytearray(path.read_bytes())
    at = data.index(b"0.", len(data) // 2)  # a digit inside a number: still valid JSON and a valid witness shape
    data[at + 2] = ord("1") if data[at + 2] != ord("1") else ord("2")
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="its sha256 is not the one index.json records"):
        load(path)
    assert main(["replay", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0]


def test_a_witness_the_index_does_not_list_is_refused(tmp_path):
    path = _copy(tmp_path)
    stranger = path.with_name("added-later.json")
    shutil.copy(path, stranger)
    with pytest.raises(ValueError, match="not listed in the index"):
        load(stranger)


def test_replaying_the_index_itself_says_it_is_the_index(tmp_path, capsys):
    path = _copy(tmp_path)
    assert main(["replay", str(path.with_name("index.json"))]) == 2
    assert "index.json: this is the witness index of its folder, not a witness" in capsys.readouterr().err


def test_a_witness_without_an_index_replays_unchecked(tmp_path, capsys):
    """The control: the same file alone in a folder is replayed as before and says it was not hash-checked."""
    path = tmp_path / WITNESS.name
    shutil.copy(WITNESS, path)
    assert check_indexed(path) is False
    assert main(["replay", str(path)]) == 0
    assert "not hash-checked" in capsys.readouterr().out


def test_write_index_lists_every_witness_but_itself(tmp_path):
    folder = _copy(tmp_path).parent
    (folder / INDEX).unlink()
    write_index(folder)
    assert sorted(json.loads((folder / INDEX).read_text())["sha256"]) == [WITNESS.name]
