"""The looped forward pass with E measured after every block (SPEC section 4).

Embed once; then, for each pass, run every block in order, measure E (eq. 9) on the residual stream
after each block, apply the final normalisation and feed the result back as the next pass's input.
All prompts go through the device together as one batch; only the current hidden state and the
``(batch,)`` E values of each block are kept.

Loop variants (``loop_variant``, recorded in a run's settings):

* ``ours`` (the default): the final normalisation between passes (SPEC section 4). It is the loop of the
  authors' ``GPTConsensus.py`` (cyphylab/GPT-Consensus): embed once, every block with E after each, ``ln_f``,
  feed back. Where ours differs from their script it is deliberate and not a loop variant: blocks get their
  causal masks and rotary positions (their mask-free block calls leak later tokens into earlier ones under
  eager attention), float32 rather than float16, and a verified weight draw.
* ``authors``: the same arithmetic as ``ours`` (tests/empirical/test_loop_variants.py checks they are
  bit-identical and match a transcription of their script's loop); a name for citing their protocol.
* ``nanogpt``: their first script (``GPT-2-Consensus.py``, built on nanoGPT): the blocks are chained pass after
  pass with no final normalisation between passes (``ln_f`` only once, before the language-model head, where E
  is not measured). That script measured its |cos| on ``ln_f`` of every block's output; this variant measures E
  on the residual stream as every other variant does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from .adapters import BlockInputs, LoopAdapter
from .eq9 import misalignment
from .settings import LOOP_VARIANTS, METRICS, check_variant  # noqa: F401 (re-exported)



class NonFiniteActivations(FloatingPointError):
    """Raised when a block produces NaN or inf (e.g. float16 overflow); E is never reported from them."""


@dataclass
class PassResult:
    """One pass: E after each block, ``(layers, batch)`` float32 on the CPU, and the state to feed back."""

    E: torch.Tensor
    hidden: torch.Tensor


def embed(adapter: LoopAdapter, input_ids: torch.Tensor, *, metric: str = "signed"
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """The embeddings (once, before the first pass) and their E, ``(batch,)``."""
    if input_ids.ndim != 2:
        raise ValueError(f"input_ids must have shape (prompts, tokens); got shape {tuple(input_ids.shape)}.")
    if input_ids.shape[1] > adapter.context_length:
        raise ValueError(f"prompts of {input_ids.shape[1]} tokens are longer than the model's context of "
                         f"{adapter.context_length} tokens; use --length <= {adapter.context_length}.")
    with torch.inference_mode():
        x = adapter.embed(input_ids)
        zero = torch.linalg.vector_norm(x, dim=-1) == 0
        if bool(zero.any()):
            raise ValueError(f"token ids {sorted(set(input_ids[zero].tolist()))} embed to the zero vector (padding "
                             "rows of the embedding table); E (eq. 9) is undefined for a zero token. Draw prompts "
                             "without them: authors_prompts(..., exclude=adapter.zero_embedding_ids()).")
        e0 = misalignment(x, metric)
    _check_finite(e0[None], "the embeddings", 0)
    return x, e0.cpu()


def run_pass(adapter: LoopAdapter, x: torch.Tensor, inputs: BlockInputs, *, ffn: bool = True,
             measure: bool = True, pass_index: int = 0, loop_variant: str = "ours",
             metric: str = "signed") -> PassResult:
    """One pass over every block. ``measure=False`` is the bare loop (for the benchmark). The state fed back is
    the final normalisation of the last block's output, but for ``loop_variant="nanogpt"`` (the output itself)."""
    check_variant(loop_variant, metric)
    layers = adapter.num_layers
    values = []
    with torch.inference_mode():
        for index in range(layers):
            x = adapter.block(index, x, inputs, ffn=ffn)
            if measure:
                values.append(misalignment(x, metric))
        if loop_variant != "nanogpt":
            x = adapter.final_norm(x)
        if not measure:
            return PassResult(torch.empty(0, x.shape[0]), x)
        # one device-to-host copy per pass; no per-block synchronisation
        E = torch.stack([v.to(values[0].device) for v in values]).cpu()
    _check_finite(E, f"pass {pass_index + 1}", pass_index * layers)
    return PassResult(E, x)


def _check_finite(E: torch.Tensor, where: str, offset: int) -> None:
    bad = ~torch.isfinite(E)
    if bool(bad.any()):
        block, prompt = (int(i) for i in bad.nonzero()[0])
        raise NonFiniteActivations(
            f"non-finite activations in {where} (block {block + 1}, measurement {offset + block + 1}, prompt "
            f"{prompt}): the hidden state overflowed or became NaN. With float16 try --dtype bfloat16 or float32.")


def looped_consensus(adapter: LoopAdapter, input_ids: torch.Tensor, passes: int, *, ffn: bool = True,
                     before_pass: Callable[[int], None] | None = None, loop_variant: str = "ours",
                     metric: str = "signed") -> torch.Tensor:
    """E after the embeddings and after every block of ``passes`` passes: ``(batch, passes * layers + 1)``.

    ``before_pass(k)`` runs before pass ``k`` (0-based), e.g. to re-draw the weights.
    """
    if passes < 1:
        raise ValueError(f"passes={passes} must be at least 1.")
    check_variant(loop_variant, metric)
    x, e0 = embed(adapter, input_ids, metric=metric)
    inputs = adapter.block_inputs(input_ids.shape[1], x.device, x.dtype)
    columns = [e0[:, None]]
    for k in range(passes):
        if before_pass is not None:
            before_pass(k)
        result = run_pass(adapter, x, inputs, ffn=ffn, pass_index=k, loop_variant=loop_variant, metric=metric)
        x = result.hidden
        columns.append(result.E.T)
    return torch.cat(columns, dim=1)
