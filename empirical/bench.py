"""``python -m empirical bench``: the cost of measuring E after every block (SPEC section 7).

All figures come from one run, on one model and machine. Four ways to push the same prompts
through ``passes x layers`` blocks:

* ``measured`` — our looped forward with E after every block (:func:`empirical.loop.run_pass`);
* ``bare`` — the same loop without measuring E;
* ``plain`` — one ordinary ``model.model(...)`` / ``model.transformer(...)`` forward whose block list is
  the model's blocks repeated ``passes`` times (the library's own forward over as many blocks);
* ``authors`` — the authors' procedure: the same blocks, then a Python loop over the prompts computing
  E of each after every layer.

The variants run in one process, one after another in alternating order, for ``rounds`` rounds after a
warm-up run of each. Ratios are the median over the rounds of the ratio within a round (runs next to each
other in time): on this shared machine single runs of one variant varied from 6.6 to 9.3 s, and the paired
ratio cancels most of that drift. Best and median times are shown beside them.

Peak memory is the peak of tensor memory allocated during a run above what was allocated at its start:
``torch.cuda.max_memory_allocated`` on a GPU; on the CPU the allocator's running total that
``torch.profiler`` records (``profile_memory=True``), in one more, untimed run of each variant. (Resident
memory is no measure of it: with a process per variant, the measured/plain ratio of peak RSS went from
0.56 to 6.0 between identical runs, by what the C allocator happened to keep.)

The time ratios sit within about 1% of each other while single runs drift by 10-15% on this shared machine,
so the E computations are also timed alone on a hidden state of the benchmark's shape (best of many short
repetitions): their cost per block, beside the bare loop's time per block, gives the overhead of measuring
E and the comparison with the authors' E to well under 1%.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from .eq9 import misalignment

VARIANTS = ("measured", "bare", "plain", "authors")


# -- the four ways ------------------------------------------------------------------------------------

def authors_E(x: torch.Tensor) -> torch.Tensor:
    """E of every prompt computed one prompt at a time, as the authors' procedure does (``(batch,)``)."""
    values = torch.zeros(x.shape[0], dtype=torch.float32, device=x.device)
    for b in range(x.shape[0]):
        tokens = x[b]
        unit = tokens / tokens.norm(dim=1, keepdim=True)
        values[b] = 1 - (unit[0] @ unit.T).mean()
    return values


#: Per-layer configuration lists a model's forward indexes by block (GPT-Neo's global/local attention,
#: the layer types of Gemma 3, Qwen2, ...): repeated with the blocks.
PER_LAYER_CONFIG = ("attention_layers", "layer_types")


@contextlib.contextmanager
def repeated_blocks(adapter, passes: int):
    """The model with its block list repeated ``passes`` times (restored afterwards): ``transformer.h`` of
    GPT-2 and GPT-Neo, the decoder's ``layers`` of the other families."""
    from torch import nn

    model, config = adapter.model, adapter.config
    if adapter.architecture in ("gpt2", "gpt_neo"):
        owner, attribute = model.transformer, "h"
    else:
        owner, attribute = getattr(adapter, "base", None) or getattr(model, model.base_model_prefix), "layers"
    if not isinstance(getattr(owner, attribute, None), nn.ModuleList):
        raise ValueError(f"the plain-forward benchmark does not know the block list of {adapter.architecture!r}.")
    blocks = getattr(owner, attribute)
    saved_count = config.num_hidden_layers
    saved_lists = {key: getattr(config, key) for key in PER_LAYER_CONFIG if getattr(config, key, None) is not None}
    setattr(owner, attribute, nn.ModuleList(list(blocks) * passes))
    config.num_hidden_layers = len(blocks) * passes
    for key, values in saved_lists.items():
        setattr(config, key, list(values) * passes)
    try:
        yield getattr(model, model.base_model_prefix)
    finally:
        setattr(owner, attribute, blocks)
        config.num_hidden_layers = saved_count
        for key, values in saved_lists.items():
            setattr(config, key, values)


def _run_variant(variant: str, adapter, input_ids: torch.Tensor, passes: int) -> None:
    from .loop import embed, run_pass

    with torch.inference_mode():
        if variant == "plain":
            with repeated_blocks(adapter, passes) as base:
                base(input_ids=input_ids, use_cache=False)
            return
        x, _ = embed(adapter, input_ids)
        inputs = adapter.block_inputs(input_ids.shape[1], x.device, x.dtype)
        if variant in ("measured", "bare"):
            for k in range(passes):
                x = run_pass(adapter, x, inputs, measure=variant == "measured", pass_index=k).hidden
            return
        values = [authors_E(x)]
        for _ in range(passes):
            for index in range(adapter.num_layers):
                x = adapter.block(index, x, inputs)
                values.append(authors_E(x))
            x = adapter.final_norm(x)
        torch.stack(values).cpu()


def peak_tensor_bytes_cpu(run) -> int:
    """Peak of CPU tensor memory allocated while ``run()`` executes, above the amount at its start (bytes).

    Read from the allocator's running total that ``torch.profiler`` attaches to every allocation and free
    (the ``Total Allocated`` of its ``[memory]`` events).
    """
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as profiler:
        run()
    with tempfile.TemporaryDirectory(prefix="empirical-memory-") as folder:
        trace = Path(folder) / "trace.json"
        profiler.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text())["traceEvents"]
    totals = [event["args"]["Total Allocated"] for event in events if event.get("name") == "[memory]"]
    return max(totals, default=0)


def _timed_run(variant: str, adapter, input_ids: torch.Tensor, passes: int) -> float:
    """Seconds of one run of a variant."""
    cuda = input_ids.device.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
    started = time.perf_counter()
    _run_variant(variant, adapter, input_ids, passes)
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - started


def _isolated_E_seconds(adapter, input_ids: torch.Tensor, repeats: int = 30) -> dict[str, float]:
    """Seconds of one E computation over all prompts, ours (:func:`misalignment`) and the authors' per-prompt
    loop (:func:`authors_E`), on the embeddings (the shape of every block's output); best of ``repeats``."""
    from .loop import embed

    with torch.inference_mode():
        x, _ = embed(adapter, input_ids)
        seconds = {}
        for name, function in (("ours", misalignment), ("authors", authors_E)):
            best = float("inf")
            for _ in range(repeats):
                if x.device.type == "cuda":
                    torch.cuda.synchronize()
                started = time.perf_counter()
                function(x).cpu()  # the value reaches the host, as in both procedures
                best = min(best, time.perf_counter() - started)
            seconds[name] = best
    return seconds


def _peak_tensor_bytes(variant: str, adapter, input_ids: torch.Tensor, passes: int) -> int:
    """Peak tensor memory of one run of a variant above the start (CUDA allocator, or the profiler on CPU)."""
    if input_ids.device.type != "cuda":
        return peak_tensor_bytes_cpu(lambda: _run_variant(variant, adapter, input_ids, passes))
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    _run_variant(variant, adapter, input_ids, passes)
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - start


def _dispatch_overhead_us(device: torch.device, repeats: int = 2000) -> float:
    """The measured cost of one small tensor operation (dispatch, plus the launch on a GPU), in microseconds."""
    x = torch.randn(8, device=device)
    for _ in range(50):
        x.norm()
    if device.type == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(repeats):
        x.norm()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - started) / repeats * 1e6


def _ratios(runs: dict[str, list[float]], summary: dict[str, dict[str, Any]], isolated: dict[str, float],
            block_seconds: float) -> dict[str, float]:
    """The benchmark's ratios: paired (median over rounds), best over best, and from the E computations timed alone."""
    def paired(numerator: str, denominator: str) -> float:
        """Median over the rounds of the ratio of two variants' times within the round."""
        return statistics.median(n / d for n, d in zip(runs[numerator], runs[denominator]))

    plain, bare, measured, authors = (summary[v] for v in ("plain", "bare", "measured", "authors"))
    return {
        "measured_over_bare_time": paired("measured", "bare"),
        "bare_over_plain_time": paired("bare", "plain"),
        "measured_over_authors_time": paired("measured", "authors"),
        "best_measured_over_bare_time": measured["seconds_best"] / bare["seconds_best"],
        "best_bare_over_plain_time": bare["seconds_best"] / plain["seconds_best"],
        "best_measured_over_authors_time": measured["seconds_best"] / authors["seconds_best"],
        "measured_over_plain_peak_memory": measured["peak_tensor_bytes"] / max(plain["peak_tensor_bytes"], 1),
        # from the E computations timed alone, beside the bare loop's best time per block
        "isolated_measured_over_bare_time": 1 + isolated["ours"] / block_seconds,
        "isolated_measured_over_authors_time": (block_seconds + isolated["ours"])
        / (block_seconds + isolated["authors"]),
    }


def _gpu_estimate_inputs(device: torch.device, prompts: int, width: int, inner: int,
                         bare: dict[str, Any]) -> dict[str, float]:
    """What a GPU would change, from measured numbers: the authors' E costs ~5 small operations per prompt
    per block, ours 6 per block whatever the number of prompts (norm, product, two element-wise, mean,
    1 - mean; one more to float32 for half-precision states); each costs at least one dispatch."""
    overhead_us = _dispatch_overhead_us(device)
    flops_per_token_block = 2 * (4 * width * width + 3 * width * inner) if inner else 2 * 12 * width * width
    return {
        "measured_dispatch_overhead_us": overhead_us,
        "authors_E_ops_per_block": 5 * prompts, "our_E_ops_per_block": 6,
        "flops_per_token_block_approx": flops_per_token_block,
        "cpu_flops_per_second_measured": flops_per_token_block * bare["token_blocks_per_second"],
    }


def bench(model: str, prompts: int, length: int, passes: int, rounds: int, device: str) -> dict[str, Any]:
    """Run every variant ``rounds`` times, alternating; return the benchmark JSON."""
    from .adapters import adapter_for
    from .models import describe_model, load_model
    from .prompts import authors_prompts
    from .run import environment, resolve_device

    torch_device = resolve_device(device)
    adapter = adapter_for(load_model(model, "trained", device=torch_device))
    info = describe_model(model, adapter)
    width, layers, inner = adapter.width, adapter.num_layers, int(getattr(adapter.config, "intermediate_size", 0) or 0)
    ids = torch.tensor(authors_prompts(prompts, length, adapter.vocab_size), device=torch_device)
    runs: dict[str, list[float]] = {v: [] for v in VARIANTS}
    schedule = [("warm-up", variant) for variant in VARIANTS] + [
        (r, variant) for r in range(rounds) for variant in (VARIANTS if r % 2 == 0 else tuple(reversed(VARIANTS)))]
    for r, variant in tqdm(schedule, desc="benchmark runs", unit="run"):
        seconds = _timed_run(variant, adapter, ids, passes)
        if r != "warm-up":
            runs[variant].append(seconds)
    peaks = {variant: _peak_tensor_bytes(variant, adapter, ids, passes) for variant in VARIANTS}
    token_blocks = prompts * length * passes * layers
    isolated = _isolated_E_seconds(adapter, ids)
    summary = {}
    for variant, seconds in runs.items():
        summary[variant] = {"seconds_best": min(seconds), "seconds_median": statistics.median(seconds),
                            "seconds_all": seconds, "token_blocks_per_second": token_blocks / min(seconds),
                            "peak_tensor_bytes": peaks[variant]}
    block_seconds = summary["bare"]["seconds_best"] / (passes * layers)
    ratios = _ratios(runs, summary, isolated, block_seconds)
    gpu = _gpu_estimate_inputs(torch_device, prompts, width, inner, summary["bare"])
    return {"model": info, "prompts": prompts, "length": length, "passes": passes, "rounds": rounds,
            "device": str(torch_device), "threads": torch.get_num_threads(), "token_blocks": token_blocks,
            "variants": summary, "ratios": ratios, "gpu_estimate_inputs": gpu,
            "isolated_E_seconds": {**isolated, "bare_block": block_seconds},
            "targets": {"measured_over_bare_time": "<= 1.05", "bare_over_plain_time": "<= 1.1",
                        "measured_over_authors_time": "<= 1.0", "measured_over_plain_peak_memory": "<= 1.2"},
            "environment": environment()}


def section(result: dict[str, Any]) -> dict[str, Any]:
    """The report section (title, text, tables) for the benchmark JSON."""
    v, r, g = result["variants"], result["ratios"], result["gpu_estimate_inputs"]
    rows = [(name, f"{v[name]['seconds_best']:.2f}", f"{v[name]['seconds_median']:.2f}",
             f"{v[name]['token_blocks_per_second']:.0f}", f"{v[name]['peak_tensor_bytes'] / 2**20:.1f}")
            for name in VARIANTS]
    isolated = result["isolated_E_seconds"]
    isolated_ms = (f"E alone {isolated['ours'] * 1e3:.2f} ms (ours), {isolated['authors'] * 1e3:.2f} ms (authors') "
                   f"per block of {isolated['bare_block'] * 1e3:.0f} ms")
    targets = [("E measured / bare loop (time)", f"{r['measured_over_bare_time']:.3f}",
                f"{r['best_measured_over_bare_time']:.3f}", f"{r['isolated_measured_over_bare_time']:.4f}", "<= 1.05"),
               ("bare loop / plain forward (time)", f"{r['bare_over_plain_time']:.3f}",
                f"{r['best_bare_over_plain_time']:.3f}", "", "<= 1.10"),
               ("E measured / authors' procedure (time)", f"{r['measured_over_authors_time']:.3f}",
                f"{r['best_measured_over_authors_time']:.3f}", f"{r['isolated_measured_over_authors_time']:.4f}",
                "<= 1.00"),
               ("E measured / plain forward (peak tensor memory)", f"{r['measured_over_plain_peak_memory']:.3f}", "",
                "", "<= 1.20")]
    block_seconds_gpu = lambda flops: g["flops_per_token_block_approx"] * result["prompts"] * result["length"] / flops
    launches = g["authors_E_ops_per_block"] * g["measured_dispatch_overhead_us"] * 1e-6
    text = (f"{result['model']['model']} ({result['model']['layers']} blocks), {result['prompts']} prompts x "
            f"{result['length']} tokens, {result['passes']} passes ({result['token_blocks']} token-blocks), "
            f"{result['device']}, {result['threads']} threads, float32, one process, {result['rounds']} rounds "
            f"after a warm-up, the variants alternating. Time ratios three ways: the median over the rounds of the "
            f"ratio within a round; the best time over the best time; and from the E computations timed alone "
            f"(best of 30; {isolated_ms}), which resolves differences of 1% that the run-to-run drift of 10-15% "
            f"on this shared machine hides from the first two. Peak memory: tensor "
            f"memory allocated above the start of the run (the weights are not counted; torch.profiler's allocator "
            f"total on the CPU, max_memory_allocated on a GPU). What a GPU changes, from these numbers: one small "
            f"operation costs "
            f"{g['measured_dispatch_overhead_us']:.1f} us here (dispatch; a GPU adds its launch); the authors' E "
            f"issues {g['authors_E_ops_per_block']} of them per block ({launches * 1e3:.2f} ms), ours "
            f"{g['our_E_ops_per_block']}. A block of "
            f"this batch is ~{g['flops_per_token_block_approx'] * result['prompts'] * result['length'] / 1e9:.1f} "
            f"GFLOP: {block_seconds_gpu(g['cpu_flops_per_second_measured']) * 1e3:.0f} ms at the "
            f"{g['cpu_flops_per_second_measured'] / 1e9:.0f} GFLOP/s measured here, "
            f"{block_seconds_gpu(1e14) * 1e3:.2f} ms at 100 TFLOP/s, where the authors' per-prompt E "
            f"({launches * 1e3:.2f} ms per block at the least) would cost "
            f"{launches / block_seconds_gpu(1e14):.1f}x the block itself, and ours "
            f"{g['our_E_ops_per_block']} launches.")
    return {"title": "Benchmark: E after every block (SPEC section 7)", "text": text, "order": 61,
            "tables": [{"title": "Same prompts through the same blocks", "columns":
                        ["variant", "seconds (best)", "seconds (median)", "token-blocks / s (best)",
                         "peak tensor memory (MiB)"],
                        "rows": rows},
                       {"title": "Targets", "columns": ["ratio", "median of paired rounds", "best / best",
                                                        "from E timed alone", "target"], "rows": targets}],
            "figures": []}
