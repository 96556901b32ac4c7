"""The audit's state measures (empirical.audit.states) on states built by hand and on tiny models: each measure's
value known in closed form, each inequality met exactly and passed by one float, and the loop's series checked
against a plain loop over the same blocks (a second of CPU together)."""

import numpy as np
import pytest
import torch

from empirical.adapters import adapter_for
from empirical.audit.geometry import layernorm_residuals, rmsnorm_residuals
from empirical.audit.states import (_cos_distance, _hemispheres, _qk_spread, _Series, _update_against_output,
                                    audit_states)
from empirical.eq9 import misalignment
from empirical.loop import embed
from empirical.models import load_model
from empirical.prompts import authors_prompts
from sim.field.hemisphere import open_hemisphere

EPS32 = float(np.finfo(np.float32).eps)  # 2**-23


# --- the measures on hand-built states -------------------------------------------------------------------------------
def test_cos_distance_is_one_minus_the_cosine_per_row_in_float64():
    a = torch.tensor([[1.0, 0.0], [0.0, 3.0], [3.0, 4.0]])
    b = torch.tensor([[0.0, 2.0], [0.0, 2.0], [-3.0, -4.0]])
    distance = _cos_distance(a, b)
    assert distance.dtype == np.float64
    np.testing.assert_array_equal(distance, [1.0, 0.0, 2.0])
    # float32 rows are compared in float64: 1 - cos of two rows 2**-12 apart in angle is about 2**-25, which
    # float32's cosine (a multiple of 2**-24 near 1) rounds to 0 or 2**-24
    angle = 2.0**-12
    a32 = torch.tensor([[1.0, 0.0]], dtype=torch.float32)
    b32 = torch.tensor([[np.cos(angle), np.sin(angle)]], dtype=torch.float32)
    expected = 1.0 - float(b32.double()[0, 0] / b32.double()[0].norm())
    assert _cos_distance(a32, b32)[0] == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(angle**2 / 2, rel=1e-6)


def test_hemispheres_are_decided_per_prompt_with_the_lp_margin():
    inside = [[1.0, 0.1], [1.0, -0.1], [1.0, 0.0]]
    opposite = [[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]]
    states = torch.tensor([inside, opposite], dtype=torch.float32)
    ok, margin = _hemispheres(states)
    assert ok.tolist() == [True, False]
    assert margin.tolist() == [open_hemisphere(s.double().numpy()).margin for s in states]
    assert margin[0] > 0 >= margin[1]


def _rms_tokens(rms, width):
    """Tokens of ``width`` equal entries, token t with root mean square ``rms[t]``."""
    return torch.tensor(rms, dtype=torch.float64)[:, None] * torch.ones(width, dtype=torch.float64)


def test_qk_spread_of_whole_width_norms_is_the_product_of_the_two_ranges_minus_one():
    query = _rms_tokens([1.0, 2.0, 1.5], 4)[None]  # [1 prompt, 3 tokens, 4]
    key = _rms_tokens([3.0, 1.0, 2.0], 4)[None]
    np.testing.assert_allclose(_qk_spread(query, key, 0.0, 0.0), [2.0 * 3.0 - 1.0], rtol=1e-15)
    # the epsilons inside the square roots, each with its own side
    expected = np.sqrt((4.0 + 1.0) / (1.0 + 1.0)) * np.sqrt((9.0 + 3.0) / (1.0 + 3.0)) - 1.0
    np.testing.assert_allclose(_qk_spread(query, key, 1.0, 3.0), [expected], rtol=1e-15)
    # each prompt's own range: a second prompt whose smallest token is not the batch's smallest
    query2 = torch.cat([query, _rms_tokens([2.0, 4.0, 3.0], 4)[None]])
    key2 = torch.cat([key, _rms_tokens([5.0, 10.0, 7.0], 4)[None]])
    np.testing.assert_allclose(_qk_spread(query2, key2, 0.0, 0.0), [5.0, 3.0], rtol=1e-15)
    # float32 input is measured in float64
    spread32 = _qk_spread(query.float() * 1.1, key.float() * 1.3, 1e-3, 2e-3)
    exact = _qk_spread(query.float().double() * 1.1, key.float().double() * 1.3, 1e-3, 2e-3)
    assert spread32.dtype == np.float64
    np.testing.assert_allclose(spread32, exact, rtol=1e-7)


def test_qk_spread_per_head_pairs_each_query_head_with_its_groups_key_head_and_takes_the_largest():
    # 4 query heads, 2 key heads: query heads 0, 1 read key head 0 and 2, 3 read key head 1 (grouped-query attention)
    q_ranges, k_ranges = [2.0, 1.0, 1.0, 5.0], [1.5, 1.0]
    query = torch.stack([_rms_tokens([1.0, r], 2) for r in q_ranges])[None]  # [1, 4 heads, 2 tokens, 2]
    key = torch.stack([_rms_tokens([r, 1.0], 2) for r in k_ranges])[None]
    # prompt 0: the largest product is head 3's, 5 x 1 (spread 4); prompt 1: q ranges 1, 3, 1, 1, k ranges 2, 1
    q2 = torch.stack([_rms_tokens([1.0, r], 2) for r in [1.0, 3.0, 1.0, 1.0]])[None]
    k2 = torch.stack([_rms_tokens([r, 1.0], 2) for r in [2.0, 1.0]])[None]
    # grouped: head 1 reads key head 0 -> 3 x 2 = 6; repeated as (0, 1, 0, 1) head 1 would read key head 1 -> 3
    both = _qk_spread(torch.cat([query, q2]), torch.cat([key, k2]), 0.0, 0.0)
    np.testing.assert_allclose(both, [4.0, 5.0], rtol=1e-15)
    # the largest over heads, not the first or the smallest
    one = torch.stack([_rms_tokens([1.0, r], 2) for r in [1.0, 1.0, 1.0, 2.5]])[None]
    np.testing.assert_allclose(_qk_spread(one, k2, 0.0, 0.0), [1.5], rtol=1e-15)


def test_the_update_agrees_with_the_output_projection_up_to_one_rounding_of_out_inclusive():
    x = torch.zeros(2, 3, 2, dtype=torch.float32)
    out = torch.ones(2, 3, 2, dtype=torch.float32)
    attention = torch.ones(2, 3, 2, dtype=torch.float32)
    attention[0, 2, 1] = 1.0 - EPS32  # |Delta - a| = eps |out| exactly in one entry: within
    attention[1, 1, 0] = 1.0 - 2 * EPS32  # twice that in one entry of the second prompt: not within
    distance, within = _update_against_output(x, out, attention)
    assert within.tolist() == [True, False]
    a = attention.double()
    np.testing.assert_allclose(distance, [EPS32 / a[0].norm().item(), 2 * EPS32 / a[1].norm().item()], rtol=1e-15)
    # Delta = out - x is taken in float64: out = 1, x = 2**-30 (float32 would round Delta to 1)
    x1 = torch.full((1, 1, 1), 2.0**-30, dtype=torch.float32)
    out1 = torch.ones(1, 1, 1, dtype=torch.float32)
    a1 = torch.full((1, 1, 1), 1.0 - 2.0**-24, dtype=torch.float32)
    distance1, within1 = _update_against_output(x1, out1, a1)
    assert distance1.tolist() == [(2.0**-24 - 2.0**-30) / (1.0 - 2.0**-24)] and within1.tolist() == [True]
    # the rounding is out's dtype's: the same numbers in float64 are 2**29 roundings apart
    _, within64 = _update_against_output(x.double(), out.double(), attention.double())
    assert within64.tolist() == [False, False]


def test_negative_control_an_update_far_from_the_projection_is_not_within():
    x = torch.zeros(1, 2, 2)
    distance, within = _update_against_output(x, torch.ones(1, 2, 2), torch.full((1, 2, 2), 0.5))
    assert within.tolist() == [False] and distance.tolist() == [1.0]


# --- the series of one run -------------------------------------------------------------------------------------------
def test_without_a_norm_the_attention_reads_the_residual_stream_itself():
    series = _Series()
    x = torch.tensor([[[1.0, 0.0], [-1.0, 0.0]], [[1.0, 1.0], [1.0, 2.0]]])
    series.normalised(None, x)
    assert series.surface_radial == [] and series.surface_hyperplane == [] and series.radii == []
    assert [a.tolist() for a in series.inside_norm] == [[False, True]]
    np.testing.assert_array_equal(series.margin_norm[0], _hemispheres(x)[1])


def test_a_layernorm_input_is_measured_against_its_surface_and_centred_at_its_bias():
    torch.manual_seed(0)
    norm = torch.nn.LayerNorm(4, eps=1e-2)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([1.0, 2.0, 0.5, 1.5]))
        # every normalised token lies near 3 e1 (|u_k| <= sqrt(3)): one hemisphere; z - beta is inexact in float32 in
        # the second and third entries, and taken in z's dtype
        norm.bias.copy_(torch.tensor([3.0, 0.1, -0.2, 0.0]))
    x = torch.randn(2, 5, 4)
    series = _Series()
    with torch.inference_mode():  # as audit_states runs it
        series.normalised(norm, x)
        z = norm(x)
    zs, bias = z.double().numpy(), norm.bias.detach().double().numpy()
    residuals = layernorm_residuals(x.double().numpy(), zs, norm.weight.detach().numpy(), bias, 1e-2)
    assert series.surface_radial == [residuals.radial_eps] and series.surface_hyperplane == [residuals.hyperplane]
    np.testing.assert_allclose(series.radii[0], np.linalg.norm(zs - bias, axis=-1).ravel(), rtol=1e-6)
    assert series.radii[0].shape == (10,)
    # the hemisphere test reads z - beta: without the bias these tokens would all lie in one hemisphere
    centred = z - norm.bias.detach()
    np.testing.assert_array_equal(series.inside_norm[0], _hemispheres(centred)[0])
    np.testing.assert_array_equal(series.margin_norm[0], _hemispheres(centred)[1])
    assert _hemispheres(z)[0].all() and not np.array_equal(series.margin_norm[0], _hemispheres(z)[1])


def test_an_rmsnorm_input_is_measured_against_its_ellipsoid():
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    norm = LlamaRMSNorm(4, eps=1e-2)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([1.0, 2.0, 0.5, 1.5]))
    torch.manual_seed(1)
    x = torch.randn(2, 5, 4)
    series = _Series()
    with torch.inference_mode():  # as audit_states runs it
        series.normalised(norm, x)
        z = norm(x)
    residuals = rmsnorm_residuals(x.double().numpy(), z.double().numpy(), norm.weight.detach().numpy(), 1e-2)
    assert series.surface_radial == [residuals.radial_eps] and series.surface_hyperplane == [0.0]
    assert series.radii == []
    np.testing.assert_array_equal(series.margin_norm[0], _hemispheres(z)[1])


def test_the_series_arrays_stack_blocks_as_columns_and_fill_the_absent_ones():
    series = _Series(energy=[np.array([1.0, 2.0]), np.array([3.0, 4.0])])
    series.inside_res += [np.array([True, False])] * 2
    series.margin_res += [np.array([0.5, -0.5])] * 2
    series.inside_norm.append(np.array([True, True]))
    series.margin_norm.append(np.array([0.1, 0.2]))
    series.drift_block.append(np.array([0.3, 0.4]))
    series.qk_spread.append(np.array([0.0, 0.0]))
    series.surface_radial.append(0.25)
    series.surface_hyperplane.append(0.0)
    arrays = series.arrays(2, ffn=True)
    assert arrays["ffn"] is True
    np.testing.assert_array_equal(arrays["E"], [[1.0, 3.0], [2.0, 4.0]])
    assert arrays["inside_residual"].shape == (2, 2) and arrays["first_token_drift_block"].tolist() == [[0.3], [0.4]]
    for key in ("first_token_drift_pass", "update_distance", "update_within_rounding"):
        assert arrays[key].shape == (2, 0)
    assert arrays["update_within_rounding"].dtype == bool and arrays["update_distance"].dtype == np.float64
    assert arrays["surface_radial"].tolist() == [0.25] and arrays["surface_hyperplane"].tolist() == [0.0]
    assert "layernorm_radius" not in arrays
    series.radii += [np.array([2.0, 5.0]), np.array([1.0, 3.0])]
    series.drift_pass.append(np.array([0.7, 0.8]))
    series.update_distance.append(np.array([0.9, 1.0]))
    series.update_within.append(np.array([True, False]))
    arrays = series.arrays(2, ffn=False)
    assert arrays["ffn"] is False and arrays["layernorm_radius"] == {"min": 1.0, "max": 5.0}
    assert arrays["first_token_drift_pass"].tolist() == [[0.7], [0.8]]
    assert arrays["update_distance"].tolist() == [[0.9], [1.0]]
    assert arrays["update_within_rounding"].tolist() == [[True], [False]]


# --- the loop on tiny models -----------------------------------------------------------------------------------------
def _plain_loop(adapter, ids, passes, ffn):
    """The blocks' outputs, pass by pass, by a plain loop (final norm between passes)."""
    x, e0 = embed(adapter, ids)
    inputs = adapter.block_inputs(ids.shape[1], x.device, x.dtype)
    inputs_to, outputs = [], []
    with torch.inference_mode():
        for _ in range(passes):
            for index in range(adapter.num_layers):
                out = adapter.block(index, x, inputs, ffn=ffn)
                inputs_to.append(x)
                outputs.append(out)
                x = out
            x = adapter.final_norm(x)
    return e0, inputs_to, outputs


@pytest.mark.parametrize("model, ffn, dtype", [("tiny-llama", True, torch.float32), ("tiny-llama", False, torch.float64),
                                          ("tiny-llama", True, torch.bfloat16),
                                          ("tiny-gpt2", False, torch.float32)])
def test_the_loops_series_are_the_measures_of_a_plain_loop_block_by_block(model, ffn, dtype):
    adapter = adapter_for(load_model(model, "random", seed=3, dtype=dtype))
    ids = torch.tensor(authors_prompts(3, 6, adapter.vocab_size))
    layers, passes = adapter.num_layers, 2
    asked = []  # the block inputs are made for the embeddings' device and dtype (the CPU here: a spy tells)
    made = adapter.block_inputs
    adapter.block_inputs = lambda tokens, device, dtype: asked.append((tokens, device, dtype)) or made(tokens, device,
                                                                                                         dtype)
    result = audit_states(adapter, ids, passes, ffn=ffn)
    assert asked == [(6, torch.device("cpu"), dtype)]
    del adapter.block_inputs
    e0, inputs, outputs = _plain_loop(adapter, ids, passes, ffn)
    assert result["ffn"] is ffn and outputs[0].dtype == dtype
    blocks = passes * layers
    assert result["E"].shape == (3, blocks + 1) and result["first_token_drift_block"].shape == (3, blocks)
    np.testing.assert_allclose(result["E"][:, 0], e0.double().numpy(), rtol=1e-12)
    np.testing.assert_allclose(result["E"][:, 1:], np.stack([misalignment(o).double().numpy() for o in outputs], 1),
                               rtol=1e-12)
    np.testing.assert_array_equal(result["inside_residual"][:, 0], _hemispheres(inputs[0])[0])
    np.testing.assert_array_equal(result["margin_residual"][:, 1:],
                                  np.stack([_hemispheres(o)[1] for o in outputs], 1))
    np.testing.assert_allclose(result["first_token_drift_block"],
                               np.stack([_cos_distance(i[:, 0], o[:, 0]) for i, o in zip(inputs, outputs)], 1),
                               rtol=1e-12, atol=1e-15)
    # the first token after block i of pass k against the same block's of pass k - 1
    np.testing.assert_allclose(result["first_token_drift_pass"],
                               np.stack([_cos_distance(outputs[b][:, 0], outputs[b + layers][:, 0])
                                         for b in range(layers)], 1), rtol=1e-12, atol=1e-15)
    assert result["first_token_drift_pass"].shape == (3, layers)
    assert result["surface_radial"].shape == (blocks,) and result["inside_normalised"].shape == (3, blocks)
    assert result["qk_scale_spread"].tolist() == np.zeros((3, blocks)).tolist()  # no QK-norm
    if ffn:
        assert result["update_distance"].shape == (3, 0) and result["update_within_rounding"].shape == (3, 0)
    else:  # without FFN the block adds the output projection's output, to its rounding (relative to |a|, which can
        # be a hundredth of |out|: 1e-3 is a hundred float32 roundings of out)
        assert result["update_within_rounding"].shape == (3, blocks) and result["update_within_rounding"].all()
        assert result["update_distance"].shape == (3, blocks) and result["update_distance"].max() < 1e-3
    if model == "tiny-gpt2":  # LayerNorm: the radii of z - beta
        assert 0 < result["layernorm_radius"]["min"] <= result["layernorm_radius"]["max"]
    else:
        assert "layernorm_radius" not in result


def test_the_qk_norms_receive_what_the_spread_is_measured_on():
    """Qwen 3 normalises each query and key head (2 key heads for 4 query heads): the spread recorded per block is
    the one of the tensors its norms received, captured by hooks that are removed after the block."""
    adapter = adapter_for(load_model("tiny-qwen3", "random", seed=2))
    ids = torch.tensor(authors_prompts(2, 6, adapter.vocab_size))
    from empirical.audit.heads import norm_gain, qk_norms

    received = []  # what the norms receive inside the blocks (not norm_gain's probes of shape [1, d_head])
    handles = [module.register_forward_pre_hook(lambda m, args: received.append(args[0]) if args[0].ndim == 4 else None)
               for index in range(adapter.num_layers) for module in qk_norms(adapter, index)]
    try:
        result = audit_states(adapter, ids, 1, ffn=True)
    finally:
        for handle in handles:
            handle.remove()
    assert len(received) == 2 * adapter.num_layers  # the audit's own hooks did not run twice or stay attached
    for index in range(adapter.num_layers):
        q_norm, k_norm = qk_norms(adapter, index)
        expected = _qk_spread(received[2 * index], received[2 * index + 1], norm_gain(q_norm)[3], norm_gain(k_norm)[3])
        np.testing.assert_array_equal(result["qk_scale_spread"][:, index], expected)
    assert (result["qk_scale_spread"] > 0).all()
    assert not any(m._forward_pre_hooks for i in range(adapter.num_layers) for m in qk_norms(adapter, i))


def test_non_finite_activations_name_the_block_and_the_pass():
    adapter = adapter_for(load_model("tiny-llama", "random", seed=3))
    ids = torch.tensor(authors_prompts(2, 6, adapter.vocab_size))
    block = adapter.blocks[1]
    with torch.no_grad():
        block.mlp.down_proj.weight.fill_(float("inf"))
    with pytest.raises(FloatingPointError, match="after block 2 of pass 1"):
        audit_states(adapter, ids, 2, ffn=True)
    # control: without FFN the broken feed-forward layer is not run
    assert np.isfinite(audit_states(adapter, ids, 1, ffn=False)["E"]).all()
