"""``--loop-variant {ours,authors,nanogpt}`` and ``--metric {signed,absolute}`` against loops written in the
authors' style (cyphylab/GPT-Consensus).

The references below are written here, independently of empirical/loop.py, the way the authors' scripts work:

* ``GPTConsensus.py`` (their latest): the prompts from ``random.seed(42)`` and ``randint``; hidden state
  ``wte(ids) + wpe(positions)`` once; every block called on the hidden state alone (``block(hidden)``); after
  each block, per prompt, the tokens normalised and ``1 - mean(y_1 . y_i)``; ``ln_f`` between loops;
* their first script (``GPT-2-Consensus.py``, nanoGPT): a GPT of their own classes (causal attention by
  ``scaled_dot_product_attention(is_causal=True)``, tanh GELU MLP), blocks chained loop after loop without
  ``ln_f``; here with the weights of the same tiny GPT-2 copied into it;
* their older metric: the absolute value of the cosines.

The block calls without a mask are causal for GPT-2 under SDPA and for GPT-Neo (masks are buffers of its
attention), the two used here (tests/empirical/test_causality.py shows eager GPT-2 without a mask is not).
"""

import random

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from empirical.loop import LOOP_VARIANTS
from empirical.models import load_model
from empirical.run import RunSettings, run_experiment

PROMPTS, LENGTH, PASSES, SEED = 3, 16, 3, 5
#: GPT-2 under SDPA (causal without a mask); GPT-Neo has eager attention only (causal by its buffers).
ATTENTION = {"tiny-gpt2": "sdpa", "tiny-gpt-neo": "eager"}


def authors_prompts_transcribed(n, length, vocab_size):
    random.seed(42)
    return [[random.randint(0, vocab_size - 1) for _ in range(length)] for _ in range(n)]


def diagnostic(hidden, absolute=False):
    """E of every prompt, one prompt at a time, as their diagnostics compute it."""
    values = []
    for b in range(hidden.shape[0]):
        hn = hidden[b]
        y1 = hn / hn.norm(dim=1, keepdim=True)
        aux = y1[0] @ y1.T
        values.append(1 - (aux.abs() if absolute else aux).mean())
    return torch.stack(values)


def authors_loop(model, ids, loops, absolute=False):
    """GPTConsensus.py's consensus loop on a transformers GPT-2 / GPT-Neo: (prompts, loops * layers + 1)."""
    t = model.transformer
    with torch.no_grad():
        hidden = t.wte(ids) + t.wpe(torch.arange(ids.shape[1])[None])
        diag = [diagnostic(hidden, absolute)]
        for _ in range(loops):
            for block in t.h:
                out = block(hidden)
                hidden = out[0] if isinstance(out, (tuple, list)) else out
                diag.append(diagnostic(hidden, absolute))
            hidden = t.ln_f(hidden)
    return torch.stack(diag, dim=1)


class _Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.c_attn, self.c_proj, self.heads = nn.Linear(width, 3 * width), nn.Linear(width, width), heads

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (z.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                   for z in self.c_attn(x).split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class _Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = _Attention(width, heads)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"), nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


def nanogpt_from(hf_model):
    """A nanoGPT-style GPT (the authors' first script's classes) holding the weights of a transformers GPT-2
    (its Conv1D weights are the transposes of nn.Linear's)."""
    config, source = hf_model.config, hf_model.transformer
    blocks = nn.ModuleList(_Block(config.n_embd, config.n_head) for _ in source.h)
    with torch.no_grad():
        for mine, theirs in zip(blocks, source.h):
            for a, b in ((mine.ln_1, theirs.ln_1), (mine.ln_2, theirs.ln_2)):
                a.weight.copy_(b.weight), a.bias.copy_(b.bias)
            for a, b in ((mine.attn.c_attn, theirs.attn.c_attn), (mine.attn.c_proj, theirs.attn.c_proj),
                         (mine.mlp[0], theirs.mlp.c_fc), (mine.mlp[2], theirs.mlp.c_proj)):
                a.weight.copy_(b.weight.T), a.bias.copy_(b.bias)
    return blocks


def nanogpt_loop(hf_model, ids, loops, absolute=False):
    """GPT-2-Consensus.py's loop: embeddings once, the blocks chained ``loops`` times, no ln_f in between; E on the
    residual stream after every block."""
    blocks, t = nanogpt_from(hf_model), hf_model.transformer
    with torch.no_grad():
        x = t.wte(ids) + t.wpe(torch.arange(ids.shape[1])[None])
        diag = [diagnostic(x, absolute)]
        for _ in range(loops):
            for block in blocks:
                x = block(x)
                diag.append(diagnostic(x, absolute))
    return torch.stack(diag, dim=1)


def _ours(tmp_path, model, **options):
    settings = RunSettings(model=model, weights="random", seed=SEED, prompts=PROMPTS, length=LENGTH, passes=PASSES,
                           device="cpu", attn_implementation=ATTENTION[model], **options)
    name = "-".join(f"{k}={v}" for k, v in options.items()) or "default"
    return torch.tensor(run_experiment(settings, tmp_path / f"{model}-{name}", progress=False)["E"], dtype=torch.float64)


def _reference_model(model):
    return load_model(model, "random", seed=SEED, attn_implementation=ATTENTION[model])


@pytest.mark.parametrize("model", ["tiny-gpt2", "tiny-gpt-neo"])
def test_the_default_loop_reproduces_the_authors_per_layer_numbers(tmp_path, model):
    reference_model = _reference_model(model)
    ids = torch.tensor(authors_prompts_transcribed(PROMPTS, LENGTH, reference_model.config.vocab_size))
    theirs = authors_loop(reference_model, ids, PASSES).double()
    default = _ours(tmp_path, model)
    assert default.shape == theirs.shape == (PROMPTS, PASSES * reference_model.config.num_hidden_layers + 1)
    torch.testing.assert_close(default, theirs, atol=2e-6, rtol=0)
    # 'authors' is the same arithmetic as the default, bit for bit
    assert torch.equal(_ours(tmp_path, model, loop_variant="authors"), default)
    # the control: their first script's loop (no ln_f between loops) is not what the default computes
    if model == "tiny-gpt2":
        assert (default - nanogpt_loop(reference_model, ids, PASSES).double()).abs().max() > 1e-3


def test_pass_one_matches_the_models_own_hidden_states(tmp_path):
    """Pass 1, blocks 1..L-1, from transformers' output_hidden_states (its last entry is after ln_f, so not used)."""
    reference_model = _reference_model("tiny-gpt2")
    ids = torch.tensor(authors_prompts_transcribed(PROMPTS, LENGTH, reference_model.config.vocab_size))
    with torch.no_grad():
        states = reference_model(ids, output_hidden_states=True).hidden_states
    layers = reference_model.config.num_hidden_layers
    theirs = torch.stack([diagnostic(h) for h in states[:layers]], dim=1).double()
    torch.testing.assert_close(_ours(tmp_path, "tiny-gpt2")[:, :layers], theirs, atol=2e-6, rtol=0)


def test_the_nanogpt_variant_reproduces_their_first_scripts_loop(tmp_path):
    reference_model = _reference_model("tiny-gpt2")
    ids = torch.tensor(authors_prompts_transcribed(PROMPTS, LENGTH, reference_model.config.vocab_size))
    theirs = nanogpt_loop(reference_model, ids, PASSES).double()
    nanogpt = _ours(tmp_path, "tiny-gpt2", loop_variant="nanogpt")
    torch.testing.assert_close(nanogpt, theirs, atol=2e-6, rtol=0)
    # the control: the GPTConsensus loop (ln_f between loops) differs after pass 1
    layers = reference_model.config.num_hidden_layers
    gap = (nanogpt - authors_loop(reference_model, ids, PASSES).double()).abs()
    assert gap[:, : layers + 1].max() < 2e-6 and gap[:, layers + 1:].max() > 1e-3


def test_the_absolute_metric_is_their_older_abs_cosine(tmp_path):
    reference_model = _reference_model("tiny-gpt2")
    ids = torch.tensor(authors_prompts_transcribed(PROMPTS, LENGTH, reference_model.config.vocab_size))
    absolute = _ours(tmp_path, "tiny-gpt2", metric="absolute")
    torch.testing.assert_close(absolute, authors_loop(reference_model, ids, PASSES, absolute=True).double(),
                               atol=2e-6, rtol=0)
    # the control: random embeddings have tokens at negative cosine to the first, so the signed E is larger
    signed = _ours(tmp_path, "tiny-gpt2")
    assert (signed[:, 0] - absolute[:, 0]).min() > 1e-2


def test_variants_are_flags_of_the_run_identity(tmp_path):
    default = RunSettings(model="tiny-gpt2").identity()
    assert "loop_variant" not in default and "metric" not in default  # folders written before the flags resume
    for variant in LOOP_VARIANTS[1:]:
        assert RunSettings(model="tiny-gpt2", loop_variant=variant).identity()["loop_variant"] == variant
    assert RunSettings(model="tiny-gpt2", metric="absolute").identity()["metric"] == "absolute"
    with pytest.raises(ValueError, match="loop-variant"):
        RunSettings(model="tiny-gpt2", loop_variant="theirs")
    with pytest.raises(ValueError, match="metric"):
        RunSettings(model="tiny-gpt2", metric="cosine")


def test_the_command_line_records_the_variant_in_the_manifest(tmp_path):
    import json

    from empirical.__main__ import main

    out = tmp_path / "run"
    assert main(["run", "--model", "tiny-gpt2", "--weights", "random", "--prompts", "2", "--length", "8",
                 "--passes", "1", "--device", "cpu", "--loop-variant", "nanogpt", "--metric", "absolute",
                 "--quiet", "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["settings"]["loop_variant"] == "nanogpt" and manifest["settings"]["metric"] == "absolute"
    assert manifest["settings_identity"]["loop_variant"] == "nanogpt"
