"""``python -m empirical run``: results, manifest, checkpoints, resume, reproducibility, bad input."""

import json
import shutil

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


def test_a_run_flushes_to_the_disk_a_fixed_number_of_times_whatever_its_passes(tmp_path, monkeypatch):
    """The per-pass checkpoint and manifest are renamed into place unflushed (an fsync of a GPU run's checkpoint
    after every pass cost more than the pass); the files a finished run leaves are flushed."""
    import os

    from reports import files

    flushed, fsync = [], os.fsync
    monkeypatch.setattr(files.os, "fsync", lambda descriptor: flushed.append(descriptor) or fsync(descriptor))
    counts = []
    for passes in (1, 4):
        flushed.clear()
        run_experiment(RunSettings(weights="random", passes=passes, **TINY), tmp_path / str(passes), progress=False)
        counts.append(len(flushed))
    assert counts[0] == counts[1] > 0
    assert (tmp_path / "4" / "checkpoint.pt").exists()


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
    pytest.param(["--model", "gpt2-xl", "--weights", "trained"], "hf download gpt2-xl", id="missing-weights"),
    pytest.param(["--model", "tiny-gpt2", "--weights", "random", "--device", "cuda"], "CUDA is not available",
                 id="cuda-without-cuda"),
    pytest.param(["--model", "tiny-gpt2", "--weights", "random", "--length", "65"], "longer than the model's context",
                 id="prompt-too-long"),
    pytest.param(["--model", "tiny-gpt2", "--weights", "random", "--passes", "0"], "--passes 0 must be a positive",
                 id="zero-passes"),
    pytest.param(["--model", "tiny-gpt2", "--weights", "trained", "--length", "16"], "without trained weights",
                 id="tiny-trained"),
    pytest.param(["--model", "tiny-gpt2", "--weights", "random", "--threshold", "0"], "threshold=0.0 must lie in (0, 10)",
                 id="zero-threshold"),
    pytest.param(["--model", "tiny-gpt2", "--weights", "random", "--window", "0", "--until-decided"],
                 "window=0.0 must be a positive number of octaves", id="zero-window"),
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


# -- damaged run folders: refused with a message naming the file, never silently reused --------------------------
GOOD = RunSettings(weights="random", passes=2, **TINY)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A finished 2-pass run folder (manifest, results, checkpoint), copied by each test before it damages it."""
    folder = tmp_path_factory.mktemp("finished") / "run"
    run_experiment(GOOD, folder, progress=False)
    return folder


def _checkpoint(folder, **changes):
    """Rewrite ``folder``'s checkpoint with ``changes`` (None deletes a key)."""
    state = torch.load(folder / "checkpoint.pt", weights_only=True)
    state.update(changes)
    torch.save({k: v for k, v in state.items() if v is not None}, folder / "checkpoint.pt")


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _replace_by_folder(path):
    path.unlink()
    path.mkdir()


DAMAGED = [
    pytest.param(lambda f: _truncate(f / "manifest.json"), r"manifest.json cannot be read as JSON",
                 id="manifest-truncated"),
    pytest.param(lambda f: (f / "manifest.json").write_text("[]"), r"manifest.json must be a JSON object with "
                 "'settings_identity'", id="manifest-not-a-run"),
    pytest.param(lambda f: _replace_by_folder(f / "manifest.json"), r"manifest.json cannot be read as JSON "
                 r"\(\[Errno 21\] Is a directory", id="manifest-unreadable"),
    pytest.param(lambda f: _truncate(f / "checkpoint.pt"), "checkpoint.pt cannot resume this run: it is not a readable "
                 "checkpoint", id="checkpoint-truncated"),
    pytest.param(lambda f: (f / "checkpoint.pt").write_text('{"passes": 2}'), "it is not a readable checkpoint",
                 id="checkpoint-not-torch"),
    pytest.param(lambda f: _checkpoint(f, E=None), "it must hold 'passes', 'hidden' and 'E'", id="checkpoint-no-E"),
    pytest.param(lambda f: _checkpoint(f, settings_identity={**GOOD.identity(), "seed": 9}),
                 r"written by a run with other settings \(.*'seed': 9", id="checkpoint-other-settings"),
    pytest.param(lambda f: _checkpoint(f, passes=0), "passes=0 must be a positive integer",
                 id="checkpoint-zero-passes"),
    pytest.param(lambda f: _checkpoint(f, passes=3), r"its E must have shape \(3, 10\)", id="checkpoint-passes-vs-E"),
    pytest.param(lambda f: _checkpoint(f, hidden=torch.zeros(3, 8, 4)), r"hidden state must have shape \(3, 16, ",
                 id="checkpoint-hidden-shape"),
    pytest.param(lambda f: _checkpoint(f, E=torch.zeros(2, 7)), r"its E must have shape \(3, 7\)",
                 id="checkpoint-E-shape"),
    pytest.param(lambda f: _checkpoint(f, E=torch.full((3, 7), float("nan"))), "it holds non-finite values",
                 id="checkpoint-non-finite"),
]


@pytest.mark.parametrize("damage, message", DAMAGED)
def test_damaged_run_folder_is_refused_with_a_clear_error(finished_run, tmp_path, damage, message):
    folder = tmp_path / "run"
    shutil.copytree(finished_run, folder)
    damage(folder)
    with pytest.raises(ValueError, match=message):
        run_experiment(RunSettings(weights="random", passes=3, **TINY), folder, progress=False)


@pytest.mark.parametrize("damage, message", [
    pytest.param(lambda f: _truncate(f / "results.json"), "results.json cannot be read as JSON",
                 id="results-truncated"),
    pytest.param(lambda f: (f / "results.json").unlink(), r"results.json cannot be read as JSON \(\[Errno 2\]",
                 id="results-missing"),
    pytest.param(lambda f: (f / "results.json").write_text('{"passes": 2}'), "results.json must be a JSON object with "
                 "'E'", id="results-without-E"),
    pytest.param(lambda f: _truncate(f / "manifest.json"), "manifest.json cannot be read as JSON", id="manifest"),
])
def test_damaged_results_are_refused_when_read(finished_run, tmp_path, damage, message):
    folder = tmp_path / "run"
    shutil.copytree(finished_run, folder)
    damage(folder)
    with pytest.raises(ValueError, match=message):
        load_results(folder)


def test_damaged_checkpoint_is_an_error_of_the_command(finished_run, tmp_path, capsys):
    folder = tmp_path / "run"
    shutil.copytree(finished_run, folder)
    _truncate(folder / "checkpoint.pt")
    status = main(["run", "--model", "tiny-llama", "--weights", "random", "--prompts", "3", "--length", "16",
                   "--passes", "3", "--device", "cpu", "--quiet", "--out", str(folder)])
    assert status == 2
    assert "Delete it to restart the run from pass 0" in capsys.readouterr().err


def test_checkpoint_without_its_settings_record_resumes_when_its_shapes_fit(finished_run, tmp_path):
    # Checkpoints written before the settings were recorded in them: the manifest's settings and the shapes decide.
    folder = tmp_path / "run"
    shutil.copytree(finished_run, folder)
    _checkpoint(folder, settings_identity=None)
    grown = run_experiment(RunSettings(weights="random", passes=3, **TINY), folder, progress=False)
    whole = run_experiment(RunSettings(weights="random", passes=3, **TINY), tmp_path / "whole", progress=False)
    assert grown["E"] == whole["E"]


def test_a_run_in_another_dtype_is_not_resumed_in_this_one(tmp_path, capsys):
    """A folder of a run made when --dtype auto meant bfloat16 on CUDA must not go on in float32."""
    run_experiment(RunSettings(weights="random", passes=1, **TINY), tmp_path, progress=False)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    (tmp_path / "manifest.json").write_text(json.dumps({**manifest, "dtype": "bfloat16"}))
    status = main(["run", "--model", "tiny-llama", "--weights", "random", "--prompts", "3", "--length", "16",
                   "--passes", "2", "--device", "cpu", "--quiet", "--out", str(tmp_path)])
    assert status == 2 and "holds a run in bfloat16" in capsys.readouterr().err
