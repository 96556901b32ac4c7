"""The paper's matrices read off a transformer block: P_eta and U_eta per head, in residual coordinates.

For head eta of a block, with ``W_Q,eta``, ``W_K,eta``, ``W_V,eta`` the ``d_head x d`` rows of the
query, key and value projections and ``W_O,eta`` the ``d x d_head`` columns of the output projection:

* ``P_eta = s W_Q,eta^T W_K,eta`` (d x d, rank <= d_head), ``s`` the model's own attention scaling
  (``1/sqrt(d_head)`` for GPT-2 and Llama, ``1`` for GPT-Neo, which does not scale), so that the
  attention logit of token i on token j is ``z_i^T P_eta z_j`` for the normalised states ``z``
  (plus bias terms where the projections have biases; with rotary positions, Llama's logit is
  ``z_i^T W_Q^T R_{j-i} W_K z_j s``: the P reported is the one without rotation, exact at ``i = j``).
  With QK-norm (Gemma 3, Qwen3, OLMo-2: an RMSNorm on each query and key, gains ``g_q``, ``g_k``) the
  logit is ``s (g_q * W_Q z_i)^T R (g_k * W_K z_j) / (rms(W_Q z_i) rms(W_K z_j))``: the factors carry
  the gains, ``P_eta = s W_Q^T diag(g_q g_k) W_K``, and the per-token divisors, which make the logit
  no fixed bilinear form, are measured on the states by the audit (:func:`qk_norms`);
* ``U_eta = W_O,eta W_V,eta`` (d x d, rank <= d_head): the value-output product of the paper's
  ``sum_j alpha_ij U_eta y_j``.

Both are returned as factors ``(left [d, r], right [r, d])`` so that spectra and norms are computed
from r x r products (see :mod:`empirical.audit.hypotheses`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..adapters import LoopAdapter


@dataclass(frozen=True)
class HeadFactors:
    """Per-head factors of one block (float64 numpy).

    ``query``, ``key``, ``value``: ``[heads, d_head, d]`` (key/value repeated per query head for grouped
    attention); ``output``: ``[heads, d, d_head]``; ``scaling`` the factor on the logits; ``biased``
    whether the q/k/v projections carry biases (then the logits are affine, not bilinear, in z);
    ``kv_heads`` the number of distinct key/value heads (fewer than ``heads`` with grouped-query
    attention); ``qk_norm`` whether queries and keys are normalised (their gains are folded into
    ``query`` and ``key``).
    """

    query: np.ndarray
    key: np.ndarray
    value: np.ndarray
    output: np.ndarray
    scaling: float
    biased: bool
    kv_heads: int
    qk_norm: bool

    @property
    def heads(self) -> int:
        return self.query.shape[0]

    def p_factors(self, head: int) -> tuple[np.ndarray, np.ndarray]:
        """``P_eta = left @ right`` with ``left = s W_Q^T`` ``[d, r]`` and ``right = W_K`` ``[r, d]``."""
        return self.scaling * self.query[head].T, self.key[head]

    def u_factors(self, head: int) -> tuple[np.ndarray, np.ndarray]:
        """``U_eta = left @ right`` with ``left = W_O,eta`` ``[d, r]`` and ``right = W_V,eta`` ``[r, d]``."""
        return self.output[head], self.value[head]


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().to(torch.float64).cpu().numpy()


def _has_bias(*modules: nn.Module) -> bool:
    return any(getattr(module, "bias", None) is not None and bool(torch.any(module.bias != 0)) for module in modules)


def attention_module(adapter: LoopAdapter, index: int) -> nn.Module:
    """The self-attention module of block ``index`` (``attn`` of GPT-2, ``attn.attention`` of GPT-Neo,
    ``self_attn`` of transformers' shared decoder layer)."""
    block = adapter.blocks[index]
    if adapter.architecture == "gpt_neo":
        return block.attn.attention
    for name in ("self_attn", "attn"):
        module = getattr(block, name, None)
        if module is not None:
            return module
    raise ValueError(f"block {index} of a {adapter.architecture!r} model has no self_attn or attn module.")


def output_projection(adapter: LoopAdapter, index: int) -> nn.Module:
    """The attention's output projection ``W_O`` of block ``index`` (its output is what the attention adds
    to the residual stream, unless the block normalises it first)."""
    attention = attention_module(adapter, index)
    for name in ("o_proj", "out_proj", "c_proj", "dense"):
        module = getattr(attention, name, None)
        if module is not None:
            return module
    raise ValueError(f"the attention of a {adapter.architecture!r} model has no output projection "
                     "(o_proj, out_proj, c_proj or dense).")


def qk_norms(adapter: LoopAdapter, index: int) -> tuple[nn.Module, nn.Module] | None:
    """The query and key normalisations of block ``index`` (QK-norm), or ``None`` when the logits use the raw
    projections."""
    attention = attention_module(adapter, index)
    q_norm, k_norm = getattr(attention, "q_norm", None), getattr(attention, "k_norm", None)
    if q_norm is None and k_norm is None:
        return None
    if q_norm is None or k_norm is None:
        raise ValueError(f"block {index} normalises only its {'queries' if k_norm is None else 'keys'}.")
    return q_norm, k_norm


def attention_window(adapter: LoopAdapter, index: int) -> int | None:
    """How many of the latest tokens (itself included) a token of block ``index`` attends to in a windowed
    layer (GPT-Neo's local layers, sliding-window layers), or ``None`` when it attends to every earlier token."""
    attention = attention_module(adapter, index)
    if adapter.architecture == "gpt_neo":
        return int(adapter.config.window_size) if attention.attention_type == "local" else None
    window = getattr(attention, "sliding_window", None)
    if window is None and adapter.attention_kind(index) == "sliding_attention":
        # Mistral and Phi-3 keep the window in the configuration only; the adapter knows the layer's kind.
        window = getattr(adapter.config, "sliding_window", None)
    return None if window is None else int(window)


def _fold_gain(weight: np.ndarray, norm: nn.Module, heads: int, head_dim: int) -> np.ndarray:
    """``diag(g) W`` per head for a QK-norm of gain ``g`` over one head (``[head_dim]``) or all (``[heads * head_dim]``)."""
    _, gain, _, _ = norm_gain(norm)
    if gain.size == head_dim:
        gain = np.tile(gain, heads)
    if gain.size != heads * head_dim:
        raise ValueError(f"a QK-norm gain of size {gain.size} fits neither one head ({head_dim}) nor all "
                         f"{heads} heads ({heads * head_dim}).")
    return gain[:, None] * weight


def head_factors(adapter: LoopAdapter, index: int) -> HeadFactors:
    """The per-head factors of block ``index``: GPT-2, GPT-Neo, or a family with transformers' separate
    ``q_proj``, ``k_proj``, ``v_proj``, ``o_proj`` (Llama, Gemma 3, Mistral, Qwen2, Qwen3, ...)."""
    attention = attention_module(adapter, index)
    width = adapter.width
    norms = None
    if adapter.architecture == "gpt2":
        heads = attention.num_heads
        # Conv1D: y = x W + b with W of shape [d, 3d]; the linear-layer matrix is W^T.
        qkv = _numpy(attention.c_attn.weight).T
        query, key, value = (qkv[i * width:(i + 1) * width] for i in range(3))
        output = _numpy(attention.c_proj.weight).T
        scaling = float(attention.scaling)
        biased = _has_bias(attention.c_attn)
        kv_heads = heads
    elif adapter.architecture == "gpt_neo":
        heads = attention.num_heads
        query, key, value = (_numpy(m.weight) for m in (attention.q_proj, attention.k_proj, attention.v_proj))
        output = _numpy(attention.out_proj.weight)
        scaling = 1.0  # GPT-Neo does not scale its attention logits (its eager and flash paths use 1.0).
        biased = False
        kv_heads = heads
    elif all(hasattr(attention, name) for name in ("q_proj", "k_proj", "v_proj")):
        heads = int(adapter.config.num_attention_heads)
        kv_heads = int(getattr(adapter.config, "num_key_value_heads", None) or heads)
        query, key, value = (_numpy(m.weight) for m in (attention.q_proj, attention.k_proj, attention.v_proj))
        output = _numpy(output_projection(adapter, index).weight)
        # GPT-J divides the logits by scale_attn = sqrt(d_head) instead of multiplying by a scaling.
        scaling = float(attention.scaling) if hasattr(attention, "scaling") else 1.0 / float(attention.scale_attn)
        biased = _has_bias(attention.q_proj, attention.k_proj, attention.v_proj)
        norms = qk_norms(adapter, index)
    else:
        raise ValueError(f"architecture {adapter.architecture!r} has no head reader (its query, key and value "
                         "projections are fused); supported: gpt2, gpt_neo and families with separate q_proj, k_proj, "
                         "v_proj (llama, gemma3_text, mistral, qwen2, qwen3, olmo2, opt, ...).")
    head_dim = query.shape[0] // heads
    if norms is not None:
        query = _fold_gain(query, norms[0], heads, head_dim)
        key = _fold_gain(key, norms[1], kv_heads, head_dim)
    group = heads // kv_heads
    q = query.reshape(heads, head_dim, width)
    k = np.repeat(key.reshape(kv_heads, head_dim, width), group, axis=0)
    v = np.repeat(value.reshape(kv_heads, head_dim, width), group, axis=0)
    o = output.reshape(width, heads, head_dim).transpose(1, 0, 2)
    return HeadFactors(q, k, v, o, scaling, biased, kv_heads, norms is not None)


def layer_value_matrix(factors: HeadFactors) -> np.ndarray:
    """``sum_eta U_eta = W_O W_V`` of the block (d x d): the value matrix seen by equal attention patterns."""
    heads, width, rank = factors.output.shape
    return factors.output.transpose(1, 0, 2).reshape(width, heads * rank) @ factors.value.reshape(heads * rank, width)


#: Relative agreement with which a probe tells an RMSNorm's gain convention (``g = w`` or ``g = 1 + w``):
#: the two differ by 1 in every entry, while the float32 probe is exact to ~1e-7 relative.
GAIN_PROBE_TOL = 1e-4


def norm_gain(module: nn.Module) -> tuple[str, np.ndarray, np.ndarray | None, float]:
    """``(kind, gain, bias, eps)`` of a normalisation module: ``"layernorm"`` or ``"rmsnorm"``.

    An RMSNorm multiplies by its weight ``w`` (Llama) or by ``1 + w`` (Gemma); which one is read off the
    module itself, by normalising a vector of ones (mean square 1), so any RMSNorm class is read right.
    """
    weight = _numpy(module.weight)
    if isinstance(module, nn.LayerNorm):
        bias = _numpy(module.bias) if module.bias is not None else np.zeros_like(weight)
        return "layernorm", weight, bias, float(module.eps)
    eps = getattr(module, "variance_epsilon", None)
    if eps is None:
        eps = getattr(module, "eps", None)
    if eps is None or getattr(module, "bias", None) is not None:
        raise ValueError(f"normalisation module {type(module).__name__} is neither LayerNorm nor a bias-free RMSNorm.")
    with torch.no_grad():
        probe = torch.ones(1, weight.size, dtype=module.weight.dtype, device=module.weight.device)
        applied = _numpy(module(probe))[0] * np.sqrt(1.0 + float(eps))
    for gain in (weight, 1.0 + weight):
        if np.allclose(applied, gain, rtol=GAIN_PROBE_TOL, atol=GAIN_PROBE_TOL):
            return "rmsnorm", gain, None, float(eps)
    raise ValueError(f"normalisation module {type(module).__name__} scales by neither its weight nor 1 + weight.")
