"""The floor of E (empirical/floor.py): measured per run and dtype, recorded in the manifest, where a collapsing
model's low-precision run stalls, and never fitted below."""

import json
import math

import numpy as np
import pytest
import torch

from empirical import adapter_for, authors_prompts, embed
from empirical.audit.store import rates_from_results
from empirical.floor import PROBE_PROMPTS, consensus_probe, evaluation_floor, measure_floor
from empirical.run import RunSettings, load_results, resolve_dtype, run_experiment

from .tiny_trained import tiny_model


def test_the_evaluation_floor_is_sqrt_width_round_offs_of_the_evaluation_dtype():
    assert evaluation_floor(1600, torch.float32) == pytest.approx(40 * 2.0**-24)
    assert evaluation_floor(1600, torch.bfloat16) == evaluation_floor(1600, torch.float32)  # E is computed in float32
    assert evaluation_floor(64, torch.float64) == pytest.approx(8 * 2.0**-53)
    with pytest.raises(ValueError, match="width=0 must be a positive"):
        evaluation_floor(0, torch.float32)


def test_the_probe_is_a_consensus_one_round_off_wide():
    x = torch.randn(6, 20, 32, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
    probe = consensus_probe(x)
    assert probe.shape == (PROBE_PROMPTS, 20, 32) and probe.dtype == torch.bfloat16
    torch.testing.assert_close(probe[:, 0], x[:PROBE_PROMPTS, 0], atol=0, rtol=0)
    assert not torch.equal(probe[:, 1], probe[:, 2])  # the copies round apart
    unit = torch.finfo(torch.bfloat16).eps / 2
    spread = (probe[:, 1:].double() - probe[:, :1].double()).norm(dim=-1) / probe[:, :1].double().norm(dim=-1)
    assert 0.3 * unit < float(spread.mean()) < 3 * unit
    torch.testing.assert_close(consensus_probe(x), probe, atol=0, rtol=0)  # seeded


def test_a_bfloat16_run_stalls_at_its_measured_floor_and_float32_goes_below_it(tmp_path):
    """The tiny collapsing GPT-Neo (W_V = I, W_O = 4 I): bfloat16 stalls at 1.14 times its floor (GPT-2: 0.96);
    float32 falls below its own floor (its E ends at rounding, 0 or -3e-8)."""
    tiny_model("gpt-neo").save_pretrained(tmp_path / "model")
    ends = {}
    for dtype in ("float32", "bfloat16"):
        settings = RunSettings(model=str(tmp_path / "model"), weights="trained", ffn=False, device="cpu", dtype=dtype,
                               prompts=8, length=16, passes=12)
        run_experiment(settings, tmp_path / dtype, progress=False)
        manifest, results = load_results(tmp_path / dtype)
        ends[dtype] = (results["E_pass_end"][-1], manifest["floor"]["E_floor"])
        assert manifest["floor"]["dtype"] == dtype and manifest["seeds"]["floor_probe"] == 0
    final, floor = ends["bfloat16"]
    assert floor / 2 < final < 2 * floor, ends
    final, floor = ends["float32"]
    assert final < floor < ends["bfloat16"][1] / 10, ends


def _probe(model):
    adapter = adapter_for(model.to(torch.bfloat16))
    ids = torch.tensor(authors_prompts(4, 16, adapter.vocab_size, 42, adapter.zero_embedding_ids()))
    x, _ = embed(adapter, ids)
    return measure_floor(adapter, x, adapter.block_inputs(16, x.device, x.dtype), ffn=False)


def test_the_floor_is_measured_on_the_run_s_own_blocks():
    """A control: blocks that push every token away from the mean of the tokens before it (W_O = -4 I) blow the
    probe's one round-off up to a floor of 7.6e-3; identity blocks keep it at the probe's own 8.5e-6 (bfloat16)."""
    quiet, loud = _probe(tiny_model("gpt2", "still")), _probe(tiny_model("gpt2", value_gain=-4.0))
    unit = torch.finfo(torch.bfloat16).eps / 2
    assert 0.3 * unit**2 < quiet["E_floor"] < 3 * unit**2
    assert loud["E_floor"] > 100 * quiet["E_floor"]


def test_the_cuda_default_dtype_is_float32_and_lower_precisions_stay_explicit():
    assert resolve_dtype("auto", torch.device("cuda")) == torch.float32
    assert resolve_dtype("auto", torch.device("cpu")) == torch.float32
    assert resolve_dtype("bfloat16", torch.device("cuda")) == torch.bfloat16


def _fake_run(folder, E, floor):
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps({"E": E.tolist(), "layers": 1, "passes": E.shape[1] - 1}))
    (folder / "manifest.json").write_text(json.dumps({"floor": {"E_floor": floor}, "settings": {}}))


def test_a_rate_fit_of_a_run_ignores_the_values_below_its_floor(tmp_path):
    """E decays at 0.3 per block down to a bfloat16-like floor of 1e-4, then sits at rounding just below it: the fit
    of the run reads the manifest's floor and recovers 0.3; fitted as if the floor were float32's, the stall bends
    the rate down (the control)."""
    k = np.arange(60)
    E = np.stack([a * np.exp(-0.3 * k) for a in (0.5, 0.7, 0.9)])
    E = np.where(E > 1e-4, E, 8e-5)
    _fake_run(tmp_path / "bf16", E, 1e-4)
    assert rates_from_results(tmp_path / "bf16")["rate"]["rate"] == pytest.approx(0.3, rel=1e-9)
    _fake_run(tmp_path / "ignored", E, 1e-6)
    assert rates_from_results(tmp_path / "ignored")["rate"]["rate"] < 0.2
    assert math.isclose(rates_from_results(tmp_path / "bf16")["rate"]["floor"], 1e-4)
