"""Looping real transformers for many passes and measuring token consensus after every block.

The paper's section 6.2 (ICML 5.2) as a tool: model adapters (:mod:`empirical.adapters`), model
loading and seeded weight draws (:mod:`empirical.models`), their fingerprints (:mod:`empirical.fingerprints`), the misalignment E of eq. 9
(:mod:`empirical.eq9`), the looped forward (:mod:`empirical.loop`), the authors' prompts
(:mod:`empirical.prompts`), the precision floor of E (:mod:`empirical.floor`), the collapse rule
(:mod:`empirical.decision`) and the figures of E over depth (:mod:`empirical.figures`); the hypothesis audit is the subpackage :mod:`empirical.audit`. The command line is
``python -m empirical`` (:mod:`empirical.cli`).
"""

import lazy_loader

#: Each public name by the module that defines it, imported on first use (PEP 562, scientific-python's
#: lazy_loader), so that ``python -m empirical --help`` imports no PyTorch; ``dir(empirical)`` lists them all.
__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={
    "adapters": ["ADAPTERS", "DECODER_LAYOUTS", "BlockInputs", "DecoderLayerAdapter", "DecoderLayout", "GPT2Adapter",
                 "GPTJAdapter", "GPTNeoAdapter", "LoopAdapter", "OPTAdapter", "adapter_class", "adapter_for"],
    "eq9": ["misalignment"],
    "decision": ["CollapseRule", "Decision", "GridDecision", "decide", "decide_grid"],
    "figures": ["plot_overlay", "plot_run"],
    "floor": ["measure_floor"],
    "loop": ["NonFiniteActivations", "embed", "looped_consensus", "run_pass"],
    "models": ["ATTN_IMPLEMENTATIONS", "PAPER_MODEL_ALIASES", "SMOLLM2", "TINY_MODELS", "WEIGHTS", "ModelNotAvailable",
               "build_random", "builtin_config", "check_draw", "describe_model", "load_config", "load_model", "redraw",
               "smollm2_gguf_path", "verify_draw"],
    "fingerprints": ["FINGERPRINT_SAMPLE", "ParameterFingerprint", "fingerprint"],
    "prompts": ["GPT2_VOCAB_SIZE", "PAPER_SEED", "authors_prompts"],
})
