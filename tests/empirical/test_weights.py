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


def _drawn_by_every_module(model, seed):
    """The former draw: the initialiser called on every module (``model.apply``), seeded."""
    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model.apply(model._init_weights)
    model.tie_weights()


@pytest.mark.parametrize("name", TINY_MODELS)
def test_a_redraw_skipping_the_buffer_only_modules_draws_what_every_module_would(name):
    """After a model's first draw, ``redraw`` calls the initialiser only on the modules that draw or write a
    parameter: the weights and buffers are value for value those of a call on every module."""
    skipping = load_model(name, "random", seed=0)
    redraw(skipping, 5)
    every = load_model(name, "random", seed=0)
    _drawn_by_every_module(every, 5)
    for before, after in ((every.state_dict(), skipping.state_dict()), (dict(every.named_buffers()),
                                                                      dict(skipping.named_buffers()))):
        assert before.keys() == after.keys()
        for key in before:
            torch.testing.assert_close(after[key], before[key], atol=0, rtol=0, msg=key)


def test_gpt_neo_s_attention_masks_are_not_rebuilt_but_gpt2_s_scaled_draw_is_kept():
    """GPT-Neo's attention modules own no parameters and only rebuild their mask buffers: skipped after the first
    draw. GPT-2's attention owns no parameters either but draws its scaled residual projection: kept (the control)."""
    from transformers.models.gpt2.modeling_gpt2 import GPT2Attention
    from transformers.models.gpt_neo.modeling_gpt_neo import GPTNeoSelfAttention

    from empirical.models import _DRAWING_MODULES

    neo, gpt2 = load_model("tiny-gpt-neo", "random", seed=0), load_model("tiny-gpt2", "random", seed=0)
    assert not any(isinstance(module, GPTNeoSelfAttention) for module in _DRAWING_MODULES[neo])
    assert any(isinstance(module, GPTNeoSelfAttention) for module in neo.modules())
    assert sum(isinstance(module, GPT2Attention) for module in _DRAWING_MODULES[gpt2]) == gpt2.config.n_layer


class _Toy(torch.nn.Module):
    """Children with parameters; parameter-less parents: one writes a child's bias without drawing (kept), one draws
    a buffer (kept: skipping it would shift the random numbers of every later module), one only sets a buffer
    (skipped)."""

    def __init__(self):
        super().__init__()
        self.writes = torch.nn.Sequential(torch.nn.Linear(3, 3))
        self.buffer_only = torch.nn.Sequential(torch.nn.Linear(3, 3))
        self.buffer_only.register_buffer("mask", torch.zeros(2))
        self.random_buffer = torch.nn.Sequential(torch.nn.Linear(3, 3))
        self.random_buffer.register_buffer("noise", torch.zeros(2))
        self.calls = []

    def _init_weights(self, module):
        self.calls.append(module)
        if isinstance(module, torch.nn.Linear):
            module.weight.normal_()
            module.bias.normal_()
        elif module is self.writes:
            module[0].bias.fill_(7.0)  # after the child's draw: a parameter written without a random number
        elif module is self.buffer_only:
            module.mask.fill_(1.0)
        elif module is self.random_buffer:
            module.noise.normal_()


def test_the_first_draw_keeps_the_modules_that_write_a_parameter_or_draw_and_skips_one_that_sets_a_buffer():
    from empirical.models import _DRAWING_MODULES

    toy = _Toy()
    redraw(toy, 1)
    assert len(toy.calls) == len(list(toy.modules()))  # the first draw: every module
    assert toy.writes in _DRAWING_MODULES[toy] and toy.random_buffer in _DRAWING_MODULES[toy]
    assert toy.buffer_only not in _DRAWING_MODULES[toy]
    assert toy not in _DRAWING_MODULES[toy]  # the root sets nothing
    toy.calls.clear()
    redraw(toy, 2)
    assert toy.buffer_only not in toy.calls and toy.writes in toy.calls
    assert torch.equal(toy.writes[0].bias, torch.full((3,), 7.0)) and torch.equal(toy.buffer_only.mask, torch.ones(2))
