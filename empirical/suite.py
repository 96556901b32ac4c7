"""The paper's experiment grid (figures 7-10) as named variants, in two budgets.

* ``cpu`` — what the report runs on a 2-core machine without a GPU or hub access: SmolLM2-135M with
  trained weights, with and without FFN (the in-kind stand-in for figures 7-8), and random / redrawn
  weights on the paper's two real architectures, fewer and shorter prompts, few passes (figures 9-10).
* ``gpu`` — the paper's full protocol: 100 prompts x 200 tokens, GPT-2 XL and GPT-Neo 2.7B, trained,
  random and redrawn weights, with and without FFN (trained weights from the Hugging Face cache).

``python -m empirical suite --profile cpu --out build/runs`` runs (or resumes) every variant of a
profile, one folder each.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .run import RunSettings, load_results, run_experiment

GPT2_XL = "gpt2-xl"
GPT_NEO = "EleutherAI/gpt-neo-2.7B"
SMOLLM2 = "smollm2-135m"


@dataclass(frozen=True)
class Variant:
    """One experiment of the grid; ``key`` names its output folder."""

    key: str
    model: str
    weights: str
    ffn: bool
    prompts: int
    length: int
    passes: int
    figure: str

    def settings(self, device: str = "auto", dtype: str = "auto", seed: int = 0) -> RunSettings:
        return RunSettings(model=self.model, weights=self.weights, ffn=self.ffn, prompts=self.prompts,
                           length=self.length, passes=self.passes, seed=seed, device=device, dtype=dtype)

    @property
    def label(self) -> str:
        return f"{self.model}, {self.weights} weights, {'with' if self.ffn else 'without'} FFN"


def _short(model: str) -> str:
    return {GPT2_XL: "gpt2-xl", GPT_NEO: "gpt-neo-2.7b", SMOLLM2: "smollm2"}.get(model, model.replace("/", "_"))


def _variant(model, weights, ffn, prompts, length, passes) -> Variant:
    figure = {("trained", False): "Fig. 7", ("trained", True): "Fig. 8", ("random", False): "Fig. 9",
              ("random", True): "Fig. 9", ("redrawn", False): "Fig. 10", ("redrawn", True): "Fig. 10"}[weights, ffn]
    key = f"{_short(model)}-{weights}-{'ffn' if ffn else 'no-ffn'}"
    return Variant(key, model, weights, ffn, prompts, length, passes, figure)


#: CPU budget (chosen for 2 shared cores; the numbers below are what the report states).
CPU_SMOLLM2 = dict(prompts=8, length=200, passes=6)
CPU_PAPER_ARCHITECTURES = dict(prompts=4, length=64, passes=3)
#: GPU budget: the paper's prompts; the passes are our choice (the paper does not print them).
GPU_PAPER = dict(prompts=100, length=200, passes=50)

PROFILES: dict[str, tuple[Variant, ...]] = {
    "cpu": (
        *(_variant(SMOLLM2, "trained", ffn, **CPU_SMOLLM2) for ffn in (False, True)),
        *(_variant(model, weights, ffn, **CPU_PAPER_ARCHITECTURES)
          for weights in ("random", "redrawn") for model in (GPT2_XL, GPT_NEO) for ffn in (False, True)),
    ),
    "gpu": tuple(_variant(model, weights, ffn, **GPU_PAPER) for weights in ("trained", "random", "redrawn")
                 for model in (GPT2_XL, GPT_NEO) for ffn in (False, True)),
}


def variants(profile: str, only: list[str] | None = None) -> tuple[Variant, ...]:
    if profile not in PROFILES:
        raise ValueError(f"--profile {profile!r} must be one of {tuple(PROFILES)}.")
    chosen = PROFILES[profile]
    if only:
        unknown = sorted(set(only) - {v.key for v in chosen})
        if unknown:
            raise ValueError(f"--only {unknown} are not variants of profile {profile!r}: {[v.key for v in chosen]}.")
        chosen = tuple(v for v in chosen if v.key in only)
    return chosen


def finished(folder: Path, settings: RunSettings) -> bool:
    """Whether ``folder`` already holds this run, complete (so it need not even load the model)."""
    try:
        manifest, results = load_results(folder)
    except (OSError, ValueError):
        return False
    return (manifest.get("status") == "complete" and manifest["settings_identity"] == settings.identity()
            and results["passes"] >= settings.passes)


def run_variant(variant: Variant, root: Path, *, device: str = "auto", dtype: str = "auto", seed: int = 0,
                progress: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run (or resume, or reuse) one variant under ``root / variant.key``; return ``(manifest, results)``."""
    folder = Path(root) / variant.key
    settings = variant.settings(device, dtype, seed)
    if not finished(folder, settings):
        run_experiment(settings, folder, progress=progress)
    return load_results(folder)
