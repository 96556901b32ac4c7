"""A model's run in a process of its own, so that its memory is returned to the system when it ends.

A looped float32 GPT-2 XL holds 6.2 GB, GPT-Neo 2.7B 10.6 GB. Run one after another in one process, whatever keeps
a reference to a finished model (a cache, a fixture, a reference cycle the collector has not reached, the
allocator's arenas) adds to the next one's: `make report` was killed by the kernel at 23.2 GB that way. In a child
process, nothing of a run outlives it: :func:`in_child` runs a function in a fresh interpreter (``spawn``: no
inherited state, no forked thread pools) and returns its result; the child's peak resident memory is recorded as a
stage of the report's memory ledger (:mod:`foundation.memory`).
"""

from __future__ import annotations

import ctypes
import gc
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any, Callable

from foundation.memory import CHILD, own_peak_bytes, own_rss_bytes, record_stage


def _measured(function: Callable[..., Any], args: tuple, kwargs: dict) -> tuple[Any, int]:
    """In the child: the function's result and the child's own peak RSS in bytes."""
    return function(*args, **kwargs), own_peak_bytes()


def give_back_memory() -> int:
    """Collect garbage and hand the allocator's free memory back to the system (glibc's ``malloc_trim``, where there
    is one); return this process's resident memory in bytes afterwards (:func:`foundation.memory.own_rss_bytes`)."""
    gc.collect()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # another C library: nothing to trim by
            pass
    return own_rss_bytes()


def in_child(stage: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` run in a fresh child process (``function`` and its arguments must pickle: a
    module-level function, plain data); its exceptions are raised here. The child's peak RSS is recorded as
    ``stage`` (kind ``child``) in the memory ledger, if one is named, with this process's RSS beside it (after
    :func:`give_back_memory`: this process only waits meanwhile)."""
    beside = give_back_memory()
    started = time.monotonic()
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        result, peak = pool.submit(_measured, function, args, kwargs).result()
    record_stage(stage, peak, CHILD, time.monotonic() - started, beside_bytes=beside)
    return result
