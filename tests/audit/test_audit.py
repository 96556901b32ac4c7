"""The audit end to end on tiny configurations (fast), with known answers from constructed weights."""

import json

import numpy as np
import pytest
import torch

from empirical.__main__ import main
from empirical.adapters import adapter_for
from empirical.audit import AuditSettings, audit_adapter, audit_model, comparison, hypothesis_rows
from empirical.audit.report import audit_records, audit_section
from empirical.audit.heads import head_factors
from empirical.models import load_model
from empirical.run import write_manifest
from empirical.prompts import authors_prompts
from foundation.records import CheckResult, ReportSection

SETTINGS = AuditSettings(prompts=3, length=10, passes=2, seed=0)


def _rows(rows):
    return {row["hypothesis"]: row for row in rows}


@pytest.fixture(scope="module")
def tiny_llama_audit():
    return audit_model("tiny-llama", "random", SETTINGS)


def test_random_tiny_model_audit_reads_the_initialiser(tiny_llama_audit):
    rows = _rows(tiny_llama_audit["hypotheses"]["random"])
    # Initial gains are exactly 1: a sphere; random value matrices are far from symmetric; 10 tokens in d = 32.
    assert rows["normalisation onto a sphere (constant gain)"]["verdict"] == "holds"
    assert rows["U_eta symmetric"]["verdict"] == "fails"
    assert rows["one head (h = 1)"]["verdict"] == "fails"
    assert rows["tokens in one open hemisphere, normalised states [ffn]"]["verdict"] == "holds"
    assert rows["normalised states on the predicted surface [ffn]"]["verdict"] == "holds"
    variant = tiny_llama_audit["runs"]["random"]["variants"]["ffn"]
    layers = tiny_llama_audit["description"]["layers"]
    assert variant["E"].shape == (3, 2 * layers + 1)
    assert variant["inside_residual"].shape == (3, 2 * layers + 1)
    assert variant["first_token_drift_pass"].shape == (3, layers)


def test_a_run_compares_with_itself_as_indistinguishable_and_ffn_effect_is_paired(tiny_llama_audit):
    run = tiny_llama_audit["runs"]["random"]
    same = comparison(run["variants"]["ffn"]["rate"], run["variants"]["ffn"]["rate"])
    assert same["difference"] == 0.0 and same["verdict"] == "indistinguishable"
    effect = run["ffn_effect"]
    per_prompt = np.asarray(run["variants"]["ffn"]["rate"]["per_prompt"]) - np.asarray(
        run["variants"]["no-ffn"]["rate"]["per_prompt"])
    assert effect["difference"] == pytest.approx(per_prompt.mean())


def test_constructed_symmetric_values_and_ellipsoid_gains_are_detected():
    """Known answers: W_O,eta = W_V,eta^T makes every U_eta symmetric positive semidefinite (top eigenvalue > 0, simple
    for generic weights); a non-constant gain makes the normalisation an ellipsoid."""
    adapter = adapter_for(load_model("tiny-llama", "random", seed=1))
    heads = int(adapter.config.num_attention_heads)
    group = heads // int(adapter.config.num_key_value_heads)
    with torch.no_grad():
        for block in adapter.blocks:
            attention = block.self_attn
            head_dim = attention.head_dim
            value = attention.v_proj.weight  # [kv_heads * head_dim, d]
            for head in range(heads):
                rows = value[(head // group) * head_dim:(head // group + 1) * head_dim]
                attention.o_proj.weight[:, head * head_dim:(head + 1) * head_dim] = rows.T
            block.input_layernorm.weight.copy_(torch.linspace(0.5, 2.0, adapter.width))
    ids = torch.tensor(authors_prompts(3, 10, adapter.vocab_size))
    run = audit_adapter(adapter, ids, passes=1)
    rows = _rows(hypothesis_rows(run, 10))
    assert rows["U_eta symmetric"]["verdict"] == "holds"
    assert rows["top eigenvalue of U_eta real, simple, > 0"]["verdict"] == "holds"
    assert rows["normalisation onto a sphere (constant gain)"]["verdict"] == "fails"
    assert rows["normalised states on the predicted surface [ffn]"]["verdict"] == "holds"
    factors = head_factors(adapter, 0)
    left, right = factors.u_factors(0)
    u = left @ right
    np.testing.assert_allclose(u, u.T, atol=1e-6)


def test_report_section_and_records_are_built(tiny_llama_audit):
    section = audit_section([tiny_llama_audit])
    assert isinstance(section, ReportSection) and section.title == "Theory meets practice"
    titles = [table.title for table in section.tables]
    assert titles[0].startswith("Hypothesis -> holds / nearly / fails")
    assert any(title.startswith("Exponential fits") for title in titles)
    assert len(section.tables[0].columns) == 2 + 1  # hypothesis, needed by, one run
    records = audit_records([tiny_llama_audit])
    assert all(isinstance(r, CheckResult) for r in records)
    by_claim = {r.claim: r for r in records}
    assert by_claim["emp.audit-hemisphere"].verdict == "verified"
    assert by_claim["emp.rate"].verdict == "not-run"
    assert by_claim["emp.full"].verdict == "not-run"
    json.dumps(section.to_json())
    for record in records:
        json.dumps(record.to_json())


def test_cli_writes_the_audit_and_its_section(tmp_path):
    status = main(["audit", "--model", "tiny-gpt2", "--weights", "random", "--out", str(tmp_path), "--prompts", "2",
                   "--length", "8", "--passes", "1"])
    assert status == 0
    audit = json.loads((tmp_path / "audit.json").read_text())
    assert audit["model"] == "tiny-gpt2"
    assert {row["verdict"] for row in audit["hypotheses"]["random"]} <= {"holds", "nearly", "fails"}
    section = json.loads((tmp_path / "audit.section.json").read_text())
    assert section["title"] == "Theory meets practice"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        pytest.param({"prompts": 1}, "at least 2", id="one-prompt"),
        pytest.param({"length": 0}, "positive", id="zero-length"),
    ],
)
def test_bad_settings_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AuditSettings(**kwargs)


def test_redrawn_weights_and_random_comparison_of_random_weights_are_rejected():
    with pytest.raises(ValueError, match="trained' or 'random"):
        audit_model("tiny-gpt2", "redrawn", SETTINGS)
    with pytest.raises(ValueError, match="needs weights='trained'"):
        audit_model("tiny-gpt2", "random", SETTINGS, compare_random=True)



def test_the_memory_check_reads_the_configuration_outside_the_meta_device(monkeypatch):
    """Gemma 3's configuration comes from a dequantised copy built on first use (from_pretrained, which refuses the
    meta device); ensure_memory once read it inside its meta-device block, so an audit of gemma3-270m on a fresh
    clone stopped with a RuntimeError."""
    import empirical.models
    from empirical.audit.measure import ensure_memory
    from empirical.models import builtin_config

    def load_config(name):
        if torch.empty(0).device.type == "meta":
            raise RuntimeError("load_config ran on the meta device")
        return builtin_config("tiny-gpt2")

    monkeypatch.setattr(empirical.models, "load_config", load_config)
    ensure_memory("tiny-gpt2", torch.float32)  # returns: a tiny model fits
    monkeypatch.setattr("empirical.audit.measure.available_memory", lambda: 1)
    with pytest.raises(MemoryError, match="needs about"):
        ensure_memory("tiny-gpt2", torch.float32)

def _fake_run(folder, rates, ffn, seed):
    """A run folder as `python -m empirical run` writes it, with E decaying at known per-prompt rates."""
    rng = np.random.default_rng(seed)
    k = np.arange(31)
    values = 0.8 * np.exp(-np.asarray(rates)[:, None] * k) * np.exp(0.02 * rng.normal(size=(len(rates), k.size)))
    folder.mkdir()
    write_manifest(folder, {"settings": {"model": "m", "weights": "random", "ffn": ffn}})
    (folder / "results.json").write_text(json.dumps({"E": values.tolist(), "layers": 10, "passes": 3}))
    return folder


def test_run_outputs_get_rate_fits_and_paired_ffn_comparisons(tmp_path):
    from empirical.audit.report import comparison_table, rate_table, run_rates
    from empirical.run import load_results

    fast = _fake_run(tmp_path / "ffn", [0.2, 0.21, 0.19, 0.2], True, 0)
    slow = _fake_run(tmp_path / "no-ffn", [0.1, 0.11, 0.09, 0.1], False, 1)
    items = run_rates([(name, *load_results(folder)) for name, folder in (("with", fast), ("without", slow))])
    assert items[0]["rate"]["rate"] == pytest.approx(0.2, abs=0.01)
    assert items[1]["rate"]["rate"] == pytest.approx(0.1, abs=0.01)
    rows = comparison_table([], items).rows
    assert len(rows) == 1 and rows[0][-1] == "FFN speeds"
    assert len(rate_table([], items).rows) == 2
    # and through the command line
    status = main(["audit", "--model", "tiny-gpt2", "--weights", "random", "--out", str(tmp_path / "audit"),
                   "--prompts", "2", "--length", "8", "--passes", "1", "--results", str(fast), str(slow)])
    assert status == 0
    audit = json.loads((tmp_path / "audit" / "audit.json").read_text())
    assert audit["results_rates"][0]["rate"]["rate"] == pytest.approx(0.2, abs=0.01)


def test_a_cached_audit_reads_back_equal_and_is_reused(tmp_path, monkeypatch):
    from empirical.audit import store as audit_module

    first = audit_module.cached_audit("tiny-gpt2", "random", AuditSettings(prompts=2, length=6, passes=1), tmp_path)
    def recompute(*args, **kwargs):
        raise LookupError("recomputed")

    monkeypatch.setattr(audit_module, "audit_model", recompute)
    again = audit_module.cached_audit("tiny-gpt2", "random", AuditSettings(prompts=2, length=6, passes=1), tmp_path)
    variant, reread = first["runs"]["random"]["variants"]["ffn"], again["runs"]["random"]["variants"]["ffn"]
    np.testing.assert_array_equal(variant["E"], reread["E"])
    assert reread["inside_residual"].dtype == bool
    assert again["hypotheses"] == first["hypotheses"]
    # other settings are not served from the cache
    with pytest.raises(LookupError, match="recomputed"):
        audit_module.cached_audit("tiny-gpt2", "random", AuditSettings(prompts=2, length=7, passes=1), tmp_path)


def _one_head_llama(identity_layers):
    """A 2-block Llama with one head of full width (d_head = d), so U_eta = W_O W_V can be the identity;
    the blocks in ``identity_layers`` get W_V = W_O = I."""
    from transformers import AutoModelForCausalLM, LlamaConfig

    config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=1, num_key_value_heads=1, max_position_embeddings=32)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        for index in identity_layers:
            attention = model.model.layers[index].self_attn
            attention.v_proj.weight.copy_(torch.eye(16))
            attention.o_proj.weight.copy_(torch.eye(16))
    return adapter_for(model)


@pytest.mark.parametrize("identity_layers,verdict", [((0, 1), "holds"), ((0,), "fails"), ((), "fails")],
                         ids=["every-block", "one-block-only", "none"])
def test_u_equals_identity_must_hold_in_every_block(identity_layers, verdict):
    adapter = _one_head_llama(identity_layers)
    ids = torch.tensor(authors_prompts(2, 8, adapter.vocab_size))
    rows = _rows(hypothesis_rows(audit_adapter(adapter, ids, passes=1), 8))
    assert rows["U_eta = I"]["verdict"] == verdict
