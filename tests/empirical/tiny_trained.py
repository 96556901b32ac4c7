"""Tiny "trained" GPT-2 and GPT-Neo checkpoints with weights set by hand, and a temporary Hugging Face cache.

The verdicts on trained GPT-2 XL / GPT-Neo 2.7B are tested offline by saving these under the paper's hub
ids in a hub-layout cache (``models--gpt2-xl/snapshots/<rev>/``, ``refs/main``) under ``tmp_path``.
Kinds of weights (every block the same; Q = K = 0, so attention averages the causal prefix uniformly):

* ``collapse``: ``W_V = I``, ``W_O = 4 I`` -- each token moves towards the mean of the tokens before it,
  so E falls fast; the MLP adds nothing.
* ``still``: ``W_V = W_O = 0`` and a zero MLP -- every block is the identity (the residual stream
  passes unchanged): a deliberately non-collapsing control, E stays where it starts.
* MLPs on top of ``collapse``: ``push`` adds one fixed direction to every token (the FFN speeds the
  alignment), ``echo`` adds ``4 LN(x)``, each token's own direction (the FFN slows it).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, GPT2Config, GPTNeoConfig

from empirical.decision import CollapseRule

WIDTH = 32
#: Small enough for the fast test suite: 4 prompts (the rate CIs are over prompts), 16 tokens; 16 passes, the
#: horizon of the tests' collapse test (RULE): the shortest horizon whose grid leaves every cell a window of at
#: least 4 passes (the halved horizon, 8 passes, has a window of 4). The identity blocks run to the doubled horizon
#: (32 passes, milliseconds each); the collapsing models stop once every window's later half is at the floor.
BUDGET = dict(prompts=4, length=16, passes=16)
RULE = CollapseRule(horizon=BUDGET["passes"])
#: A fixed commit hash for the fake snapshots (the hub names snapshot folders by commit).
REVISION = "0123456789abcdef0123456789abcdef01234567"


def _config(family: str, heads: int):
    if family == "gpt2":
        return GPT2Config(vocab_size=97, n_positions=64, n_embd=WIDTH, n_layer=3, n_head=heads, resid_pdrop=0.0,
                          embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    return GPTNeoConfig(vocab_size=97, max_position_embeddings=64, hidden_size=WIDTH, num_layers=4, num_heads=heads,
                        attention_types=[[["global", "local"], 2]], window_size=5, embed_dropout=0.0,
                        attention_dropout=0.0, resid_dropout=0.0, bos_token_id=0, eos_token_id=0)


@torch.no_grad()
def tiny_model(family: str, attention: str = "collapse", mlp: str = "none", *, heads: int = 4, value_gain: float = 4.0):
    """A tiny GPT-2 (``family="gpt2"``) or GPT-Neo (``"gpt-neo"``) with the weights of the module docstring
    (``attention``: collapse / still; ``mlp``: none / push / echo). Embeddings: the initialiser's, seed 0."""
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(_config(family, heads)).eval()
    d, eye = WIDTH, torch.eye(WIDTH)
    value, out = (eye, value_gain * eye) if attention == "collapse" else (torch.zeros(d, d), torch.zeros(d, d))
    generator = torch.Generator().manual_seed(1)
    direction = torch.randn(d, generator=generator)
    direction = (direction - direction.mean()) / (direction - direction.mean()).norm() * math.sqrt(d)
    for block in model.transformer.h:
        if family == "gpt2":  # Conv1D: y = x W + b, W is (in, out)
            block.attn.c_attn.weight.zero_()
            block.attn.c_attn.bias.zero_()
            block.attn.c_attn.weight[:, 2 * d:] = value
            block.attn.c_proj.weight.copy_(out.T)
            block.attn.c_proj.bias.zero_()
            fc, proj = block.mlp.c_fc.weight, block.mlp.c_proj.weight  # (d, 4d), (4d, d)
            fc_in_out = lambda m: fc.copy_(m.T)  # noqa: E731  m is (4d, d) as for nn.Linear
            proj_in_out = lambda m: proj.copy_(m.T)  # noqa: E731  m is (d, 4d)
        else:  # nn.Linear: y = x W^T + b, W is (out, in)
            attn = block.attn.attention
            attn.q_proj.weight.zero_()
            attn.k_proj.weight.zero_()
            attn.v_proj.weight.copy_(value)
            attn.out_proj.weight.copy_(out)
            attn.out_proj.bias.zero_()
            fc_in_out = block.mlp.c_fc.weight.copy_
            proj_in_out = block.mlp.c_proj.weight.copy_
        block.mlp.c_fc.bias.zero_()
        block.mlp.c_proj.bias.zero_()
        hidden = torch.zeros(4 * d, d)
        projection = torch.zeros(d, 4 * d)
        if mlp == "push":
            block.mlp.c_proj.bias.copy_(direction)
        elif mlp == "echo":  # gelu(z) - gelu(-z) = z: the MLP returns 4 z, z = LN(x) of the token itself
            hidden[:d], hidden[d:2 * d] = eye, -eye
            projection[:, :d], projection[:, d:2 * d] = 4 * eye, -4 * eye
        elif mlp != "none":
            raise ValueError(f"mlp={mlp!r} must be none, push or echo.")
        fc_in_out(hidden)
        proj_in_out(projection)
    return model


def save_to_hub_cache(model, repo_id: str, cache: Path) -> Path:
    """Save ``model`` as the hub's cache holds ``repo_id`` at revision ``main``; return the snapshot folder."""
    repo = Path(cache) / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / REVISION
    model.save_pretrained(snapshot)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(REVISION)
    return snapshot
