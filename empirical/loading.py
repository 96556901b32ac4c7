"""What every model load shares: no network, and errors that say what is missing or unreadable.

Used by :mod:`empirical.models` (every load) and :mod:`empirical.embedded` (the Gemma 3 GGUF file), so that
neither reaches into the other.
"""

from __future__ import annotations

import contextlib
import os
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


@contextlib.contextmanager
def reading_gguf(path: Path):
    """Turn transformers' refusal of a GGUF architecture into an error naming it and the supported ones."""
    try:
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
