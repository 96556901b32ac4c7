"""``python -m empirical run``: results, manifest, checkpoints, resume, reproducibility, bad input."""

import json

import pytest
import torch

from empirical.__main__ import main
from empirical.loop import NonFiniteActivations
from empirical.run import RunSettings, load_results, run_experiment

TINY = dict(model="tiny-llama", prompts=3, length=16, device="cpu")


class Interrupted(Exception):
    pass


def _interrupt_after(k):
    def hook(done):
        if done == k:
            raise Interrupted

    return hook


@pytest.mark.parametrize("weights", ["random", "redrawn"])
def test_interrupted_run_resumes_to_the_same_numbers(tmp_path, weights):
    settings = RunSettings(weights=weights, passes=3, **TINY)
    reference = run_experiment(settings, tmp_path / "whole", progress=False)
    with pytest.raises(Interrupted):
        run_experiment(settings, tmp_path / "cut", progress=False, after_pass=_interrupt_after(2))
    manifest, partial = load_results(tmp_path / "cut")
    assert manifest["status"] == "running" and partial["passes"] == 2
    resumed = run_experiment(settings, tmp_path / "cut", progress=False)
    assert resumed["E"] == reference["E"]
    manifest, _ = load_results(tmp_path / "cut")
    assert manifest["status"] == "complete" and manifest["passes_done"] == 3


def test_results_have_one_value_per_block_and_pass_plus_the_embeddings(tmp_path):
    settings = RunSettings(weights="random", passes=2, **TINY)
    results = run_experiment(settings, tmp_path, progress=False)
    assert results["layers"] == 3 and results["passes"] == 2
    assert len(results["E"]) == 3 and all(len(row) == 2 * 3 + 1 for row in results["E"])
    torch.testing.assert_close(torch.tensor(results["E_mean"]), torch.tensor(results["E"]).mean(0))


def test_redrawn_run_records_a_verified_draw_per_pass(tmp_path):
    run_experiment(RunSettings(weights="redrawn", passes=3, seed=11, **TINY), tmp_path, progress=False)
    manifest, _ = load_results(tmp_path)
    assert [d["seed"] for d in manifest["draws"]] == [11, 12, 13]
    assert [d["checked_against_previous"] for d in manifest["draws"]] == [False, True, True]


def test_same_seed_gives_identical_numbers_on_cpu(tmp_path):
    settings = RunSettings(weights="random", passes=2, seed=3, **TINY)
    assert run_experiment(settings, tmp_path / "a", progress=False)["E"] == \
        run_experiment(settings, tmp_path / "b", progress=False)["E"]


def test_extending_passes_continues_a_finished_run(tmp_path):
    run_experiment(RunSettings(weights="random", passes=1, **TINY), tmp_path / "grow", progress=False)
    grown = run_experiment(RunSettings(weights="random", passes=2, **TINY), tmp_path / "grow", progress=False)
    whole = run_experiment(RunSettings(weights="random", passes=2, **TINY), tmp_path / "whole", progress=False)
    assert grown["E"] == whole["E"]


def test_other_settings_in_the_same_folder_are_refused(tmp_path):
    run_experiment(RunSettings(weights="random", passes=1, **TINY), tmp_path, progress=False)
    with pytest.raises(ValueError, match="other settings"):
        run_experiment(RunSettings(weights="random", passes=1, seed=9, **TINY), tmp_path, progress=False)


def test_non_finite_activations_stop_the_run(tmp_path, monkeypatch):
    from empirical import adapters

    original = adapters.DecoderLayerAdapter.final_norm
    monkeypatch.setattr(adapters.DecoderLayerAdapter, "final_norm", lambda self, x: original(self, x) * float("inf"))
    with pytest.raises(NonFiniteActivations, match="non-finite activations in pass 2"):
        run_experiment(RunSettings(weights="random", passes=3, **TINY), tmp_path, progress=False)
    manifest, results = load_results(tmp_path)
    assert manifest["status"].startswith("stopped") and results["passes"] == 1


BAD_INPUT = [
    pytest.param(["--model", "no-such-model", "--weights", "random"], "unknown model 'no-such-model'", id="unknown-model"),
    pytest.param(["--model", "gpt2-xl", "--weights", "trained"], "huggingface-cli download gpt2-xl", id="missing-weights"),
    pytest.param(["--model", "tiny-gpt2", "--weights", "random", "--device", "cuda"], "CUDA is not available",
                 id="cuda-without-cuda"),
    pytest.param(["--model", "tiny-gpt2", "--weights", "random", "--length", "65"], "longer than the model's context",
                 id="prompt-too-long"),
    pytest.param(["--model", "tiny-gpt2", "--weights", "random", "--passes", "0"], "--passes 0 must be a positive",
                 id="zero-passes"),
    pytest.param(["--model", "tiny-gpt2", "--weights", "trained", "--length", "16"], "without trained weights",
                 id="tiny-trained"),
]


@pytest.mark.parametrize("arguments,message", BAD_INPUT)
def test_bad_input_gets_a_clear_error(tmp_path, capsys, arguments, message):
    if "cuda" in arguments and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    status = main(["run", *arguments, "--prompts", "2", "--quiet", "--out", str(tmp_path)])
    assert status == 2
    assert message in capsys.readouterr().err


def test_prompts_command_prints_the_ids(capsys):
    assert main(["prompts", "--n", "2", "--length", "3", "--vocab-size", "50257"]) == 0
    ids = json.loads(capsys.readouterr().out)
    assert ids[0] == [41905, 7296, 1639] and len(ids) == 2
