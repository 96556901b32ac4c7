"""The adapters loop each architecture exactly as the model's own forward runs it, block by block."""

import pytest
import torch

from empirical import adapter_for, load_model, looped_consensus, misalignment
from empirical.adapters import ADAPTERS
from empirical.models import TINY_MODELS, builtin_config

#: (model, attention implementation) pairs supported by transformers for each architecture here.
IMPLEMENTATIONS = [("tiny-gpt2", "eager"), ("tiny-gpt2", "sdpa"), ("tiny-gpt-neo", "eager"),
                   ("tiny-llama", "eager"), ("tiny-llama", "sdpa")]
#: float32 round-off over a few blocks of width 32.
ATOL = 1e-5


def _ids(model, prompts=3, tokens=17, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, model.config.vocab_size, (prompts, tokens), generator=generator)


@pytest.mark.parametrize("name,implementation", IMPLEMENTATIONS)
def test_first_pass_matches_the_models_own_forward(name, implementation):
    model = load_model(name, "random", seed=3, attn_implementation=implementation)
    adapter = adapter_for(model)
    ids = _ids(model)
    E = looped_consensus(adapter, ids, passes=1)
    with torch.no_grad():
        hidden = model(ids, output_hidden_states=True).hidden_states
    # hidden_states: the embeddings, then the output of every block but the last, then the final norm
    reference = torch.stack([misalignment(h) for h in hidden[:-1]], dim=1)
    torch.testing.assert_close(E[:, :-1], reference, atol=ATOL, rtol=0)


@pytest.mark.parametrize("name,implementation", IMPLEMENTATIONS)
def test_attention_implementations_agree(name, implementation):
    ids = _ids(load_model(name, "random", seed=0))
    reference = looped_consensus(adapter_for(load_model(name, "random", seed=5, attn_implementation="eager")), ids, 2)
    other = looped_consensus(adapter_for(load_model(name, "random", seed=5, attn_implementation=implementation)),
                             ids, 2)
    torch.testing.assert_close(other, reference, atol=ATOL, rtol=0)


@pytest.mark.parametrize("name", TINY_MODELS)
def test_no_ffn_block_is_x_plus_attention_of_norm(name):
    model = load_model(name, "random", seed=1)
    adapter = adapter_for(model)
    x = torch.randn(2, 9, adapter.width, generator=torch.Generator().manual_seed(2))
    inputs = adapter.block_inputs(9, x.device, x.dtype)
    block = adapter.blocks[0]
    # zeroing the MLP's output projection turns the full block into the no-FFN block ...
    for parameter_name, parameter in block.named_parameters():
        if "mlp" in parameter_name and ("c_proj" in parameter_name or "down_proj" in parameter_name):
            parameter.data.zero_()
    with torch.no_grad():
        torch.testing.assert_close(adapter.block(0, x, inputs, ffn=False), adapter.block(0, x, inputs), atol=ATOL,
                                   rtol=0)


@pytest.mark.parametrize("name", TINY_MODELS)
def test_no_ffn_differs_from_full_block(name):
    model = load_model(name, "random", seed=1)
    adapter = adapter_for(model)
    x = torch.randn(2, 9, adapter.width, generator=torch.Generator().manual_seed(2))
    inputs = adapter.block_inputs(9, x.device, x.dtype)
    with torch.no_grad():
        difference = (adapter.block(0, x, inputs, ffn=False) - adapter.block(0, x, inputs)).abs().max()
    assert difference > 1e-3


def test_every_architecture_has_a_tiny_configuration():
    assert {builtin_config(name).model_type for name in TINY_MODELS} == set(ADAPTERS)


def test_paper_configurations_are_the_papers_models():
    gpt2 = builtin_config("gpt2-xl")
    neo = builtin_config("EleutherAI/gpt-neo-2.7B")
    assert (gpt2.n_layer, gpt2.n_embd, gpt2.n_head, gpt2.vocab_size) == (48, 1600, 25, 50257)
    assert (neo.num_layers, neo.hidden_size, neo.num_heads, neo.window_size, neo.vocab_size) == (32, 2560, 20, 256, 50257)
    assert neo.attention_layers == ["global", "local"] * 16


def test_unknown_architecture_is_refused():
    with pytest.raises(ValueError, match="has no loop adapter"):
        adapter_for(torch.nn.Linear(2, 2))
