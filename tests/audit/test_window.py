"""The audit's attention window (empirical.audit.heads.attention_window) against the layer's own mask.

For every tiny family and every block, the tokens that reach the last query through the block's attention (the
block called as the loop calls it, with the adapter's masks) are measured by perturbing one earlier token at a
time: they must be exactly the ``window`` latest tokens the audit reads (itself included), or every earlier token
where the audit reads no window. The negative control reads each local layer's window one token too wide (and
as no window at all): the mask rejects both. Families with local attention: GPT-Neo (alternating global / local),
Mistral (sliding window in every layer), Qwen2 (sliding above max_window_layers), Gemma 3 (local layers).
"""

import pytest
import torch

from empirical import adapter_for, load_model
from empirical.adapters import ADAPTERS
from empirical.audit.heads import attention_window
from empirical.models import TINY_CONFIGS, TINY_MODELS

TOKENS = 12  # longer than every tiny window (4 or 5) plus one
QUERY = TOKENS - 1
LOCAL = ("tiny-gpt-neo", "tiny-mistral", "tiny-qwen2", "tiny-gemma3")


def _implementations(names):
    return [pytest.param(name, implementation, id=f"{name}-{implementation}") for name in names
            for implementation in ADAPTERS[TINY_CONFIGS[name][0]].attn_implementations]


def reaching(adapter, index) -> list[int]:
    """The positions whose perturbation changes the last query's attention output in block ``index``."""
    inputs = adapter.block_inputs(TOKENS, torch.device("cpu"), torch.float32)
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(1, TOKENS, adapter.width, generator=generator)
    with torch.no_grad():
        base = adapter.block(index, x, inputs, ffn=False)[0, QUERY]
        found = []
        for position in range(TOKENS):
            y = x.clone()
            y[:, position] += torch.randn(adapter.width, generator=generator)
            if (adapter.block(index, y, inputs, ffn=False)[0, QUERY] - base).abs().max() > 1e-6:
                found.append(position)
    return found


def mask_agrees(found: list[int], window: int | None) -> bool:
    """Whether the tokens reaching the query are exactly those a window of ``window`` tokens admits (``None``:
    every token up to the query)."""
    first = 0 if window is None else max(0, QUERY - window + 1)
    return found == list(range(first, QUERY + 1))


#: The families with global attention only, under their default implementation (the audit does not read GPT-NeoX's
#: attention module, ``attention``: empirical.audit.heads.attention_module).
GLOBAL = [pytest.param(name, None, id=name) for name in TINY_MODELS if name not in LOCAL and name != "tiny-gpt-neox"]


@pytest.mark.parametrize("name,implementation", _implementations(LOCAL) + GLOBAL)
def test_the_audits_window_is_the_layers_own_mask(name, implementation):
    options = {} if implementation is None else {"attn_implementation": implementation}
    adapter = adapter_for(load_model(name, "random", seed=4, **options))
    windows = [attention_window(adapter, index) for index in range(adapter.num_layers)]
    for index, window in enumerate(windows):
        found = reaching(adapter, index)
        assert mask_agrees(found, window), (index, window, found)
    # the families with local attention have local layers, and the tiny windows are shorter than the prompt
    assert (name in LOCAL) == any(w is not None and w < TOKENS for w in windows), windows


@pytest.mark.parametrize("name,implementation", _implementations(LOCAL))
def test_control_a_window_read_one_token_too_wide_is_rejected_by_the_mask(name, implementation):
    adapter = adapter_for(load_model(name, "random", seed=4, attn_implementation=implementation))
    local = [(index, attention_window(adapter, index)) for index in range(adapter.num_layers)]
    local = [(index, window) for index, window in local if window is not None]
    assert local
    for index, window in local:
        found = reaching(adapter, index)
        assert mask_agrees(found, window)
        assert not mask_agrees(found, window + 1)  # one token too wide
        assert not mask_agrees(found, window - 1)  # one too narrow
        assert not mask_agrees(found, None)  # read as global attention
