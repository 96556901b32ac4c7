"""The one check of every command that writes a folder (``--out``, ``--report-dir``): outputs never clobber.

A command checks its folder before it writes anything (:func:`check_output_folder`) and claims it just before its
first write (:func:`claim_output_folder`), which records the command and its settings in ``DIR/settings.json``. A
later command may write into that folder only when it is the same command with the same settings: it then resumes
(or rebuilds) what is there. Anything else is refused with one line naming the argument and what must hold, and
nothing is written: a file given as the folder or lying above it, a folder this user cannot write to, a folder of
another command or other settings, a non-empty folder without ``settings.json``, a ``settings.json`` that cannot be
read. :func:`output_lock` makes a command the folder's one writer for its whole life: a second command on the same
folder is refused at once, naming the first's pid and command. The lock is ``flock`` on the folder: it holds between
processes of one machine (and between machines only on a file system whose directories take ``flock`` across hosts:
Linux's NFS client does not, so a shared folder on NFS needs one writer per folder, as the Dask suite gives each
variant its own); a file system that refuses the lock is said to, never taken for a second writer. :func:`read_json` reads a command's own files naming the file it could not read; :func:`say_rebuilt` says
when a command rebuilt a file it found damaged.

Part of the foundation of ``reports``: it imports nothing of this project above it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from .files import write_json

#: The record of who wrote a folder, inside it.
SETTINGS_FILE = "settings.json"
#: The record of who holds a folder's lock (pid, command, start), inside it, hidden, removed with the lock. The lock is
#: the system's: fcntl.flock on the folder itself, released when the process ends, however it ends.
LOCK_HOLDER = ".lock.json"
#: The layout version of each machine-readable output, written into it as ``schema_version``; its JSON Schema is
#: ``foundation/schemas/<name>.schema.json`` (bump both when a required key changes).
SCHEMA_VERSIONS = {"settings": 1, "results": 1, "summary": 1, "seek-summary": 1, "witness": 2, "verdicts": 1}
#: The folder of those JSON Schemas (installed with the package).
SCHEMAS = Path(__file__).resolve().parent / "schemas"


def schema_path(name: str) -> Path:
    """The JSON Schema of the output ``name`` (a key of :data:`SCHEMA_VERSIONS`)."""
    if name not in SCHEMA_VERSIONS:
        raise KeyError(f"no output named {name!r}; the outputs are {sorted(SCHEMA_VERSIONS)}.")
    return SCHEMAS / f"{name}.schema.json"


class OutputError(ValueError):
    """An output folder (or a file in it) that a command must not use; the message is one line saying what must hold.
    ``reason``: for a file that cannot be read, why."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class OutputFolder:
    """A checked output folder: ``path`` (absolute), the ``command`` and ``settings`` that will write it, and whether
    it already holds that command's output with those settings (``resumed``)."""

    path: Path
    command: str
    settings: dict
    resumed: bool


def check_output_folder(path: Path | str, *, command: str, settings: dict[str, Any],
                        option: str = "--out") -> OutputFolder:
    """Check that ``command`` with ``settings`` may write into the folder ``path``; write nothing.

    Raises ``OutputError`` naming ``option`` when the folder cannot be used (see the module's docstring).
    """
    folder = check_writable_folder(path, option=option)
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    settings = _normalised(settings)
    record = folder / SETTINGS_FILE
    if not record.exists():
        if existing == folder and any(not entry.name.startswith(".") for entry in folder.iterdir()):
            raise OutputError(f"{option} {path} must be empty or hold a {SETTINGS_FILE} of `{command}`: it holds other "
                              "files and no record of what wrote them; use a new folder (nothing was changed).")
        return OutputFolder(folder, command, settings, resumed=False)
    try:
        saved = read_json(record)
    except OutputError as error:
        raise OutputError(f"{record} cannot be read as JSON ({error.reason}): the record of what wrote {option} {path} "
                          "is damaged; use a new folder (nothing was changed).") from error
    if not isinstance(saved, dict) or not {"command", "settings"} <= saved.keys():
        raise OutputError(f"{record} must be a JSON object with 'command' and 'settings'; use a new {option} folder "
                          "(nothing was changed).")
    if saved["command"] != command:
        raise OutputError(f"{option} {path} holds the output of `{saved['command']}`, not of `{command}`; use another "
                          "folder (nothing was changed).")
    if saved["settings"] != settings:
        raise OutputError(f"{option} {path} holds the output of `{command}` with other settings "
                          f"({_differences(saved['settings'], settings)}); use another folder, or repeat those "
                          "settings to resume (nothing was changed).")
    return OutputFolder(folder, command, settings, resumed=True)


def check_writable_folder(path: Path | str, *, option: str = "--out") -> Path:
    """``path`` made absolute, checked to be a folder this user can write to, or one that can be created (nothing
    is created); an ``OutputError`` naming ``option`` otherwise. For a folder of folders (``empirical suite``),
    each of which :func:`check_output_folder` checks."""
    folder = Path(path).expanduser().absolute()
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{option} {path} must be a folder; it is a file.")
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir():
        raise OutputError(f"{option} {path} must be a folder; {existing} above it is a file, so nothing can be "
                          "created under it.")
    try:
        with tempfile.TemporaryFile(dir=existing):  # created and removed: a probe, not an output
            pass
    except OSError as error:
        raise OutputError(f"{option} {path} must be a folder this user can write to; no file can be created in "
                          f"{existing} ({error.strerror}).") from error
    return folder


@contextmanager
def output_lock(path: Path | str, *, command: str, option: str = "--out") -> Iterator[Path]:
    """Hold the one-writer lock of the folder ``path`` (created if need be) while the block runs; yield the folder.

    A second writer (another process, or another lock in this one) is refused at once with an ``OutputError``
    naming ``option``, the holder's pid and command (from :data:`LOCK_HOLDER`); nothing is changed then. The lock
    is released when the block ends (or the process dies); a folder this lock created and nothing else wrote is
    removed again."""
    folder = check_writable_folder(path, option=option)
    created = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as error:
        raise OutputError(f"{option} {path} must be a folder this user can write to ({error.strerror}).") from error
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if created and not any(folder.iterdir()):
                folder.rmdir()
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise OutputError(f"{option} {path}: its file system refused the one-writer lock ({error.strerror}); "
                                  "use a folder on a local file system (nothing was changed).") from None
            raise OutputError(f"{option} {path} is being written by {_holder(folder)}; wait for it to end, or use "
                              "another folder (nothing was changed).") from None
        holder = {"pid": os.getpid(), "command": command, "argv": sys.argv,
                  "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        write_json(folder / LOCK_HOLDER, holder, durable=False)
        try:
            yield folder
        finally:
            (folder / LOCK_HOLDER).unlink(missing_ok=True)
            if created and not any(folder.iterdir()):
                folder.rmdir()
    finally:
        os.close(descriptor)  # releases the lock


#: How long a refused writer waits for the holder's record (seconds). Reason: the holder writes it just after it
#: takes the lock, so a writer refused in between would name nobody (measured: 2 of 4 runs of two writers started
#: together); a write of a few hundred bytes takes milliseconds, even on a loaded machine.
HOLDER_RECORD_WAIT = 2.0


def _holder(folder: Path) -> str:
    """Who holds ``folder``'s lock, from its record: ``pid N (`command` since T)``, waiting up to
    :data:`HOLDER_RECORD_WAIT` for a holder that has just taken the lock to write it."""
    deadline = time.monotonic() + HOLDER_RECORD_WAIT
    while True:
        try:
            holder = json.loads((folder / LOCK_HOLDER).read_text())
            return f"pid {holder['pid']} (`{holder['command']}`, started {holder['started']})"
        except (OSError, ValueError, KeyError, TypeError):
            if time.monotonic() > deadline:
                return f"another process (it has not recorded its pid yet in {folder / LOCK_HOLDER})"
            time.sleep(0.02)


def claim_output_folder(output: OutputFolder) -> Path:
    """Create the checked folder and record its command and settings in ``settings.json``; return the folder."""
    output.path.mkdir(parents=True, exist_ok=True)
    record = {"schema_version": SCHEMA_VERSIONS["settings"], "command": output.command, "settings": output.settings,
              "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_json(output.path / SETTINGS_FILE, record)
    return output.path


def read_json(path: Path | str) -> Any:
    """The JSON content of ``path``; an ``OutputError`` naming the file when it cannot be read or parsed."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        reason = error.strerror if isinstance(error, OSError) else str(error)
        raise OutputError(f"{path} cannot be read as JSON ({reason}); delete it to have it made again, or use a new "
                          "folder (nothing was changed).", reason) from error


def unreadable(path: Path | str) -> str | None:
    """Why the JSON file ``path`` cannot be read (``None`` when it can, or when it does not exist)."""
    if not Path(path).exists():
        return None
    try:
        read_json(path)
    except OutputError as error:
        return error.reason
    return None


def say_rebuilt(path: Path | str, why: str) -> None:
    """Tell the user (one line on stderr) that ``path`` was rebuilt, and why."""
    print(f"note: rebuilt {path}: {why}", file=sys.stderr, flush=True)


def _normalised(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` as JSON gives them back (tuples as lists), so that a recorded folder compares equal."""
    return json.loads(json.dumps(settings))


def _differences(saved: dict, settings: dict) -> str:
    """``key: saved there, new here`` for each setting that differs."""
    keys = sorted(set(saved) | set(settings))
    return "; ".join(f"{key}: {saved.get(key)!r} there, {settings.get(key)!r} here" for key in keys
                     if saved.get(key) != settings.get(key))
