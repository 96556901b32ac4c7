"""Causality however the blocks are called: perturbing a later token never changes an earlier token's output.

Checked for every architecture and attention implementation, with and without the feed-forward layers,
through whole passes (blocks, final normalisation, feedback). The negative control calls the blocks
the way the authors' script does (no mask): with eager attention in transformers >= 5 that is not
causal, and the check sees it.
"""

import pytest
import torch

from empirical import adapter_for, load_model
from empirical.adapters import BlockInputs

IMPLEMENTATIONS = [("tiny-gpt2", "eager"), ("tiny-gpt2", "sdpa"), ("tiny-gpt-neo", "eager"),
                   ("tiny-llama", "eager"), ("tiny-llama", "sdpa")]
TOKENS = 12
CHANGED = 7  # the perturbed position


def _outputs(adapter, x, inputs, ffn, passes):
    with torch.no_grad():
        for _ in range(passes):
            for index in range(adapter.num_layers):
                x = adapter.block(index, x, inputs, ffn=ffn)
            x = adapter.final_norm(x)
    return x


def _perturbation_effect(adapter, inputs_for, ffn, passes=2):
    """Largest change of the outputs at positions before CHANGED when the input at CHANGED changes, and at it."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, TOKENS, adapter.width, generator=generator)
    y = x.clone()
    y[:, CHANGED] += torch.randn(2, adapter.width, generator=generator)
    inputs = inputs_for(adapter)
    a, b = _outputs(adapter, x, inputs, ffn, passes), _outputs(adapter, y, inputs, ffn, passes)
    return (a[:, :CHANGED] - b[:, :CHANGED]).abs().max().item(), (a[:, CHANGED] - b[:, CHANGED]).abs().max().item()


@pytest.mark.parametrize("ffn", [True, False], ids=["full", "no-ffn"])
@pytest.mark.parametrize("name,implementation", IMPLEMENTATIONS)
def test_later_tokens_never_change_earlier_outputs(name, implementation, ffn):
    adapter = adapter_for(load_model(name, "random", seed=4, attn_implementation=implementation))
    earlier, at = _perturbation_effect(adapter, lambda a: a.block_inputs(TOKENS, torch.device("cpu"), torch.float32),
                                       ffn)
    assert earlier == 0.0
    assert at > 1e-4  # the perturbation did reach the model


def test_smollm2_is_causal(smollm2):
    adapter = adapter_for(smollm2)
    earlier, at = _perturbation_effect(adapter, lambda a: a.block_inputs(TOKENS, torch.device("cpu"), torch.float32),
                                       ffn=True, passes=1)
    assert earlier == 0.0
    assert at > 1e-4


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-llama"])
def test_control_blocks_called_without_a_mask_leak_the_future(name):
    """Eager attention called as the authors call blocks (no mask): later tokens reach earlier ones."""
    adapter = adapter_for(load_model(name, "random", seed=4, attn_implementation="eager"))

    def unmasked(a):
        inputs = a.block_inputs(TOKENS, torch.device("cpu"), torch.float32)
        return BlockInputs(TOKENS, None, inputs.position_ids, inputs.position_embeddings)

    earlier, _ = _perturbation_effect(adapter, unmasked, ffn=True)
    assert earlier > 1e-4
