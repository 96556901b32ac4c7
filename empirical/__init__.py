"""Looping real transformers for many passes and measuring token consensus after every block.

The paper's section 6.2 (ICML 5.2) as a tool: model adapters (:mod:`empirical.adapters`), model
loading and seeded weight draws (:mod:`empirical.models`), the misalignment E of eq. 9
(:mod:`empirical.consensus`), the looped forward (:mod:`empirical.loop`), the authors' prompts
(:mod:`empirical.prompts`), the precision floor of E (:mod:`empirical.floor`), the collapse rule
(:mod:`empirical.decision`) and the figures of E over depth (:mod:`empirical.figures`); the hypothesis audit is the subpackage :mod:`empirical.audit`. The command line is
``python -m empirical`` (:mod:`empirical.cli`).
"""

from .adapters import (ADAPTERS, DECODER_LAYOUTS, BlockInputs, DecoderLayerAdapter, DecoderLayout, GPT2Adapter, GPTJAdapter,
                       GPTNeoAdapter, LoopAdapter, OPTAdapter, adapter_class, adapter_for)
from .consensus import misalignment
from .decision import CollapseRule, Decision, GridDecision, decide, decide_grid
from .figures import plot_overlay, plot_run
from .floor import measure_floor
from .loop import NonFiniteActivations, embed, looped_consensus, run_pass
from .models import (ATTN_IMPLEMENTATIONS, PAPER_MODEL_ALIASES, SMOLLM2, TINY_MODELS, WEIGHTS, ModelNotAvailable,
                     build_random, builtin_config, describe_model, fingerprint, load_config, load_model, redraw,
                     smollm2_gguf_path, verify_draw)
from .prompts import GPT2_VOCAB_SIZE, PAPER_SEED, authors_prompts

__all__ = [
    "ADAPTERS", "DECODER_LAYOUTS", "BlockInputs", "DecoderLayerAdapter", "DecoderLayout", "GPT2Adapter", "GPTJAdapter",
    "GPTNeoAdapter", "LoopAdapter", "OPTAdapter", "adapter_class", "adapter_for",
    "misalignment", "CollapseRule", "Decision", "GridDecision", "decide", "decide_grid", "plot_overlay", "plot_run", "measure_floor",
    "NonFiniteActivations", "embed", "looped_consensus", "run_pass",
    "ATTN_IMPLEMENTATIONS", "PAPER_MODEL_ALIASES", "SMOLLM2", "TINY_MODELS", "WEIGHTS", "ModelNotAvailable",
    "build_random", "builtin_config", "describe_model", "fingerprint", "load_config", "load_model", "redraw",
    "smollm2_gguf_path", "verify_draw", "GPT2_VOCAB_SIZE", "PAPER_SEED", "authors_prompts",
]
