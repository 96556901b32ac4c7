"""Model adapters: one small interface for looping any supported transformer block by block.

The paper's protocol (SPEC section 4) needs, from a causal language model: the embeddings (once),
the blocks in order, the final normalisation, and the no-FFN ablation of a block
(``x + attention(norm_1(x))``). Each architecture answers these through a :class:`LoopAdapter`;
adding an architecture means writing one subclass and registering it in :data:`ADAPTERS`.

Blocks are called directly (not through ``model(...)``), so everything the model's own forward would
supply is built here once per sequence length, in a :class:`BlockInputs`: the causal mask where the
attention implementation needs one, and the rotary position embeddings (cos, sin) of rotary models.
Causality is therefore our responsibility; ``tests/empirical/test_causality.py`` checks it for every
architecture and attention implementation.

Shapes: ``input_ids`` is ``(batch, tokens)``; hidden states ``x`` are ``(batch, tokens, width)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch
from torch import nn


@dataclass
class BlockInputs:
    """What every block call needs besides ``x``, built once per sequence length and device.

    ``attention_mask`` is an additive ``(1, 1, tokens, tokens)`` mask (0 where allowed, the dtype's
    minimum where masked) or ``None`` when the attention implementation is causal by itself;
    ``position_ids`` is ``(1, tokens)``; ``position_embeddings`` the rotary ``(cos, sin)`` or ``None``.
    """

    tokens: int
    attention_mask: torch.Tensor | None
    position_ids: torch.Tensor
    position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None
    _per_device: dict = field(default_factory=dict, repr=False)

    def on(self, device: torch.device) -> "BlockInputs":
        """The same inputs on ``device`` (blocks of a sharded model live on several devices)."""
        if self.position_ids.device == device:
            return self
        if device not in self._per_device:
            move = (lambda t: None if t is None else t.to(device))
            cos_sin = None if self.position_embeddings is None else tuple(t.to(device) for t in self.position_embeddings)
            self._per_device[device] = BlockInputs(self.tokens, move(self.attention_mask), self.position_ids.to(device),
                                                   cos_sin)
        return self._per_device[device]


def causal_additive_mask(tokens: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``(1, 1, tokens, tokens)`` additive mask: 0 on and below the diagonal, the dtype's minimum above it."""
    allowed = torch.ones(tokens, tokens, dtype=torch.bool, device=device).tril()
    mask = torch.zeros(tokens, tokens, dtype=dtype, device=device)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None]


def _first_output(output):
    """Blocks return a tensor (transformers >= 5) or a tuple whose first entry is the hidden state."""
    return output[0] if isinstance(output, (tuple, list)) else output


class LoopAdapter:
    """The interface the loop needs from a causal LM (``model`` is the ``...ForCausalLM``).

    Subclasses set :attr:`architecture` and :attr:`model_types` and implement the abstract methods.
    """

    architecture: ClassVar[str] = ""
    model_types: ClassVar[tuple[str, ...]] = ()
    #: Whether positions enter through rotary embeddings inside every block (vs. added once to the input).
    rotary: ClassVar[bool] = False

    def __init__(self, model: nn.Module) -> None:
        model_type = getattr(model.config, "model_type", None)
        if model_type not in self.model_types:
            raise ValueError(f"{type(self).__name__} needs a model of type {self.model_types}; got {model_type!r}.")
        self.model = model
        self.config = model.config

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

    @property
    def context_length(self) -> int:
        """The longest prompt the model accepts (its position table or rotary range)."""
        return int(self.config.max_position_embeddings)

    @property
    def width(self) -> int:
        return int(self.config.hidden_size)

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Token (+ learned position) embeddings, ``(batch, tokens) -> (batch, tokens, width)``. Done once."""
        raise NotImplementedError

    def block_inputs(self, tokens: int, device: torch.device, dtype: torch.dtype) -> BlockInputs:
        """The mask / positions every block call needs for prompts of ``tokens`` tokens."""
        position_ids = torch.arange(tokens, device=device)[None]
        mask = causal_additive_mask(tokens, dtype, device) if self._needs_explicit_mask() else None
        return BlockInputs(tokens, mask, position_ids, self._rotary(position_ids, device, dtype))

    def block(self, index: int, x: torch.Tensor, inputs: BlockInputs, *, ffn: bool = True) -> torch.Tensor:
        """One block on the residual stream; ``ffn=False`` keeps only ``x + attention(norm_1(x))``."""
        module = self.blocks[index]
        device = _device_of(module, x)
        x = x.to(device)
        inputs = inputs.on(device)
        if ffn:
            return self._full_block(module, x, inputs)
        return x + self._attention(module, self._norm_1(module)(x), inputs)

    def final_norm(self, x: torch.Tensor) -> torch.Tensor:
        """The final normalisation applied after the last block of every pass."""
        module = self._final_norm_module()
        return module(x.to(_device_of(module, x)))

    def embedding_parameters(self) -> list[nn.Parameter]:
        """The embedding tables (for reports on what a draw changed)."""
        raise NotImplementedError

    def expected_init(self, name: str, parameter: torch.Tensor) -> tuple[str, float]:
        """What the architecture's initialiser draws for a parameter: ``("normal", std)`` (mean 0) or
        ``("constant", value)``. Used to verify that a re-draw happened and has the right statistics."""
        std = float(self.config.initializer_range)
        if _is_norm_parameter(name):
            return ("constant", 1.0) if name.endswith("weight") else ("constant", 0.0)
        if name.endswith("bias"):
            return ("constant", 0.0)
        return ("normal", std)

    # -- hooks for subclasses ----------------------------------------------------------------------
    def _needs_explicit_mask(self) -> bool:
        """Eager attention in transformers >= 5 is not causal unless given a mask; SDPA without a mask
        uses ``is_causal``. Architectures with a built-in causal buffer override this."""
        return self.attn_implementation == "eager"

    def _rotary(self, position_ids, device, dtype):
        return None

    def _full_block(self, module, x, inputs: BlockInputs) -> torch.Tensor:
        raise NotImplementedError

    def _norm_1(self, module) -> nn.Module:
        raise NotImplementedError

    def _attention(self, module, h, inputs: BlockInputs) -> torch.Tensor:
        raise NotImplementedError

    def _final_norm_module(self) -> nn.Module:
        raise NotImplementedError


def _device_of(module: nn.Module, fallback: torch.Tensor) -> torch.device:
    parameter = next(module.parameters(), None)
    return fallback.device if parameter is None else parameter.device


def _is_norm_parameter(name: str) -> bool:
    parts = name.split(".")
    owner = parts[-2] if len(parts) >= 2 else ""
    return owner.startswith("ln_") or owner.endswith("norm") or owner.endswith("layernorm")


class _GPTFamilyAdapter(LoopAdapter):
    """What GPT-2 and GPT-Neo share: blocks ``transformer.h``, learned positions ``wpe`` added once to ``wte``,
    LayerNorm ``ln_1`` before attention ``attn``, final LayerNorm ``ln_f``."""

    @property
    def blocks(self):
        return list(self.model.transformer.h)

    def embed(self, input_ids):
        transformer = self.model.transformer
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)[None]
        return transformer.wte(input_ids) + transformer.wpe(positions)

    def _full_block(self, module, x, inputs):
        return _first_output(module(x, attention_mask=inputs.attention_mask, use_cache=False))

    def _norm_1(self, module):
        return module.ln_1

    def _attention(self, module, h, inputs):
        return _first_output(module.attn(h, attention_mask=inputs.attention_mask))

    def _final_norm_module(self):
        return self.model.transformer.ln_f

    def embedding_parameters(self):
        return [self.model.transformer.wte.weight, self.model.transformer.wpe.weight]


class GPT2Adapter(_GPTFamilyAdapter):
    """GPT-2 (``GPT2LMHeadModel``): learned positions added once; LayerNorm; attention ``attn``, MLP ``mlp``."""

    architecture = "gpt2"
    model_types = ("gpt2",)

    @property
    def context_length(self) -> int:
        return int(self.config.n_positions)

    def expected_init(self, name, parameter):
        kind, value = super().expected_init(name, parameter)
        # GPT-2's scaled initialisation of the residual projections: std / sqrt(2 * n_layer).
        if kind == "normal" and name.endswith("c_proj.weight"):
            return ("normal", value / (2 * self.config.n_layer) ** 0.5)
        return kind, value


class GPTNeoAdapter(_GPTFamilyAdapter):
    """GPT-Neo (``GPTNeoForCausalLM``): learned positions; alternating global / local (windowed) attention,
    whose causal and window masks are buffers inside each attention module (so no mask is passed)."""

    architecture = "gpt_neo"
    model_types = ("gpt_neo",)

    def _needs_explicit_mask(self):
        return False


class LlamaAdapter(LoopAdapter):
    """The Llama family (``LlamaForCausalLM``; SmolLM2, Mistral-style models of type "llama"): no position
    table, rotary positions applied inside every attention layer; RMSNorm."""

    architecture = "llama"
    model_types = ("llama",)
    rotary = True

    @property
    def blocks(self):
        return list(self.model.model.layers)

    def embed(self, input_ids):
        return self.model.model.embed_tokens(input_ids)

    def _rotary(self, position_ids, device, dtype):
        rotary = self.model.model.rotary_emb
        probe = torch.zeros(1, dtype=dtype, device=device)
        cos, sin = rotary(probe, position_ids)
        return cos, sin

    def _full_block(self, module, x, inputs):
        return _first_output(module(x, attention_mask=inputs.attention_mask, position_ids=inputs.position_ids,
                                    position_embeddings=inputs.position_embeddings, use_cache=False))

    def _norm_1(self, module):
        return module.input_layernorm

    def _attention(self, module, h, inputs):
        return _first_output(module.self_attn(hidden_states=h, attention_mask=inputs.attention_mask,
                                              position_ids=inputs.position_ids,
                                              position_embeddings=inputs.position_embeddings))

    def _final_norm_module(self):
        return self.model.model.norm

    def embedding_parameters(self):
        return [self.model.model.embed_tokens.weight]


#: model_type -> adapter class. Extend by adding a subclass here.
ADAPTERS: dict[str, type[LoopAdapter]] = {
    model_type: cls for cls in (GPT2Adapter, GPTNeoAdapter, LlamaAdapter) for model_type in cls.model_types
}


def adapter_for(model: nn.Module) -> LoopAdapter:
    """The adapter of a loaded causal LM, chosen by ``model.config.model_type``."""
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type not in ADAPTERS:
        raise ValueError(f"model type {model_type!r} has no loop adapter; supported: {sorted(ADAPTERS)} "
                         "(add a LoopAdapter subclass in empirical/adapters.py).")
    return ADAPTERS[model_type](model)

