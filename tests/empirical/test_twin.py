"""``empirical run --twin float64``: a float64 twin of some prompts, its divergence and the effective floor.

SPEC section 5: the effective floor is the larger of the measured floor and the largest |E_dtype - E_float64| along
the run. Each test has a control that makes it fail: a twin that is not float64, a twin that does not follow the
redraws, a checkpoint whose twin state is not the one reached, a run whose float32 arithmetic is perturbed.
"""

import gc
import json
import weakref

import pytest
import torch

from foundation.files import sha256

from empirical import run as run_module
from empirical.__main__ import main
from empirical.models import load_model
from empirical.run import RunSettings, load_results, run_experiment, write_manifest

TINY = dict(model="tiny-llama", prompts=3, length=16, device="cpu")


class Interrupted(Exception):
    pass


def _twin_run(tmp_path, name="run", **options):
    settings = RunSettings(**{**TINY, "weights": "random", "passes": 3, "twin": "float64", **options})
    results = run_experiment(settings, tmp_path / name, progress=False)
    manifest, _ = load_results(tmp_path / name)
    return settings, manifest, results


def test_the_twin_records_the_divergence_per_block_and_the_effective_floor(tmp_path):
    settings, manifest, results = _twin_run(tmp_path)
    layers, twin, floor = results["layers"], results["twin"], manifest["floor"]
    columns = 3 * layers + 1
    assert twin["prompts"] == 2 and twin["prompt_indices"] == [0, 1] and twin["dtype"] == "float64"
    assert len(twin["divergence"]) == columns and len(twin["E"]) == 2 and len(twin["E"][0]) == columns
    E, E64 = torch.tensor(results["E"], dtype=torch.float64)[:2], torch.tensor(twin["E"], dtype=torch.float64)
    torch.testing.assert_close(torch.tensor(twin["divergence"], dtype=torch.float64), (E - E64).abs().max(0).values,
                               atol=0, rtol=0)
    # float32 against float64: they differ, by about float32's rounding
    assert 0 < twin["divergence_max"] < 1e-5
    assert floor["twin_divergence_per_block"] == twin["divergence"] and floor["twin_prompts"] == 2
    assert floor["effective_floor"] == results["effective_floor"] == max(floor["E_floor"], twin["divergence_max"])
    assert manifest["settings_identity"]["twin"] == "float64" and manifest["timings"]["twin_s"] > 0


def test_the_twin_is_the_float64_computation_of_the_same_weights(tmp_path):
    """The twin's E equals a float64 run of the same weights (saved in float32, loaded in float64) to float64
    rounding; the control: a twin left in float32 is the run itself (divergence exactly 0)."""
    folder = tmp_path / "weights"
    load_model("tiny-llama", "random", seed=7).save_pretrained(folder)
    common = dict(model=str(folder), weights="trained", length=16, passes=2, device="cpu")
    _, _, twinned = _twin_run(tmp_path, "twinned", **common, prompts=3)
    float64 = run_experiment(RunSettings(**common, prompts=2, dtype="float64"), tmp_path / "float64", progress=False)
    torch.testing.assert_close(torch.tensor(twinned["twin"]["E"]), torch.tensor(float64["E"]), atol=1e-13, rtol=0)
    assert twinned["twin"]["divergence_max"] > 0


def test_control_a_float32_twin_has_no_divergence(tmp_path, monkeypatch):
    import copy

    monkeypatch.setattr(run_module, "float64_copy", lambda model: copy.deepcopy(model))
    _, _, results = _twin_run(tmp_path)
    assert results["twin"]["divergence_max"] == 0.0  # what the first test's "> 0" rules out


def test_the_effective_floor_catches_a_divergence_the_measured_floor_misses(tmp_path, monkeypatch):
    """A run whose own arithmetic drifts (here: the run's blocks perturbed by 1e-3 relative, not the twin's) is
    caught by the twin: its effective floor is the divergence, far above the measured floor."""
    real = run_module.run_pass

    def drifting(adapter, x, inputs, **options):
        result = real(adapter, x, inputs, **options)
        if x.dtype == torch.float32 and x.shape[0] == TINY["prompts"]:
            generator = torch.Generator().manual_seed(options.get("pass_index", 0))
            result.hidden = result.hidden * (1 + 1e-3 * torch.randn(result.hidden.shape, generator=generator))
        return result

    monkeypatch.setattr(run_module, "run_pass", drifting)
    _, manifest, results = _twin_run(tmp_path)
    floor = manifest["floor"]
    assert floor["twin_divergence_max"] > 100 * floor["E_floor"]
    assert floor["effective_floor"] == floor["twin_divergence_max"] == results["effective_floor"]


def test_a_redrawn_twin_follows_every_draw(tmp_path, monkeypatch):
    _, _, results = _twin_run(tmp_path, "follows", weights="redrawn", seed=3)
    assert results["twin"]["divergence_max"] < 1e-5
    # the control: a twin that keeps the first draw drifts away from pass 2 on
    monkeypatch.setattr(run_module._Twin, "copy_weights", lambda self, model: None)
    _, _, stale = _twin_run(tmp_path, "stale", weights="redrawn", seed=3)
    layers = stale["layers"]
    assert max(stale["twin"]["divergence"][: layers + 1]) < 1e-5
    assert max(stale["twin"]["divergence"][layers + 1:]) > 1e-3


@pytest.mark.parametrize("weights", ["random", "redrawn"])
def test_a_resumed_twinned_run_is_bit_identical_to_an_uninterrupted_one(tmp_path, weights):
    settings = RunSettings(**TINY, weights=weights, passes=3, twin="float64")
    whole = run_experiment(settings, tmp_path / "whole", progress=False)

    def cut(done):
        if done == 2:
            raise Interrupted

    with pytest.raises(Interrupted):
        run_experiment(settings, tmp_path / "cut", progress=False, after_pass=cut)
    assert len(torch.load(tmp_path / "cut" / "checkpoint.pt", weights_only=True)["twin"]["E"][0]) == 2 * 3 + 1
    resumed = run_experiment(settings, tmp_path / "cut", progress=False)
    assert resumed["E"] == whole["E"] and resumed["twin"] == whole["twin"]
    assert resumed["effective_floor"] == whole["effective_floor"]
    manifests = [load_results(tmp_path / name)[0]["floor"] for name in ("whole", "cut")]
    assert manifests[0]["twin_divergence_per_block"] == manifests[1]["twin_divergence_per_block"]
    assert manifests[0]["float64_twin"]["E_floor"] == manifests[1]["float64_twin"]["E_floor"]


def test_a_resumed_twinned_run_reads_both_floors_back_and_measures_none(tmp_path, monkeypatch):
    """The run's floor and its twin's are measured once, before the cut; the resume reads them from the manifest.
    The control: the first, uncut start measures both (two calls)."""
    settings = RunSettings(**TINY, weights="random", passes=3, twin="float64")
    calls = []
    measure = run_module.measure_floor
    monkeypatch.setattr(run_module, "measure_floor", lambda *a, **k: calls.append(a[1].dtype) or measure(*a, **k))

    def cut(done):
        if done == 2:
            raise Interrupted

    with pytest.raises(Interrupted):
        run_experiment(settings, tmp_path / "cut", progress=False, after_pass=cut)
    assert sorted(map(str, calls)) == ["torch.float32", "torch.float64"]
    calls.clear()
    run_experiment(settings, tmp_path / "cut", progress=False)
    assert calls == []


def test_control_a_resume_from_another_twin_state_differs(tmp_path, monkeypatch):
    settings = RunSettings(**TINY, weights="random", passes=3, twin="float64")
    whole = run_experiment(settings, tmp_path / "whole", progress=False)
    save = run_module.Checkpoint.save

    def save_shifted(self, passes, hidden, E, *rest, twin=None, **named):
        twin = {**twin, "hidden": twin["hidden"] + 0.5 * twin["hidden"].std()}
        return save(self, passes, hidden, E, *rest, twin=twin, **named)

    def cut(done):
        if done == 2:
            raise Interrupted

    with monkeypatch.context() as patch:
        patch.setattr(run_module.Checkpoint, "save", save_shifted)
        with pytest.raises(Interrupted):
            run_experiment(settings, tmp_path / "cut", progress=False, after_pass=cut)
    resumed = run_experiment(settings, tmp_path / "cut", progress=False)
    assert resumed["E"] == whole["E"] and resumed["twin"]["E"] != whole["twin"]["E"]


def test_a_checkpoint_without_the_twins_state_is_refused(tmp_path):
    settings = RunSettings(**TINY, weights="random", passes=2, twin="float64")

    def cut(done):
        if done == 1:
            raise Interrupted

    with pytest.raises(Interrupted):
        run_experiment(settings, tmp_path, progress=False, after_pass=cut)
    path = tmp_path / "checkpoint.pt"
    state = torch.load(path, weights_only=True)
    del state["twin"]
    torch.save(state, path)
    # re-signed in the manifest, as its writer would: the hash check passes, the missing twin state is what is refused
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    manifest["checkpoint"]["sha256"] = sha256(path)
    write_manifest(tmp_path, manifest)
    with pytest.raises(ValueError, match="twin"):
        run_experiment(settings, tmp_path, progress=False)


def test_the_twin_goes_with_the_run(tmp_path, monkeypatch):
    """The float64 copy of the model is freed when the run ends (a GPU run cannot hold it beside the next model)."""
    copies = []
    real = run_module.float64_copy
    monkeypatch.setattr(run_module, "float64_copy", lambda model: copies.append(real(model)) or copies[-1])
    _twin_run(tmp_path)
    reference = weakref.ref(copies.pop())
    gc.collect()
    assert reference() is None


def test_twin_settings(tmp_path, capsys):
    assert "twin" not in RunSettings(model="tiny-llama").identity()  # folders written before the twin still resume
    identity = RunSettings(model="tiny-llama", twin="float64", twin_prompts=5).identity()
    assert identity["twin"] == "float64" and identity["twin_prompts"] == 5
    with pytest.raises(ValueError, match="itself"):
        RunSettings(model="tiny-llama", twin="float64", dtype="float64")
    with pytest.raises(ValueError, match="twin-prompts"):
        RunSettings(model="tiny-llama", twin="float64", twin_prompts=0)
    out = tmp_path / "cli"
    assert main(["run", "--model", "tiny-gpt2", "--weights", "random", "--prompts", "3", "--length", "8", "--passes",
                 "1", "--device", "cpu", "--twin", "float64", "--twin-prompts", "5", "--quiet", "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["twin"]["prompts"] == 3  # all of them when the run has fewer
    assert "effective floor" in capsys.readouterr().out
    plain = run_experiment(RunSettings(**TINY, weights="random", passes=1), tmp_path / "plain", progress=False)
    assert plain["twin"] is None and plain["effective_floor"] == plain["E_floor"]
    assert load_results(tmp_path / "plain")[0]["floor"]["effective_floor"] == plain["E_floor"]


def test_the_reports_trained_runs_carry_a_float64_twin(tmp_path):
    """Every trained run, and every run of the gpu and smoke profiles (the cpu profile's random and redrawn runs of the
    paper's architectures go without: their float64 copy is beyond the report's memory bound)."""
    from empirical.suite import PROFILES, Variant, run_variant

    for name, profile in PROFILES.items():
        for variant in profile:
            twinned = variant.weights == "trained" or name != "cpu"
            assert variant.twin == ("float64" if twinned else None), (name, variant.key)
        assert variant.settings().twin == variant.twin and variant.settings(dtype="float64").twin is None
    folder = tmp_path / "weights"
    load_model("tiny-llama", "random", seed=7).save_pretrained(folder)
    variant = Variant("tiny-trained-no-ffn", str(folder), "trained", False, 3, 16, 1, "Fig. 7", twin="float64")
    manifest, results = run_variant(variant, tmp_path / "runs", device="cpu", progress=False)
    assert results["twin"]["prompts"] == 2 and manifest["floor"]["effective_floor"] == results["effective_floor"]
    again, _ = run_variant(variant, tmp_path / "runs", device="cpu", progress=False)  # reused, not rerun
    assert again["started"] == manifest["started"] and again["timings"] == manifest["timings"]


def test_a_twinned_run_from_before_twin_floors_is_not_reused_until_resumed_and_measured(tmp_path):
    """A complete twinned run whose manifest has no twin's floor (made before it was measured) is not finished; run
    again it does no pass, measures the twin's floor and is finished. The control: the run as made is finished."""
    from empirical.suite import finished

    settings = RunSettings(**TINY, weights="random", passes=2, twin="float64")
    folder = tmp_path / "old"
    first = run_experiment(settings, folder, progress=False)
    assert finished(folder, settings)
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["floor"]["float64_twin"]
    write_manifest(folder, manifest)  # as a run from before twin floors wrote it
    assert not finished(folder, settings)
    again = run_experiment(settings, folder, progress=False)
    assert again["E"] == first["E"] and finished(folder, settings)
    assert load_results(folder)[0]["floor"]["float64_twin"]["dtype"] == "float64"
