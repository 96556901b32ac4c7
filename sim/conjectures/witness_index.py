"""The content hashes of a folder of witnesses: ``index.json`` beside them, file name -> sha256 of its bytes.

Every folder of witnesses the suite writes (``sim/conjectures/witnesses/<claim>/``, and a search's
``DIR/witnesses/<claim>/``) holds an index written with its witnesses. Replay (:func:`check_indexed`, called by
:func:`sim.conjectures.replay.load`) refuses a witness whose bytes are not the ones its index records, or that an
index beside it does not list: a witness changed after it was written is named, not silently replayed. A witness
with no index beside it (a file of the user's own) is replayed as before, checked by its schema and its certificate
block against the replay's (the index detects accidental changes only: whoever rewrites a file can rewrite it),
and the replay says that it was not hash-checked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from foundation.files import sha256, write_json

INDEX = "index.json"


def witness_files(folder: Path | str) -> list[Path]:
    """The witness files of ``folder``, by name (its index is not one)."""
    return sorted(path for path in Path(folder).glob("*.json") if path.name != INDEX)


def write_index(folder: Path | str, witnesses: Iterable[Path] | None = None) -> Path:
    """(Re)write ``folder/index.json`` with the sha256 of each of ``witnesses`` (files in ``folder``; default: every
    witness file in it), so that it vouches for the files its writer wrote and no other; return its path."""
    folder = Path(folder)
    path = folder / INDEX
    listed = witness_files(folder) if witnesses is None else sorted(Path(w) for w in witnesses)
    write_json(path, {"sha256": {witness.name: sha256(witness) for witness in listed}})
    return path


def indexed(folder: Path | str) -> list[Path]:
    """The witness files of ``folder`` that its index lists (none without an index, or with one that cannot be
    read)."""
    try:
        recorded = json.loads((Path(folder) / INDEX).read_text())["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [path for path in witness_files(folder) if isinstance(recorded, dict) and path.name in recorded]


def check_indexed(path: Path | str) -> bool:
    """Whether the witness at ``path`` was hash-checked: ``True`` when the index beside it records its bytes,
    ``False`` when there is no index; a one-line ``ValueError`` naming the file and what to do when the index does
    not list it, records other bytes, or cannot be read."""
    path = Path(path)
    index = path.parent / INDEX
    if path.name == INDEX:
        raise ValueError(f"{path}: this is the witness index of its folder, not a witness; replay one of the files it "
                         "lists")
    if not index.is_file():
        return False
    try:
        recorded = json.loads(index.read_text())["sha256"]
        expected = recorded.get(path.name) if isinstance(recorded, dict) else None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{index}: not a readable witness index ({type(error).__name__}); rewrite it with "
                         "sim.conjectures.witness_index.write_index, or remove it") from None
    if expected is None:
        raise ValueError(f"{path}: not listed in the index beside it ({index.name}): it was added after the "
                         "witnesses were written; move it to a folder of its own to replay it unchecked")
    if sha256(path) != expected:
        raise ValueError(f"{path}: its sha256 is not the one {index.name} records: the file was changed after it "
                         "was written; restore it, or search again")
    return True
