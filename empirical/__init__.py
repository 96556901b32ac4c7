"""Looping real transformers for many passes and measuring token consensus after every block.

The paper's section 6.2 (ICML 5.2) as a tool: model adapters (:mod:`empirical.adapters`), model
loading and seeded weight draws (:mod:`empirical.models`), the misalignment E of eq. 9
(:mod:`empirical.eq9`), the looped forward (:mod:`empirical.loop`), the authors' prompts
(:mod:`empirical.prompts`), the precision floor of E (:mod:`empirical.floor`), the collapse rule
(:mod:`empirical.decision`) and the figures of E over depth (:mod:`empirical.figures`); the hypothesis audit is the subpackage :mod:`empirical.audit`. The command line is
``python -m empirical`` (:mod:`empirical.cli`).
"""

import importlib

_EXPORTS = {
    "ADAPTERS": ".adapters",
    "DECODER_LAYOUTS": ".adapters",
    "BlockInputs": ".adapters",
    "DecoderLayerAdapter": ".adapters",
    "DecoderLayout": ".adapters",
    "GPT2Adapter": ".adapters",
    "GPTJAdapter": ".adapters",
    "GPTNeoAdapter": ".adapters",
    "LoopAdapter": ".adapters",
    "OPTAdapter": ".adapters",
    "adapter_class": ".adapters",
    "adapter_for": ".adapters",
    "misalignment": ".eq9",
    "CollapseRule": ".decision",
    "Decision": ".decision",
    "GridDecision": ".decision",
    "decide": ".decision",
    "decide_grid": ".decision",
    "plot_overlay": ".figures",
    "plot_run": ".figures",
    "measure_floor": ".floor",
    "NonFiniteActivations": ".loop",
    "embed": ".loop",
    "looped_consensus": ".loop",
    "run_pass": ".loop",
    "ATTN_IMPLEMENTATIONS": ".models",
    "PAPER_MODEL_ALIASES": ".models",
    "SMOLLM2": ".models",
    "TINY_MODELS": ".models",
    "WEIGHTS": ".models",
    "ModelNotAvailable": ".models",
    "build_random": ".models",
    "builtin_config": ".models",
    "describe_model": ".models",
    "fingerprint": ".models",
    "load_config": ".models",
    "load_model": ".models",
    "redraw": ".models",
    "smollm2_gguf_path": ".models",
    "verify_draw": ".models",
    "GPT2_VOCAB_SIZE": ".prompts",
    "PAPER_SEED": ".prompts",
    "authors_prompts": ".prompts",
}

__all__ = [
    "ADAPTERS", "DECODER_LAYOUTS", "BlockInputs", "DecoderLayerAdapter", "DecoderLayout", "GPT2Adapter", "GPTJAdapter",
    "GPTNeoAdapter", "LoopAdapter", "OPTAdapter", "adapter_class", "adapter_for",
    "misalignment", "CollapseRule", "Decision", "GridDecision", "decide", "decide_grid", "plot_overlay", "plot_run", "measure_floor",
    "NonFiniteActivations", "embed", "looped_consensus", "run_pass",
    "ATTN_IMPLEMENTATIONS", "PAPER_MODEL_ALIASES", "SMOLLM2", "TINY_MODELS", "WEIGHTS", "ModelNotAvailable",
    "build_random", "builtin_config", "describe_model", "fingerprint", "load_config", "load_model", "redraw",
    "smollm2_gguf_path", "verify_draw", "GPT2_VOCAB_SIZE", "PAPER_SEED", "authors_prompts",
]


def __getattr__(name: str):
    """Import a public name's module on first use (PEP 562), so that ``python -m empirical --help`` imports no PyTorch."""
    if name not in _EXPORTS:  # a submodule, as `import PACKAGE; PACKAGE.module` found it when all were imported
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
