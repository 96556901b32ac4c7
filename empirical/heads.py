"""The paper's matrices read off a transformer block: P_eta and U_eta per head, in residual coordinates.

For head eta of a block, with ``W_Q,eta``, ``W_K,eta``, ``W_V,eta`` the ``d_head x d`` rows of the
query, key and value projections and ``W_O,eta`` the ``d x d_head`` columns of the output projection:

* ``P_eta = s W_Q,eta^T W_K,eta`` (d x d, rank <= d_head), ``s`` the model's own attention scaling
  (``1/sqrt(d_head)`` for GPT-2 and Llama, ``1`` for GPT-Neo, which does not scale), so that the
  attention logit of token i on token j is ``z_i^T P_eta z_j`` for the normalised states ``z``
  (plus bias terms where the projections have biases; with rotary positions, Llama's logit is
  ``z_i^T W_Q^T R_{j-i} W_K z_j s``: the P reported is the one without rotation, exact at ``i = j``);
* ``U_eta = W_O,eta W_V,eta`` (d x d, rank <= d_head): the value-output product of the paper's
  ``sum_j alpha_ij U_eta y_j``.

Both are returned as factors ``(left [d, r], right [r, d])`` so that spectra and norms are computed
from r x r products (see :mod:`empirical.hypotheses`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .adapters import LoopAdapter


@dataclass(frozen=True)
class HeadFactors:
    """Per-head factors of one block (float64 numpy).

    ``query``, ``key``, ``value``: ``[heads, d_head, d]`` (key/value repeated per query head for grouped
    attention); ``output``: ``[heads, d, d_head]``; ``scaling`` the factor on the logits; ``biased``
    whether the q/k/v projections carry biases (then the logits are affine, not bilinear, in z).
    """

    query: np.ndarray
    key: np.ndarray
    value: np.ndarray
    output: np.ndarray
    scaling: float
    biased: bool

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


def head_factors(adapter: LoopAdapter, index: int) -> HeadFactors:
    """The per-head factors of block ``index`` of a GPT-2, GPT-Neo or Llama-family model."""
    block = adapter.blocks[index]
    if adapter.architecture == "gpt2":
        attention = block.attn
        width, heads = adapter.width, attention.num_heads
        # Conv1D: y = x W + b with W of shape [d, 3d]; the linear-layer matrix is W^T.
        qkv = _numpy(attention.c_attn.weight).T
        query, key, value = (qkv[i * width:(i + 1) * width] for i in range(3))
        output = _numpy(attention.c_proj.weight).T
        scaling = float(attention.scaling)
        biased = _has_bias(attention.c_attn)
        kv_heads = heads
    elif adapter.architecture == "gpt_neo":
        attention = block.attn.attention
        width, heads = adapter.width, attention.num_heads
        query, key, value = (_numpy(m.weight) for m in (attention.q_proj, attention.k_proj, attention.v_proj))
        output = _numpy(attention.out_proj.weight)
        scaling = 1.0  # GPT-Neo does not scale its attention logits (its eager and flash paths use 1.0).
        biased = False
        kv_heads = heads
    elif adapter.architecture == "llama":
        attention = block.self_attn
        width = adapter.width
        heads = int(adapter.config.num_attention_heads)
        kv_heads = int(adapter.config.num_key_value_heads)
        query, key, value = (_numpy(m.weight) for m in (attention.q_proj, attention.k_proj, attention.v_proj))
        output = _numpy(attention.o_proj.weight)
        scaling = float(attention.scaling)
        biased = _has_bias(attention.q_proj, attention.k_proj, attention.v_proj)
    else:
        raise ValueError(f"architecture {adapter.architecture!r} has no head reader; supported: gpt2, gpt_neo, llama.")
    head_dim = query.shape[0] // heads
    group = heads // kv_heads
    q = query.reshape(heads, head_dim, width)
    k = np.repeat(key.reshape(kv_heads, head_dim, width), group, axis=0)
    v = np.repeat(value.reshape(kv_heads, head_dim, width), group, axis=0)
    o = output.reshape(width, heads, head_dim).transpose(1, 0, 2)
    return HeadFactors(q, k, v, o, scaling, biased)


def layer_value_matrix(factors: HeadFactors) -> np.ndarray:
    """``sum_eta U_eta = W_O W_V`` of the block (d x d): the value matrix seen by equal attention patterns."""
    heads, width, rank = factors.output.shape
    return factors.output.transpose(1, 0, 2).reshape(width, heads * rank) @ factors.value.reshape(heads * rank, width)


def norm_gain(module: nn.Module) -> tuple[str, np.ndarray, np.ndarray | None, float]:
    """``(kind, gain, bias, eps)`` of a normalisation module: ``"layernorm"`` or ``"rmsnorm"``."""
    gain = _numpy(module.weight)
    if isinstance(module, nn.LayerNorm):
        bias = _numpy(module.bias) if module.bias is not None else np.zeros_like(gain)
        return "layernorm", gain, bias, float(module.eps)
    eps = getattr(module, "variance_epsilon", None)
    if eps is None:
        eps = getattr(module, "eps", None)
    if eps is None or getattr(module, "bias", None) is not None:
        raise ValueError(f"normalisation module {type(module).__name__} is neither LayerNorm nor a bias-free RMSNorm.")
    return "rmsnorm", gain, None, float(eps)
