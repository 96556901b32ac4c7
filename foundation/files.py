"""Writing result files so that a reader never sees half of one: checkpoints, manifests, summaries, witnesses.

Every file is written readable as the user's umask allows (0644 under the usual umask 022), not mkstemp's 0600:
workers and colleagues on shared storage read them. :func:`atomic_write` returns the sha256 of what it wrote, which
the file's referrer records (a run's manifest the checkpoint's, a search's chunk index each chunk's); :func:`sha256`
re-reads a file's, to check it before it is trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable


def _umask() -> int:
    """The process's umask: from /proc (Linux; reading it does not change it, so a thread writing at the same time
    is unaffected), else by setting it and restoring it at once."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class _Hashing:
    """A binary stream that hashes (sha256) what goes through it to ``stream``."""

    def __init__(self, stream) -> None:
        self.stream, self.hash = stream, hashlib.sha256()

    def write(self, data) -> int:
        self.hash.update(data)
        return self.stream.write(data)

    def flush(self) -> None:
        self.stream.flush()


def atomic_write(path: Path, write: Callable[[Any], None], binary: bool = False, durable: bool = True,
                 before_replace: Callable[[str], None] | None = None) -> str:
    """Write to a temporary file in the same folder, then rename over ``path`` (never a half-written file); return
    the sha256 (hex) of the bytes written.

    ``durable``: flush the file to the disk (fsync) before the rename, so that it survives a power cut too. A
    file rewritten many times a minute (a run's per-pass checkpoint and manifest) passes ``False``: still never
    half-written for a reader or a killed process, the disk gets it from the system's own writeback. Reason: on
    an H100 the fsyncs of a 64-196 MB checkpoint after every pass cost 2.3-6.4 s of a 9-50 s loop.
    ``before_replace(sha256)`` runs once the file is complete, before it replaces ``path`` (a run records the hash
    of the checkpoint about to land). The file gets mode 0666 less the umask (mkstemp's is 0600)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(handle, 0o666 & ~_umask())
        with os.fdopen(handle, "wb") as raw:
            hashing = _Hashing(raw)
            if binary:
                write(hashing)
            else:
                import io

                text = io.StringIO()
                write(text)
                hashing.write(text.getvalue().encode("utf-8"))
            raw.flush()
            if durable:
                os.fsync(raw.fileno())
        digest = hashing.hash.hexdigest()
        if before_replace is not None:
            before_replace(digest)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return digest


def write_json(path: Path, data: Any, durable: bool = True, default: Callable[[Any], Any] | None = None) -> str:
    """``data`` as indented JSON at ``path``, atomically (``durable``: see :func:`atomic_write`); its sha256.
    ``default``: ``json.dump``'s, for values JSON has no type for (``float`` for numpy's scalars)."""
    return atomic_write(path, lambda stream: json.dump(data, stream, indent=1, default=default), durable=durable)


def json_sha256(data: Any, default: Callable[[Any], Any] | None = None) -> str:
    """The sha256 (hex) of ``data`` as canonical JSON (sorted keys): the same for equal data however it was built.
    ``default``: ``json.dumps``'s."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=default).encode()).hexdigest()


def sha256(path: Path | str) -> str:
    """The sha256 (hex) of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
