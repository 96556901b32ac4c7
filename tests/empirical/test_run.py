"""``python -m empirical run``: results, manifest, checkpoints, resume, reproducibility, bad input."""

import json
import shutil

import pytest
import torch

from empirical.__main__ import main
from empirical.loop import NonFiniteActivations
from empirical.run import RunSettings, load_results, run_experiment, write_manifest
from foundation.files import sha256

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

    from foundation import files

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


def test_a_redrawn_run_reads_each_draws_summaries_once(tmp_path, monkeypatch):
    """The check of pass k's draw keeps its fingerprint as pass k + 1's ``before`` (the weights do not change in
    between): one fingerprint per draw, where a separate sample before each draw made two."""
    from empirical import run as run_module

    calls = []
    original = run_module.fingerprint
    monkeypatch.setattr(run_module, "fingerprint", lambda model, **options: calls.append(options) or original(
        model, **options))
    run_experiment(RunSettings(weights="redrawn", passes=3, seed=11, **TINY), tmp_path, progress=False)
    assert calls == [{}, {}, {}]  # pass 0's draw, then the redraws of passes 1 and 2, each with its statistics


def test_a_redrawn_run_whose_redraw_does_nothing_fails(tmp_path, monkeypatch):
    """The control of the fingerprint kept from one check to the next: a redraw that leaves the weights as they
    are is caught at pass 1 (every parameter unchanged against pass 0's draw), as it was with a fresh sample."""
    from empirical import run as run_module

    monkeypatch.setattr(run_module, "redraw", lambda model, seed: None)
    with pytest.raises(RuntimeError, match="unchanged by the draw"):
        run_experiment(RunSettings(weights="redrawn", passes=3, seed=11, **TINY), tmp_path, progress=False)


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
    """Rewrite ``folder``'s checkpoint with ``changes`` (None deletes a key), and record its new sha256 in the
    manifest, as a run would (so that the checks behind the hash's are reached)."""
    state = torch.load(folder / "checkpoint.pt", weights_only=True)
    state.update(changes)
    torch.save({k: v for k, v in state.items() if v is not None}, folder / "checkpoint.pt")
    _sign(folder)


def _sign(folder):
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["checkpoint"]["sha256"] = sha256(folder / "checkpoint.pt")
    write_manifest(folder, manifest)


def _edit_manifest(folder, signed=True, **changes):
    """``folder``'s manifest with ``changes`` (None deletes a key), rewritten as a run writes it (``signed``: a new
    digest) or by hand (its digest left as it was)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest = {key: value for key, value in {**manifest, **changes}.items() if value is not None}
    if signed:
        write_manifest(folder, manifest)
    else:
        (folder / "manifest.json").write_text(json.dumps(manifest))


def _flip_byte(path, at=0.5):
    data = bytearray(path.read_bytes())
    data[int(len(data) * at)] ^= 0x01
    path.write_bytes(bytes(data))


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
    pytest.param(lambda f: (_truncate(f / "checkpoint.pt"), _sign(f)), "checkpoint.pt cannot resume this run: it is "
                 "not a readable checkpoint", id="checkpoint-truncated"),
    pytest.param(lambda f: ((f / "checkpoint.pt").write_text('{"passes": 2}'), _sign(f)),
                 "it is not a readable checkpoint", id="checkpoint-not-torch"),
    pytest.param(lambda f: _truncate(f / "checkpoint.pt"), "checkpoint.pt cannot resume this run: its sha256 .* is not "
                 "the one manifest.json records", id="checkpoint-truncated-unsigned"),
    pytest.param(lambda f: _flip_byte(f / "checkpoint.pt", 0.9), "checkpoint.pt cannot resume this run: its sha256 .* "
                 "is not the one manifest.json records .*changed or damaged", id="checkpoint-flipped-byte"),
    pytest.param(lambda f: _flip_byte(f / "checkpoint.pt", 0.5), "checkpoint.pt cannot resume this run: its sha256",
                 id="checkpoint-flipped-byte-in-the-state"),
    pytest.param(lambda f: _checkpoint(f, settings_identity=None), "it does not record the settings of the run",
                 id="checkpoint-without-identity"),
    pytest.param(lambda f: _edit_manifest(f, checkpoint=None), "manifest.json records no sha256",
                 id="manifest-without-checkpoint-hash"),
    # the referee's tampering: a floor set by hand, the start moved, the digest removed with the results' hash
    pytest.param(lambda f: _edit_manifest(f, signed=False, floor={"E_floor": 0.99}), "manifest.json is not the "
                 "manifest its run wrote", id="manifest-floor-edited-by-hand"),
    pytest.param(lambda f: _edit_manifest(f, signed=False, started="1999-01-01T00:00:00Z"), "is not the manifest its "
                 "run wrote", id="manifest-start-edited-by-hand"),
    pytest.param(lambda f: _edit_manifest(f, signed=False, results=None, digest=None), "records no digest of itself",
                 id="manifest-digest-removed"),
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
    pytest.param(lambda f: _edit_results(f, E_final=0.0), "results.json is not the file its run wrote",
                 id="results-edited"),
])
def test_damaged_results_are_refused_when_read(finished_run, tmp_path, damage, message):
    folder = tmp_path / "run"
    shutil.copytree(finished_run, folder)
    damage(folder)
    with pytest.raises(ValueError, match=message):
        load_results(folder)


def _edit_results(folder, **changes):
    """results.json rewritten, valid JSON of the right shape, with ``changes`` (another process's or a hand's edit)."""
    results = json.loads((folder / "results.json").read_text())
    (folder / "results.json").write_text(json.dumps({**results, **changes}))


def test_an_edited_results_file_is_not_reused_and_a_rerun_makes_it_again(finished_run, tmp_path):
    """A complete run's manifest records results.json's sha256: the suite does not take an edited copy as finished,
    and a rerun into the folder writes it again from the checkpoint (the control: the untouched copy loads and is
    finished)."""
    from empirical.suite import finished

    folder = tmp_path / "run"
    shutil.copytree(finished_run, folder)
    manifest, results = load_results(folder)
    assert manifest["results"] == {"file": "results.json", "sha256": sha256(folder / "results.json")}
    assert finished(folder, GOOD)
    _edit_results(folder, E_mean=[0.0] * len(results["E_mean"]))
    assert not finished(folder, GOOD)
    again = run_experiment(GOOD, folder, progress=False)
    assert again["E_mean"] == results["E_mean"] and load_results(folder)[1]["E_mean"] == results["E_mean"]


def test_damaged_checkpoint_is_an_error_of_the_command(finished_run, tmp_path, capsys):
    folder = tmp_path / "run"
    shutil.copytree(finished_run, folder)
    _truncate(folder / "checkpoint.pt")
    status = main(["run", "--model", "tiny-llama", "--weights", "random", "--prompts", "3", "--length", "16",
                   "--passes", "3", "--device", "cpu", "--quiet", "--out", str(folder)])
    assert status == 2
    assert "Delete it to restart the run from pass 0" in capsys.readouterr().err


def test_an_untouched_checkpoint_resumes_and_its_hash_is_recorded(finished_run, tmp_path):
    """The negative control of the damaged checkpoints: the same copy, unchanged (or re-signed), resumes."""
    folder = tmp_path / "run"
    shutil.copytree(finished_run, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["checkpoint"] == {"file": "checkpoint.pt", "sha256": sha256(folder / "checkpoint.pt"), "passes": 2}
    assert "checkpoint_next" not in manifest
    _checkpoint(folder)  # rewritten with the same content, re-signed: still resumes
    grown = run_experiment(RunSettings(weights="random", passes=3, **TINY), folder, progress=False)
    whole = run_experiment(RunSettings(weights="random", passes=3, **TINY), tmp_path / "whole", progress=False)
    assert grown["E"] == whole["E"]


def test_fewer_passes_than_a_finished_run_are_refused(finished_run, tmp_path, capsys):
    """--passes 1 on a finished 2-pass folder: refused (a run is never cut back), not results of 2 and a manifest of 1."""
    folder = tmp_path / "run"
    shutil.copytree(finished_run, folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    status = main(["run", "--model", "tiny-llama", "--weights", "random", "--prompts", "3", "--length", "16",
                   "--passes", "1", "--device", "cpu", "--quiet", "--out", str(folder)])
    err = capsys.readouterr().err
    assert status == 2 and "--passes 1 is fewer than the 2 passes" in err and len(err.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
    assert main(["run", "--model", "tiny-llama", "--weights", "random", "--prompts", "3", "--length", "16",
                 "--passes", "2", "--device", "cpu", "--quiet", "--out", str(folder)]) == 0  # the control


class Crash(BaseException):
    pass


@pytest.mark.parametrize("window", ["before-checkpoint", "between-renames"])
def test_a_crash_around_the_checkpoint_leaves_no_duplicated_draw(tmp_path, monkeypatch, window):
    """A run killed while pass 2's checkpoint is being written (before it lands, or after it replaced pass 1's but
    before the manifest says so) resumes with one draw per pass and the numbers of an uninterrupted run."""
    from empirical import run as run_module

    settings = RunSettings(weights="redrawn", passes=3, **TINY)
    whole = run_experiment(settings, tmp_path / "whole", progress=False)
    save, calls = run_module.Checkpoint.save, []

    def crashing_save(self, passes, hidden, E, draws=None, before_replace=None, twin=None):
        calls.append(passes)
        if passes == 2 and window == "before-checkpoint":
            raise Crash
        if passes == 2:
            def announce_then_die(digest):
                before_replace(digest)
                run_module.atomic_write(self.path, lambda s: torch.save(
                    {"passes": passes, "hidden": hidden.cpu(), "E": E, "draws_json": json.dumps(draws),
                     "settings_identity": self.settings.identity()}, s), binary=True, durable=False)
                raise Crash  # the checkpoint has landed, the manifest describing it has not
            return save(self, passes, hidden, E, draws, before_replace=announce_then_die, twin=twin)
        return save(self, passes, hidden, E, draws, before_replace=before_replace, twin=twin)

    monkeypatch.setattr(run_module.Checkpoint, "save", crashing_save)
    with pytest.raises(Crash):
        run_experiment(settings, tmp_path / "cut", progress=False)
    monkeypatch.setattr(run_module.Checkpoint, "save", save)
    manifest = json.loads((tmp_path / "cut" / "manifest.json").read_text())
    assert manifest["passes_done"] == 1 and [d["pass"] for d in manifest["draws"]] == [0]  # never ahead
    resumed = run_experiment(settings, tmp_path / "cut", progress=False)
    manifest = json.loads((tmp_path / "cut" / "manifest.json").read_text())
    assert [d["pass"] for d in manifest["draws"]] == [0, 1, 2]
    assert resumed["E"] == whole["E"]


def test_a_run_in_another_dtype_is_not_resumed_in_this_one(tmp_path, capsys):
    """A folder of a run made when --dtype auto meant bfloat16 on CUDA must not go on in float32."""
    run_experiment(RunSettings(weights="random", passes=1, **TINY), tmp_path, progress=False)
    _edit_manifest(tmp_path, dtype="bfloat16")
    status = main(["run", "--model", "tiny-llama", "--weights", "random", "--prompts", "3", "--length", "16",
                   "--passes", "2", "--device", "cpu", "--quiet", "--out", str(tmp_path)])
    assert status == 2 and "holds a run in bfloat16" in capsys.readouterr().err


def test_a_run_made_on_another_device_is_not_resumed_on_this_one(tmp_path, capsys):
    """The referee's resume: a run started on CUDA (--device auto) went on on the CPU, its manifest rewriting the
    device. Now refused, naming both; the control is the same folder resumed on its own device."""
    run_experiment(RunSettings(weights="random", passes=1, **TINY), tmp_path, progress=False)
    _edit_manifest(tmp_path, device="cuda:0")
    command = ["run", "--model", "tiny-llama", "--weights", "random", "--prompts", "3", "--length", "16",
               "--passes", "2", "--device", "cpu", "--quiet", "--out", str(tmp_path)]
    assert main(command) == 2 and "holds a run made on cuda:0" in capsys.readouterr().err
    _edit_manifest(tmp_path, device="cpu")
    assert main(command) == 0


def test_two_writers_of_one_folder_exactly_one_is_refused(tmp_path):
    """Two runs (other seeds) start together on one --out: one runs, the other is refused at once naming the
    holder's pid and command; the folder holds the one run's results."""
    import os
    import threading

    from foundation.outputs import OutputError

    start, outcomes, release = threading.Barrier(2), {}, threading.Event()

    def writer(seed):
        start.wait()
        try:
            outcomes[seed] = run_experiment(RunSettings(weights="random", passes=2, seed=seed, **TINY), tmp_path,
                                            progress=False, after_pass=lambda k: release.wait(60))
        except OutputError as error:
            outcomes[seed] = error
            release.set()  # the refused one lets the other finish

    threads = [threading.Thread(target=writer, args=(seed,)) for seed in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    refused = [seed for seed, outcome in outcomes.items() if isinstance(outcome, OutputError)]
    assert len(outcomes) == 2 and len(refused) == 1
    message = str(outcomes[refused[0]])
    assert f"is being written by pid {os.getpid()} (`empirical run`" in message and "\n" not in message
    winner = 3 - refused[0]
    assert json.loads((tmp_path / "manifest.json").read_text())["settings"]["seed"] == winner
    assert not (tmp_path / ".lock.json").exists()  # the holder's record goes with the lock
    # the control: once the first has finished, the same command resumes (the lock was released)
    run_experiment(RunSettings(weights="random", passes=2, seed=winner, **TINY), tmp_path, progress=False)
