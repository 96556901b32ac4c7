"""An audit on disk (empirical.audit.store): run outputs' rate fits with and without a recorded floor (and refused
when the run folder is not as its run wrote it), an audit
written and read back value for value and dtype for dtype, the fingerprint rebuilt by hand and changed by each part
it hashes, and the cache's paths (in this process or a child, spied on) with no model loaded (under a second)."""

import hashlib
import json

import numpy as np
import pytest
import torch

import empirical.audit.store as store
from empirical.audit import AuditSettings
from empirical.audit.measure import rate_summary
from empirical.audit.rates import E_FLOOR

SETTINGS = AuditSettings(prompts=2, length=6, passes=1, seed=0)


def _decaying(rates, blocks=10):
    k = np.arange(blocks)
    return 0.8 * np.exp(-np.asarray(rates)[:, None] * k) * (1.0 + 0.01 * np.cos(3.0 * k + np.arange(len(rates))[:, None]))


def _write_run(folder, values, manifest):
    """A run folder as `empirical run` writes one: E (one block per pass), its manifest with the digest, the
    results' sha256 recorded."""
    from empirical.run import write_manifest
    from foundation.files import sha256

    (folder / "results.json").write_text(json.dumps({"E": values.tolist(), "layers": 1,
                                                     "passes": values.shape[1] - 1}))
    write_manifest(folder, {**manifest, "results": {"sha256": sha256(folder / "results.json")}})


@pytest.mark.parametrize("manifest, floor", [
    ({"settings": {}}, E_FLOOR), ({"settings": {}, "floor": None}, E_FLOOR), ({"settings": {}, "floor": {}}, E_FLOOR),
    ({"settings": {}, "floor": {"E_floor": 0.05}}, 0.05)], ids=["before-floors", "null-floor", "empty-floor", "floor"])
def test_a_runs_rate_fit_uses_its_recorded_floor_or_float32s(tmp_path, manifest, floor):
    values = _decaying([0.3, 0.2, 0.25])
    _write_run(tmp_path, values, manifest)
    result = store.rates_from_results(tmp_path)
    assert result["source"] == str(tmp_path) and result["manifest"].get("floor") == manifest.get("floor")
    expected = rate_summary(values, floor)
    np.testing.assert_array_equal(result["rate"].pop("per_prompt"), expected.pop("per_prompt"))
    assert result["rate"] == expected and result["rate"]["floor"] == floor


def test_a_folder_that_is_not_a_run_as_written_is_refused_with_its_file(tmp_path):
    """The rate fit reads a run as every reader of its results does: refused without results.json or without a
    manifest, with a hand-edited manifest (its digest) or results.json (the sha256 its manifest records); the
    control, the folder as written, is read."""
    values = _decaying([0.3, 0.2, 0.25])
    _write_run(tmp_path, values, {"settings": {}, "floor": {"E_floor": 1e-6}})
    assert store.rates_from_results(tmp_path)["rate"]["floor"] == 1e-6  # the control
    results, manifest = (tmp_path / "results.json").read_text(), (tmp_path / "manifest.json").read_text()
    (tmp_path / "results.json").write_text(results.replace("0.", "0.1", 1))  # one value edited
    with pytest.raises(ValueError, match="not the file its run wrote"):
        store.rates_from_results(tmp_path)
    (tmp_path / "results.json").write_text(results)
    (tmp_path / "manifest.json").write_text(manifest.replace("1e-06", "0.5"))  # a higher floor hides the tail
    with pytest.raises(ValueError, match="manifest"):
        store.rates_from_results(tmp_path)
    (tmp_path / "manifest.json").unlink()
    with pytest.raises(ValueError, match="has no manifest.json"):
        store.rates_from_results(tmp_path)
    (tmp_path / "manifest.json").write_text(manifest)
    (tmp_path / "results.json").unlink()
    with pytest.raises(ValueError, match="results.json"):
        store.rates_from_results(tmp_path)


def _audit(ffn_values):
    """A minimal audit as audit_model returns it: one run, its two variants' state arrays and rates."""
    variant = {key: np.zeros((2, 3)) for key in store.STATE_ARRAYS}
    variant.update({key: np.array([[True, False, True], [False, True, True]]) for key in store.BOOLEAN_ARRAYS})
    variant["E"] = ffn_values
    variant["rate"] = {"rate": float("inf"), "ci_low": float("-inf"), "ci_high": float("nan"),
                       "per_prompt": np.array([0.5, np.nan])}
    return {"model": "m", "runs": {"random": {"variants": {"ffn": variant, "no-ffn": dict(variant)}}},
            "hypotheses": {"random": [{"hypothesis": "h", "numbers": ["inf", [1, "nan"]], "value": float("inf")}]}}


def test_an_audit_reads_back_as_written_with_its_arrays_and_non_finite_floats(tmp_path):
    written = _audit(np.array([[1.0, 0.5, 0.25], [2.0, 1.0, 0.5]]))
    path = store.write_audit(written, tmp_path / "new" / "folder")
    assert path == tmp_path / "new" / "folder" / "audit.json" and path.is_file()
    read = store.read_audit(path)
    for name in ("ffn", "no-ffn"):
        variant = read["runs"]["random"]["variants"][name]
        for key in store.STATE_ARRAYS:
            assert isinstance(variant[key], np.ndarray) and variant[key].shape == (2, 3)
            assert variant[key].dtype == (bool if key in store.BOOLEAN_ARRAYS else np.float64)
        np.testing.assert_array_equal(variant["E"], written["runs"]["random"]["variants"]["ffn"]["E"])
        assert variant["inside_residual"].tolist() == [[True, False, True], [False, True, True]]
        rate = variant["rate"]
        assert rate["rate"] == float("inf") and rate["ci_low"] == float("-inf") and np.isnan(rate["ci_high"])
        assert rate["per_prompt"].dtype == np.float64 and rate["per_prompt"][0] == 0.5 and np.isnan(rate["per_prompt"][1])
    # non-finite floats are restored in lists and dicts at any depth; other strings stay strings
    row = read["hypotheses"]["random"][0]
    assert row["value"] == float("inf") and row["numbers"][0] == float("inf") and np.isnan(row["numbers"][1][1])
    assert row["hypothesis"] == "h" and read["model"] == "m"


def test_arrays_read_back_keep_their_dtypes_when_empty_or_written_as_integers(tmp_path):
    audit = _audit(np.array([[1.0, 0.5, 0.25], [2.0, 1.0, 0.5]]))
    variant = audit["runs"]["random"]["variants"]["ffn"]
    variant["update_within_rounding"] = np.zeros((2, 0), dtype=bool)  # a run with FFN has none
    variant["update_distance"] = np.zeros((2, 0))
    path = store.write_audit(audit, tmp_path)
    data = json.loads(path.read_text())
    data["runs"]["random"]["variants"]["no-ffn"]["E"] = [[1, 0, 0], [2, 1, 0]]  # integers, as another writer may
    data["runs"]["random"]["variants"]["no-ffn"]["rate"]["per_prompt"] = [1, 0]
    path.write_text(json.dumps(data))
    read = store.read_audit(path)["runs"]["random"]["variants"]
    assert read["ffn"]["update_within_rounding"].dtype == bool and read["ffn"]["update_within_rounding"].shape == (2, 0)
    assert read["ffn"]["update_distance"].dtype == np.float64
    assert read["no-ffn"]["E"].dtype == np.float64 and read["no-ffn"]["rate"]["per_prompt"].dtype == np.float64


def test_an_audit_written_again_to_its_folder_replaces_the_first(tmp_path):
    store.write_audit(_audit(np.full((2, 3), 0.5)), tmp_path / "a")
    path = store.write_audit(_audit(np.full((2, 3), 0.25)), tmp_path / "a")
    assert store.read_audit(path)["runs"]["random"]["variants"]["ffn"]["E"].tolist() == [[0.25] * 3] * 2


def test_restore_turns_only_the_three_non_finite_spellings_into_floats():
    restored = store._restore({"a": ["inf", "-inf", "nan", "Inf", "infinity", 1, None], "b": {"c": "nan"}})
    assert restored["a"][:2] == [float("inf"), float("-inf")] and np.isnan(restored["a"][2])
    assert restored["a"][3:] == ["Inf", "infinity", 1, None] and np.isnan(restored["b"]["c"])
    assert isinstance(restored["a"][0], float)


def test_the_fingerprint_hashes_the_audits_definition_and_its_sources():
    digest = hashlib.sha256(json.dumps(["tiny-gpt2", "random", SETTINGS.__dict__, "torch.float32"]).encode())
    for name in store.AUDIT_SOURCES:
        digest.update((store.Path(store.__file__).parent.parent / name).read_bytes())
    fingerprint = store.audit_fingerprint("tiny-gpt2", "random", SETTINGS, torch.float32)
    assert fingerprint == digest.hexdigest()[:16] and len(fingerprint) == 16
    others = {store.audit_fingerprint("tiny-llama", "random", SETTINGS, torch.float32),
              store.audit_fingerprint("tiny-gpt2", "trained", SETTINGS, torch.float32),
              store.audit_fingerprint("tiny-gpt2", "random", AuditSettings(prompts=3, length=6, passes=1), torch.float32),
              store.audit_fingerprint("tiny-gpt2", "random", SETTINGS, torch.float64)}
    assert len(others) == 4 and fingerprint not in others
    assert "audit/states.py" in store.AUDIT_SOURCES and "floor.py" in store.AUDIT_SOURCES


def test_the_fingerprint_changes_with_each_source_file(tmp_path, monkeypatch):
    package = tmp_path / "empirical"
    (package / "audit").mkdir(parents=True)
    for name in store.AUDIT_SOURCES:
        (package / name).write_text(f"# {name}\n")
    monkeypatch.setattr(store, "__file__", str(package / "audit" / "store.py"))
    before = store.audit_fingerprint("m", "random", SETTINGS, torch.float32)
    prints = set()
    for name in store.AUDIT_SOURCES:
        (package / name).write_text(f"# {name} changed\n")
        prints.add(store.audit_fingerprint("m", "random", SETTINGS, torch.float32))
    assert len(prints) == len(store.AUDIT_SOURCES) and before not in prints


def _spy_on_audits(monkeypatch):
    calls = []

    def audit_model(model, weights, settings, *, dtype, progress=None):
        calls.append(("here", model, weights, settings, dtype, progress))
        return _audit(np.full((2, 3), 0.5))

    def in_child(stage, function, *args):
        calls.append(("child", stage, function, *args))
        function(*args)  # what the child does, here

    monkeypatch.setattr(store, "audit_model", audit_model)
    monkeypatch.setattr("empirical.isolation.in_child", in_child)
    return calls


@pytest.mark.parametrize("isolate", [False, True])
def test_a_cached_audit_is_computed_once_under_its_fingerprint_and_read_back(tmp_path, monkeypatch, isolate):
    calls = _spy_on_audits(monkeypatch)
    say = print
    first = store.cached_audit("org/tiny", "random", SETTINGS, tmp_path, dtype=torch.float64, progress=say,
                               isolate=isolate)
    target = tmp_path / f"org_tiny-random-{store.audit_fingerprint('org/tiny', 'random', SETTINGS, torch.float64)}"
    assert (target / "audit.json").is_file() and first["runs"]["random"]["variants"]["ffn"]["E"].dtype == np.float64
    if isolate:  # the child audits without progress, into the target
        assert calls[0] == ("child", "audit org/tiny (random)", store._audit_into, "org/tiny", "random", SETTINGS,
                            torch.float64, target)
        assert calls[1] == ("here", "org/tiny", "random", SETTINGS, torch.float64, None)
    else:
        assert calls == [("here", "org/tiny", "random", SETTINGS, torch.float64, say)]
    again = store.cached_audit("org/tiny", "random", SETTINGS, tmp_path, dtype=torch.float64, isolate=isolate)
    assert len(calls) == (2 if isolate else 1)  # reused, not recomputed
    np.testing.assert_array_equal(again["runs"]["random"]["variants"]["ffn"]["E"], np.full((2, 3), 0.5))
    # control: another dtype is another audit
    store.cached_audit("org/tiny", "random", SETTINGS, tmp_path, isolate=isolate)
    assert calls[-1][0] == "here" and calls[-1][4] == torch.float32
    assert len(list(tmp_path.iterdir())) == 2


def test_a_cached_audit_edited_or_without_its_digest_is_audited_again(tmp_path, monkeypatch, capsys):
    """The referee's forged audit.json ({"runs": {}}) was returned as it was. A cached audit is reused only when its
    sha256 is the one recorded beside it; otherwise it is audited again, and said so (control: the untouched one is
    reused)."""
    calls = _spy_on_audits(monkeypatch)
    store.cached_audit("m", "random", SETTINGS, tmp_path)
    target = next(tmp_path.iterdir())
    store.cached_audit("m", "random", SETTINGS, tmp_path)
    assert len(calls) == 1  # the control: reused
    (target / "audit.json").write_text(json.dumps({"runs": {}, "forged": "anything"}))
    again = store.cached_audit("m", "random", SETTINGS, tmp_path)
    assert len(calls) == 2 and "forged" not in again and "audited again" in capsys.readouterr().err
    (target / store.DIGEST).unlink()
    store.cached_audit("m", "random", SETTINGS, tmp_path)
    assert len(calls) == 3


def test_a_cached_audit_runs_in_this_process_unless_told_to_isolate(tmp_path, monkeypatch):
    calls = _spy_on_audits(monkeypatch)
    store.cached_audit("m", "random", SETTINGS, tmp_path)
    assert [call[0] for call in calls] == ["here"]
