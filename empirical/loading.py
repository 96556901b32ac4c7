"""What every model load shares: no network, and errors that say what is missing or unreadable.

Used by :mod:`empirical.models` (every load) and :mod:`empirical.embedded` (the Gemma 3 GGUF file), so that
neither reaches into the other.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from pathlib import Path

from .adapters import ADAPTERS


class ModelNotAvailable(RuntimeError):
    """A model id that is unknown, or whose weights are not on this machine (the message says how to get them)."""


@contextlib.contextmanager
def offline():
    """Never touch the network while loading (no hub on this machine; tests must stay offline)."""
    saved = {key: os.environ.get(key) for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


#: One GGUF read at a time: the reads share the remembered parses of :func:`remembering_gguf_parses`.
_GGUF_READS = threading.RLock()  # re-entrant: a read within a read restores what it found


@functools.lru_cache(maxsize=2)
def _parsed(path: str, size: int, modified_ns: int):
    """gguf's parse of the file at ``path`` as it was at (``size``, ``modified_ns``): a file changed since is parsed
    anew. At most two files are kept (each holds a read-only memory map of its file, not a copy)."""
    from gguf.gguf_reader import GGUFReader  # the class itself: ``gguf.GGUFReader`` is replaced within a read

    return GGUFReader(path)


def _remembered_parse(path, mode: str = "r"):
    """gguf.GGUFReader(path, mode), parsed once per process and file version when read-only."""
    if mode != "r":
        from gguf.gguf_reader import GGUFReader

        return GGUFReader(path, mode)
    stat = os.stat(path)
    return _parsed(os.path.realpath(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=None)
def _remembered_name_map(arch, n_blocks: int):
    """gguf.get_tensor_name_map(arch, n_blocks), built once per process (it depends on nothing else)."""
    from gguf.tensor_mapping import get_tensor_name_map

    return get_tensor_name_map(arch, n_blocks)


@contextlib.contextmanager
def remembering_gguf_parses():
    """Within the block, gguf's file parser and tensor-name map are replaced by versions that remember what they
    built for the whole process: a file is parsed again only when it changed (size or modification time). Reason: transformers
    parses a GGUF file anew for the configuration and again for the weights, and builds gguf's name map of the
    architecture anew for every tensor (about 400 times for SmolLM2-135M), and a run reads the configuration
    before the model (its checks and imports come first): measured here, a load of SmolLM2-135M took 24.7 s,
    18.1 s with the name map remembered and 12.3-14.9 s with both parses of a load shared; a run's configuration
    read took 8.5 s, of which 6-7.5 s the parse. Both are read-only (the parser memory-maps the file); the
    originals are back after the block."""
    import gguf

    with _GGUF_READS:
        parser, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
        gguf.GGUFReader, gguf.get_tensor_name_map = _remembered_parse, _remembered_name_map
        try:
            yield
        finally:
            gguf.GGUFReader, gguf.get_tensor_name_map = parser, name_map


@contextlib.contextmanager
def reading_gguf(path: Path):
    """Read a GGUF file with its parses remembered (:func:`remembering_gguf_parses`); turn transformers' refusal of
    its architecture into an error naming it and the supported ones."""
    try:
        with remembering_gguf_parses():
            yield
    except ValueError as error:
        if "not supported" not in str(error):
            raise
        from gguf import GGUFReader
        from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

        field = GGUFReader(path).fields.get("general.architecture")
        architecture = field.contents() if field is not None else "unknown (no general.architecture)"
        # the mapping's keys also hold two sections that are not architectures
        readable = sorted(set(GGUF_SUPPORTED_ARCHITECTURES) - {"general", "tokenizer"})
        raise ValueError(f"GGUF file {str(path)!r} holds the architecture {architecture!r}, which transformers cannot "
                         f"dequantise; it reads GGUF files of: {', '.join(readable)} (and the loop adapts the model "
                         f"types {', '.join(sorted(ADAPTERS))}).") from error
