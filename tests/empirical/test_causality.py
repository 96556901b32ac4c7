"""Causality however the blocks are called: perturbing a later token never changes an earlier token's output.

Checked for every family and every attention implementation transformers offers for it, with and
without the feed-forward layers, through whole passes (blocks, final normalisation, feedback). The
negative control calls the blocks the way the authors' script does (no mask): with eager attention in
transformers >= 5 that is not causal, and the check sees it. Sliding windows are checked to matter:
a token just beyond a sliding layer's window does not reach the query, one inside does.
"""

import pytest
import torch

from empirical import adapter_for, load_model
from empirical.adapters import ADAPTERS
from empirical.models import TINY_CONFIGS, TINY_MODELS

IMPLEMENTATIONS = [pytest.param(name, implementation, id=f"{name}-{implementation}") for name in TINY_MODELS
                   for implementation in ADAPTERS[TINY_CONFIGS[name][0]].attn_implementations]
TOKENS = 12
CHANGED = 7  # the perturbed position


def _outputs(adapter, x, inputs, ffn, passes):
    with torch.no_grad():
        for _ in range(passes):
            for index in range(adapter.num_layers):
                x = adapter.block(index, x, inputs, ffn=ffn)
            x = adapter.final_norm(x)
    return x


def block_inputs(adapter):
    """The blocks' inputs (masks, positions) for TOKENS tokens, float32 on the CPU."""
    return adapter.block_inputs(TOKENS, torch.device("cpu"), torch.float32)


def perturbation_effect(adapter, inputs, ffn, passes=2):
    """Largest change of the outputs at positions before CHANGED when the input at CHANGED changes, and at it."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, TOKENS, adapter.width, generator=generator)
    y = x.clone()
    y[:, CHANGED] += torch.randn(2, adapter.width, generator=generator)
    a, b = _outputs(adapter, x, inputs, ffn, passes), _outputs(adapter, y, inputs, ffn, passes)
    return (a[:, :CHANGED] - b[:, :CHANGED]).abs().max().item(), (a[:, CHANGED] - b[:, CHANGED]).abs().max().item()


@pytest.mark.parametrize("ffn", [True, False], ids=["full", "no-ffn"])
@pytest.mark.parametrize("name,implementation", IMPLEMENTATIONS)
def test_later_tokens_never_change_earlier_outputs(name, implementation, ffn):
    adapter = adapter_for(load_model(name, "random", seed=4, attn_implementation=implementation))
    earlier, at = perturbation_effect(adapter, block_inputs(adapter), ffn)
    assert earlier == 0.0
    assert at > 1e-4  # the perturbation did reach the model


@pytest.mark.parametrize("name", [name for name in TINY_MODELS
                                  if "eager" in ADAPTERS[TINY_CONFIGS[name][0]].attn_implementations
                                  and TINY_CONFIGS[name][0] != "gpt_neo"])
def test_control_blocks_called_without_a_mask_leak_the_future(name):
    """Eager attention called as the authors call blocks (no mask): later tokens reach earlier ones.
    (GPT-Neo is causal without a mask: its causal and window masks are buffers inside the attention.)"""
    adapter = adapter_for(load_model(name, "random", seed=4, attn_implementation="eager"))
    earlier, _ = perturbation_effect(adapter, block_inputs(adapter).without_masks(), ffn=True)
    assert earlier > 1e-4


#: (tiny model, a block with a sliding window, the window in tokens), under every attention implementation.
SLIDING = [pytest.param(name, index, window, implementation, id=f"{name}-{implementation}")
           for name, index, window in [("tiny-gemma3", 0, 4), ("tiny-mistral", 0, 4), ("tiny-qwen2", 1, 4),
                                       ("tiny-gpt-neo", 1, 5)]
           for implementation in ADAPTERS[TINY_CONFIGS[name][0]].attn_implementations]


@pytest.mark.parametrize("name,index,window,implementation", SLIDING)
def test_sliding_window_hides_tokens_beyond_it_and_only_those(name, index, window, implementation):
    """In a sliding block, the last query sees the `window` most recent tokens (itself included): a token
    just inside the window changes its output, the token just beyond does not."""
    adapter = adapter_for(load_model(name, "random", seed=4, attn_implementation=implementation))
    assert adapter.attention_kind(index) == "sliding_attention" or name == "tiny-gpt-neo"
    inputs = block_inputs(adapter)
    query = TOKENS - 1
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(1, TOKENS, adapter.width, generator=generator)

    def change_at(position):
        y = x.clone()
        y[:, position] += torch.randn(adapter.width, generator=generator)
        with torch.no_grad():
            return (adapter.block(index, x, inputs, ffn=False) - adapter.block(index, y, inputs, ffn=False))[0, query]

    assert change_at(query - window).abs().max() == 0.0  # just beyond the window
    assert change_at(query - window + 1).abs().max() > 1e-4  # the oldest token inside it


def test_control_a_full_attention_block_sees_beyond_the_window():
    """Negative control: Gemma 3's full-attention block (same prompts) is reached by the token the sliding
    block cannot see."""
    adapter = adapter_for(load_model("tiny-gemma3", "random", seed=4))
    assert adapter.attention_kind(1) == "full_attention"
    inputs = block_inputs(adapter)
    x = torch.randn(1, TOKENS, adapter.width, generator=torch.Generator().manual_seed(1))
    y = x.clone()
    y[:, 0] += 1.0
    with torch.no_grad():
        change = (adapter.block(1, x, inputs, ffn=False) - adapter.block(1, y, inputs, ffn=False))[0, TOKENS - 1]
    assert change.abs().max() > 1e-4
