"""The audit's weight measures (empirical.audit.weights): each head's and layer's entries against the measures they
wrap, the summed U in closed form on constructed blocks (the identity, twice it, zero), the dense spectra's width
bound met exactly, the embedding scale of stand-in embeddings, and each norm's entry (about two seconds of CPU)."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import empirical.audit.weights as weights
from empirical.adapters import adapter_for
from empirical.audit.geometry import gain_geometry, rmsnorm_ellipsoid
from empirical.audit.heads import attention_window, head_factors, layer_value_matrix
from empirical.audit.hypotheses import (asymmetry, low_rank_asymmetry, low_rank_norms, low_rank_summary,
                                        spectrum_summary)
from empirical.models import load_model
from empirical.prompts import authors_prompts


def test_each_heads_entries_are_the_low_rank_measures_of_its_p_and_u():
    adapter = adapter_for(load_model("tiny-qwen3", "random", seed=5))  # 4 query heads over 2 key/value heads, QK-norm
    audit = weights.audit_weights(adapter)
    assert [layer["layer"] for layer in audit["layers"]] == list(range(adapter.num_layers))
    for index, layer in enumerate(audit["layers"]):
        factors = head_factors(adapter, index)
        assert [head["head"] for head in layer["heads"]] == list(range(factors.heads)) and factors.heads == 4
        for head, entry in enumerate(layer["heads"]):
            p, u = factors.p_factors(head), factors.u_factors(head)
            ps, us = low_rank_summary(*p), low_rank_summary(*u)
            assert entry == {
                "head": head, "P_frobenius": low_rank_norms(*p)[0], "P_spectral": low_rank_norms(*p)[1],
                "P_asymmetry": low_rank_asymmetry(*p), "P_top_real": ps.top.real,
                "P_positive_fraction": ps.positive_fraction,
                "U_frobenius": low_rank_norms(*u)[0], "U_spectral": low_rank_norms(*u)[1],
                "U_asymmetry": low_rank_asymmetry(*u), "U_top_real": us.top.real, "U_top_imag": us.top.imag,
                "U_top_is_real": us.top_is_real, "U_top_multiplicity": us.multiplicity, "U_gap": us.gap,
                "U_spread": us.spread, "U_radius": us.radius, "U_positive_fraction": us.positive_fraction,
                "U_simple_positive_top": us.simple_positive_real, "rank_bound": 8}
        total = layer_value_matrix(factors)
        summary = spectrum_summary(total)
        singular = np.linalg.svd(total, compute_uv=False)
        assert {k: v for k, v in layer.items() if k != "heads"} == {
            "layer": index, "head_dim": 8, "width": 32, "scaling": factors.scaling, "qkv_biased": False,
            "kv_heads": 2, "qk_norm": True, "window": attention_window(adapter, index),
            "U_sum_asymmetry": asymmetry(total),
            "U_sum_identity_distance": float(np.linalg.norm(total - np.eye(32)) / math.sqrt(32)),
            "U_sum_top_real": summary.top.real, "U_sum_top_is_real": summary.top_is_real,
            "U_sum_simple_positive_top": summary.simple_positive_real,
            "U_sum_condition": float(singular[0] / singular[-1])}


def _one_head_llama(value_scale):
    """A 2-block Llama with one head of full width (d_head = d = 16) and W_O = I, W_V = value_scale I in block 0."""
    from transformers import AutoModelForCausalLM, LlamaConfig

    config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=1, num_key_value_heads=1, max_position_embeddings=32)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        attention = model.model.layers[0].self_attn
        attention.v_proj.weight.copy_(value_scale * torch.eye(16))
        attention.o_proj.weight.copy_(torch.eye(16))
    return adapter_for(model)


@pytest.mark.parametrize("scale, distance, condition", [(1.0, 0.0, 1.0), (2.0, 1.0, 1.0), (0.0, 1.0, math.inf)],
                         ids=["identity", "twice", "zero"])
def test_the_summed_u_is_measured_against_the_identity_and_its_condition(scale, distance, condition):
    layer = weights.audit_weights(_one_head_llama(scale))["layers"][0]
    assert layer["U_sum_identity_distance"] == distance  # |s I - I|_F / sqrt(d) = |s - 1|
    assert layer["U_sum_condition"] == condition  # a singular sum (all singular values 0) is infinitely conditioned
    assert layer["heads"][0]["rank_bound"] == 16 and layer["U_sum_asymmetry"] == 0.0


def test_a_rank_deficient_summed_u_is_infinitely_conditioned_without_dividing_by_zero():
    """W_V = diag(1, ..., 1, 0): the smallest singular value is exactly 0 and only it; the condition is inf by the
    guard, not by a division by zero (which numpy would only warn about: raised here)."""
    adapter = _one_head_llama(1.0)
    with torch.no_grad():
        adapter.blocks[0].self_attn.v_proj.weight[15, 15] = 0.0
    with np.errstate(divide="raise", invalid="raise"):
        layer = weights.audit_weights(adapter)["layers"][0]
    assert layer["U_sum_condition"] == math.inf and layer["U_sum_identity_distance"] == 0.25  # |e16 e16^T|_F / 4


def test_dense_spectra_of_the_summed_u_up_to_the_width_bound_inclusive(monkeypatch):
    adapter = _one_head_llama(1.0)
    monkeypatch.setattr(weights, "DENSE_EIGEN_MAX_WIDTH", 16)
    layer = weights.audit_weights(adapter)["layers"][0]
    assert layer["U_sum_top_real"] == 1.0 and layer["U_sum_condition"] == 1.0
    monkeypatch.setattr(weights, "DENSE_EIGEN_MAX_WIDTH", 15)
    layer = weights.audit_weights(adapter)["layers"][0]
    assert not {"U_sum_top_real", "U_sum_top_is_real", "U_sum_simple_positive_top", "U_sum_condition"} & set(layer)
    assert layer["U_sum_identity_distance"] == 0.0  # the cheap measures stay


class _Embedding(torch.nn.Module):
    """Stand-in input embeddings: ``factor * W[ids] + offset``."""

    def __init__(self, factor, offset):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.arange(1.0, 13.0).reshape(3, 4))
        self.factor, self.offset = factor, offset

    def forward(self, ids):
        return self.factor * self.weight[ids] + self.offset


def _stand_in(module):
    return SimpleNamespace(model=SimpleNamespace(get_input_embeddings=lambda: module), width=4)


def test_the_embedding_scale_is_the_least_squares_factor_and_its_relative_residual():
    ids = torch.tensor([[0, 2], [1, 1]])
    scale = weights.embedding_scale(_stand_in(_Embedding(3.0, 0.0)), ids)
    assert scale == {"factor": 3.0, "residual": 0.0, "sqrt_width": 2.0}
    # an offset: c = <e, r> / <r, r> and the residual |e - c r| / |e|, computed here in float64 by hand
    rows = torch.arange(1.0, 13.0, dtype=torch.float64).reshape(3, 4)[ids]
    embedded = 3.0 * rows + 0.5
    factor = float((embedded * rows).sum() / (rows * rows).sum())
    scale = weights.embedding_scale(_stand_in(_Embedding(3.0, 0.5)), ids)
    assert scale["factor"] == pytest.approx(factor, rel=1e-15) and scale["factor"] != 3.0
    assert scale["residual"] == pytest.approx(float((embedded - factor * rows).norm() / embedded.norm()), rel=1e-12)
    assert scale["residual"] > 0


def test_gemma_scales_its_embeddings_by_the_square_root_of_the_width():
    adapter = adapter_for(load_model("tiny-gemma3", "random", seed=1))
    ids = torch.tensor(authors_prompts(2, 5, adapter.vocab_size))
    scale = weights.embedding_scale(adapter, ids)
    assert scale["factor"] == pytest.approx(math.sqrt(32), rel=1e-6) and scale["residual"] < 1e-6
    assert scale["sqrt_width"] == math.sqrt(32)


def test_a_layernorms_entry_is_its_gain_geometry_bias_and_epsilon():
    norm = torch.nn.LayerNorm(4, eps=1e-3)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([1.0, -2.0, 0.5, 1.5]))
        norm.bias.copy_(torch.tensor([3.0, 4.0, 0.0, 0.0]))
    entry = weights._norm_entry("here", norm)
    geometry = gain_geometry(norm.weight.detach().numpy())
    gain = np.array([1.0, -2.0, 0.5, 1.5])
    assert entry == {"where": "here", "kind": "layernorm", "axis_ratio": geometry.axis_ratio, "cv": geometry.cv,
                     "negative": 1, "verdict": geometry.verdict, "eps": pytest.approx(1e-3), "bias_norm": 5.0,
                     "gain_rms": float(np.sqrt(np.mean(gain**2)))}


def test_an_rmsnorms_entry_has_its_ellipsoids_range_unless_a_gain_is_zero():
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    norm = LlamaRMSNorm(4, eps=1e-5)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([1.0, 2.0, 0.5, 1.5]))
    entry = weights._norm_entry("there", norm)
    w = rmsnorm_ellipsoid(np.array([1.0, 2.0, 0.5, 1.5]))
    assert entry["kind"] == "rmsnorm" and entry["bias_norm"] == 0.0 and entry["eps"] == pytest.approx(1e-5)
    assert (entry["W_min"], entry["W_max"]) == (float(w.min()), float(w.max())) == (1 / 16, 1.0)
    with torch.no_grad():
        norm.weight[1] = 0.0
    entry = weights._norm_entry("there", norm)
    assert "W_min" not in entry and "W_max" not in entry and entry["axis_ratio"] == math.inf


def test_the_norms_listed_are_each_blocks_first_norm_the_final_norm_and_the_qk_norms():
    qwen = weights.audit_weights(adapter_for(load_model("tiny-qwen3", "random", seed=5)))
    assert [entry["where"] for entry in qwen["norms"]] == ["block 0 norm_1", "block 1 norm_1", "final norm"]
    assert [entry["where"] for entry in qwen["qk_norms"]] == ["block 0 q_norm", "block 0 k_norm", "block 1 q_norm",
                                                              "block 1 k_norm"]
    assert all(entry["kind"] == "rmsnorm" for entry in qwen["norms"] + qwen["qk_norms"])
    # OLMo-2 has no norm before attention (it normalises the block's outputs): only the final norm is listed
    olmo = weights.audit_weights(adapter_for(load_model("tiny-olmo2", "random", seed=5)))
    assert [entry["where"] for entry in olmo["norms"]] == ["final norm"] and olmo["qk_norms"] != []
    gpt2 = weights.audit_weights(adapter_for(load_model("tiny-gpt2", "random", seed=5)))
    assert gpt2["qk_norms"] == [] and [e["kind"] for e in gpt2["norms"]] == ["layernorm"] * 4
