"""The audit of one model: weights and states (with and without feed-forward layers), rate fits of E and their
paired comparisons, and the memory check before a model is loaded."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from ..adapters import LoopAdapter, adapter_for
from ..models import describe_model, load_model
from ..prompts import authors_prompts
from .checklist import hypothesis_rows
from ..floor import measure_floor
from ..loop import embed
from .rates import E_FLOOR, blocks_to_fraction, compare_rates, fit_exponential, RateFit
from .states import audit_states
from .weights import audit_weights, embedding_scale
from ..settings import AuditSettings  # noqa: F401 (re-exported)


# -- rates ---------------------------------------------------------------------------------------------
def rate_summary(values: np.ndarray, floor: float = E_FLOOR) -> dict[str, Any]:
    """Exponential fit of E per layer (values at or below ``floor``, the dtype's floor of E, left out), with its CI
    over prompts and the model-free blocks-to-half."""
    fit = fit_exponential(values, floor=floor)
    return {"floor": floor, "rate": fit.rate, "ci_low": fit.ci_low, "ci_high": fit.ci_high, "r2": fit.r2,
            "half_life": fit.half_life, "per_prompt": fit.per_prompt, "window": list(fit.window),
            "blocks_to_half": blocks_to_fraction(values, 0.5), "E_start": float(np.mean(values[:, 0])),
            "E_end": float(np.mean(values[:, -1]))}


def _fit(summary: dict[str, Any]) -> RateFit:
    return RateFit(summary["rate"], summary["ci_low"], summary["ci_high"], np.asarray(summary["per_prompt"], dtype=float),
                   summary["r2"], tuple(summary["window"]), int(np.isfinite(np.asarray(summary["per_prompt"], dtype=float)).sum()))


def comparison(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Paired comparison of two rate summaries on the same prompts (``first - second``)."""
    result = compare_rates(_fit(first), _fit(second))
    return {"difference": result.difference, "ci_low": result.ci_low, "ci_high": result.ci_high,
            "ratio": result.ratio, "verdict": result.verdict, "prompts": result.prompts}


# -- the audit -------------------------------------------------------------------------------------------
def audit_adapter(adapter: LoopAdapter, input_ids: torch.Tensor, passes: int, *,
                  progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Weights and states (with and without FFN) of one loaded model, plus rate fits.
    ``progress`` receives a line per stage (the CLI prints them to stderr)."""
    started = time.time()
    say = progress or (lambda message: None)
    # One BLAS thread for the many small numpy/scipy products: on a shared 2-core machine OpenBLAS's
    # spinning threads made them ~10-40x slower. torch's own thread pool is not affected.
    with threadpool_limits(limits=1, user_api="blas"):
        say(f"weights: {adapter.num_layers} layers")
        weights = audit_weights(adapter)
        weights["embedding_scale"] = embedding_scale(adapter, input_ids)
        variants = {}
        for ffn in (True, False):
            say(f"states {'with' if ffn else 'without'} FFN: {input_ids.shape[0]} prompts x {passes} passes "
                f"(+{time.time() - started:.0f}s)")
            states = audit_states(adapter, input_ids, passes, ffn=ffn)
            embeddings, _ = embed(adapter, input_ids)
            states["floor"] = measure_floor(adapter, embeddings, adapter.block_inputs(input_ids.shape[1],
                                            embeddings.device, embeddings.dtype), ffn=ffn)
            states["rate"] = rate_summary(states["E"], states["floor"]["E_floor"])
            variants["ffn" if ffn else "no-ffn"] = states
    return {"weights": weights, "variants": variants, "seconds": time.time() - started,
            "context_length": adapter.context_length,
            "ffn_effect": comparison(variants["ffn"]["rate"], variants["no-ffn"]["rate"])}


def audit_model(model: str, weights: str = "trained", settings: AuditSettings = AuditSettings(), *,
                dtype: torch.dtype = torch.float32, compare_random: bool | None = None,
                progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The audit of ``model`` with ``weights`` (``trained`` or ``random``); with trained weights the same
    architecture is also audited with random weights (``compare_random``) for the in-kind rate comparison."""
    if weights not in ("trained", "random"):
        raise ValueError(f"weights={weights!r} must be 'trained' or 'random' (a re-drawn model has no fixed P, U).")
    compare_random = (weights == "trained") if compare_random is None else compare_random
    if compare_random and weights != "trained":
        raise ValueError("compare_random compares trained weights with random ones: it needs weights='trained'.")
    ensure_memory(model, dtype)
    loaded = load_model(model, weights, seed=settings.seed, dtype=dtype)
    adapter = adapter_for(loaded)
    vocab = adapter.vocab_size
    ids = torch.tensor(authors_prompts(settings.prompts, settings.length, vocab))
    result = {"model": model, "weights": weights, "settings": settings.__dict__, "dtype": str(dtype),
              "description": describe_model(model, adapter), "runs": {weights: audit_adapter(adapter, ids, settings.passes, progress=progress)}}
    del loaded, adapter
    if compare_random:
        ensure_memory(model, dtype)
        other = adapter_for(load_model(model, "random", seed=settings.seed, dtype=dtype))
        result["runs"]["random"] = audit_adapter(other, ids, settings.passes, progress=progress)
        result["trained_vs_random"] = {
            variant: comparison(result["runs"]["trained"]["variants"][variant]["rate"],
                                result["runs"]["random"]["variants"][variant]["rate"])
            for variant in ("ffn", "no-ffn")}
    result["hypotheses"] = {name: hypothesis_rows(run, settings.length) for name, run in result["runs"].items()}
    return result


#: Memory a loaded model needs beyond its parameters (activations of short prompts, interpreter, copies
#: made while drawing the weights), as a fraction of the parameters' size; measured for GPT-2 XL in float32:
#: 6.6 GB resident for 6.2 GB of parameters.
MEMORY_OVERHEAD = 0.15


def available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (``None`` where there is no such file)."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def ensure_memory(model: str, dtype: torch.dtype) -> None:
    """Raise ``MemoryError`` with the numbers when ``model`` will not fit in the available memory (rather
    than being killed by the kernel, possibly with other processes)."""
    from transformers import AutoModelForCausalLM

    from ..models import load_config

    config = load_config(model)  # outside the meta device: it may build a checkpoint first (Gemma 3's dequantised copy)
    with torch.device("meta"):
        skeleton = AutoModelForCausalLM.from_config(config)
    needed = sum(p.numel() for p in skeleton.parameters()) * torch.finfo(dtype).bits // 8
    needed = int(needed * (1 + MEMORY_OVERHEAD))
    available = available_memory()
    if available is not None and needed > available:
        raise MemoryError(f"model {model!r} needs about {needed / 2**30:.1f} GiB in {dtype} but only "
                          f"{available / 2**30:.1f} GiB are available: free memory, or use --dtype bfloat16.")
