"""Where a redrawn run's per-pass draw of every weight spends its time (issue 39, item 3).

A redrawn run draws every weight again before each pass (:func:`empirical.models.redraw`, the architecture's own
initialiser) and checks the draw (:func:`empirical.models.check_draw` on the weights' fingerprint, kept as the next
draw's reference). On an H200 that took 0.11 s a pass for GPT-Neo 2.7B in float32 against 0.72 s of matrix
products (docs/empirical.md), so a redrawn run stayed above the random runs' loop / GEMM bound.
:func:`draw_breakdown` times the pieces apart on the run's device, each followed by a synchronisation: the
initialiser, the check, and a plain draw of the same distributions (``normal_`` / ``fill_`` per parameter, as the
adapter's ``expected_init`` reads the initialiser), the work any draw has to do. The plain draw is checked like a
run's; it is a yardstick for the initialiser's overhead, never a run's weights.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import torch

from .adapters import LoopAdapter, adapter_for
from .fingerprints import fingerprint
from .models import build_random, check_draw, cuda_devices, redraw
from .run import synchronise


def plain_draw(adapter: LoopAdapter, seed: int) -> None:
    """Draw every parameter of ``adapter.model`` from the distribution its architecture's initialiser gives it (the
    adapter's ``expected_init``: normal(0, std) or a constant), one ``normal_`` or ``fill_`` per parameter (a tied
    parameter once), from ``seed`` (the global RNG state restored afterwards)."""
    model = adapter.model
    with torch.random.fork_rng(devices=cuda_devices(model)), torch.no_grad():
        torch.manual_seed(seed)
        for name, parameter in model.named_parameters():  # (named_parameters lists a tied parameter once)
            kind, value = adapter.expected_init(name, parameter)
            if kind == "constant":
                parameter.fill_(value)
            else:
                parameter.normal_(0.0, value)


def _checked(adapter: LoopAdapter, before: dict[str, Any]) -> dict[str, Any]:
    """A run's check of a draw: the weights' fingerprint, checked against ``before``; returns the fingerprint."""
    after = fingerprint(adapter.model)
    check_draw(adapter, after, before)
    return after


def draw_breakdown(name: str, *, device: str, dtype: torch.dtype = torch.float32, seed: int = 0,
                   repeats: int = 3) -> dict[str, Any]:
    """Build the random model ``name`` on ``device`` in ``dtype`` and time, ``repeats`` times, a redrawn pass's
    draw as :func:`empirical.run` makes it, piece by piece: ``initialiser_s`` (:func:`redraw`), ``check_s`` (the
    weights' fingerprint and :func:`check_draw` against the previous draw's, which a run keeps) and, for comparison,
    ``plain_draw_s`` (:func:`plain_draw`, then checked too). Returns the medians, every timing, the parameters'
    count and bytes, and the plain draw's check."""
    model = build_random(name, seed, dtype=dtype, device=device)
    adapter = adapter_for(model)
    target = next(model.parameters()).device
    timings: dict[str, list[float]] = {"initialiser_s": [], "check_s": [], "plain_draw_s": []}

    def timed(key: str, work: Callable[[], Any]) -> Any:
        synchronise(target)
        started = time.perf_counter()
        result = work()
        synchronise(target)
        timings[key].append(time.perf_counter() - started)
        return result

    plain_check: dict[str, Any] = {}
    before = fingerprint(model)  # as a run's previous check leaves it (on CUDA: the capture of the check's graph)
    for k in range(repeats):
        timed("initialiser_s", lambda: redraw(model, seed + 1 + k))
        before = timed("check_s", lambda: _checked(adapter, before))
        timed("plain_draw_s", lambda: plain_draw(adapter, seed + 1 + repeats + k))  # other seeds: other values
        after = fingerprint(model)
        plain_check = check_draw(adapter, after, before)  # raises if it missed a distribution
        before = after
    parameters = list(model.parameters())
    return {"model": name, "device": str(target), "dtype": str(dtype).removeprefix("torch."), "repeats": repeats,
            "seed": seed, "parameters": sum(p.numel() for p in parameters),
            "parameter_bytes": sum(p.numel() * p.element_size() for p in parameters),
            **{key: statistics.median(values) for key, values in timings.items()},
            "timings": timings, "plain_draw_check": plain_check}
