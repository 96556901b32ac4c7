"""The benchmark's four variants compute the same thing, and the command writes its JSON and section."""

import json

import pytest
import torch

from empirical import adapter_for, load_model, misalignment
from empirical.__main__ import main
from empirical.bench import _run_variant, authors_E, peak_tensor_bytes_cpu, repeated_blocks
from empirical.loop import embed


def test_authors_per_prompt_E_equals_ours():
    x = torch.randn(4, 9, 16, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(authors_E(x), misalignment(x), atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gemma3"])
def test_plain_forward_over_repeated_blocks_runs_every_block_and_restores_the_model(name):
    model = load_model(name, "random", seed=0)
    adapter = adapter_for(model)
    layers = adapter.num_layers
    layer_types = getattr(model.config, "layer_types", None)
    ids = torch.randint(0, 97, (2, 10), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        single = model.model(input_ids=ids).last_hidden_state
        with repeated_blocks(adapter, 3) as base:
            # as the benchmark calls it: without a cache (the repeated blocks share their layer indices)
            hidden = base(input_ids=ids, output_hidden_states=True, use_cache=False).hidden_states
            if layer_types is not None:  # Gemma 3: each repeated block keeps its own attention kind
                assert model.config.layer_types == list(layer_types) * 3
        assert len(hidden) == 3 * layers + 1
        assert adapter.num_layers == layers and getattr(model.config, "layer_types", None) == layer_types
        torch.testing.assert_close(model.model(input_ids=ids).last_hidden_state, single, atol=0, rtol=0)


def test_peak_tensor_memory_counts_what_is_alive_at_once():
    megabytes = 2**20

    def one_at_a_time():
        for _ in range(3):
            torch.ones(2 * megabytes // 4)  # 2 MiB of float32, freed at once

    def three_alive():
        kept = [torch.ones(2 * megabytes // 4) for _ in range(3)]
        return sum(float(k[0]) for k in kept)

    alone, together = peak_tensor_bytes_cpu(one_at_a_time), peak_tensor_bytes_cpu(three_alive)
    assert 2 * megabytes <= alone < 2.1 * megabytes  # a few bytes of scalars beside the tensor
    assert 6 * megabytes <= together < 6.1 * megabytes


def test_bench_command_writes_json_and_section(tmp_path):
    folder = tmp_path / "model"
    load_model("tiny-gpt2", "random", seed=0).save_pretrained(folder)
    status = main(["bench", "--model", str(folder), "--prompts", "2", "--length", "8", "--passes", "2",
                   "--rounds", "2", "--device", "cpu", "--out", str(tmp_path / "b.json"),
                   "--section", str(tmp_path / "s.json")])
    assert status == 0
    result = json.loads((tmp_path / "b.json").read_text())
    assert set(result["variants"]) == {"measured", "bare", "plain", "authors"}
    assert all(0 < v["seconds_best"] <= v["seconds_median"] and len(v["seconds_all"]) == 2
               for v in result["variants"].values())
    assert all(v["peak_tensor_bytes"] > 0 for v in result["variants"].values())
    isolated = result["isolated_E_seconds"]
    assert result["ratios"]["isolated_measured_over_bare_time"] == pytest.approx(
        1 + isolated["ours"] / isolated["bare_block"])
    assert isolated["bare_block"] == pytest.approx(result["variants"]["bare"]["seconds_best"] / (2 * 3))  # 2 passes x 3 blocks
    section = json.loads((tmp_path / "s.json").read_text())
    assert section["title"].startswith("Benchmark") and len(section["tables"][0]["rows"]) == 4
    assert len(section["tables"][1]["rows"]) == 4 and len(section["tables"][1]["columns"]) == 5


def test_measuring_E_after_every_block_keeps_no_hidden_states():
    """The loop with E measured peaks where the bare loop does (plus the E values); a loop that kept every
    block's hidden state (the control) peaks visibly higher, so the measurement would catch it."""
    adapter = adapter_for(load_model("tiny-gpt2", "random", seed=0))
    ids = torch.randint(0, 97, (4, 32), generator=torch.Generator().manual_seed(1))
    passes = 3
    bare = peak_tensor_bytes_cpu(lambda: _run_variant("bare", adapter, ids, passes))
    measured = peak_tensor_bytes_cpu(lambda: _run_variant("measured", adapter, ids, passes))
    e_values = passes * adapter.num_layers * ids.shape[0] * 4  # float32 E per prompt and block
    assert bare <= measured <= bare + e_values + 1024  # slack: a few scalar tensors

    def keeping_hidden_states():
        with torch.inference_mode():
            x, _ = embed(adapter, ids)
            inputs = adapter.block_inputs(ids.shape[1], x.device, x.dtype)
            kept = []
            for _ in range(passes):
                for index in range(adapter.num_layers):
                    x = adapter.block(index, x, inputs)
                    kept.append(x)
                    misalignment(x)
                x = adapter.final_norm(x)

    hidden_state_bytes = ids.numel() * adapter.width * 4
    kept_all = peak_tensor_bytes_cpu(keeping_hidden_states)
    # 9 kept states; the loop's own peak already holds ~3 at once (pass input, block input and output)
    assert kept_all >= measured + (passes * adapter.num_layers - 4) * hidden_state_bytes
