"""P_eta and U_eta read off real blocks reproduce the blocks' own attention (tiny configurations)."""

import numpy as np
import pytest
import torch

from empirical.adapters import adapter_for
from empirical.audit.heads import head_factors, layer_value_matrix, norm_gain
from empirical.models import load_model


@pytest.fixture(scope="module", params=["tiny-gpt2", "tiny-gpt-neo", "tiny-llama"])
def adapter(request):
    return adapter_for(load_model(request.param, "random", seed=3, dtype=torch.float64, attn_implementation="eager"))


def _attention_probabilities(adapter, h):
    """The block-0 attention's own probabilities, ``[heads, l, l]``, with rotary positions switched off."""
    block = adapter.blocks[0]
    tokens = h.shape[1]
    inputs = adapter.block_inputs(tokens, h.device, h.dtype)
    with torch.no_grad():
        if adapter.architecture == "gpt2":
            _, weights = block.attn(h, attention_mask=inputs.attention_mask)
        elif adapter.architecture == "gpt_neo":
            _, weights = block.attn.attention(h, attention_mask=inputs.attention_mask)
        else:
            cos, sin = inputs.position_embeddings
            _, weights = block.self_attn(hidden_states=h, attention_mask=inputs.attention_mask,
                                         position_embeddings=(torch.ones_like(cos), torch.zeros_like(sin)))
    return weights[0].numpy()


def _predicted_probabilities(factors, z, scale=1.0):
    """softmax_j<=i (z_i^T P_eta z_j) per head, ``[heads, l, l]``."""
    tokens = z.shape[0]
    out = []
    for head in range(factors.heads):
        left, right = factors.p_factors(head)
        logits = scale * (z @ left) @ (right @ z.T)
        logits[np.triu_indices(tokens, 1)] = -np.inf
        logits -= logits.max(axis=1, keepdims=True)
        weights = np.exp(logits)
        out.append(weights / weights.sum(axis=1, keepdims=True))
    return np.stack(out)


def _inputs(adapter, tokens=5, seed=0):
    generator = torch.Generator().manual_seed(seed)
    # Larger than the initialiser's scale so the logits are far from uniform (a sharp test of P).
    return torch.randn(1, tokens, adapter.width, generator=generator, dtype=torch.float64) * 5.0


def test_p_eta_reproduces_the_attention_probabilities(adapter):
    h = _inputs(adapter)
    factors = head_factors(adapter, 0)
    # GPT-Neo computes its attention in float32 whatever the model dtype: probabilities agree to ~1e-7.
    np.testing.assert_allclose(_predicted_probabilities(factors, h[0].numpy()), _attention_probabilities(adapter, h),
                               rtol=0, atol=1e-6)


def test_a_wrong_logit_scaling_is_detected(adapter):
    """Negative control: the same P with the scaling of another architecture does not reproduce the attention."""
    h = _inputs(adapter)
    factors = head_factors(adapter, 0)
    wrong = 1.0 / np.sqrt(factors.query.shape[1]) if factors.scaling == 1.0 else 1.0 / factors.scaling
    predicted = _predicted_probabilities(factors, h[0].numpy(), scale=wrong)
    assert np.max(np.abs(predicted - _attention_probabilities(adapter, h))) > 1e-3


def test_summed_u_is_the_first_tokens_attention_output(adapter):
    """Causal: token 1 attends only to itself, so its attention output is sum_eta U_eta z_1 (biases are zero at init)."""
    h = _inputs(adapter, tokens=3, seed=1)
    block = adapter.blocks[0]
    inputs = adapter.block_inputs(3, h.device, h.dtype)
    with torch.no_grad():
        if adapter.architecture == "gpt2":
            out = block.attn(h, attention_mask=inputs.attention_mask)[0]
        elif adapter.architecture == "gpt_neo":
            out = block.attn(h, attention_mask=inputs.attention_mask)[0]
        else:
            out = block.self_attn(hidden_states=h, attention_mask=inputs.attention_mask,
                                  position_embeddings=inputs.position_embeddings)[0]
    u = layer_value_matrix(head_factors(adapter, 0))
    np.testing.assert_allclose(out[0, 0].numpy(), u @ h[0, 0].numpy(), rtol=1e-10, atol=1e-12)
    # and not the transpose (a U read with its factors swapped):
    assert np.max(np.abs(out[0, 0].numpy() - u.T @ h[0, 0].numpy())) > 1e-6


def test_norm_gain_reads_the_normalisation(adapter):
    kind, gain, bias, eps = norm_gain(adapter._norm_1(adapter.blocks[0]))
    assert kind == ("rmsnorm" if adapter.architecture == "llama" else "layernorm")
    np.testing.assert_array_equal(gain, np.ones(adapter.width))
    assert eps > 0


def test_the_rmsnorm_probe_is_made_on_the_modules_device(monkeypatch):
    """The vector of ones that reads an RMSNorm's gain is made where the module's weight is (a spy on torch.ones:
    on a CPU-only machine a dropped ``device=`` would otherwise pass unseen); control: the gain read is right."""
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    module = LlamaRMSNorm(6, eps=1e-6)
    with torch.no_grad():
        module.weight.copy_(torch.arange(1.0, 7.0))
    asked, ones = [], torch.ones
    monkeypatch.setattr(torch, "ones", lambda *shape, **options: asked.append(options) or ones(*shape, **options))
    kind, gain, bias, eps = norm_gain(module)
    assert [options.get("device") for options in asked] == [module.weight.device]
    assert kind == "rmsnorm" and bias is None and eps == 1e-6
    np.testing.assert_allclose(gain, np.arange(1.0, 7.0), rtol=1e-4)
