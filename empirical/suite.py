"""The paper's experiment grid (figures 7-10) as named variants, in two budgets.

* ``cpu`` — what the report runs on a 2-core machine without a GPU: two trained families in kind for
  figures 7-8, SmolLM2-135M and Gemma 3 270M, with and without FFN; trained GPT-2 XL and GPT-Neo 2.7B
  with the same budget wherever their weights are on the machine (:mod:`empirical.sources`); random /
  redrawn weights on the paper's two real architectures, fewer and shorter prompts, few passes
  (figures 9-10).
* ``gpu`` — the paper's full protocol: 100 prompts x 200 tokens, GPT-2 XL and GPT-Neo 2.7B, trained,
  random and redrawn weights, with and without FFN.

``python -m empirical suite --profile cpu --out build/runs`` runs (or resumes) every variant of a
profile, one folder each; trained paper-model variants whose weights are absent are skipped with the
command that gets them (asked for by name with ``--only``, they are an error).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from .decision import HORIZON, CollapseRule, needs_more_passes
from .embedded import GEMMA3
from .figures import floor_of
from .isolation import in_child
from foundation.scale import report_scale
from .models import SMOLLM2
from .run import RunSettings, load_results, run_experiment
from .sources import GPT2_XL, GPT_NEO, PAPER_MODELS, SHORT_NAMES, get_command, locate

#: The trained models of other families that stand in for figures 7-8 (the claim emp.in-kind-trained).
IN_KIND_MODELS = (SMOLLM2, GEMMA3)


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
    #: The run's float64 twin (empirical.run, ``--twin``): on for trained weights, and for every variant of the
    #: ``gpu`` profile (:func:`_variant`).
    twin: str | None = None

    def settings(self, device: str = RunSettings.device, dtype: str = RunSettings.dtype,
                 seed: int = RunSettings.seed, *, decide: bool = False) -> RunSettings:
        """The run's settings; with ``decide``, twice the passes (the doubled horizon of the test's grid). A run in
        float64 has no twin (it would be its own)."""
        return RunSettings(model=self.model, weights=self.weights, ffn=self.ffn, prompts=self.prompts,
                           length=self.length, passes=2 * self.passes if decide else self.passes, seed=seed,
                           device=device, dtype=dtype, twin=None if dtype == "float64" else self.twin)

    @property
    def rule(self) -> CollapseRule:
        """The collapse test of :mod:`empirical.decision` with this variant's passes as its horizon."""
        return CollapseRule(horizon=self.passes)

    def until(self, decide: bool) -> tuple[CollapseRule, ...]:
        """The rules a run of this variant stops on: with ``decide``, every cell of the test's grid; else none."""
        return tuple(self.rule.grid().values()) if decide else ()

    @property
    def label(self) -> str:
        return f"{self.model}, {self.weights} weights, {'with' if self.ffn else 'without'} FFN"


def _short(model: str) -> str:
    return {**SHORT_NAMES, SMOLLM2: "smollm2", GEMMA3: "gemma3"}.get(model, model.replace("/", "_"))


def _variant(model, weights, ffn, prompts, length, passes, *, twin_all: bool = False) -> Variant:
    """The variant of ``model`` with ``weights`` and ``ffn``; a float64 twin for trained weights, or for any weights
    with ``twin_all``."""
    figure = {("trained", False): "Fig. 7", ("trained", True): "Fig. 8", ("random", False): "Fig. 9",
              ("random", True): "Fig. 9", ("redrawn", False): "Fig. 10", ("redrawn", True): "Fig. 10"}[weights, ffn]
    key = f"{_short(model)}-{weights}-{'ffn' if ffn else 'no-ffn'}"
    return Variant(key, model, weights, ffn, prompts, length, passes, figure,
                   TWIN if weights == "trained" or twin_all else None)


#: The twin of the trained runs (issue 35: float32 along a trained trajectory differed from float64 by 1e-2 where
#: the measured floor said 1.5e-6): float64, of the first prompts (empirical.run.TWIN_PROMPTS), on CPU and CUDA. The
#: gpu profile twins its random and redrawn runs too (redrawn GPT-Neo 2.7B in float32 strayed 3.4e-3 from float64
#: against a floor of 3.0e-6, docs/empirical.md; and a run that converges only down to its floor needs a twin for a
#: verdict, empirical.decision.run_verdict): its float64 copy of GPT-Neo 2.7B, 21.6 GB beside the run's 10.8 GB, fits
#: an 80 GB card. The cpu profile's random and redrawn runs of the paper's architectures go without: that copy alone
#: is beyond the report's memory bound of half a 24 GB machine (docs/report.md), so a run of theirs that converges
#: only down to its floor is precision-limited there.
TWIN = "float64"

#: CPU budget (chosen for 2 shared cores; the numbers below are what the report states). Every trained
#: model (SmolLM2, Gemma 3, and GPT-2 XL / GPT-Neo 2.7B where their weights are) runs CPU_SMOLLM2; ``passes`` is
#: the collapse test's horizon (the report runs until every cell of its grid decides, at most twice it): SPEC's 50
#: (empirical.decision.HORIZON), as for the paper's protocol; the former 48 was fitted to a run.
CPU_SMOLLM2 = dict(prompts=8, length=200, passes=HORIZON)
#: The GPU profile's maximum (50 passes), measured with 4 prompts x 64 tokens: random GPT-2 XL without FFN falls
#: below 1e-3 at pass 25; with FFN it falls from 0.42 to 0.17 in 8 passes, by 0.88 a pass, about 48 passes to 1e-3
#: at that pace; redrawn GPT-Neo 2.7B without FFN reached it at pass 5.
CPU_PAPER_ARCHITECTURES = dict(prompts=4, length=64, passes=HORIZON)
#: GPU budget: the paper's prompts; the passes are SPEC section 7's (the paper does not print them): the collapse
#: test's horizon (empirical.decision.HORIZON).
GPU_PAPER = dict(prompts=100, length=200, passes=HORIZON)

PROFILES: dict[str, tuple[Variant, ...]] = {
    "cpu": (
        *(_variant(model, "trained", ffn, **CPU_SMOLLM2) for model in (*IN_KIND_MODELS, *PAPER_MODELS)
          for ffn in (False, True)),
        *(_variant(model, weights, ffn, **CPU_PAPER_ARCHITECTURES)
          for weights in ("random", "redrawn") for model in (GPT2_XL, GPT_NEO) for ffn in (False, True)),
    ),
    "gpu": tuple(_variant(model, weights, ffn, **GPU_PAPER, twin_all=True)
                 for weights in ("trained", "random", "redrawn") for model in (GPT2_XL, GPT_NEO) for ffn in (False, True)),
}


#: The smoke scale of the report (``python -m reports build --scale smoke``, what CI runs): the cpu profile's variants
#: on tiny sizes, the paper architectures stood in for by tiny models of their families, so that every full check runs
#: in minutes. It shows that the report's path works within its memory, not what the claims come to.
SMOKE_STAND_INS = {GPT2_XL: "tiny-gpt2", GPT_NEO: "tiny-gpt-neo"}
SMOKE_SIZES = dict(prompts=2, length=16, passes=12)  # horizon 12 passes: the grid reads 6 to 24


def smoke_stand_in(variant: Variant) -> Variant:
    """``variant`` of the cpu profile at the smoke scale: its model stood in for (:data:`SMOKE_STAND_INS`), on
    :data:`SMOKE_SIZES`, twinned as on a GPU (tiny models afford it)."""
    return replace(variant, model=SMOKE_STAND_INS.get(variant.model, variant.model), twin=TWIN, **SMOKE_SIZES)


PROFILES["smoke"] = tuple(smoke_stand_in(v) for v in PROFILES["cpu"]
                          if not (v.weights == "trained" and v.model in PAPER_MODELS))


def left_at_this_scale(variant: Variant) -> bool:
    """Whether the report at its scale leaves ``variant`` unrun: at the ``short`` scale, every run of the paper's
    architectures (:mod:`foundation.scale`)."""
    return report_scale() == "short" and variant.model in PAPER_MODELS


def report_variants(*keys: str) -> tuple[Variant, ...]:
    """The variants of the report's cpu profile named by ``keys`` (keys of the ``cpu`` profile) that the report
    runs at its scale (:func:`foundation.scale.report_scale`): the ``cpu`` profile's own (at ``short`` scale without
    those :func:`left_at_this_scale`), or at ``smoke`` scale their stand-ins."""
    by_key = {v.key: v for v in PROFILES["cpu"]}
    unknown = [key for key in keys if key not in by_key]
    if unknown:
        raise ValueError(f"{unknown} are not variants of the cpu profile: {sorted(by_key)}.")
    if report_scale() != "smoke":
        return tuple(by_key[key] for key in keys if not left_at_this_scale(by_key[key]))
    return tuple(smoke_stand_in(by_key[key]) for key in keys)


def needs_weights(variant: Variant) -> bool:
    """Whether a variant runs trained weights of a paper model (present only on some machines)."""
    return variant.weights == "trained" and variant.model in PAPER_MODELS


def split_by_weights(chosen: tuple[Variant, ...], weights_dirs: Mapping[str, Path] | None = None
                     ) -> tuple[tuple[Variant, ...], dict[str, str]]:
    """``(variants that can run here, {key: why not and the command})``: trained paper-model variants
    run only where :func:`empirical.sources.locate` finds their weights (a named folder or the cache)."""
    ready, missing = [], {}
    for variant in chosen:
        if needs_weights(variant) and locate(variant.model, weights_dirs) is None:
            missing[variant.key] = (f"trained weights of {variant.model} are not on this machine: "
                                    f"{get_command(variant.model)}")
        else:
            ready.append(variant)
    return tuple(ready), missing


def report_profile() -> str:
    """The profile whose trained paper-model variants the report runs: ``gpu`` with CUDA, else ``cpu``."""
    import torch

    return "gpu" if torch.cuda.is_available() else "cpu"


def trained_variants(profile: str, model: str) -> tuple[Variant, ...]:
    """The trained variants of ``model`` in ``profile``: without FFN, then with FFN."""
    chosen = tuple(v for v in variants(profile) if v.model == model and v.weights == "trained")
    if not chosen:
        raise ValueError(f"profile {profile!r} has no trained variants of {model!r}.")
    return tuple(sorted(chosen, key=lambda v: v.ffn))


def trained_paper_runs(root: Path, ffn: tuple[bool, ...], *, profile: str | None = None,
                       budget: Mapping[str, int] | None = None, weights_dirs: Mapping[str, Path] | None = None,
                       progress: bool = False, isolate: bool = False) -> tuple[list[tuple[dict, dict]], dict[str, str]]:
    """Figures 7-8 as printed wherever the weights are: the trained variants of GPT-2 XL and GPT-Neo 2.7B
    (``ffn``: which of without / with FFN) of ``profile`` (default :func:`report_profile`), run or reused
    under :func:`profile_root` until every cell of the collapse test's grid decides (``run_variant(decide=True)``).
    ``budget`` overrides prompts / length / passes (tests use tiny models); ``isolate``: each in a child process of its
    own (:func:`run_variant_apart`).
    Returns ``(runs, missing)``: ``(manifest, results)`` pairs, and the absent models -> the command."""
    profile = report_profile() if profile is None else profile
    runs, missing = [], {}
    for model in PAPER_MODELS:
        chosen = tuple(replace(v, **(budget or {})) for v in trained_variants(profile, model) if v.ffn in ffn)
        ready, absent = split_by_weights(chosen, weights_dirs)
        if absent:
            missing[model] = get_command(model)
        run = run_variant_apart if isolate else run_variant
        runs += [run(v, profile_root(root, profile), progress=progress, weights_dirs=weights_dirs, decide=True)
                 for v in ready]
    return runs, missing


def profile_root(root: Path, profile: str) -> Path:
    """Where the report keeps a profile's runs: ``root`` for ``cpu``, ``root / profile`` for the others."""
    return Path(root) if profile == "cpu" else Path(root) / profile


def report_profile_variants() -> tuple[Variant, ...]:
    """The variants the report runs whatever the machine, at its scale: the ``cpu`` profile's that need no trained
    paper-model weights (at ``short`` scale also none of the paper's architectures), or at ``smoke`` scale the
    ``smoke`` profile's."""
    if report_scale() == "smoke":
        return tuple(v for v in PROFILES["smoke"] if not needs_weights(v))
    return tuple(v for v in PROFILES["cpu"] if not needs_weights(v) and not left_at_this_scale(v))


def report_runs(root: Path, *, weights_dirs: Mapping[str, Path] | None = None, progress: bool = False,
                isolate: bool = False) -> tuple[list[tuple[str, dict, dict]], dict[str, str]]:
    """Every run of the report, run or reused under ``root`` until the collapse rules decide: the ``cpu`` profile's
    variants that need no paper-model weights, and :func:`trained_paper_runs` (both FFN variants) wherever the weights are.
    ``isolate``: each in a child process of its own (:func:`run_variant_apart`).
    Returns ``([(label, manifest, results)], missing)``."""
    run = run_variant_apart if isolate else run_variant
    runs = [(v.label, *run(v, root, progress=progress, decide=True)) for v in report_profile_variants()]
    if report_scale() == "short":
        return runs, {}
    trained, missing = trained_paper_runs(root, (False, True), weights_dirs=weights_dirs, progress=progress,
                                          isolate=isolate)
    for manifest, results in trained:
        s = manifest["settings"]
        runs.append((f"{s['model']}, trained weights, {'with' if s['ffn'] else 'without'} FFN", manifest, results))
    return runs, missing


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


def finished(folder: Path, settings: RunSettings, until: tuple[CollapseRule, ...] = ()) -> bool:
    """Whether ``folder`` already holds this run, complete (so it need not even load the model): all its passes,
    or, with ``until`` rules, as many as they need to decide; with a twin, its measured floor."""
    try:
        manifest, results = load_results(folder)
    except (OSError, ValueError):
        return False
    if manifest.get("status") != "complete" or manifest["settings_identity"] != settings.identity():
        return False
    if settings.twin is not None and not (manifest.get("floor") or {}).get("float64_twin"):
        return False  # a run made before twins' floors were measured: resumed, it measures its twin's
    if results["passes"] >= settings.passes:
        return True
    floor = floor_of(manifest)
    return bool(until) and floor is not None and not any(
        needs_more_passes(results["E_mean"], results["layers"], floor, rule) for rule in until)


def run_variant(variant: Variant, root: Path, *, device: str = RunSettings.device, dtype: str = RunSettings.dtype,
                seed: int = RunSettings.seed, progress: bool = True, weights_dirs: Mapping[str, Path] | None = None,
                decide: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run (or resume, or reuse) one variant under ``root / variant.key``; return ``(manifest, results)``.
    ``decide``: run until every cell of the variant's collapse-test grid has decided (at most twice
    ``variant.passes``), else exactly ``variant.passes``. A finished run is reused only if its trained weights came
    from where they come from now."""
    folder = Path(root) / variant.key
    settings = variant.settings(device, dtype, seed, decide=decide)
    until = variant.until(decide)
    if not finished(folder, settings, until) or not _same_source(folder, variant, weights_dirs):
        run_experiment(settings, folder, progress=progress, weights_dirs=weights_dirs, until=until)
    return load_results(folder)


def run_variant_apart(variant: Variant, root: Path, **options: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """:func:`run_variant` (``options``: its keyword arguments) in a child process of its own
    (:func:`empirical.isolation.in_child`): nothing of the model outlives the run in this process, and the child's
    peak memory is recorded as the stage ``run <key>`` (a reused run costs the child's start, a few seconds)."""
    return in_child(f"run {variant.key}", run_variant, variant, root, **options)


def _same_source(folder: Path, variant: Variant, weights_dirs: Mapping[str, Path] | None) -> bool:
    if not needs_weights(variant):
        return True
    source = locate(variant.model, weights_dirs)
    manifest, _ = load_results(folder)
    return source is not None and manifest.get("weights_source") == source.to_json()
