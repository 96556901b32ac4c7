"""Model adapters: one small interface for looping a causal language model block by block.

The paper's protocol (SPEC section 4) needs, from a causal language model: the embeddings (once),
the blocks in order, the final normalisation, and the no-FFN ablation of a block
(``x + attention(norm_1(x))``). Each layout answers these through a :class:`LoopAdapter`:

* :class:`DecoderLayerAdapter` — transformers' shared decoder-layer calling convention
  (``layer(x, attention_mask=..., position_ids=..., position_embeddings=...)``, one model-level rotary
  module), one adapter for Llama (SmolLM2), Mistral, Qwen2, Qwen3, Gemma 3 (text), Phi-3, Phi, OLMo-2
  and GPT-NeoX (Pythia); a :class:`DecoderLayout` per family names its modules.
* :class:`OPTAdapter` — the same convention, but learned positions (offset 2), an optional input
  projection and an optional final norm.
* :class:`GPT2Adapter`, :class:`GPTNeoAdapter`, :class:`GPTJAdapter` — the ``transformer.h`` layout.

Blocks are called directly (not through ``model(...)``), so everything the model's own forward would
supply is built here once per sequence length, in a :class:`BlockInputs`: the causal mask of each
attention kind (full, sliding window), made by transformers' own ``masking_utils`` exactly as the
model's forward makes it, and the rotary position embeddings (cos, sin) from the model's own rotary
module (one per attention kind where the family has several, as Gemma 3). Causality is therefore our
responsibility; ``tests/empirical/test_causality.py`` checks it for every family and attention
implementation.

Shapes: ``input_ids`` is ``(batch, tokens)``; hidden states ``x`` are ``(batch, tokens, width)``.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from typing import ClassVar

import torch
from torch import nn

#: The attention kinds of transformers' ``config.layer_types`` that the adapters build masks for.
FULL = "full_attention"
SLIDING = "sliding_attention"


@dataclass
class BlockInputs:
    """What every block call needs besides ``x``, built once per sequence length and device.

    ``masks`` maps each attention kind (:data:`FULL`, :data:`SLIDING`) to what transformers' masking
    utilities return for it: a ``(1, 1, tokens, tokens)`` mask, or ``None`` when the attention kernel is
    causal by itself (SDPA's ``is_causal``); ``position_ids`` is ``(1, tokens)``; ``rotary`` maps each
    attention kind to the rotary ``(cos, sin)``, each ``(1, tokens, head_dim)``, and is empty for families
    whose positions are a learned table or live inside the attention module.
    """

    tokens: int
    position_ids: torch.Tensor
    masks: dict[str, torch.Tensor | None]
    rotary: dict[str, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    _per_device: dict = field(default_factory=dict, repr=False)

    @property
    def _main_kind(self) -> str:
        return FULL if FULL in self.masks else next(iter(self.masks))

    @property
    def attention_mask(self) -> torch.Tensor | None:
        """The mask of full-attention blocks (of every block, for a family with one attention kind)."""
        return self.masks[self._main_kind]

    @property
    def position_embeddings(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The rotary ``(cos, sin)`` of full-attention blocks, or ``None`` without model-level rotary."""
        return self.rotary.get(self._main_kind) or next(iter(self.rotary.values()), None)

    def on(self, device: torch.device) -> "BlockInputs":
        """The same inputs on ``device`` (blocks of a sharded model live on several devices)."""
        if self.position_ids.device == device:
            return self
        if device not in self._per_device:
            masks = {kind: None if m is None else m.to(device) for kind, m in self.masks.items()}
            rotary = {kind: (cos.to(device), sin.to(device)) for kind, (cos, sin) in self.rotary.items()}
            self._per_device[device] = BlockInputs(self.tokens, self.position_ids.to(device), masks, rotary)
        return self._per_device[device]

    def without_masks(self) -> "BlockInputs":
        """The same positions with every mask dropped: how the authors' script calls blocks (a control)."""
        return BlockInputs(self.tokens, self.position_ids, {kind: None for kind in self.masks}, dict(self.rotary))


@functools.cache
def _no_cache_argument() -> dict[str, None]:
    """The masking utilities' "no key-value cache" argument: ``cache`` from transformers 5.24 on (where
    ``past_key_values`` is deprecated, to be removed in 5.40), ``past_key_values`` before."""
    from transformers.masking_utils import create_causal_mask

    parameters = inspect.signature(create_causal_mask).parameters
    return {"cache": None} if "cache" in parameters else {"past_key_values": None}


def _first_output(output):
    """Blocks return a tensor (transformers >= 5) or a tuple whose first entry is the hidden state."""
    return output[0] if isinstance(output, (tuple, list)) else output


def _is_norm_module(module: nn.Module) -> bool:
    """The modules transformers' ``_init_weights`` treats as norms (by class name, as it does)."""
    name = type(module).__name__
    return isinstance(module, nn.LayerNorm) or "LayerNorm" in name or "RMSNorm" in name


class LoopAdapter:
    """The interface the loop needs from a causal LM (``model`` is the ``...ForCausalLM``).

    Subclasses set :attr:`model_types` and implement the abstract methods; :attr:`architecture` is the
    loaded model's ``config.model_type``.
    """

    model_types: ClassVar[tuple[str, ...]] = ()
    #: Whether positions enter through rotary embeddings inside every block (vs. added once to the input).
    rotary: ClassVar[bool] = False
    #: Attention implementations transformers offers for these families (others are refused on loading).
    attn_implementations: ClassVar[tuple[str, ...]] = ("eager", "sdpa")

    def __init__(self, model: nn.Module) -> None:
        model_type = getattr(model.config, "model_type", None)
        if model_type not in self.model_types:
            raise ValueError(f"{type(self).__name__} needs a model of type {self.model_types}; got {model_type!r}.")
        if not getattr(model.config, "is_causal", True) or getattr(model.config, "use_bidirectional_attention", False):
            raise ValueError(f"model of type {model_type!r} is configured with bidirectional attention "
                             "(is_causal=False or use_bidirectional_attention=True); the loop needs a causal LM.")
        self.model = model
        self.config = model.config
        self.architecture = model_type

    # -- the interface ---------------------------------------------------------------------------
    @property
    def attn_implementation(self) -> str:
        return getattr(self.config, "_attn_implementation", None) or "eager"

    @property
    def blocks(self) -> list[nn.Module]:
        """The blocks in order."""
        raise NotImplementedError

    @property
    def num_layers(self) -> int:
        return len(self.blocks)

    @property
    def vocab_size(self) -> int:
        return int(self.config.vocab_size)

    @classmethod
    def context_length_of(cls, config) -> int:
        """The longest prompt a model of this configuration accepts (its position table or rotary range);
        known before the weights are loaded."""
        return int(config.max_position_embeddings)

    @property
    def context_length(self) -> int:
        return self.context_length_of(self.config)

    @property
    def width(self) -> int:
        return int(self.config.hidden_size)

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Token (+ learned position) embeddings, ``(batch, tokens) -> (batch, tokens, width)``. Done once."""
        raise NotImplementedError

    def attention_kind(self, index: int) -> str:
        """The attention kind of block ``index`` (:data:`FULL` or :data:`SLIDING`), as in the model's forward."""
        return FULL

    def block_inputs(self, tokens: int, device: torch.device, dtype: torch.dtype) -> BlockInputs:
        """The masks / positions every block call needs for prompts of ``tokens`` tokens."""
        from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask

        position_ids = torch.arange(tokens, device=device)[None]
        # the masking utilities read only the batch size, length, dtype and device of the embeddings;
        # a batch of one broadcasts over the prompts
        probe = torch.empty(1, tokens, 0, dtype=dtype, device=device)
        makers = {FULL: create_causal_mask, SLIDING: create_sliding_window_causal_mask}
        kinds = dict.fromkeys(self.attention_kind(i) for i in range(self.num_layers))
        masks = {kind: makers[kind](config=self.config, inputs_embeds=probe, attention_mask=None,
                                    position_ids=position_ids, **_no_cache_argument()) for kind in kinds}
        return BlockInputs(tokens, position_ids, masks, self._rotary(list(kinds), position_ids, probe))

    def block(self, index: int, x: torch.Tensor, inputs: BlockInputs, *, ffn: bool = True) -> torch.Tensor:
        """One block on the residual stream; ``ffn=False`` keeps only its attention sublayer,
        ``x + attention(norm_1(x))`` (see each adapter for what that means in its layout)."""
        module = self.blocks[index]
        device = _device_of(module, x)
        x = x.to(device)
        inputs = inputs.on(device)
        kind = self.attention_kind(index)
        if ffn:
            return self._full_block(module, x, inputs, kind)
        return x + self._attention_sublayer(module, x, inputs, kind)

    def final_norm(self, x: torch.Tensor) -> torch.Tensor:
        """The final normalisation applied after the last block of every pass."""
        module = self._final_norm_module()
        return module(x.to(_device_of(module, x)))

    def zero_embedding_ids(self) -> list[int]:
        """Token ids whose embedding row is the zero vector: padding rows (``padding_idx``), which the
        initialisers zero (random Phi-3 and OLMo-2 keep them zero; tied OPT and Gemma 3 draws fill them
        through the output layer). E (eq. 9) is undefined for a zero token, so prompts never contain them."""
        table = self.model.get_input_embeddings().weight
        return torch.nonzero((table == 0).all(dim=1)).flatten().tolist()

    def initializer_std(self) -> float:
        """The std transformers' ``_init_weights`` draws with (``initializer_range``, or OPT's ``init_std``)."""
        for key in ("initializer_range", "init_std"):
            value = getattr(self.config, key, None)
            if value:
                return float(value)
        raise ValueError(f"model type {self.architecture!r} names no initialiser std (initializer_range or "
                         "init_std) in its configuration, so a weight draw cannot be verified.")

    def expected_init(self, name: str, parameter: torch.Tensor) -> tuple[str, float]:
        """What the architecture's initialiser draws for a parameter: ``("normal", std)`` (mean 0) or
        ``("constant", value)``. Used to verify that a re-draw happened and has the right statistics."""
        owner = self.model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else self.model
        if _is_norm_module(owner):
            return ("constant", self._norm_weight_init()) if name.endswith("weight") else ("constant", 0.0)
        if name.endswith("bias"):
            return ("constant", 0.0)
        return ("normal", self.initializer_std())

    def _norm_weight_init(self) -> float:
        """The constant a norm's weight is initialised to (1; 0 for Gemma's ``x * (1 + weight)`` RMSNorm)."""
        return 1.0

    # -- hooks for subclasses ----------------------------------------------------------------------
    def _rotary(self, kinds: list[str], position_ids, probe) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        return {}

    def _full_block(self, module, x, inputs: BlockInputs, kind: str) -> torch.Tensor:
        raise NotImplementedError

    def _attention_sublayer(self, module, x, inputs: BlockInputs, kind: str) -> torch.Tensor:
        """The attention branch added to the residual stream, ``attention(norm_1(x))``."""
        norm = self._norm_1(module)
        return self._attention(module, x if norm is None else norm(x), inputs, kind)

    def _norm_1(self, module) -> nn.Module | None:
        """The norm applied to the residual stream before attention (``None`` if the layout has none)."""
        raise NotImplementedError

    def _attention(self, module, h, inputs: BlockInputs, kind: str) -> torch.Tensor:
        raise NotImplementedError

    def _final_norm_module(self) -> nn.Module:
        raise NotImplementedError


def _device_of(module: nn.Module, fallback: torch.Tensor) -> torch.device:
    parameter = next(module.parameters(), None)
    return fallback.device if parameter is None else parameter.device


# -- transformers' shared decoder layer --------------------------------------------------------------

@dataclass(frozen=True)
class DecoderLayout:
    """Where a family following transformers' shared decoder-layer convention keeps its modules.

    ``base`` is the attribute of the ``...ForCausalLM`` holding the decoder (with ``layers``,
    ``rotary_emb``, the embedding table ``embed`` and the final norm ``final_norm``); inside a layer,
    ``attention`` is the self-attention module, ``pre_attention_norm`` the norm applied to the residual
    stream before it (``None``: attention reads the raw stream) and ``post_attention_norm`` the norm
    applied to the attention output before it joins the stream (``None``: none).
    """

    base: str = "model"
    embed: str = "embed_tokens"
    final_norm: str = "norm"
    attention: str = "self_attn"
    pre_attention_norm: str | None = "input_layernorm"
    post_attention_norm: str | None = None
    #: The constant the family's norm weights are initialised to.
    norm_weight_init: float = 1.0


#: model_type -> layout. A family with this calling convention needs one line here.
DECODER_LAYOUTS: dict[str, DecoderLayout] = {
    "llama": DecoderLayout(),
    "mistral": DecoderLayout(),
    "qwen2": DecoderLayout(),
    "qwen3": DecoderLayout(),
    "phi3": DecoderLayout(),
    # Phi-1/2: parallel attention and MLP branches off one LayerNorm; final norm ``final_layernorm``.
    "phi": DecoderLayout(final_norm="final_layernorm"),
    # Gemma 3: x + post_attention_layernorm(attn(input_layernorm(x))), then the same around the MLP with
    # pre_/post_feedforward_layernorm; RMSNorm computes x * (1 + weight), weights initialised to 0.
    "gemma3_text": DecoderLayout(post_attention_norm="post_attention_layernorm", norm_weight_init=0.0),
    # OLMo-2: no norm before attention; x + post_attention_layernorm(attn(x)).
    "olmo2": DecoderLayout(pre_attention_norm=None, post_attention_norm="post_attention_layernorm"),
    # GPT-NeoX (Pythia): parallel residual by default (use_parallel_residual).
    "gpt_neox": DecoderLayout(base="gpt_neox", embed="embed_in", final_norm="final_layer_norm",
                              attention="attention"),
}


class DecoderLayerAdapter(LoopAdapter):
    """Every family following transformers' shared decoder-layer convention (see :data:`DECODER_LAYOUTS`).

    Blocks are ``{base}.layers``, called as the model's own forward calls them:
    ``layer(x, attention_mask=masks[kind], position_ids=..., position_embeddings=rotary[kind])``, the
    kind being ``config.layer_types[i]`` where the family has one (Qwen2, Qwen3, Gemma 3), else sliding
    for every layer when ``config.sliding_window`` is set (Mistral, Phi-3), else full. The rotary
    ``(cos, sin)`` come from the model's own ``{base}.rotary_emb`` once per pass; Gemma 3's takes the
    attention kind (its sliding layers use a local base frequency of their own).

    The no-FFN block is ``x + post_attention_norm(attention(pre_attention_norm(x)))`` with absent norms
    left out: the block with its feed-forward sublayer (its norms and MLP) removed. Per family:

    * Llama, Mistral, Qwen2, Qwen3, Phi-3: ``x + attention(input_layernorm(x))``, the paper's form.
    * Gemma 3: ``x + post_attention_layernorm(attention(input_layernorm(x)))``: its "attention
      sublayer" includes the RMSNorm on the attention output (the sandwich norm), as in its forward;
      QK-norm stays inside attention.
    * OLMo-2: ``x + post_attention_layernorm(attention(x))``: attention reads the un-normalised stream.
    * Phi and GPT-NeoX with ``use_parallel_residual`` (the block is ``x + attention(ln(x)) + mlp(ln'(x))``,
      both branches reading the block's input): ``x + attention(input_layernorm(x))``, the block with its
      MLP branch removed; the attention branch is exactly the one in the full block.
    """

    model_types = tuple(DECODER_LAYOUTS)
    rotary = True

    def __init__(self, model: nn.Module) -> None:
        super().__init__(model)
        self.layout = DECODER_LAYOUTS[self.architecture]
        self.base = getattr(model, self.layout.base)
        rotary_module = getattr(self.base, "rotary_emb", None)
        if rotary_module is None:
            raise ValueError(f"model of type {self.architecture!r} has no {self.layout.base}.rotary_emb; "
                             "DecoderLayerAdapter needs the model's own rotary module.")
        self._rotary_module = rotary_module
        self._rotary_per_kind = "layer_type" in inspect.signature(rotary_module.forward).parameters
        layer_types = getattr(self.config, "layer_types", None)
        if layer_types is None:
            kind = SLIDING if getattr(self.config, "sliding_window", None) is not None else FULL
            layer_types = [kind] * self.config.num_hidden_layers
        unknown = set(layer_types) - {FULL, SLIDING}
        if unknown:
            raise ValueError(f"model of type {self.architecture!r} has layer types {sorted(unknown)}; the loop "
                             f"supports {FULL!r} and {SLIDING!r}.")
        self._kinds = list(layer_types)

    def _norm_weight_init(self):
        return self.layout.norm_weight_init

    @property
    def blocks(self):
        return list(self.base.layers[: self.config.num_hidden_layers])

    def attention_kind(self, index):
        return self._kinds[index]

    def embed(self, input_ids):
        return getattr(self.base, self.layout.embed)(input_ids)

    def _rotary(self, kinds, position_ids, probe):
        if self._rotary_per_kind:
            return {kind: self._rotary_module(probe, position_ids, kind) for kind in kinds}
        cos_sin = self._rotary_module(probe, position_ids)
        return {kind: cos_sin for kind in kinds}

    def _full_block(self, module, x, inputs, kind):
        return _first_output(module(x, attention_mask=inputs.masks[kind], position_ids=inputs.position_ids,
                                    position_embeddings=inputs.rotary[kind], use_cache=False))

    def _norm_1(self, module):
        name = self.layout.pre_attention_norm
        return None if name is None else getattr(module, name)

    def _attention_sublayer(self, module, x, inputs, kind):
        out = super()._attention_sublayer(module, x, inputs, kind)
        name = self.layout.post_attention_norm
        return out if name is None else getattr(module, name)(out)

    def _attention(self, module, h, inputs, kind):
        attention = getattr(module, self.layout.attention)
        return _first_output(attention(hidden_states=h, attention_mask=inputs.masks[kind],
                                       position_ids=inputs.position_ids, position_embeddings=inputs.rotary[kind]))

    def _final_norm_module(self):
        return getattr(self.base, self.layout.final_norm)


class OPTAdapter(LoopAdapter):
    """OPT (``OPTForCausalLM``): blocks ``model.decoder.layers`` in the shared calling convention, learned
    positions (``embed_positions``, offset 2) added once, an input projection ``project_in`` where the
    embedding width differs (OPT-350m). The final norm is ``final_layer_norm``, or none for post-LN OPT
    (``do_layer_norm_before=False``; its blocks end in a LayerNorm); ``project_out`` belongs to the LM head
    and is not part of the loop.

    No-FFN: ``x + self_attn(self_attn_layer_norm(x))`` for pre-LN OPT (the paper's form); post-LN OPT has no
    such sublayer and is refused with ``ffn=False``.
    """

    model_types = ("opt",)

    @property
    def decoder(self):
        return self.model.model.decoder

    @property
    def blocks(self):
        return list(self.decoder.layers)

    def embed(self, input_ids):
        decoder = self.decoder
        tokens = decoder.embed_tokens(input_ids)
        if decoder.project_in is not None:
            tokens = decoder.project_in(tokens)
        position_ids = torch.arange(input_ids.shape[1], device=input_ids.device)[None]
        # with position_ids given, the table ignores its padding-mask argument
        return tokens + decoder.embed_positions(None, position_ids=position_ids)

    def block(self, index, x, inputs, *, ffn=True):
        if not ffn and not self.config.do_layer_norm_before:
            raise ValueError("post-LN OPT (do_layer_norm_before=False, e.g. OPT-350m) has no x + attention(norm_1(x)) "
                             "sublayer: its blocks normalise after the residual sum, so the no-FFN ablation is not "
                             "defined for it; run it with the FFN.")
        return super().block(index, x, inputs, ffn=ffn)

    def _full_block(self, module, x, inputs, kind):
        return _first_output(module(x, attention_mask=inputs.masks[kind], position_ids=inputs.position_ids,
                                    use_cache=False))

    def _norm_1(self, module):
        return module.self_attn_layer_norm

    def _attention(self, module, h, inputs, kind):
        return _first_output(module.self_attn(hidden_states=h, attention_mask=inputs.masks[kind],
                                              position_ids=inputs.position_ids))

    def _final_norm_module(self):
        return self.decoder.final_layer_norm or nn.Identity()


# -- the transformer.h layout (GPT-2, GPT-Neo, GPT-J) ------------------------------------------------

class _TransformerHAdapter(LoopAdapter):
    """What GPT-2, GPT-Neo and GPT-J share: blocks ``transformer.h``, token embeddings ``wte`` (plus learned
    positions ``wpe`` where the family has them, added once), LayerNorm ``ln_1`` before attention ``attn``,
    final LayerNorm ``ln_f``. No-FFN: ``x + attn(ln_1(x))``."""

    @property
    def blocks(self):
        return list(self.model.transformer.h)

    def embed(self, input_ids):
        transformer = self.model.transformer
        x = transformer.wte(input_ids)
        if hasattr(transformer, "wpe"):
            x = x + transformer.wpe(torch.arange(input_ids.shape[1], device=input_ids.device)[None])
        return x

    def _rotary(self, kinds, position_ids, probe):
        rotary_module = getattr(self.model.transformer, "rotary_emb", None)
        return {} if rotary_module is None else dict.fromkeys(kinds, rotary_module(probe, position_ids=position_ids))

    def _full_block(self, module, x, inputs, kind):
        return _first_output(module(x, attention_mask=inputs.masks[kind], position_ids=inputs.position_ids,
                                    use_cache=False, **_rotary_argument(inputs, kind)))

    def _norm_1(self, module):
        return module.ln_1

    def _attention(self, module, h, inputs, kind):
        return _first_output(module.attn(h, attention_mask=inputs.masks[kind], position_ids=inputs.position_ids,
                                         **_rotary_argument(inputs, kind)))

    def _final_norm_module(self):
        return self.model.transformer.ln_f


def _rotary_argument(inputs: BlockInputs, kind: str) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """``position_embeddings`` for a block or attention call where the model made its rotary positions once per
    pass; nothing where each attention module makes its own (or the family has none)."""
    return {"position_embeddings": inputs.rotary[kind]} if inputs.rotary else {}


class GPT2Adapter(_TransformerHAdapter):
    """GPT-2 (``GPT2LMHeadModel``): learned positions added once; LayerNorm; attention ``attn``, MLP ``mlp``."""

    model_types = ("gpt2",)

    @classmethod
    def context_length_of(cls, config):
        return int(config.n_positions)

    def expected_init(self, name, parameter):
        kind, value = super().expected_init(name, parameter)
        # GPT-2's scaled initialisation of the residual projections: std / sqrt(2 * n_layer).
        if kind == "normal" and name.endswith("c_proj.weight"):
            return ("normal", value / (2 * self.config.n_layer) ** 0.5)
        return kind, value


class GPTNeoAdapter(_TransformerHAdapter):
    """GPT-Neo (``GPTNeoForCausalLM``): learned positions; alternating global / local (windowed) attention,
    whose causal and window masks are buffers inside each attention module (the causal mask from the
    masking utilities is added on top, as in the model's forward). Eager attention only."""

    model_types = ("gpt_neo",)
    attn_implementations = ("eager",)


class GPTJAdapter(_TransformerHAdapter):
    """GPT-J (``GPTJForCausalLM``): no position table; rotary positions from a sinusoid table, computed once
    per pass by the model's ``transformer.rotary_emb`` and handed to every block (transformers 5.24 here), or,
    in releases without that module, inside each attention module from ``position_ids``; parallel residual,
    ``x + attn(ln_1(x)) + mlp(ln_1(x))``. No-FFN: ``x + attn(ln_1(x))``, the block with its MLP branch
    removed. Eager attention only."""

    model_types = ("gptj",)
    rotary = True
    attn_implementations = ("eager",)


#: model_type -> adapter class. Extend by adding a layout to DECODER_LAYOUTS or a subclass here.
ADAPTERS: dict[str, type[LoopAdapter]] = {
    model_type: cls for cls in (DecoderLayerAdapter, OPTAdapter, GPT2Adapter, GPTNeoAdapter, GPTJAdapter)
    for model_type in cls.model_types
}


def adapter_class(config) -> type[LoopAdapter]:
    """The adapter class of a model configuration (known before the weights are loaded)."""
    model_type = getattr(config, "model_type", None)
    if model_type not in ADAPTERS:
        raise ValueError(f"model type {model_type!r} has no loop adapter; supported: {', '.join(sorted(ADAPTERS))} "
                         "(add a DecoderLayout or a LoopAdapter subclass in empirical/adapters.py).")
    return ADAPTERS[model_type]


def adapter_for(model: nn.Module) -> LoopAdapter:
    """The adapter of a loaded causal LM, chosen by ``model.config.model_type``."""
    return adapter_class(getattr(model, "config", None))(model)
