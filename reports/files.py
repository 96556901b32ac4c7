"""Writing result files so that a reader never sees half of one: checkpoints, manifests, summaries, witnesses."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable


def atomic_write(path: Path, write: Callable[[Any], None], binary: bool = False) -> None:
    """Write to a temporary file in the same folder, then rename over ``path`` (never a half-written file)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb" if binary else "w") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_json(path: Path, data: Any) -> None:
    """``data`` as indented JSON at ``path``, atomically."""
    atomic_write(path, lambda stream: json.dump(data, stream, indent=1))
