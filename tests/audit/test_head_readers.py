"""The readers of empirical.audit.heads on stand-in blocks, at the cases the tiny models do not reach: biases, a
``dense`` output projection, half a QK-norm, a window kept only on the attention module, GPT-J's ``scale_attn``,
heads narrower than the width with grouped keys and values, LayerNorm biases, RMSNorms without an epsilon or with
a bias, a large epsilon, and the gain probe's tolerance at large and zero gains."""

import re
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from empirical.audit.heads import (GAIN_PROBE_TOL, attention_window, head_factors, norm_gain, output_projection,
                                   qk_norms)


def _adapter(attention: nn.Module, architecture: str = "llama", kind: str = "full_attention", **config):
    """A stand-in adapter of one block whose ``self_attn`` is ``attention``."""
    block = nn.Module()
    block.self_attn = attention
    settings = SimpleNamespace(**config)
    return SimpleNamespace(architecture=architecture, blocks=[block], config=settings,
                           width=getattr(settings, "hidden_size", 0), attention_kind=lambda index: kind)


def _attention(**modules) -> nn.Module:
    attention = nn.Module()
    for name, module in modules.items():
        setattr(attention, name, module)
    return attention


# --- biases ----------------------------------------------------------------------------------------------------------
def _separate_projections(width=6, heads=2, kv_heads=1, head_dim=4, seed=0):
    """q, k, v and o (no biases) of a grouped-query attention whose heads are wider than width / heads."""
    torch.manual_seed(seed)
    return _attention(q_proj=nn.Linear(width, heads * head_dim, bias=False),
                      k_proj=nn.Linear(width, kv_heads * head_dim, bias=False),
                      v_proj=nn.Linear(width, kv_heads * head_dim, bias=False),
                      o_proj=nn.Linear(heads * head_dim, width, bias=False))


@pytest.mark.parametrize("projection", ["q_proj", "k_proj", "v_proj"])
def test_a_nonzero_bias_on_any_of_q_k_v_makes_the_logits_affine(projection):
    attention = _separate_projections()
    attention.scaling = 0.5
    adapter = _adapter(attention, hidden_size=6, num_attention_heads=2, num_key_value_heads=1)
    assert head_factors(adapter, 0).biased is False  # control: no biases
    module = getattr(attention, projection)
    module.bias = nn.Parameter(torch.zeros(module.out_features))
    assert head_factors(adapter, 0).biased is False  # a zero bias is no bias
    with torch.no_grad():
        module.bias[1] = 0.5  # one entry of many
    assert head_factors(adapter, 0).biased is True


def test_a_projection_without_a_bias_attribute_is_unbiased():
    attention = _separate_projections()
    attention.scaling = 0.5
    attention.q_proj = _attention(weight=attention.q_proj.weight)  # a bare module with a weight and no bias
    adapter = _adapter(attention, hidden_size=6, num_attention_heads=2, num_key_value_heads=1)
    assert head_factors(adapter, 0).biased is False


def test_gpt2s_fused_bias_and_gpt_neos_absent_one():
    from empirical.adapters import adapter_for
    from empirical.models import load_model
    gpt2 = adapter_for(load_model("tiny-gpt2", "random", seed=3, dtype=torch.float64, attn_implementation="eager"))
    assert head_factors(gpt2, 0).biased is False  # zero at initialisation
    with torch.no_grad():
        gpt2.blocks[0].attn.c_attn.bias[0] = 1.0
    assert head_factors(gpt2, 0).biased is True
    neo = adapter_for(load_model("tiny-gpt-neo", "random", seed=3, dtype=torch.float64, attn_implementation="eager"))
    assert head_factors(neo, 0).biased is False


# --- the modules of a block ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["o_proj", "out_proj", "c_proj", "dense"])
def test_each_output_projection_name_is_found_and_none_is_refused(name):
    projection = nn.Linear(4, 4)
    assert output_projection(_adapter(_attention(**{name: projection}), architecture="phi"), 0) is projection
    with pytest.raises(ValueError, match="^" + re.escape("the attention of a 'phi' model has no output projection "
                                                         "(o_proj, out_proj, c_proj or dense).") + "$"):
        output_projection(_adapter(_attention(proj=projection), architecture="phi"), 0)


@pytest.mark.parametrize("present, expected", [
    pytest.param(("q_norm", "k_norm"), ("q", "k"), id="both"),
    pytest.param((), None, id="neither"),
    pytest.param(("q_norm",), "block 0 normalises only its queries.", id="queries only"),
    pytest.param(("k_norm",), "block 0 normalises only its keys.", id="keys only"),
])
def test_a_qk_norm_is_both_normalisations_or_none(present, expected):
    norms = {"q_norm": nn.LayerNorm(2), "k_norm": nn.LayerNorm(2)}
    adapter = _adapter(_attention(**{name: norms[name] for name in present}))
    if isinstance(expected, str):
        with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
            qk_norms(adapter, 0)
    elif expected is None:
        assert qk_norms(adapter, 0) is None
    else:
        assert qk_norms(adapter, 0) == (norms["q_norm"], norms["k_norm"])


def test_a_window_on_the_attention_module_is_read_before_the_configuration():
    # the attention's own window, in a layer the adapter calls full and a configuration without one
    assert attention_window(_adapter(_attention(sliding_window=4)), 0) == 4
    # a sliding layer whose window lives in the configuration only (Mistral, Phi-3)
    assert attention_window(_adapter(_attention(), kind="sliding_attention", sliding_window=5), 0) == 5
    # a sliding layer and a configuration that names no window: no window
    assert attention_window(_adapter(_attention(), kind="sliding_attention"), 0) is None
    assert attention_window(_adapter(_attention()), 0) is None  # control: a full layer


# --- head factors ----------------------------------------------------------------------------------------------------
def test_gpt_j_divides_its_logits_by_scale_attn():
    attention = _separate_projections(heads=2, kv_heads=2, head_dim=4)
    attention.scale_attn = torch.tensor(2.0)  # sqrt(d_head)
    factors = head_factors(_adapter(attention, architecture="gptj", hidden_size=6, num_attention_heads=2), 0)
    assert factors.scaling == 0.5


def test_heads_wider_than_width_over_heads_with_grouped_keys_and_values():
    """Width 6, 2 query heads of 4 (8 > 6 rows), 1 key/value head repeated for both."""
    attention = _separate_projections(width=6, heads=2, kv_heads=1, head_dim=4)
    attention.scaling = 0.5
    factors = head_factors(_adapter(attention, hidden_size=6, num_attention_heads=2, num_key_value_heads=1), 0)
    assert factors.query.shape == factors.key.shape == factors.value.shape == (2, 4, 6)
    assert factors.output.shape == (2, 6, 4) and factors.kv_heads == 1
    weight = attention.q_proj.weight.detach().double().numpy()
    np.testing.assert_array_equal(factors.query, [weight[:4], weight[4:]])
    np.testing.assert_array_equal(factors.key[0], factors.key[1])  # one key head for both query heads
    np.testing.assert_array_equal(factors.key[0], attention.k_proj.weight.detach().double().numpy())
    assert factors.query.dtype == np.float64  # read from float32 weights


def test_qk_norm_gains_are_folded_into_queries_and_keys_and_flagged():
    attention = _separate_projections(width=6, heads=2, kv_heads=1, head_dim=4)
    attention.scaling = 0.5
    adapter = _adapter(attention, hidden_size=6, num_attention_heads=2, num_key_value_heads=1)
    assert head_factors(adapter, 0).qk_norm is False  # control: no QK-norm
    attention.q_norm, attention.k_norm = nn.RMSNorm(4, eps=1e-6), nn.RMSNorm(4, eps=1e-6)
    with torch.no_grad():
        attention.q_norm.weight.copy_(torch.tensor([1.0, 2.0, 3.0, 4.0]))
        attention.k_norm.weight.copy_(torch.tensor([0.5, 0.5, 2.0, 2.0]))
    factors = head_factors(adapter, 0)
    assert factors.qk_norm is True
    query, key = (getattr(attention, name).weight.detach().double().numpy() for name in ("q_proj", "k_proj"))
    # diag(g) W per head: the gain of one head repeated over both query heads
    np.testing.assert_allclose(factors.query[1], np.array([1.0, 2.0, 3.0, 4.0])[:, None] * query[4:], rtol=1e-15)
    np.testing.assert_allclose(factors.key[0], np.array([0.5, 0.5, 2.0, 2.0])[:, None] * key, rtol=1e-15)


# --- normalisations --------------------------------------------------------------------------------------------------
def test_a_layernorms_bias_is_read_and_a_missing_one_is_zero():
    norm = nn.LayerNorm(3, eps=1e-3)
    with torch.no_grad():
        norm.bias.copy_(torch.tensor([0.5, -1.0, 2.0]))
    kind, gain, bias, eps = norm_gain(norm)
    assert kind == "layernorm" and eps == pytest.approx(1e-3, rel=1e-12)  # eps is stored as given
    np.testing.assert_array_equal(bias, [0.5, -1.0, 2.0])
    assert gain.dtype == bias.dtype == np.float64  # read from float32 parameters
    _, _, bias, _ = norm_gain(nn.LayerNorm(3, bias=False))
    assert bias.shape == (3,) and bias.dtype == np.float64 and not np.any(bias)  # one zero per entry


class _RMSNorm(nn.Module):
    """An RMSNorm of gain ``weight`` (or ``1 + weight``), its output moved by ``relative`` and ``absolute``."""

    def __init__(self, weight, eps=1e-6, one_plus=False, relative=0.0, absolute=0.0):
        super().__init__()
        self.weight = nn.Parameter(torch.as_tensor(weight, dtype=torch.float64))
        self.variance_epsilon = self.used_eps = eps  # the first is what norm_gain reads, the second what it uses
        self.one_plus, self.relative, self.absolute = one_plus, relative, absolute

    def forward(self, x):
        self.probe = x  # what norm_gain fed it
        normalised = x / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.used_eps)
        gain = 1.0 + self.weight if self.one_plus else self.weight
        return gain * normalised * (1.0 + self.relative) + self.absolute


def test_a_large_epsilon_is_divided_out_of_the_probe():
    """eps = 0.1: the probe of ones comes out as g / sqrt(1.1), 5 % from g, which norm_gain must undo."""
    norm = _RMSNorm([2.0, 3.0], eps=0.1)
    kind, gain, bias, eps = norm_gain(norm)
    assert (kind, bias, eps) == ("rmsnorm", None, 0.1)
    # the probe is one vector of ones in the module's own dtype (float64 here, not torch's default float32)
    assert norm.probe.dtype == torch.float64 and norm.probe.tolist() == [[1.0, 1.0]]
    np.testing.assert_array_equal(gain, [2.0, 3.0])
    np.testing.assert_array_equal(norm_gain(_RMSNorm([2.0, 3.0], eps=0.1, one_plus=True))[1], [3.0, 4.0])


def test_the_gain_probe_allows_its_tolerance_relative_at_large_gains_and_absolute_at_zero():
    """Half the tolerance either way is read as the weight; twice it is refused (the controls)."""
    message = "^" + re.escape("normalisation module _RMSNorm scales by neither its weight nor 1 + weight.") + "$"
    assert norm_gain(_RMSNorm([100.0, 200.0], relative=GAIN_PROBE_TOL / 2))[0] == "rmsnorm"
    assert norm_gain(_RMSNorm([0.0, 0.0], absolute=GAIN_PROBE_TOL / 2))[0] == "rmsnorm"
    with pytest.raises(ValueError, match=message):
        norm_gain(_RMSNorm([100.0, 200.0], relative=2 * GAIN_PROBE_TOL))
    with pytest.raises(ValueError, match=message):
        norm_gain(_RMSNorm([0.0, 0.0], absolute=2 * GAIN_PROBE_TOL))


def test_a_norm_without_an_epsilon_or_with_a_bias_is_refused():
    without_eps = _RMSNorm([1.0, 1.0])
    del without_eps.variance_epsilon
    with_bias = _RMSNorm([1.0, 1.0])
    with_bias.bias = nn.Parameter(torch.zeros(2, dtype=torch.float64))
    for module in (without_eps, with_bias):
        with pytest.raises(ValueError, match="^" + re.escape("normalisation module _RMSNorm is neither LayerNorm nor "
                                                             "a bias-free RMSNorm.") + "$"):
            norm_gain(module)
    eps_named_eps = _RMSNorm([1.0, 1.0])
    del eps_named_eps.variance_epsilon
    eps_named_eps.eps = 1e-6
    assert norm_gain(eps_named_eps)[3] == 1e-6  # control: an epsilon under the other name
