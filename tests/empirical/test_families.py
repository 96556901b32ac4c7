"""Every supported family end to end: a model saved with ``save_pretrained(DIR)`` runs with ``--model DIR``,
random and redrawn weights and the no-FFN ablation run, and bad input is refused before anything is
loaded or written."""

import json
import re

import numpy as np
import pytest
import torch

from empirical import adapter_for, authors_prompts, load_model, looped_consensus
from empirical.__main__ import main
from empirical.adapters import ADAPTERS
from empirical.models import TINY_MODELS, ModelNotAvailable
from empirical.run import RunSettings, load_results, run_experiment
from empirical.suite import Variant, run_variant

#: Small runs: 2 prompts of 12 tokens, 2 passes (a few hundredths of a second per family).
SMALL = dict(prompts=2, length=12, passes=2, device="cpu")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Every tiny family saved with ``save_pretrained``, as a user saves their model: name -> folder."""
    root = tmp_path_factory.mktemp("saved")
    folders = {}
    for name in TINY_MODELS:
        load_model(name, "random", seed=6).save_pretrained(root / name)
        folders[name] = root / name
    return folders


@pytest.mark.parametrize("name", TINY_MODELS)
def test_a_saved_model_runs_with_its_trained_weights(saved, name, tmp_path):
    results = run_experiment(RunSettings(model=str(saved[name]), weights="trained", **SMALL), tmp_path, progress=False)
    # the weights read back are the ones saved: the same E as the in-memory model looped directly
    adapter = adapter_for(load_model(name, "random", seed=6))
    ids = torch.tensor(authors_prompts(2, 12, adapter.vocab_size, exclude=adapter.zero_embedding_ids()))
    # E is computed in float32 and stored as JSON floats: equal to float32 round-off
    torch.testing.assert_close(torch.tensor(results["E"], dtype=torch.float64),
                               looped_consensus(adapter, ids, 2).double(), atol=1e-6, rtol=0)
    manifest, _ = load_results(tmp_path)
    assert manifest["model"]["architecture"] == adapter.architecture and manifest["status"] == "complete"


@pytest.mark.parametrize("name", TINY_MODELS)
def test_redrawn_weights_without_ffn_run_with_a_verified_draw_per_pass(name, tmp_path):
    results = run_experiment(RunSettings(model=name, weights="redrawn", ffn=False, seed=2, **SMALL), tmp_path,
                             progress=False)
    manifest, _ = load_results(tmp_path)
    assert [d["seed"] for d in manifest["draws"]] == [2, 3]
    assert np.isfinite(results["E"]).all() and len(results["E"][0]) == 2 * results["layers"] + 1


@pytest.mark.parametrize("name", ["tiny-gemma3", "tiny-qwen2", "tiny-gpt-neox", "tiny-opt"])
def test_the_command_line_runs_a_saved_model(saved, name, tmp_path, capsys):
    status = main(["run", "--model", str(saved[name]), "--weights", "trained", "--prompts", "2", "--length", "12",
                   "--passes", "2", "--device", "cpu", "--quiet", "--out", str(tmp_path)])
    assert status == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "results.json").read_text())["passes"] == 2


def test_the_suite_runs_a_variant_of_a_saved_model(saved, tmp_path):
    variant = Variant("mine", str(saved["tiny-gemma3"]), "trained", False, 2, 12, 2, "own model")
    manifest, results = run_variant(variant, tmp_path, device="cpu", progress=False)
    assert manifest["model"]["architecture"] == "gemma3_text" and results["passes"] == 2


def test_post_ln_opt_has_no_no_ffn_ablation(tmp_path):
    model = load_model("tiny-opt", "random")
    model.config.do_layer_norm_before = False
    adapter = adapter_for(model)
    inputs = adapter.block_inputs(4, torch.device("cpu"), torch.float32)
    with pytest.raises(ValueError, match="post-LN OPT .* no x \\+ attention\\(norm_1\\(x\\)\\)"):
        adapter.block(0, torch.zeros(1, 4, adapter.width), inputs, ffn=False)


# -- bad input: a clear error, and nothing loaded or written ------------------------------------------

def _unsupported_family(folder):
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model("bloom", vocab_size=97, hidden_size=32, n_layer=1, n_head=4)
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    return ["--model", str(folder), "--weights", "trained"]


def _config_only(folder):
    load_model("tiny-llama", "random").config.save_pretrained(folder)
    return ["--model", str(folder), "--weights", "trained"]


def _gguf(folder, architecture):
    import gguf

    folder.mkdir()
    path = folder / f"{architecture}.gguf"
    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return ["--model", str(path), "--weights", "trained"]


BAD_INPUT = [
    pytest.param(_unsupported_family,
                 "model type 'bloom' has no loop adapter; supported: " + ", ".join(sorted(ADAPTERS)),
                 id="unknown-family"),
    pytest.param(_config_only, "has none of the weight files model.safetensors", id="folder-without-weights"),
    pytest.param(lambda folder: ["--model", "tiny-gemma3", "--weights", "random", "--length", "65"],
                 "--length 65 is longer than the model's context of 64 tokens", id="context-shorter-than-length"),
    pytest.param(lambda folder: _gguf(folder, "rwkv7"),
                 "holds the architecture 'rwkv7', which transformers cannot dequantise; it reads GGUF files "
                 "of: bloom, .*gemma3, .*llama, .*qwen3", id="gguf-architecture-transformers-cannot-read"),
    pytest.param(lambda folder: _gguf(folder, "mamba"), "model type 'mamba' has no loop adapter; supported: ",
                 id="gguf-family-without-adapter"),
]


@pytest.mark.parametrize("make,message", BAD_INPUT)
def test_bad_input_is_refused_before_loading_or_writing(make, message, tmp_path, capsys, monkeypatch):
    import empirical.run

    arguments = make(tmp_path / "model")
    loaded = []
    original = empirical.run.load_model
    monkeypatch.setattr(empirical.run, "load_model", lambda *a, **k: loaded.append(a) or original(*a, **k))
    out = tmp_path / "out"
    length = [] if "--length" in arguments else ["--length", "12"]
    status = main(["run", *arguments, *length, "--prompts", "2", "--quiet", "--out", str(out)])
    assert status == 2
    error = capsys.readouterr().err
    assert re.search(message, error), error
    assert not out.exists()
    # every one stops before any weights are read (the folder without weights at the check of its files)
    assert loaded == []


def test_bad_input_loses_nothing_in_an_existing_run(tmp_path, capsys):
    run_experiment(RunSettings(model="tiny-llama", weights="random", **SMALL), tmp_path, progress=False)
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    status = main(["run", "--model", "tiny-llama", "--weights", "random", "--length", "65", "--quiet",
                   "--out", str(tmp_path)])
    assert status == 2 and "longer than the model's context" in capsys.readouterr().err
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


def test_config_only_folder_is_refused_by_the_python_api(tmp_path):
    _config_only(tmp_path / "model")
    with pytest.raises(ModelNotAvailable, match="holds no loadable weights"):
        load_model(str(tmp_path / "model"), "trained")


def test_bidirectional_configuration_is_refused():
    model = load_model("tiny-gemma3", "random")
    model.config.use_bidirectional_attention = True
    with pytest.raises(ValueError, match="bidirectional attention .* the loop needs a causal LM"):
        adapter_for(model)


@pytest.mark.parametrize("name", ["tiny-phi3", "tiny-olmo2"])
def test_prompts_skip_the_zero_embedding_padding_rows(name):
    """Phi-3 and OLMo-2 draws keep their padding row zero (untied embeddings; in tied OPT and Gemma 3 the
    output layer's draw fills it)."""
    adapter = adapter_for(load_model(name, "random"))
    padding = adapter.model.get_input_embeddings().padding_idx
    assert adapter.zero_embedding_ids() == [padding]
    ids = authors_prompts(8, 40, adapter.vocab_size, exclude=[padding])
    assert padding in {token for prompt in authors_prompts(8, 40, adapter.vocab_size) for token in prompt}
    assert padding not in {token for prompt in ids for token in prompt}


def test_control_a_zero_embedding_token_is_refused_with_its_id():
    """Negative control: a prompt holding the padding id (zero embedding) gets a clear error, not NaN E."""
    from empirical.loop import embed

    adapter = adapter_for(load_model("tiny-phi3", "random"))
    padding = adapter.model.get_input_embeddings().padding_idx
    with pytest.raises(ValueError, match=f"token ids \\[{padding}\\] embed to the zero vector"):
        embed(adapter, torch.tensor([[5, padding, 7]]))
