"""The adapters loop every family exactly as the model's own forward runs it, block by block."""

import pytest
import torch

from empirical import adapter_for, authors_prompts, load_model, looped_consensus, misalignment
from empirical.adapters import ADAPTERS, DECODER_LAYOUTS, _is_norm_module, adapter_class
from empirical.loop import NonFiniteActivations, embed, run_pass
from empirical.models import TINY_CONFIGS, TINY_MODELS, builtin_config

#: (tiny model, attention implementation): every implementation transformers offers for each family.
IMPLEMENTATIONS = [pytest.param(name, implementation, id=f"{name}-{implementation}") for name in TINY_MODELS
                   for implementation in ADAPTERS[TINY_CONFIGS[name][0]].attn_implementations]
#: float32 round-off over a few blocks of width 32 (values of order 1, differences of order 1e-7 per op).
ATOL = 1e-5


def _ids(adapter, prompts=3, tokens=17, seed=0):
    """Random prompts without the family's zero-embedding padding ids (E is undefined for a zero token)."""
    return torch.tensor(authors_prompts(prompts, tokens, adapter.vocab_size, seed, adapter.zero_embedding_ids()))


def _blocks_of_the_models_own_forward(model, adapter, ids):
    """``(outputs of every block, output_hidden_states)`` of a plain ``model(ids)`` forward."""
    outputs = []
    hooks = [block.register_forward_hook(lambda module, args, output: outputs.append(
        (output[0] if isinstance(output, tuple) else output).detach())) for block in adapter.blocks]
    try:
        with torch.no_grad():
            hidden = model(ids, output_hidden_states=True).hidden_states
    finally:
        for hook in hooks:
            hook.remove()
    return outputs, hidden


@pytest.mark.parametrize("name,implementation", IMPLEMENTATIONS)
def test_first_pass_reproduces_the_models_own_forward(name, implementation):
    model = load_model(name, "random", seed=3, attn_implementation=implementation)
    adapter = adapter_for(model)
    ids = _ids(adapter)
    outputs, hidden = _blocks_of_the_models_own_forward(model, adapter, ids)
    layers = adapter.num_layers
    # output_hidden_states: the embeddings, the output of every block but the last, then the final norm
    # of the last block's output
    assert len(outputs) == layers and len(hidden) == layers + 1

    x, e0 = embed(adapter, ids)
    torch.testing.assert_close(x, hidden[0], atol=ATOL, rtol=0)
    inputs = adapter.block_inputs(ids.shape[1], x.device, x.dtype)
    with torch.no_grad():
        for index in range(layers):
            x = adapter.block(index, x, inputs)
            torch.testing.assert_close(x, outputs[index], atol=ATOL, rtol=0, msg=lambda m: f"block {index}: {m}")
            if index < layers - 1:
                torch.testing.assert_close(x, hidden[index + 1], atol=ATOL, rtol=0)
    # the loop's own pass: same states, so the same E after every block, and the final norm's output
    result = run_pass(adapter, embed(adapter, ids)[0], inputs)
    torch.testing.assert_close(result.hidden, hidden[-1], atol=ATOL, rtol=0)
    reference = torch.stack([misalignment(h) for h in outputs])
    torch.testing.assert_close(result.E, reference, atol=ATOL, rtol=0)
    torch.testing.assert_close(e0, misalignment(hidden[0]), atol=ATOL, rtol=0)


def test_control_a_block_with_the_wrong_mask_kind_departs_from_the_forward():
    """Negative control of the test above: Gemma 3's sliding block given the full-attention mask (the
    prompts are longer than its window) no longer reproduces the model's forward."""
    model = load_model("tiny-gemma3", "random", seed=3, attn_implementation="eager")
    adapter = adapter_for(model)
    ids = _ids(adapter)
    outputs, _ = _blocks_of_the_models_own_forward(model, adapter, ids)
    x, _ = embed(adapter, ids)
    inputs = adapter.block_inputs(ids.shape[1], x.device, x.dtype)
    assert adapter.attention_kind(0) == "sliding_attention"
    inputs.masks["sliding_attention"] = inputs.masks["full_attention"]
    with torch.no_grad():
        difference = (adapter.block(0, x, inputs) - outputs[0]).abs().max()
    assert difference > 1e-3


@pytest.mark.parametrize("name,implementation", [p for p in IMPLEMENTATIONS if p.values[1] != "eager"])
def test_attention_implementations_agree(name, implementation):
    """Every non-eager implementation gives eager's E over two passes."""
    ids = _ids(adapter_for(load_model(name, "random", seed=0)))
    reference = looped_consensus(adapter_for(load_model(name, "random", seed=5, attn_implementation="eager")), ids, 2)
    other = looped_consensus(adapter_for(load_model(name, "random", seed=5, attn_implementation=implementation)),
                             ids, 2)
    torch.testing.assert_close(other, reference, atol=ATOL, rtol=0)


#: The output projection of each family's feed-forward sublayer (zeroed: the FFN adds nothing).
FFN_OUTPUT = ("mlp.c_proj", "mlp.down_proj", "mlp.fc2", "mlp.fc_out", "mlp.dense_4h_to_h", "fc2")


@pytest.mark.parametrize("name,implementation", IMPLEMENTATIONS)
def test_no_ffn_block_is_the_block_with_its_ffn_silenced(name, implementation):
    """Under every attention implementation: eager's explicit causal mask must reach the attention sublayer too."""
    model = load_model(name, "random", seed=1, attn_implementation=implementation)
    adapter = adapter_for(model)
    x = torch.randn(2, 9, adapter.width, generator=torch.Generator().manual_seed(2))
    inputs = adapter.block_inputs(9, x.device, x.dtype)
    block = adapter.blocks[0]
    # zeroing the FFN's output projection (weight and bias) turns the full block into the no-FFN block ...
    silenced = [p for n, p in block.named_parameters() if n.rsplit(".", 1)[0] in FFN_OUTPUT]
    assert silenced, f"{name}: no FFN output projection found among {FFN_OUTPUT}"
    with torch.no_grad():
        for parameter in silenced:
            parameter.zero_()
        torch.testing.assert_close(adapter.block(0, x, inputs, ffn=False), adapter.block(0, x, inputs), atol=ATOL,
                                   rtol=0)


@pytest.mark.parametrize("name", TINY_MODELS)
def test_no_ffn_differs_from_full_block(name):
    """... and the control: with the FFN intact, the two differ."""
    model = load_model(name, "random", seed=1)
    adapter = adapter_for(model)
    x = torch.randn(2, 9, adapter.width, generator=torch.Generator().manual_seed(2))
    inputs = adapter.block_inputs(9, x.device, x.dtype)
    with torch.no_grad():
        difference = (adapter.block(0, x, inputs, ffn=False) - adapter.block(0, x, inputs)).abs().max()
    assert difference > 1e-3


def test_every_family_has_a_tiny_configuration():
    assert {builtin_config(name).model_type for name in TINY_MODELS} == set(ADAPTERS)


def test_the_generic_adapter_covers_the_shared_decoder_families():
    assert set(DECODER_LAYOUTS) >= {"llama", "mistral", "qwen2", "qwen3", "gemma3_text", "phi3", "olmo2"}


def test_paper_configurations_are_the_papers_models():
    gpt2 = builtin_config("gpt2-xl")
    neo = builtin_config("EleutherAI/gpt-neo-2.7B")
    assert (gpt2.n_layer, gpt2.n_embd, gpt2.n_head, gpt2.vocab_size) == (48, 1600, 25, 50257)
    assert (neo.num_layers, neo.hidden_size, neo.num_heads, neo.window_size, neo.vocab_size) == (32, 2560, 20, 256, 50257)
    assert neo.attention_layers == ["global", "local"] * 16


def test_unknown_family_is_refused_naming_the_supported_ones():
    from transformers import AutoConfig

    config = AutoConfig.for_model("bloom")
    with pytest.raises(ValueError, match="model type 'bloom' has no loop adapter; supported: .*gemma3_text.*opt"):
        adapter_class(config)
    with pytest.raises(ValueError, match="has no loop adapter"):
        adapter_for(torch.nn.Linear(2, 2))


def test_inputs_without_masks_drop_every_mask_and_keep_the_positions():
    """The authors' way of calling blocks (the causality control): the same tokens, positions and rotary
    (cos, sin) for every attention kind, every mask None; the inputs it came from keep their masks."""
    adapter = adapter_for(load_model("tiny-gemma3", "random", seed=0, attn_implementation="eager"))
    inputs = adapter.block_inputs(9, torch.device("cpu"), torch.float32)
    assert set(inputs.masks) == {"full_attention", "sliding_attention"} and set(inputs.rotary) == set(inputs.masks)
    bare = inputs.without_masks()
    assert bare.tokens == inputs.tokens == 9
    assert torch.equal(bare.position_ids, inputs.position_ids)
    assert bare.masks == {"full_attention": None, "sliding_attention": None}
    assert bare.rotary.keys() == inputs.rotary.keys()
    for kind, (cos, sin) in inputs.rotary.items():
        assert bare.rotary[kind][0] is cos and bare.rotary[kind][1] is sin
    assert all(mask is not None for mask in inputs.masks.values())


def test_opt_350m_layout_with_an_input_projection_and_post_ln_blocks_reproduces_the_forward():
    """OPT-350m's shape (embeddings narrower than the blocks, ``project_in``; post-LN blocks, no final norm): the
    embeddings, every block and the (identity) final norm as in the model's own forward; the no-FFN ablation is
    refused for it, the full block is not."""
    from transformers import AutoModelForCausalLM

    config = builtin_config("tiny-opt")
    config.word_embed_proj_dim, config.do_layer_norm_before = 16, False
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    adapter = adapter_for(model)
    assert adapter.decoder.project_in is not None and adapter.decoder.final_layer_norm is None
    ids = _ids(adapter)
    outputs, hidden = _blocks_of_the_models_own_forward(model, adapter, ids)
    x, _ = embed(adapter, ids)
    torch.testing.assert_close(x, hidden[0], atol=ATOL, rtol=0)
    inputs = adapter.block_inputs(ids.shape[1], x.device, x.dtype)
    with torch.no_grad():
        for index in range(adapter.num_layers):
            x = adapter.block(index, x, inputs)
            torch.testing.assert_close(x, outputs[index], atol=ATOL, rtol=0)
        torch.testing.assert_close(adapter.final_norm(x), outputs[-1], atol=0, rtol=0)
        with pytest.raises(ValueError, match="post-LN OPT"):
            adapter.block(0, x, inputs, ffn=False)


def test_norm_modules_are_recognised_as_transformers_initialiser_does():
    """By class: nn.LayerNorm and its subclasses, and any class named like a LayerNorm or an RMSNorm (OLMo's own
    LayerNorm is not an nn.LayerNorm); a linear layer is not a norm."""
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    from transformers.models.olmo.modeling_olmo import OlmoLayerNorm

    assert not isinstance(OlmoLayerNorm(8), torch.nn.LayerNorm)
    assert all(_is_norm_module(m) for m in (torch.nn.LayerNorm(8), OlmoLayerNorm(8), LlamaRMSNorm(8)))
    assert not _is_norm_module(torch.nn.Linear(8, 8))


def _by_hand(adapter, ids, passes, ffn, loop_variant="ours", metric="signed"):
    """E of ``passes`` looped passes from embed and run_pass: the embeddings, then every block of each pass."""
    x, e0 = embed(adapter, ids, metric=metric)
    inputs = adapter.block_inputs(ids.shape[1], x.device, x.dtype)
    columns = [e0[:, None]]
    for k in range(passes):
        result = run_pass(adapter, x, inputs, ffn=ffn, pass_index=k, loop_variant=loop_variant, metric=metric)
        x = result.hidden
        columns.append(result.E.T)
    return torch.cat(columns, dim=1)


def test_looped_consensus_feeds_each_pass_its_predecessors_output():
    """E after the embeddings and after every block of every pass, each pass fed the last one's final-norm output;
    with the FFN unless ``ffn=False``; ``before_pass(k)`` called before pass k = 0, 1, ...; one pass suffices.
    In bfloat16, so the masks and rotary (cos, sin) must be built in the model's dtype."""
    adapter = adapter_for(load_model("tiny-llama", "random", seed=4, dtype=torch.bfloat16, attn_implementation="eager"))
    ids = _ids(adapter)
    layers = adapter.num_layers
    calls = []
    E = looped_consensus(adapter, ids, 3, before_pass=calls.append)
    assert calls == [0, 1, 2] and E.shape == (ids.shape[0], 3 * layers + 1)
    torch.testing.assert_close(E, _by_hand(adapter, ids, 3, ffn=True), atol=0, rtol=0)
    without = looped_consensus(adapter, ids, 1, ffn=False)
    torch.testing.assert_close(without, _by_hand(adapter, ids, 1, ffn=False), atol=0, rtol=0)
    assert (without - E[:, :layers + 1]).abs().max() > 1e-3  # control: the FFN changes E
    with pytest.raises(ValueError, match="passes=0 must be at least 1"):
        looped_consensus(adapter, ids, 0)


@pytest.mark.parametrize("loop_variant, metric", [("nanogpt", "signed"), ("ours", "absolute")])
def test_looped_consensus_passes_its_loop_variant_and_metric_to_every_step(loop_variant, metric):
    """The embeddings' E and every pass take the variant and metric given; control: each changes E from the
    default's (ours, signed): nanogpt from the second pass on (no final norm between passes), |cos| everywhere."""
    adapter = adapter_for(load_model("tiny-llama", "random", seed=4, attn_implementation="eager"))
    ids = _ids(adapter)
    E = looped_consensus(adapter, ids, 2, loop_variant=loop_variant, metric=metric)
    torch.testing.assert_close(E, _by_hand(adapter, ids, 2, True, loop_variant, metric), atol=0, rtol=0)
    default = looped_consensus(adapter, ids, 2)
    changed = (E - default).abs().amax(dim=0)
    layers = adapter.num_layers
    assert changed[layers + 1:].min() > 1e-4  # every block of the second pass
    if metric != "signed":
        assert changed[:layers + 1].min() > 1e-4  # the embeddings' E and the first pass's too


def test_looped_consensus_builds_the_masks_on_the_embeddings_device(monkeypatch):
    adapter = adapter_for(load_model("tiny-llama", "random", seed=4, attn_implementation="eager"))
    asked = []
    build = adapter.block_inputs
    monkeypatch.setattr(adapter, "block_inputs", lambda tokens, device, dtype: asked.append((tokens, device, dtype))
                        or build(tokens, device, dtype))
    ids = _ids(adapter)
    looped_consensus(adapter, ids, 1)
    assert asked == [(ids.shape[1], torch.device("cpu"), next(adapter.model.parameters()).dtype)]


def test_non_finite_activations_name_the_pass_and_block_they_appear_in():
    """A NaN weight set before the second pass: the error names pass 2, block 1, and its measurement (the
    second pass's first, after the embeddings' and the first pass's)."""
    adapter = adapter_for(load_model("tiny-llama", "random", seed=4))

    def poison(k):
        if k == 1:
            adapter.blocks[0].mlp.down_proj.weight.fill_(float("nan"))

    with pytest.raises(NonFiniteActivations, match=f"in pass 2 \\(block 1, measurement {adapter.num_layers + 1},"):
        looped_consensus(adapter, _ids(adapter), 2, before_pass=poison)


def test_a_decoder_model_without_its_rotary_module_is_refused_clearly():
    model = load_model("tiny-llama", "random")
    del model.model.rotary_emb
    with pytest.raises(ValueError, match="has no model.rotary_emb; DecoderLayerAdapter needs"):
        adapter_for(model)


def test_a_bare_pass_measures_nothing_and_reaches_the_same_state():
    """``measure=False`` (the benchmark's loop): E of shape (0, prompts), the same final-norm output."""
    adapter = adapter_for(load_model("tiny-llama", "random", seed=4))
    ids = _ids(adapter)
    x, _ = embed(adapter, ids)
    inputs = adapter.block_inputs(ids.shape[1], x.device, x.dtype)
    measured, bare = run_pass(adapter, x, inputs), run_pass(adapter, x, inputs, measure=False)
    assert measured.E.shape == (adapter.num_layers, ids.shape[0]) and bare.E.shape == (0, ids.shape[0])
    torch.testing.assert_close(bare.hidden, measured.hidden, atol=0, rtol=0)


def test_a_one_block_model_loops_and_a_nan_is_named_in_pass_1_by_default():
    from transformers import AutoModelForCausalLM

    config = builtin_config("tiny-llama")
    config.num_hidden_layers = 1
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        adapter = adapter_for(AutoModelForCausalLM.from_config(config).eval())
    ids = _ids(adapter)
    x, _ = embed(adapter, ids)
    inputs = adapter.block_inputs(ids.shape[1], x.device, x.dtype)
    assert run_pass(adapter, x, inputs).E.shape == (1, ids.shape[0])
    with torch.no_grad():
        adapter.blocks[0].mlp.down_proj.weight.fill_(float("nan"))
    with pytest.raises(NonFiniteActivations, match=r"in pass 1 \(block 1, measurement 1,"):
        run_pass(adapter, x, inputs)


def test_embed_takes_prompts_up_to_the_context_and_names_non_finite_embeddings():
    adapter = adapter_for(load_model("tiny-llama", "random", seed=4))
    n = adapter.context_length
    ids = torch.tensor(authors_prompts(2, n, adapter.vocab_size, 0, adapter.zero_embedding_ids()))
    assert embed(adapter, ids)[0].shape == (2, n, adapter.width)  # exactly the context: accepted
    with pytest.raises(ValueError, match=f"prompts of {n + 1} tokens are longer"):
        embed(adapter, torch.cat([ids, ids[:, :1]], dim=1))
    with torch.no_grad():
        adapter.model.get_input_embeddings().weight[int(ids[1, 3])] = float("nan")
    with pytest.raises(NonFiniteActivations, match=r"in the embeddings \(block 1, measurement 1, prompt 1\)"):
        embed(adapter, ids)


# -- sharded models: blocks on several devices ---------------------------------------------------------------------
#: PyTorch's meta device (tensors with a shape and a device, no data) stands in for a second device on this
#: CPU-only machine: an operation mixing a meta tensor with a CPU one fails, so a block or an input left on the
#: wrong device shows.
META = torch.device("meta")
#: One family per adapter class: the generic decoder layer (rotary, full and sliding attention), OPT, transformer.h.
SHARDED = ["tiny-gemma3", "tiny-opt", "tiny-gpt2"]


@pytest.mark.parametrize("name", SHARDED)
def test_each_block_runs_on_the_device_of_its_weights(name):
    """Block 1 and the final norm moved to another device: the stream and the block's inputs follow each block's
    weights there (with and without FFN), and block 0 stays where it was."""
    adapter = adapter_for(load_model(name, "random", seed=3, attn_implementation="eager"))
    ids = _ids(adapter)
    x, _ = embed(adapter, ids)
    inputs = adapter.block_inputs(ids.shape[1], x.device, x.dtype)
    adapter.blocks[1].to(META)
    adapter._final_norm_module().to(META)
    with torch.no_grad():
        first = adapter.block(0, x, inputs)
        second = adapter.block(1, first, inputs)
        attention_only = adapter.block(1, first, inputs, ffn=False)
        normed = adapter.final_norm(first)
    assert first.device.type == "cpu" and torch.isfinite(first).all()
    assert second.device == attention_only.device == normed.device == META
    assert second.shape == attention_only.shape == normed.shape == x.shape


@pytest.mark.parametrize("name", SHARDED)
def test_a_model_on_another_device_gets_its_positions_masks_and_embeddings_there(name, monkeypatch):
    """The whole model on another device: positions, rotary and embeddings are made there, and transformers'
    masking utilities are asked for masks there (recorded: they cannot run on the meta device, which has no
    values for their checks)."""
    import transformers.masking_utils as masking

    asked = []
    for maker in ("create_causal_mask", "create_sliding_window_causal_mask"):
        monkeypatch.setattr(masking, maker, lambda **arguments: asked.append(arguments))
    adapter = adapter_for(load_model(name, "random", seed=3, attn_implementation="eager"))
    adapter.model.to(META)
    inputs = adapter.block_inputs(9, META, torch.float32)
    assert asked and all(a["inputs_embeds"].device == a["position_ids"].device == META for a in asked)
    assert all(a["inputs_embeds"].shape[:2] == (1, 9) and a["position_ids"] is inputs.position_ids for a in asked)
    assert inputs.position_ids.device == META and inputs.position_ids.shape == (1, 9)
    assert all(c.device == s.device == META for c, s in inputs.rotary.values())
    # every lookup (tokens, learned positions) gets its indices on its table's device, as an accelerator demands
    # (neither the CPU nor the meta device checks an embedding's index device: recorded, not left to fail)
    lookups, lookup = [], torch.nn.functional.embedding
    monkeypatch.setattr(torch.nn.functional, "embedding", lambda ids, weight, *args, **kwargs: lookups.append(
        (ids.device, weight.device)) or lookup(ids, weight, *args, **kwargs))
    assert adapter.embed(torch.zeros((2, 9), dtype=torch.long, device=META)).shape == (2, 9, adapter.width)
    assert lookups and all(ids == table == META for ids, table in lookups), lookups


def test_block_inputs_move_to_another_device_once_and_whole():
    adapter = adapter_for(load_model("tiny-gemma3", "random", seed=0, attn_implementation="eager"))
    inputs = adapter.block_inputs(9, torch.device("cpu"), torch.float32)
    assert inputs.on(torch.device("cpu")) is inputs  # already there: no copy
    moved = inputs.on(META)
    assert moved is inputs.on(META)  # built once per device
    assert moved.tokens == 9 and moved.position_ids.device == META and moved.position_ids.shape == (1, 9)
    assert set(moved.masks) == set(inputs.masks) == {"full_attention", "sliding_attention"}
    for kind, mask in inputs.masks.items():
        assert mask is not None and moved.masks[kind].device == META and moved.masks[kind].shape == mask.shape
    assert set(moved.rotary) == set(inputs.rotary)
    for kind, (cos, sin) in inputs.rotary.items():
        assert moved.rotary[kind][0].device == moved.rotary[kind][1].device == META
        assert moved.rotary[kind][0].shape == cos.shape and moved.rotary[kind][1].shape == sin.shape
    sdpa = adapter_for(load_model("tiny-gemma3", "random", seed=0, attn_implementation="sdpa"))
    causal_kernel = sdpa.block_inputs(9, torch.device("cpu"), torch.float32)
    if any(m is None for m in causal_kernel.masks.values()):  # SDPA's is_causal: no mask to move, None stays None
        assert all((m is None) == (causal_kernel.masks[k] is None) for k, m in causal_kernel.on(META).masks.items())


@pytest.mark.parametrize("setting", [{"is_causal": False}, {"use_bidirectional_attention": True}])
def test_a_bidirectional_configuration_is_refused(setting):
    model = load_model("tiny-llama", "random")
    for key, value in setting.items():
        setattr(model.config, key, value)
    with pytest.raises(ValueError, match="bidirectional attention .* the loop needs a causal LM"):
        adapter_for(model)


def test_an_unknown_layer_type_is_refused_naming_it():
    model = load_model("tiny-gemma3", "random")
    model.config.layer_types = ["full_attention", "chunked_attention"] + model.config.layer_types[2:]
    with pytest.raises(ValueError, match=r"layer types \['chunked_attention'\]; the loop supports"):
        adapter_for(model)


def test_zero_embedding_ids_are_the_rows_that_are_zero_throughout():
    adapter = adapter_for(load_model("tiny-llama", "random", seed=0))
    table = adapter.model.get_input_embeddings().weight
    with torch.no_grad():
        table[3] = 0.0
        table[7] = 0.0
        table[5, 0] = 0.0  # one zero entry does not make a zero row
        table[6] = 1.0  # nor does a constant row
    assert adapter.zero_embedding_ids() == [3, 7]
