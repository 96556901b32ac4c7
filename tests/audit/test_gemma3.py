"""What Gemma 3's block adds to the paper's, read and measured on tiny configurations.

Each architecture row of the audit (embedding scale, attention window, grouped-query attention, QK-norm,
post-norm) is shown to reach ``holds`` on a model without the feature and ``fails`` on tiny Gemma 3, and
the window, grouped-query and embedding rows also ``hold`` on a Gemma 3 configured without them: the rows
are measured on the model, not looked up by family name.
"""

import math

import numpy as np
import pytest
import torch

from empirical.adapters import adapter_for
from empirical.audit import AuditSettings, audit_adapter, audit_model, hypothesis_rows
from empirical.audit.states import _qk_spread, _update_against_output
from empirical.audit.report import audit_section, trained_families_table
from empirical.audit.heads import attention_window, head_factors, norm_gain, qk_norms
from empirical.models import load_model
from empirical.prompts import authors_prompts

SETTINGS = AuditSettings(prompts=3, length=10, passes=2, seed=0)
ROWS = {
    "embedding": "initial tokens are the embedding rows (no embedding scale)",
    "window": "each token attends to all earlier tokens (no attention window)",
    "gqa": "every head has its own keys and values (no grouped-query attention)",
    "qk-norm": "attention logits z_i^T P_eta z_j with a fixed P_eta (no QK-norm)",
    "post-norm": "the block adds the attention output itself (no post-norm) [no-ffn]",
}


def _verdicts(audit, weights="random"):
    return {key: next(row["verdict"] for row in audit["hypotheses"][weights] if row["hypothesis"] == name)
            for key, name in ROWS.items()}


@pytest.fixture(scope="module")
def gemma_audit():
    return audit_model("tiny-gemma3", "random", SETTINGS)


@pytest.fixture(scope="module")
def gpt2_audit():
    return audit_model("tiny-gpt2", "random", SETTINGS)


def test_every_gemma3_addition_fails_its_hypothesis(gemma_audit):
    assert _verdicts(gemma_audit) == dict.fromkeys(ROWS, "fails")


def test_a_model_without_the_additions_holds_every_row(gpt2_audit):
    """The control: GPT-2 has none of Gemma 3's additions (and its own K/V per head)."""
    assert _verdicts(gpt2_audit) == dict.fromkeys(ROWS, "holds")


def test_gemma3_configured_without_window_sharing_and_scale_holds_those_rows():
    """The same family with a window as long as its context, one K/V per head and the embedding scale set to 1:
    those three rows hold, QK-norm and post-norm still fail (they are not configurable)."""
    from transformers import AutoModelForCausalLM

    from empirical.models import load_config

    config = load_config("tiny-gemma3")
    config.num_key_value_heads = config.num_attention_heads
    config.sliding_window = config.max_position_embeddings
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config).eval()
    model.model.embed_tokens.embed_scale.fill_(1.0)
    adapter = adapter_for(model)
    assert attention_window(adapter, 0) == config.max_position_embeddings
    ids = torch.tensor(authors_prompts(3, 10, adapter.vocab_size))
    rows = {row["hypothesis"]: row["verdict"] for row in hypothesis_rows(audit_adapter(adapter, ids, passes=1), 10)}
    assert [rows[ROWS[key]] for key in ROWS] == ["holds", "holds", "holds", "fails", "fails"]


def test_gemma3_numbers_are_its_own(gemma_audit):
    run = gemma_audit["runs"]["random"]
    scale = run["weights"]["embedding_scale"]
    assert scale["factor"] == pytest.approx(math.sqrt(32), rel=1e-6) and scale["residual"] < 1e-6
    layers = run["weights"]["layers"]
    assert [layer["window"] for layer in layers] == [4, None]  # sliding, then full attention
    assert all(layer["kv_heads"] == 2 and layer["qk_norm"] for layer in layers)
    no_ffn = run["variants"]["no-ffn"]
    assert no_ffn["update_distance"].shape == (3, 2 * len(layers)) and not no_ffn["update_within_rounding"].any()
    assert run["variants"]["ffn"]["update_distance"].shape == (3, 0)


@pytest.fixture(scope="module")
def gemma64():
    model = load_model("tiny-gemma3", "random", seed=2, dtype=torch.float64, attn_implementation="eager")
    with torch.no_grad():  # non-trivial QK-norm gains, so that folding them into P matters
        generator = torch.Generator().manual_seed(5)
        for block in model.model.layers:
            for norm in (block.self_attn.q_norm, block.self_attn.k_norm):
                norm.weight.copy_(torch.randn(norm.weight.shape, generator=generator, dtype=torch.float64) * 0.5)
    return adapter_for(model)


def _attention_and_prediction(adapter, index, *, divide=True):
    """Block ``index``'s own attention probabilities ``[heads, l, l]`` (rotary switched off), and softmax of
    ``z_i^T P_eta z_j / (rms(W_Q z_i) rms(W_K z_j))`` from the head factors (without the divisor: the control)."""
    tokens = 5
    generator = torch.Generator().manual_seed(0)
    h = torch.randn(1, tokens, adapter.width, generator=generator, dtype=torch.float64) * 5.0
    attention = adapter.blocks[index].self_attn
    inputs = adapter.block_inputs(tokens, h.device, h.dtype)
    cos, sin = inputs.rotary[adapter.attention_kind(index)]
    with torch.no_grad():
        _, weights = attention(hidden_states=h, attention_mask=inputs.masks[adapter.attention_kind(index)],
                               position_embeddings=(torch.ones_like(cos), torch.zeros_like(sin)))
    factors = head_factors(adapter, index)
    eps_q, eps_k = (norm_gain(m)[3] for m in qk_norms(adapter, index))
    z = h[0].numpy()
    head_dim = factors.query.shape[1]
    raw_q = (attention.q_proj.weight.detach().numpy() @ z.T).T.reshape(tokens, factors.heads, head_dim)
    raw_k = (attention.k_proj.weight.detach().numpy() @ z.T).T.reshape(tokens, factors.kv_heads, head_dim)
    rq = np.sqrt((raw_q**2).mean(-1) + eps_q)
    rk = np.repeat(np.sqrt((raw_k**2).mean(-1) + eps_k), factors.heads // factors.kv_heads, axis=1)
    predicted = []
    for head in range(factors.heads):
        left, right = factors.p_factors(head)
        logits = (z @ left) @ (right @ z.T)
        if divide:
            logits = logits / np.outer(rq[:, head], rk[:, head])
        logits[np.triu_indices(tokens, 1)] = -np.inf
        logits -= logits.max(axis=1, keepdims=True)
        predicted.append(np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True))
    return weights[0].numpy(), np.stack(predicted)


def test_p_eta_with_the_qk_norm_gains_and_divisors_reproduces_gemma3_attention(gemma64):
    actual, predicted = _attention_and_prediction(gemma64, 1)  # block 1: full attention
    # Gemma's RMSNorm computes in float32 whatever the model dtype: probabilities agree to ~1e-7.
    np.testing.assert_allclose(predicted, actual, rtol=0, atol=1e-6)


def test_without_the_per_token_divisors_p_eta_does_not_reproduce_it(gemma64):
    """Negative control: the fixed bilinear form alone is not Gemma 3's logit."""
    actual, predicted = _attention_and_prediction(gemma64, 1, divide=False)
    assert np.max(np.abs(predicted - actual)) > 1e-2


def test_gemma_norm_gain_is_one_plus_its_weight(gemma64):
    norm = gemma64.blocks[0].input_layernorm
    with torch.no_grad():
        norm.weight.copy_(torch.linspace(-0.5, 0.5, norm.weight.numel(), dtype=torch.float64))
    kind, gain, _, eps = norm_gain(norm)
    assert kind == "rmsnorm"
    np.testing.assert_allclose(gain, 1.0 + norm.weight.detach().numpy(), rtol=0, atol=0)
    x = torch.randn(2, gemma64.width, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    expected = x.numpy() / np.sqrt((x.numpy() ** 2).mean(-1, keepdims=True) + eps) * gain
    np.testing.assert_allclose(norm(x).detach().numpy(), expected, rtol=1e-6)  # float32 inside Gemma's RMSNorm


def test_a_norm_scaling_by_something_else_is_refused():
    """Negative control of the gain probe: a norm that multiplies by 2 w is neither convention."""
    class Doubled(torch.nn.RMSNorm):
        def forward(self, x):
            return 2.0 * super().forward(x)

    norm = Doubled(8, eps=1e-6)
    with torch.no_grad():
        norm.weight.fill_(0.3)  # 2 w = 0.6: neither w = 0.3 nor 1 + w = 1.3 (with w = 1, 2 w = 1 + w)
    assert norm_gain(torch.nn.RMSNorm(8, eps=1e-6))[0] == "rmsnorm"  # the undoubled norm is read
    with pytest.raises(ValueError, match="neither its weight nor 1 \\+ weight"):
        norm_gain(norm)


def test_qk_spread_of_known_divisors():
    """Queries of rms 1 and 3 on two tokens (ratio 3), keys of rms 2 and 2 (ratio 1): the divisor varies by 3x."""
    query = torch.ones(1, 2, 2, 4)
    query[0, :, 1] *= 3.0
    key = torch.full((1, 1, 2, 4), 2.0)
    np.testing.assert_allclose(_qk_spread(query, key, 0.0, 0.0), [2.0])
    np.testing.assert_allclose(_qk_spread(torch.ones(1, 2, 2, 4), key, 0.0, 0.0), [0.0])  # equal norms: fixed P


def test_update_against_output_tells_an_added_output_from_a_rescaled_one():
    generator = torch.Generator().manual_seed(0)
    x, a = torch.randn(2, 5, 8, generator=generator), torch.randn(2, 5, 8, generator=generator) * 1e-3
    distance, within = _update_against_output(x, x + a, a)
    assert within.all() and distance.max() < 1e-2  # float32 rounding of x + a, relative to the small a
    distance, within = _update_against_output(x, x + 2 * a, a)
    assert not within.any() and distance == pytest.approx([1.0, 1.0], rel=1e-2)


def test_the_trained_families_stand_side_by_side(gemma_audit, gpt2_audit):
    """Two audits with trained runs get a table with a column each; with one there is none."""
    def as_trained(audit):
        return {**audit, "runs": {"trained": audit["runs"]["random"]},
                "hypotheses": {"trained": audit["hypotheses"]["random"]}}

    table = trained_families_table([as_trained(gemma_audit), as_trained(gpt2_audit)])
    assert table.columns == ("", "tiny-gemma3 (trained)", "tiny-gpt2 (trained)")
    rows = {row[0]: row[1:] for row in table.rows}
    assert rows[ROWS["post-norm"]] == ("fails", "holds")
    assert rows["model"][0].startswith("gemma3_text, 2 layers, d = 32, 4 heads / 2 kv")
    assert trained_families_table([as_trained(gemma_audit), gpt2_audit]) is None
    section = audit_section([as_trained(gemma_audit), as_trained(gpt2_audit)])
    assert section.tables[1].title == "The trained families side by side"
    summary = {row[0]: row[2:] for row in section.tables[0].rows}
    assert summary[ROWS["qk-norm"]] == ("fails", "holds")


@pytest.mark.parametrize("shape, verdict", [
    pytest.param("exponential", "holds", id="exponential-decay"),
    pytest.param("collapse-then-floor", "nearly", id="collapse-then-floor"),
    pytest.param("no-decay", "fails", id="no-decay"),
])
def test_the_conclusion_row_reaches_each_verdict(shape, verdict):
    """E decaying exponentially holds; a collapse in two blocks to a slowly rising floor (trained Gemma 3 without
    FFN) is no single exponential (negative fitted rate) but fell tenfold: nearly; E that stays put fails."""
    from empirical.audit import rate_summary
    from empirical.audit.grading import decay_verdict

    rng = np.random.default_rng(0)  # seed 0: multiplicative noise of 2% per value
    k = np.arange(55)
    if shape == "exponential":
        curve = 0.8 * np.exp(-0.1 * k)
    elif shape == "collapse-then-floor":
        curve = np.where(k < 2, 0.8, 0.002 * np.exp(0.04 * k))
    else:
        curve = np.full(k.size, 0.8)
    values = curve[None] * np.exp(0.02 * rng.normal(size=(4, k.size)))
    row = decay_verdict(rate_summary(values), values)
    assert row["verdict"] == verdict, row["numbers"]


@pytest.mark.parametrize("name, expected", [
    # Mistral keeps its window (4 tokens) in the configuration only; it shares K/V (4 heads, 2 kv).
    pytest.param("tiny-mistral", ("holds", "fails", "fails", "holds", "holds"), id="mistral"),
    # OLMo-2: QK-norm over all heads at once, a norm on the attention output, no norm before attention.
    pytest.param("tiny-olmo2", ("holds", "holds", "fails", "fails", "fails"), id="olmo2"),
    # OPT: the paper's block (output projection out_proj, biases), none of the additions.
    pytest.param("tiny-opt", ("holds", "holds", "holds", "holds", "holds"), id="opt"),
])
def test_the_architecture_rows_read_other_families(name, expected):
    audit = audit_model(name, "random", AuditSettings(prompts=2, length=8, passes=1, seed=0))
    assert tuple(_verdicts(audit).values()) == expected
    if name == "tiny-olmo2":
        rows = {row["hypothesis"]: row for row in audit["hypotheses"]["random"]}
        assert rows["normalised states on the predicted surface [no-ffn]"]["verdict"] == "fails"
        assert "no norm before attention" in rows["normalised states on the predicted surface [no-ffn]"]["numbers"]
