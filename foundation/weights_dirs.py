"""Folders of trained weights that ``python -m reports build --weights-dir MODEL=DIR`` names to the tests it runs.

reports imports nothing of the packages it reports on: it parses each ``MODEL=DIR`` into a plain mapping, model
name -> absolute folder, and hands it to the test process as JSON in :data:`WEIGHTS_DIRS_ENV`. The empirical
package reads it back (``empirical.sources.report_weights_dirs``), checks the model names and looks there first.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping, Sequence

#: The environment variable holding the report's named folders: a JSON object, model name -> absolute folder.
WEIGHTS_DIRS_ENV = "CONSENSUS_WEIGHTS_DIRS"


def parse_weights_dirs(items: Sequence[str]) -> dict[str, Path]:
    """``["gpt2-xl=DIR", ...]`` (``--weights-dir``) -> ``{"gpt2-xl": DIR}``, each folder made absolute (the tests
    run in the project folder, not necessarily the caller's), with a clear error for an item without ``=``."""
    folders = {}
    for item in items:
        model, separator, folder = item.partition("=")
        if not separator or not model or not folder:
            raise ValueError(f"--weights-dir {item!r} must be MODEL=DIR, e.g. gpt2-xl=/data/gpt2-xl.")
        folders[model] = Path(folder).expanduser().resolve()
    return folders


def weights_dirs_environment(folders: Mapping[str, Path]) -> dict[str, str]:
    """The environment that names ``folders`` to a child process (empty when there are none)."""
    if not folders:
        return {}
    return {WEIGHTS_DIRS_ENV: json.dumps({model: str(folder) for model, folder in folders.items()})}


def weights_dirs_from_environment(environ: Mapping[str, str] = os.environ) -> dict[str, Path]:
    """The folders named by :data:`WEIGHTS_DIRS_ENV` in ``environ`` (empty when it is unset)."""
    text = environ.get(WEIGHTS_DIRS_ENV, "")
    if not text:
        return {}
    try:
        folders = json.loads(text)
    except ValueError as error:
        raise ValueError(f"{WEIGHTS_DIRS_ENV}={text!r} must be a JSON object of model name -> folder.") from error
    if not isinstance(folders, dict) or not all(isinstance(v, str) for v in folders.values()):
        raise ValueError(f"{WEIGHTS_DIRS_ENV}={text!r} must be a JSON object of model name -> folder.")
    return {model: Path(folder) for model, folder in folders.items()}
