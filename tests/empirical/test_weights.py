"""Random draws really happen, are seeded, and follow the initialiser's statistics."""

import pytest
import torch

from empirical import adapter_for, fingerprint, load_model, redraw, verify_draw
from empirical.models import TINY_MODELS


@pytest.mark.parametrize("name", TINY_MODELS)
def test_redraw_changes_every_random_parameter_and_matches_the_initialiser(name):
    model = load_model(name, "random", seed=0)
    adapter = adapter_for(model)
    before = fingerprint(model)
    redraw(model, 1)
    summary = verify_draw(adapter, before)
    assert summary["random_parameters"] > 0 and summary["checked_against_previous"]


@pytest.mark.parametrize("name", TINY_MODELS)
def test_same_seed_same_draw(name):
    a = load_model(name, "random", seed=7)
    b = load_model(name, "random", seed=7)
    c = load_model(name, "random", seed=8)
    for (na, pa), (_, pb), (_, pc) in zip(a.named_parameters(), b.named_parameters(), c.named_parameters()):
        torch.testing.assert_close(pa, pb, atol=0, rtol=0)
    assert not torch.equal(a.get_input_embeddings().weight, c.get_input_embeddings().weight)


def test_redraw_leaves_the_global_random_state_alone():
    model = load_model("tiny-gpt2", "random", seed=0)
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    redraw(model, 5)
    torch.testing.assert_close(torch.rand(3), expected, atol=0, rtol=0)


def test_gpt2_residual_projections_use_the_scaled_initialisation():
    model = load_model("tiny-gpt2", "random", seed=0)
    adapter = adapter_for(model)
    kind, std = adapter.expected_init("transformer.h.0.attn.c_proj.weight", None)
    assert kind == "normal" and std == pytest.approx(0.02 / (2 * model.config.n_layer) ** 0.5)
    verify_draw(adapter, None)


@pytest.fixture(params=["tiny-gpt2", "tiny-llama"])
def loaded(request, tmp_path):
    """A model saved and loaded back with ``from_pretrained``: its tensors carry the library's
    ``_is_hf_initialized`` marks, as trained weights do."""
    load_model(request.param, "random", seed=0).save_pretrained(tmp_path)
    return load_model(str(tmp_path), "trained")


def test_redraw_of_loaded_weights_changes_them(loaded):
    adapter = adapter_for(loaded)
    before = fingerprint(loaded)
    redraw(loaded, 1)
    assert verify_draw(adapter, before)["random_parameters"] > 0


@pytest.mark.parametrize("statistics", [True, False], ids=["full-fingerprint", "sample-only"])
def test_control_library_reinitialisation_of_loaded_weights_is_caught(loaded, statistics):
    """Negative control, the known failure mode: ``model.apply(model._init_weights)`` (the authors' call) on
    loaded weights does nothing in transformers >= 5 (tensors are marked initialised); the check rejects it, also
    against the sample-only fingerprint a redrawn run takes before each draw."""
    adapter = adapter_for(loaded)
    before = fingerprint(loaded, statistics=statistics)
    with torch.no_grad():
        loaded.apply(loaded._init_weights)
    with pytest.raises(RuntimeError, match="unchanged by the draw"):
        verify_draw(adapter, before)


def test_a_sample_only_fingerprint_has_the_same_sample_and_no_statistics():
    model = load_model("tiny-llama", "random", seed=0)
    full, sample = fingerprint(model), fingerprint(model, statistics=False)
    assert full.keys() == sample.keys()
    for name in full:
        assert torch.equal(full[name].sample, sample[name].sample) and full[name].size == sample[name].size
        assert sample[name].mean != sample[name].mean and sample[name].std != sample[name].std  # NaN
    weight = dict(model.named_parameters())["model.layers.0.mlp.up_proj.weight"].detach()
    assert full["model.layers.0.mlp.up_proj.weight"].std == pytest.approx(float(weight.std()), rel=1e-6)
    assert full["model.layers.0.mlp.up_proj.weight"].mean == pytest.approx(float(weight.mean()), abs=1e-7)


def test_control_wrong_statistics_are_caught():
    model = load_model("tiny-llama", "random", seed=0)
    adapter = adapter_for(model)
    before = fingerprint(model)
    redraw(model, 1)
    with torch.no_grad():
        model.model.layers[0].mlp.up_proj.weight.mul_(3.0)
    with pytest.raises(RuntimeError, match="up_proj"):
        verify_draw(adapter, before)


class _Allocations(torch.utils._python_dispatch.TorchDispatchMode):
    """Counts the elements of every floating-point tensor an operation returns, by device type (weights are floating
    point; GPT-Neo's initialiser rebuilds its boolean attention masks on the CPU and copies them, which is the
    library's and not a weight)."""

    def __init__(self):
        super().__init__()
        self.elements = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
                self.elements[tensor.device.type] = self.elements.get(tensor.device.type, 0) + tensor.numel()
        return out


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-gpt-neo", "tiny-llama"])
def test_random_weights_are_built_and_drawn_on_the_target_device(name):
    """The meta device stands in for a GPU: every parameter and buffer is made there, and the CPU allocates less than
    a hundredth of the model's elements meanwhile (rotary frequencies, the seed), so nothing is materialised first."""
    from empirical.models import build_random

    with _Allocations() as allocations:
        model = build_random(name, 0, device="meta")
    parameters = sum(p.numel() for p in model.parameters())
    assert {t.device.type for t in [*model.parameters(), *model.buffers()]} == {"meta"}
    assert allocations.elements.get("meta", 0) >= parameters  # the draw ran there
    assert allocations.elements.get("cpu", 0) < parameters / 100, allocations.elements


def test_random_weights_are_drawn_once_in_the_target_dtype():
    model = load_model("tiny-llama", "random", seed=0, dtype=torch.bfloat16)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    verify_draw(adapter_for(model), None)


def test_control_a_model_built_on_the_cpu_and_moved_is_caught():
    """The former path (``from_config`` on the CPU, then ``.to(device)``) allocates every weight on the CPU first."""
    from transformers import AutoModelForCausalLM

    from empirical.models import load_config

    with _Allocations() as allocations:
        model = AutoModelForCausalLM.from_config(load_config("tiny-gpt2")).to("meta")
    assert allocations.elements.get("cpu", 0) >= sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", TINY_MODELS)
def test_on_the_cpu_the_draw_on_the_device_gives_the_former_path_s_weights(name):
    """Built on the device with one draw, a model has the weights and buffers of the former path (``from_config``
    seeded on the CPU, then the seeded re-draw), value for value: runs made before keep their numbers."""
    from transformers import AutoModelForCausalLM

    from empirical.models import load_config

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        former = AutoModelForCausalLM.from_config(load_config(name))
    redraw(former, 3)
    now = load_model(name, "random", seed=3)
    for before, after in ((former.state_dict(), now.state_dict()), (dict(former.named_buffers()),
                                                                    dict(now.named_buffers()))):
        assert before.keys() == after.keys()
        for key in before:
            torch.testing.assert_close(after[key], before[key], atol=0, rtol=0, msg=key)
