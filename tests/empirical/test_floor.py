"""The floor of E (empirical/floor.py): measured per run and dtype, recorded in the manifest, where a collapsing
model's low-precision run stalls, and never fitted below."""

import json
import math
import re
import time

import numpy as np
import pytest
import torch

from empirical import adapter_for, authors_prompts, embed
from empirical.audit.store import rates_from_results
from empirical.eq9 import misalignment
from empirical.floor import PROBE_PROMPTS, consensus_probe, evaluation_floor, measure_floor
from empirical.loop import NonFiniteActivations, run_pass
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
    """A run folder with these values of E and this floor, its manifest signed as a run signs it."""
    from empirical.run import write_manifest

    folder.mkdir()
    (folder / "results.json").write_text(json.dumps({"E": E.tolist(), "layers": 1, "passes": E.shape[1] - 1}))
    write_manifest(folder, {"floor": {"E_floor": floor}, "settings": {}})


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


def test_one_wide_tokens_have_one_round_off_as_evaluation_floor():
    """width = 1 is the smallest width allowed (the error is raised below it only)."""
    assert evaluation_floor(1, torch.float32) == 2.0**-24


def test_each_prompt_is_displaced_by_its_own_draw_relative_to_its_own_first_token():
    """Prompts whose first tokens differ 1000-fold in norm are each displaced by about one round-off of their own
    norm, and the prompts' displacements are different draws: prompt 2 is prompt 0 times 4 (exact in bfloat16), so
    one draw scaled per prompt would round to the same pattern and point the same way."""
    x = torch.randn(4, 20, 32, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    x[2] = 4 * x[0]
    x = (x * torch.tensor([1.0, 1e3, 1.0, 1e-3], dtype=torch.float64)[:, None, None]).to(torch.bfloat16)
    probe = consensus_probe(x).double()
    unit = torch.finfo(torch.bfloat16).eps / 2
    displacement = probe[:, 1:] - probe[:, :1]
    spread = displacement.norm(dim=-1).mean(dim=-1) / probe[:, 0].norm(dim=-1)
    assert all(0.3 * unit < float(s) < 3 * unit for s in spread), spread
    directions = displacement / displacement.norm(dim=(-2, -1), keepdim=True)
    assert float((directions[0] - directions[2]).norm()) > 0.5  # independent draws: about sqrt(2) apart


def test_the_probe_is_reproducible_from_its_recorded_seed():
    """The manifest records the seed (``probe_seed``): token 1 of each probed prompt plus u |token 1| / sqrt(width)
    times float64 standard normals of ``torch.Generator().manual_seed(seed)`` drawn on the CPU, in the order
    [prompt, token, width] (token 1's draws unused), rounded to the run's dtype. float64 here, so the rounding adds
    nothing; the control: another seed gives another probe."""
    x = torch.randn(6, 5, 8, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    noise = torch.randn(PROBE_PROMPTS, 5, 8, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    noise[:, 0] = 0.0
    first = x[:PROBE_PROMPTS, :1]
    unit = 2.0**-53
    expected = first + unit * first.norm(dim=-1, keepdim=True) / math.sqrt(8) * noise
    torch.testing.assert_close(consensus_probe(x, seed=7), expected, atol=0, rtol=0)
    assert not torch.equal(consensus_probe(x, seed=8), expected)


class Blocks:
    """A stand-in for a LoopAdapter (all ``measure_floor`` and ``run_pass`` use of one): ``num_layers`` blocks, each
    pushing every token away from the first one by ``push`` times its offset (``2 push`` with the FFN), then
    negating the tokens after the first when ``flip`` (E near 2 in the signed metric, near 0 in the absolute one);
    the block ``overflow_at`` returns infinities. The final norm is the identity."""

    def __init__(self, num_layers=3, push=1e3, flip=False, overflow_at=None):
        self.num_layers, self.push, self.flip, self.overflow_at = num_layers, push, flip, overflow_at

    def block(self, index, x, inputs, ffn):
        if index == self.overflow_at:
            return torch.full_like(x, math.inf)
        y = x + (2 if ffn else 1) * self.push * (x - x[:, :1])
        if self.flip:
            y[:, 1:] = -y[:, 1:]
        return y

    def final_norm(self, x):
        return x


def _run_x(dtype=torch.float64):
    """6 prompts of 5 tokens 8 wide: the three sizes differ, and the probe keeps 4 of the prompts."""
    return torch.randn(6, 5, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64).to(dtype)


def test_the_floor_record_holds_each_part_and_how_it_was_measured():
    """The whole record of a float64 run: the probe's largest E (at the start or after a block of one pass), its E
    per block, the prompts probed, the seed, the evaluation floor sqrt(8) x 2^-53 of float64 and the larger of the
    two; ``seconds`` within the call's own time. The blocks push the probe to E ~ 1e-15, above the evaluation
    floor (3e-16): the probe decides."""
    x, blocks = _run_x(), Blocks()
    started = time.perf_counter()
    record = measure_floor(blocks, x, None, ffn=False)
    elapsed = time.perf_counter() - started
    probe = consensus_probe(x)
    per_block = run_pass(blocks, probe, None, ffn=False).E.max(dim=1).values.tolist()
    probe_max = max(float(misalignment(probe).max()), *per_block)
    evaluation = math.sqrt(8) * 2.0**-53
    assert probe_max > evaluation
    assert 0 <= record.pop("seconds") <= elapsed
    assert record == {
        "E_floor": probe_max, "dtype": "float64", "probe_E_max": probe_max, "probe_E_per_block": per_block,
        "probe_prompts": PROBE_PROMPTS, "probe_seed": 0, "evaluation_floor": evaluation, "evaluation_dtype": "float64",
        "method": "max(probe: the largest E, over the probed prompts, at the start and after each block of one pass "
                  "from a consensus displaced by one unit round-off (each prompt's first token repeated), sqrt(width) "
                  "x unit round-off of E's evaluation dtype)"}
    assert measure_floor(blocks, x.float(), None, ffn=False)["dtype"] == "float32"


@pytest.mark.parametrize("ffn, metric", [(True, "signed"), (False, "signed"), (False, "absolute"),
                                         (True, "absolute")])
def test_the_probe_is_looped_with_the_runs_ffn_and_metric(ffn, metric):
    """The blocks push twice as hard with the FFN and flip the tokens' signs: the FFN and the metric each change
    the probe's E per block (the control), and the record holds the one of the run's setting."""
    x, blocks = _run_x(), Blocks(push=10.0, flip=True)
    per_block = {(f, m): run_pass(blocks, consensus_probe(x), None, ffn=f, metric=m).E.max(dim=1).values.tolist()
                 for f in (True, False) for m in ("signed", "absolute")}
    assert len({tuple(values) for values in per_block.values()}) == 4
    assert measure_floor(blocks, x, None, ffn=ffn, metric=metric)["probe_E_per_block"] == per_block[ffn, metric]


def test_a_probe_that_overflows_names_the_dtype_the_pass_and_the_block():
    with pytest.raises(NonFiniteActivations, match=re.escape(
            "measuring the E floor of torch.float64 (a consensus state looped once): non-finite activations in pass "
            "1 (block 2, measurement 2, prompt 0)")):
        measure_floor(Blocks(overflow_at=1), _run_x(), None, ffn=False)


class _OnAnotherDevice:
    """Embeddings that say they live on the meta device but hand out CPU rows: the probe must be made on x's device,
    whatever it is (on a CPU-only machine a dropped ``device=`` would otherwise pass unseen)."""

    def __init__(self, x):
        self.x, self.shape, self.dtype, self.device = x, x.shape, x.dtype, torch.device("meta")

    def __getitem__(self, index):
        return self.x[index]


def test_the_probe_is_made_on_the_embeddings_device():
    x = torch.randn(2, 4, 8)
    probe = consensus_probe(_OnAnotherDevice(x))
    assert probe.device.type == "meta" and probe.dtype == x.dtype and probe.shape == (2, 4, 8)
    assert consensus_probe(x).device.type == "cpu"  # control: CPU embeddings, a CPU probe
