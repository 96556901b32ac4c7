"""The precision floor of E: the smallest misalignment a run in a given dtype can tell from rounding.

Two sources of rounding, both measured or bounded on the run's own model, device and dtype:

* **the model's arithmetic** (the *probe*): every prompt's first token repeated over the whole prompt, the
  copies moved apart by one unit round-off of the dtype (identical tokens would round identically and hide
  the rounding; tokens one round-off apart round independently, as those of a run near consensus do). E of
  the probe is about ``u^2 / 2``, the smallest misalignment the dtype holds between distinct tokens. Looped
  once through every block in the run's dtype, it stays near consensus but for rounding; the largest E it
  reaches, over the blocks and the probed prompts, is what the dtype alone makes of a consensus. Checked on
  the tiny collapsing GPT-2 and GPT-Neo of the tests: their bfloat16 runs stall at 0.96 and 1.14 times the
  floor so measured, their float32 and float64 runs go below it. (Measured, not bounded from the dtype's
  epsilon: the blocks amplify rounding in a way no epsilon bound knows; on an H100 a bfloat16 GPT-Neo 2.7B
  run stalled at E = 1e-4, where one rounding per token gives u^2 / 2 ~ 1e-5.) One pass holds every block's
  rounding once; the passes after it add rounding only as fast as the dynamics fail to contract it, which is
  the dynamics' doing, not the dtype's.
* **the evaluation of E** (:func:`evaluation_floor`): cosines of ``width``-long vectors computed in
  float32 carry an absolute error of about ``sqrt(width) * u`` (``u`` the unit round-off): measured
  here on nearly aligned tokens, 1.2e-7 at width 32 and 1.5e-6 at width 2560, against the bound's 3.5e-7
  and 3.0e-6.

The floor is the larger of the two. No rate is fitted to values of E at or below it, and no collapse
threshold is decided within a factor 10 of it (:mod:`empirical.decision`).
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from .adapters import BlockInputs, LoopAdapter
from .eq9 import misalignment
from .loop import NonFiniteActivations, run_pass

#: Prompts the probe loops (the first ones of the run): the probe's E varies little between prompts (its
#: tokens are one embedding row each), and a pass over 4 prompts costs 4 / N of one of the run's passes.
PROBE_PROMPTS = 4
#: Seed of the probe's displacements (recorded in the manifest's ``floor``).
PROBE_SEED = 0


def evaluation_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype :func:`empirical.eq9.misalignment` computes E in for hidden states of ``dtype``."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def evaluation_floor(width: int, dtype: torch.dtype) -> float:
    """``sqrt(width) * u``: the rounding error of E evaluated from ``width``-long tokens of ``dtype``
    (``u`` the unit round-off of the dtype E is computed in; see the module docstring for the measurement)."""
    if width < 1:
        raise ValueError(f"width={width!r} must be a positive integer.")
    return math.sqrt(width) * torch.finfo(evaluation_dtype(dtype)).eps / 2


def consensus_probe(x: torch.Tensor, seed: int = PROBE_SEED) -> torch.Tensor:
    """Every prompt's first token repeated over the prompt, the copies moved apart by one unit round-off of
    ``x``'s dtype: a consensus up to the dtype's resolution, whose tokens round independently.

    Parameters
    ----------
    x : tensor, shape=[prompts, tokens, width]
        The run's embeddings.
    seed : int
        Seed of the displacements (drawn on the CPU, so the probe is the same on every device).

    Returns
    -------
    tensor, shape=[min(prompts, PROBE_PROMPTS), tokens, width], x's dtype and device
        Token 1 is the prompt's first token exactly; token i > 1 is it plus a normal displacement of norm
        ``u |token 1|`` on average (``u`` the unit round-off of ``x``'s dtype), so E of the probe is about ``u^2 / 2``.
    """
    first = x[:PROBE_PROMPTS, :1, :].double().cpu()                       # (probed, 1, width)
    unit = torch.finfo(x.dtype).eps / 2
    generator = torch.Generator().manual_seed(seed)
    noise = torch.randn(first.shape[0], x.shape[1], x.shape[2], generator=generator, dtype=torch.float64)
    noise[:, 0] = 0.0
    scale = unit * torch.linalg.vector_norm(first, dim=-1, keepdim=True) / math.sqrt(x.shape[2])
    return (first + scale * noise).to(device=x.device, dtype=x.dtype)


def measure_floor(adapter: LoopAdapter, x: torch.Tensor, inputs: BlockInputs, *, ffn: bool,
                  metric: str = "signed") -> dict[str, Any]:
    """The floor of E for the run whose embeddings are ``x`` (shape ``[prompts, tokens, width]``, in the run's
    dtype and device), looped with ``inputs`` and ``ffn`` as the run is, E in the run's ``metric``. Returns the manifest's ``floor`` record:
    ``E_floor`` and how it was obtained."""
    started = time.perf_counter()
    probe = consensus_probe(x)
    try:
        result = run_pass(adapter, probe, inputs, ffn=ffn, pass_index=0, metric=metric)
    except NonFiniteActivations as error:
        raise NonFiniteActivations(f"measuring the E floor of {x.dtype} (a consensus state looped once): {error}") \
            from error
    with torch.inference_mode():
        start = float(misalignment(probe, metric).max())
    probe_max = max(start, float(result.E.max()))
    evaluation = evaluation_floor(x.shape[-1], x.dtype)
    return {"E_floor": max(probe_max, evaluation), "dtype": str(x.dtype).replace("torch.", ""),
            "probe_E_max": probe_max, "probe_E_per_block": result.E.max(dim=1).values.tolist(),
            "probe_prompts": probe.shape[0], "probe_seed": PROBE_SEED, "evaluation_floor": evaluation,
            "evaluation_dtype": str(evaluation_dtype(x.dtype)).replace("torch.", ""),
            "seconds": time.perf_counter() - started,
            "method": "max(probe: the largest E, over the probed prompts, at the start and after each block of one "
                      "pass from a consensus displaced by one unit round-off (each prompt's first token repeated), "
                      "sqrt(width) x unit round-off of E's evaluation dtype)"}
