"""The audit in the report: tables, the "Theory meets practice" section and claim records.

``python -m empirical audit --model M [--weights trained|random] --out DIR`` writes ``DIR/audit.json``
(every number) and ``DIR/audit.section.json`` (the report section, in the format
``python -m reports build`` reads from its sections folder); its command line is in :mod:`empirical.cli`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from foundation.registration import claim_result, holding, named_check
from foundation.records import CheckResult, ReportSection, Table

from ..decision import FLOOR_MARGIN
from ..figures import floor_of
from ..sources import GPT2_XL, GPT_NEO, PAPER_MODELS, canonical, get_command, locate
from .grading import SURFACE_TOL_FLOAT32
from .measure import AuditSettings, comparison, rate_summary
from .rates import E_FLOOR
from .store import cached_audit

PAPER_MODELS_NOTE = ("The report audits trained GPT-2 XL and GPT-Neo 2.7B wherever their weights are (a folder "
                     "named by CONSENSUS_WEIGHTS_GPT2_XL / CONSENSUS_WEIGHTS_GPT_NEO_2_7B or `python -m reports build "
                     "--weights-dir`, else the Hugging Face cache, offline); by hand: `python -m empirical audit "
                     "--model gpt2-xl --weights trained --out DIR` (and --model EleutherAI/gpt-neo-2.7B), which also "
                     "audits the same architecture with random weights.")


def run_label(result: dict[str, Any], weights: str) -> str:
    return f"{result['model']} ({weights})"


def _fmt(value: float) -> str:
    return "inf" if isinstance(value, float) and math.isinf(value) else f"{value:.3g}"


def hypothesis_summary_table(results: list[dict[str, Any]]) -> Table:
    """hypothesis x run: the verdict only (the numbers are in the per-run tables); ``-`` where a run has no
    such row (e.g. the LayerNorm-only rows on an RMSNorm model)."""
    runs = [(result, weights) for result in results for weights in result["hypotheses"]]
    names: dict[tuple[str, str], None] = {}
    for result, weights in runs:
        names.update(dict.fromkeys((row["hypothesis"], row["needed_by"]) for row in result["hypotheses"][weights]))
    verdicts = [{row["hypothesis"]: row["verdict"] for row in result["hypotheses"][weights]} for result, weights in runs]
    rows = tuple((name, needed_by, *[by_name.get(name, "-") for by_name in verdicts]) for name, needed_by in names)
    return Table("Hypothesis -> holds / nearly / fails, per model",
                 ("hypothesis", "needed by", *[run_label(r, w) for r, w in runs]), rows)


def trained_families_table(results: list[dict[str, Any]]) -> Table | None:
    """The trained models side by side (one column each): architecture, what their blocks add to the paper's,
    and how E decays with and without FFN. ``None`` with fewer than two trained models."""
    trained = [result for result in results if "trained" in result["runs"]]
    if len(trained) < 2:
        return None

    def verdict(result, name):
        return next((row["verdict"] for row in result["hypotheses"]["trained"] if row["hypothesis"] == name), "-")

    def rate(result, variant):
        r = result["runs"]["trained"]["variants"][variant]["rate"]
        return f"{r['rate']:.3g} [{r['ci_low']:.3g}, {r['ci_high']:.3g}]; E {r['E_start']:.3g} -> {r['E_end']:.3g}"

    def describe(result):
        d, layer = result["description"], result["runs"]["trained"]["weights"]["layers"][0]
        return (f"{d['architecture']}, {d['layers']} layers, d = {d['width']}, {len(layer['heads'])} heads / "
                f"{layer['kv_heads']} kv, {d['parameters'] / 1e6:.0f}M parameters")

    lines = [("model", describe)]
    lines += [(name, lambda result, name=name: verdict(result, name)) for name in TRAINED_SIDE_BY_SIDE]
    lines += [("E rate with FFN (1/layer, 95% CI)", lambda result: rate(result, "ffn")),
              ("E rate without FFN (1/layer, 95% CI)", lambda result: rate(result, "no-ffn")),
              ("FFN effect on the rate", lambda result: {"faster": "FFN speeds", "slower": "FFN slows"}.get(
                  result["runs"]["trained"]["ffn_effect"]["verdict"], "indistinguishable")),
              ("trained vs random rate [no-ffn]", lambda result: {"faster": "trained faster", "slower": "trained slower"}.get(
                  result.get("trained_vs_random", {}).get("no-ffn", {}).get("verdict"), "indistinguishable"
                  if "trained_vs_random" in result else "-"))]
    return Table("The trained families side by side",
                 ("", *[f"{result['model']} (trained)" for result in trained]),
                 tuple((label, *[cell(result) for result in trained]) for label, cell in lines))


#: The hypotheses the trained-families table shows (the rest are in the per-run tables).
TRAINED_SIDE_BY_SIDE = (
    "initial tokens are the embedding rows (no embedding scale)",
    "each token attends to all earlier tokens (no attention window)",
    "every head has its own keys and values (no grouped-query attention)",
    "attention logits z_i^T P_eta z_j with a fixed P_eta (no QK-norm)",
    "the block adds the attention output itself (no post-norm) [no-ffn]",
    "normalisation onto a sphere (constant gain)",
    "U_eta symmetric",
    "tokens in one open hemisphere, normalised states [no-ffn]",
    "conclusion: E decays [no-ffn]",
    "conclusion: E decays [ffn]",
)


def hypothesis_tables(result: dict[str, Any]) -> list[Table]:
    """One table per audited run: hypothesis, needed by, verdict, numbers."""
    return [Table(f"Hypotheses in {run_label(result, weights)}", ("hypothesis", "needed by", "verdict", "numbers"),
                  tuple((r["hypothesis"], r["needed_by"], r["verdict"], r["numbers"]) for r in rows))
            for weights, rows in result["hypotheses"].items()]


def _antisymmetric_over_symmetric(asymmetry: float) -> float:
    """``|K|_F / |S|_F`` for ``U = S + K`` from ``a = |U - U^T|_F / |U|_F``: ``|K| = a |U| / 2`` and
    ``|S|^2 = |U|^2 - |K|^2`` (the parts are Frobenius-orthogonal)."""
    half = asymmetry / 2.0
    return float("inf") if half >= 1.0 else half / math.sqrt(1.0 - half * half)


def layer_table(result: dict[str, Any], weights: str) -> Table:
    """Per layer (over its heads): P and U measures, hemisphere share and first-token drift (full model)."""
    run = result["runs"][weights]
    layers = run["weights"]["layers"]
    variant = run["variants"]["ffn"]
    count = len(layers)
    inside = np.asarray(variant["inside_normalised"], dtype=float)
    drift = np.asarray(variant["first_token_drift_block"], dtype=float)
    rows = []
    for layer in layers:
        heads = layer["heads"]
        index = layer["layer"]
        columns = list(range(index, inside.shape[1], count))
        rows.append((
            index, len(heads),
            _fmt(max(h["P_spectral"] for h in heads)),
            _fmt(float(np.median([h["U_asymmetry"] for h in heads]))),
            _fmt(float(np.median([_antisymmetric_over_symmetric(h["U_asymmetry"]) for h in heads]))),
            f"{sum(h['U_simple_positive_top'] for h in heads)}/{len(heads)}",
            _fmt(float(np.median([h["U_top_real"] / h["U_radius"] if h["U_radius"] else 0.0 for h in heads]))),
            _fmt(float(np.median([h["U_spread"] for h in heads]))),
            _fmt(layer["U_sum_asymmetry"]),
            f"{inside[:, columns].mean():.2f}",
            _fmt(float(drift[:, columns].max())),
        ))
    return Table(f"Per layer, {run_label(result, weights)} (heads aggregated; states: full model, all passes)",
                 ("layer", "heads", "max |P_eta|_2", "median asym(U_eta)", "median |K|/|S| of U_eta",
                  "heads with simple top eig > 0",
                  "median Re(top)/radius", "median spread", "asym(sum U)", "share in open hemisphere",
                  "max first-token drift"), tuple(rows))


def rate_table(results: list[dict[str, Any]], extra: list[dict[str, Any]] = ()) -> Table:
    rows = []
    for result in results:
        for weights, run in result["runs"].items():
            for name, variant in run["variants"].items():
                rate = variant["rate"]
                rows.append((run_label(result, weights), name, f"{rate['rate']:.4g}",
                             f"[{rate['ci_low']:.4g}, {rate['ci_high']:.4g}]", _fmt(rate["half_life"]),
                             f"{rate['r2']:.2f}", str(rate["blocks_to_half"]),
                             f"{rate['E_start']:.3g} -> {rate['E_end']:.3g}"))
    for item in extra:
        rate = item["rate"]
        variant = {True: "ffn", False: "no-ffn"}.get(item.get("ffn"), "results.json")
        rows.append((item["source"], variant, f"{rate['rate']:.4g}", f"[{rate['ci_low']:.4g}, {rate['ci_high']:.4g}]",
                     _fmt(rate["half_life"]), f"{rate['r2']:.2f}", str(rate["blocks_to_half"]),
                     f"{rate['E_start']:.3g} -> {rate['E_end']:.3g}"))
    return Table("Exponential fits of E per layer (E ~ A exp(-r k), k = block index; 95% CI over prompts)",
                 ("model", "variant", "rate r (1/layer)", "95% CI", "half-life (layers)", "median R^2",
                  "blocks to E/2", "mean E start -> end"), tuple(rows))


def run_rates(runs: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> list[dict[str, Any]]:
    """Rate fits of ``python -m empirical run`` outputs: ``(label, manifest, results)`` -> rate items for
    :func:`audit_section` (``group`` pairs the runs of one model and weights with and without FFN). Values at or below
    ``FLOOR_MARGIN`` x a run's effective floor of E are left out, as the collapse test leaves them (SPEC section 5:
    nothing is read below 10 x the effective floor; runs made before floors: float32's, ``rates.E_FLOOR``)."""
    items = []
    for label, manifest, results in runs:
        settings = manifest.get("settings", {})
        group = f"{settings.get('model', label)} ({settings.get('weights', '?')})"
        items.append({"source": label, "group": group, "ffn": settings.get("ffn"), "model": settings.get("model"),
                      "weights": settings.get("weights"),
                      "rate": rate_summary(np.asarray(results["E"], dtype=np.float64),
                                           FLOOR_MARGIN * (floor_of(manifest) or E_FLOOR))})
    return items


def comparison_table(results: list[dict[str, Any]], extra: list[dict[str, Any]] = ()) -> Table:
    rows = []
    for result in results:
        for weights, run in result["runs"].items():
            c = run["ffn_effect"]
            rows.append((run_label(result, weights), "with FFN - without FFN", f"{c['difference']:.4g}",
                         f"[{c['ci_low']:.4g}, {c['ci_high']:.4g}]", _fmt(c["ratio"]),
                         {"faster": "FFN speeds", "slower": "FFN slows", "indistinguishable": "indistinguishable"}[c["verdict"]]))
        for variant, c in result.get("trained_vs_random", {}).items():
            rows.append((result["model"], f"trained - random [{variant}]", f"{c['difference']:.4g}",
                         f"[{c['ci_low']:.4g}, {c['ci_high']:.4g}]", _fmt(c["ratio"]),
                         {"faster": "trained faster", "slower": "trained slower",
                          "indistinguishable": "indistinguishable"}[c["verdict"]]))
    groups: dict[str, dict[bool, dict[str, Any]]] = {}
    for item in extra:
        if item.get("ffn") is not None:
            groups.setdefault(item["group"], {})[bool(item["ffn"])] = item
    for group, pair in groups.items():
        if True in pair and False in pair and len(pair[True]["rate"]["per_prompt"]) == len(pair[False]["rate"]["per_prompt"]):
            c = comparison(pair[True]["rate"], pair[False]["rate"])
            rows.append((f"{group}, suite run", "with FFN - without FFN", f"{c['difference']:.4g}",
                         f"[{c['ci_low']:.4g}, {c['ci_high']:.4g}]", _fmt(c["ratio"]),
                         {"faster": "FFN speeds", "slower": "FFN slows", "indistinguishable": "indistinguishable"}[c["verdict"]]))
    return Table("In-kind rate comparisons (paired over the same prompts; 95% CI of the mean difference)",
                 ("model", "comparison", "rate difference", "95% CI", "rate ratio", "verdict"), tuple(rows))


def settings_text(results: list[dict[str, Any]]) -> str:
    parts = []
    for result in results:
        s = result["settings"]
        parts.append(f"{result['model']} ({', '.join(result['runs'])}; {result['description']['layers']} layers, width "
                     f"{result['description']['width']}): {s['prompts']} authors' prompts of {s['length']} tokens, "
                     f"{s['passes']} passes, seed {s['seed']}, {result['dtype']}")
    return "; ".join(parts)


def audit_section(results: list[dict[str, Any]], extra_rates: list[dict[str, Any]] = (), order: int = 60) -> ReportSection:
    """The "Theory meets practice" report section for audited models."""
    tables = [hypothesis_summary_table(results)]
    side_by_side = trained_families_table(results)
    if side_by_side is not None:
        tables.append(side_by_side)
    for result in results:
        tables += hypothesis_tables(result)
    tables += [rate_table(results, list(extra_rates)), comparison_table(results, list(extra_rates))]
    for result in results:
        tables += [layer_table(result, weights) for weights in result["runs"]]
    text = (
        "Which of the theorems' hypotheses hold in real transformers. Per head eta: P_eta = s W_Q,eta^T W_K,eta with the "
        "model's own logit scaling s (1/sqrt(d_head) for GPT-2 and Llama, 1 for GPT-Neo, 1/sqrt(query_pre_attn_scalar) for "
        "Gemma 3; for rotary models the P without rotation, exact on the diagonal; with QK-norm, as in Gemma 3, P carries "
        "the q/k norm gains and the logit is further divided by per-token norms, measured as its own hypothesis), U_eta = W_O,eta W_V,eta, both d x d of rank <= d_head, measured in the "
        "normalised coordinates the attention sees; spectra from the d_head x d_head products. States: the looped "
        "forward (embed once, all blocks, final norm fed back), with and without FFN; 'normalised states' are the "
        "inputs of each attention after its norm, centred at LayerNorm's beta; the hemisphere test is a float64 LP "
        "(HiGHS) with a certificate either way, re-checked in float64 (a margin above 1e-10 inside, a Gordan "
        "residual below 1e-6 outside: sim.field.hemisphere), not an exact one. Verdicts: 'holds' to float32 rounding, 'nearly' within 10% (or for at least "
        "90% of heads/states), otherwise 'fails'. Rates: least squares of log E on the block index per prompt, "
        "t-interval over prompts; a median R^2 well below 1 says the decay is not a single exponential (fast first "
        "blocks, then slower), so compare rates together with 'blocks to E/2'. Suite runs are the empirical suite's "
        "variants (figures 7-10 on this machine, their own prompt lengths and passes). Gemma 3's block adds to the "
        "paper's an embedding scale sqrt(d), sliding-window layers, grouped-query attention, QK-norm and norms on the "
        "sublayer outputs; each has its own hypothesis row, measured on every model. " + _paper_weights_text(results)
        + PAPER_MODELS_NOTE
        + " Runs: " + settings_text(results) + ".")
    return ReportSection("Theory meets practice", text, tuple(tables), (), order)


def _paper_weights_text(results: list[dict[str, Any]]) -> str:
    """Which of the paper's trained models the audits cover, and what that means for their claims."""
    ran = [r["model"] for r in _trained_paper(results)]
    if not ran:
        return ("The paper's GPT-2 XL / GPT-Neo 2.7B claims concern trained weights that are not on this machine: the "
                "comparisons below are in kind and those claims stay not-run. ")
    return (f"Trained weights of {' and '.join(ran)} are on this machine: the paper's claims about them (emp.rate, "
            "emp.full, emp.theory-scope) get their verdicts from these audits and the suite's runs"
            + ("; the others' stay not-run. " if len(ran) < len(PAPER_MODELS) else ". "))


# -- claim records -----------------------------------------------------------------------------------------
@named_check
def hemisphere_record(results: list[dict[str, Any]]) -> CheckResult:
    """emp.audit-hemisphere: ``verified`` when every prompt's token states after every block, and every
    attention's normalised input, lie in one open hemisphere (the float64 LP test of ``sim.field.hemisphere``), ``refuted`` when some do not."""
    return _hemisphere_record(results)


def _hemisphere_record(results: list[dict[str, Any]]) -> CheckResult:
    """The body of :func:`hemisphere_record`, undecorated: mutation testing (mutmut) skips decorated functions."""
    numbers, all_inside = {}, True
    for result in results:
        for weights, run in result["runs"].items():
            for name, variant in run["variants"].items():
                for key in ("normalised", "residual"):
                    flags = np.asarray(variant[f"inside_{key}"], dtype=bool)
                    margins = np.asarray(variant[f"margin_{key}"], dtype=float)
                    label = f"{result['model']} {weights} {name} {key}"
                    numbers[f"{label}: inside share"] = float(flags.mean())
                    numbers[f"{label}: min margin"] = float(margins.min())
                    all_inside &= bool(flags.all())
    runs = settings_text(results)
    shorter = all(r["settings"]["length"] <= r["description"]["width"] for r in results)
    if shorter:
        runs += (". In every run the prompts are shorter than the width (l <= n+1), the regime of Remark 4.3 where "
                 "generic points always share an open hemisphere; the margins say by how much")
    return claim_result(
        "verified" if all_inside else "refuted",
        detail=("Exact LP test (HiGHS; inside certified by a direction v with min cos(v, y_i) > 1e-10, outside by "
                "Gordan's alternative) on every prompt's token states after every block and on every attention's "
                "normalised input. " + ("All states lie in one open hemisphere. " if all_inside else
                                        "Some states lie in no open hemisphere. ") + "Runs: " + runs),
        numbers=numbers)


def _trained_paper(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The audits of trained GPT-2 XL / GPT-Neo 2.7B among ``results``."""
    return [r for r in results if r.get("weights") == "trained" and canonical(r["model"]) in PAPER_MODELS]


def _missing(ran: list[str]) -> dict[str, str]:
    """The paper models that did not run -> the command that runs them."""
    return {model: get_command(model) for model in PAPER_MODELS if model not in {canonical(m) for m in ran}}


def _paired_verdict(held: bool, against: bool, missing: dict[str, str]) -> str:
    """A rate claim's verdict from its paired comparisons (95% CIs): ``refuted`` when one goes ``against`` it (its CI
    excludes 0 on the wrong side), the running check's ``holding()`` when every one ``held`` and no paper model is
    ``missing`` (the claims are about both; ``verified`` for emp.rate, ``supported`` for emp.full, whose convergence
    part is a limit), else ``not-run``: a CI containing 0 is no evidence either way."""
    if against:
        return "refuted"
    return holding() if held and not missing else "not-run"


def _not_run(missing: dict[str, str], about: str, numbers: dict[str, Any]) -> CheckResult:
    """The running check's not-run record: what it needs, and the commands that would run it."""
    return claim_result("not-run",
                       detail=(f"Not run: {about} needs the trained weights of GPT-2 XL / GPT-Neo 2.7B, which are "
                               f"not on this machine (no named folder, not in the Hugging Face cache). To run it, "
                               + "; ".join(f"{model}: {command}" for model, command in missing.items())
                               + ". The numbers are the in-kind measurements on the models that ran here."),
                       numbers={**numbers, "missing": missing})


def _origin(result: dict[str, Any]) -> str:
    source = result.get("weights_source") or {}
    where = (f"{source.get('repo_id')} at {source.get('revision')} from the Hugging Face cache"
             if source.get("origin") == "hf-cache" else f"the folder {source.get('path')} ({source.get('named_by')})"
             if source.get("origin") == "folder" else "as named")
    return f"{result['model']} (weights from {where})"


def trained_paper_audits(settings: AuditSettings, folder: Path, *, weights_dirs: dict[str, Path] | None = None,
                         audit=cached_audit) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Audits of trained GPT-2 XL / GPT-Neo 2.7B wherever :func:`empirical.sources.locate` finds their
    weights, each with the same architecture with random weights (``trained_vs_random``), by
    ``audit(model_or_folder, "trained", settings, folder)`` (default: cached under ``folder``); and the
    absent models -> the command that runs them."""
    audits = []
    for model in PAPER_MODELS:
        source = locate(model, weights_dirs)
        if source is None:
            continue
        result = audit(str(source.path), "trained", settings, folder)
        result["model"] = model
        result["description"]["model"] = model
        result["weights_source"] = source.to_json()
        audits.append(result)
    return audits, _missing([a["model"] for a in audits])


@named_check
def rate_record(results: list[dict[str, Any]]) -> CheckResult:
    """emp.rate: trained weights converge faster than random weights of the same architecture, paired over the
    same prompts, with and without FFN. ``verified`` when both paper models ran and every comparison says "faster"
    (95% CI of the paired rate difference above 0), ``refuted`` when one says "slower" (CI below 0), else
    ``not-run`` (a comparison indistinguishable at this budget -- no evidence either way --, or a model absent)."""
    return _rate_record(results)


def _rate_record(results: list[dict[str, Any]]) -> CheckResult:
    """The body of :func:`rate_record`, undecorated: mutation testing (mutmut) skips decorated functions."""
    numbers = {}
    for result in results:
        for variant, c in result.get("trained_vs_random", {}).items():
            numbers[f"{result['model']} trained - random rate [{variant}]"] = c["difference"]
            numbers[f"{result['model']} trained - random CI [{variant}]"] = f"[{c['ci_low']:.4g}, {c['ci_high']:.4g}]"
            numbers[f"{result['model']} trained vs random [{variant}]"] = c["verdict"]
    trained = [r for r in _trained_paper(results) if "trained_vs_random" in r]
    missing = _missing([r["model"] for r in trained])
    if not trained:
        return _not_run(missing, "the comparison of pretrained and random weights", numbers)
    verdicts = {f"{r['model']} [{variant}]": c["verdict"]
                for r in trained for variant, c in r["trained_vs_random"].items()}
    held = all(v == "faster" for v in verdicts.values())
    verdict = _paired_verdict(held, any(v == "slower" for v in verdicts.values()), missing)
    s = trained[0]["settings"]
    detail = ("Fitted exponential rate of E per layer of " + "; ".join(_origin(r) for r in trained)
              + f" against the same architecture with random weights (seed {s['seed']}), paired over the same "
              f"{s['prompts']} authors' prompts of {s['length']} tokens, {s['passes']} passes: "
              + ", ".join(f"{k}: trained {v}" for k, v in verdicts.items())
              + (". Trained converges faster in every comparison (95% CI of the paired difference above 0)."
                 if held else ". Trained does NOT converge faster in every comparison ('slower': CI below 0, against "
                              "the claim; 'indistinguishable': CI contains 0, no evidence either way at this budget).")
              + (" Not run (weights absent): " + "; ".join(f"{m}: {c}" for m, c in missing.items()) + "."
                 if missing else ""))
    return claim_result(verdict, detail=detail, numbers={**numbers, "decisive": verdicts, "missing": missing},
                        seeds={"random weights": s["seed"]})


#: The FFN's effect on the rate the paper prints (Fig. 8): "the feed-forward layers increase the convergence
#: rate in GPT-2 and decrease it in GPT-Neo" ('faster' = the rate with FFN is higher).
PRINTED_FFN_EFFECT = {GPT2_XL: "faster", GPT_NEO: "slower"}


def _suite_ffn_effects(extra_rates: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Paired FFN effects (with - without FFN) of the suite's trained paper-model runs, by model."""
    pairs: dict[str, dict[bool, dict[str, Any]]] = {}
    for item in extra_rates:
        if item.get("weights") == "trained" and canonical(item.get("model") or "") in PAPER_MODELS \
                and item.get("ffn") is not None:
            pairs.setdefault(canonical(item["model"]), {})[bool(item["ffn"])] = item
    return {model: comparison(pair[True]["rate"], pair[False]["rate"]) for model, pair in pairs.items()
            if len(pair) == 2 and len(pair[True]["rate"]["per_prompt"]) == len(pair[False]["rate"]["per_prompt"])}


@named_check
def ffn_record(results: list[dict[str, Any]], extra_rates: list[dict[str, Any]] = ()) -> CheckResult:
    """emp.full, its rate part: the FFN increases the rate in trained GPT-2 XL and decreases it in trained
    GPT-Neo 2.7B. Decided on the figure-8 runs of the suite (with vs without FFN, paired over the same
    prompts) where they ran, else on the trained paper-model audits: ``supported`` when both models ran and each
    shows its printed effect, ``refuted`` when one shows the opposite (its CI excludes 0 on the other side), else
    ``not-run`` (an effect indistinguishable at this budget, or a model absent)."""
    return _ffn_record(results, extra_rates)


def _ffn_record(results: list[dict[str, Any]], extra_rates: list[dict[str, Any]] = ()) -> CheckResult:
    """The body of :func:`ffn_record`, undecorated: mutation testing (mutmut) skips decorated functions."""
    numbers = {}
    for result in results:
        for weights, run in result["runs"].items():
            c = run["ffn_effect"]
            numbers[f"{result['model']} {weights}: rate(FFN) - rate(no FFN)"] = c["difference"]
            numbers[f"{result['model']} {weights}: CI"] = f"[{c['ci_low']:.4g}, {c['ci_high']:.4g}]"
            numbers[f"{result['model']} {weights}: FFN effect"] = c["verdict"]
    for row in comparison_table([], list(extra_rates)).rows:
        numbers[f"{row[0]}: rate(FFN) - rate(no FFN)"] = row[2]
        numbers[f"{row[0]}: CI"] = row[3]
        numbers[f"{row[0]}: FFN effect"] = row[5]
    effects = _suite_ffn_effects(list(extra_rates))
    where = "the suite's figure-8 runs (trained, with vs without FFN, paired over the same prompts)"
    if not effects:
        effects = {canonical(r["model"]): r["runs"]["trained"]["ffn_effect"] for r in _trained_paper(results)}
        where = "the audits of the trained models (with vs without FFN, paired over the same prompts)"
    missing = _missing(list(effects))
    if not effects:
        return _not_run(missing, "the FFN's effect on the rate in trained GPT-2 XL / GPT-Neo 2.7B", numbers)
    held = all(c["verdict"] == PRINTED_FFN_EFFECT[m] for m, c in effects.items())
    opposite = {"faster": "slower", "slower": "faster"}
    verdict = _paired_verdict(held, any(c["verdict"] == opposite[PRINTED_FFN_EFFECT[m]] for m, c in effects.items()),
                              missing)
    detail = ("The rate part of the claim, as printed: the FFN increases the rate in GPT-2 XL ('faster') and decreases "
              f"it in GPT-Neo 2.7B ('slower'). Measured on {where}: "
              + "; ".join(f"{m}: rate(FFN) - rate(no FFN) = {c['difference']:.4g} "
                          f"[{c['ci_low']:.4g}, {c['ci_high']:.4g}] -> FFN {c['verdict']} (printed: {PRINTED_FFN_EFFECT[m]})" for m, c in effects.items())
              + (". Every model that ran shows the printed effect." if held
                 else ". A model that ran does NOT show the printed effect (the opposite: against the claim; "
                      "'indistinguishable': the 95% CI contains 0, no evidence either way at this budget).")
              + (" Not run (weights absent): " + "; ".join(f"{m}: {c}" for m, c in missing.items()) + "."
                 if missing else ""))
    return claim_result(verdict, detail=detail,
                        numbers={**numbers, "decisive": {m: c["verdict"] for m, c in effects.items()},
                                "missing": missing})


#: Hypotheses every theorem needs (the registry's "P bounded; normalisation onto a sphere or ellipsoid").
SCOPE_COMMON = ("P_eta bounded", "normalised states on a surface centred at 0 (E_W)")
#: The causal theorems that could predict figure 7, each with the audit rows of its other hypotheses.
SCOPE_THEOREMS = {
    "Theorem 5.1 (U_eta = I)": ("U_eta = I",),
    "Theorem 5.2 (h = 1, U symmetric, simple positive top eigenvalue)": (
        "one head (h = 1)", "U_eta symmetric", "top eigenvalue of U_eta real, simple, > 0", "P, U time-invariant",
        "tokens in one open hemisphere, normalised states [no-ffn]"),
}


@named_check
def scope_record(results: list[dict[str, Any]]) -> CheckResult:
    """emp.theory-scope: "our theoretical results predict this observation [figure 7] only when feedforward layers
    are absent". ``verified`` when, in every trained paper model that ran, every hypothesis of Theorem 5.1 or of
    Theorem 5.2 (plus :data:`SCOPE_COMMON`) holds on its weights and no-FFN states: the theorems then do predict
    figure 7. ``refuted`` when in one model each theorem has a hypothesis that fails or only nearly holds: the
    theorems say nothing about that model even without FFN (whatever E does). ``not-run`` when none ran."""
    return _scope_record(results)


def _scope_record(results: list[dict[str, Any]]) -> CheckResult:
    """The body of :func:`scope_record`, undecorated: mutation testing (mutmut) skips decorated functions."""
    numbers = {}
    for result in results:
        for weights, rows in result["hypotheses"].items():
            for row in rows:
                if row["hypothesis"] in (*SCOPE_COMMON, *[h for hs in SCOPE_THEOREMS.values() for h in hs],
                                         "normalisation onto a sphere (constant gain)",
                                         "conclusion: E decays [no-ffn]"):
                    numbers[f"{result['model']} {weights}: {row['hypothesis']}"] = row["verdict"]
    trained = _trained_paper(results)
    missing = _missing([r["model"] for r in trained])
    if not trained:
        return _not_run(missing, "the audit of the hypotheses in trained GPT-2 XL / GPT-Neo 2.7B",
                        numbers)
    covered, findings = {}, []
    for result in trained:
        verdicts = {row["hypothesis"]: row["verdict"] for row in result["hypotheses"]["trained"]}
        broken = {theorem: [h for h in (*SCOPE_COMMON, *needs) if verdicts.get(h, "not audited") != "holds"]
                  for theorem, needs in SCOPE_THEOREMS.items()}
        covered[result["model"]] = [theorem for theorem, failing in broken.items() if not failing]
        findings.append(f"{_origin(result)}: " + "; ".join(
            f"{theorem}: " + ("all hypotheses hold" if not failing else
                              "fails on " + ", ".join(f"{h} ({verdicts.get(h, 'not audited')})" for h in failing))
            for theorem, failing in broken.items())
            + f"; observed without FFN, 'E decays': {verdicts.get('conclusion: E decays [no-ffn]', 'not audited')}")
    held = all(covered.values())
    detail = ("What the verdict means: 'verified' if in every trained paper model that ran all hypotheses of "
              "Theorem 5.1 or of Theorem 5.2 hold (on the weights and the no-FFN states), so the theory does predict "
              "figure 7's convergence; 'refuted' if in one of them every theorem has a hypothesis that fails or only "
              "nearly holds, so the theorems do not predict that model's convergence even without FFN. Audit: "
              + ". ".join(findings) + ". "
              + ("The theorems cover every trained model that ran." if held else
                 "The theorems do not cover " + ", ".join(m for m, c in covered.items() if not c) + ".")
              + (" Not run (weights absent): " + "; ".join(f"{m}: {c}" for m, c in missing.items()) + "."
                 if missing else ""))
    return claim_result("verified" if held else "refuted", detail=detail,
                        numbers={**numbers, "covered_by": covered, "missing": missing})


@named_check
def layernorm_records(results: list[dict[str, Any]]) -> list[CheckResult]:
    """model.layernorm on real LayerNorm modules with a constant gain (random-weight paper architectures)."""
    return _layernorm_records(results)


def _layernorm_records(results: list[dict[str, Any]]) -> list[CheckResult]:
    """The body of :func:`layernorm_records`, undecorated: mutation testing (mutmut) skips decorated functions."""
    records = []
    for result in results:
        for weights, run in result["runs"].items():
            norms = run["weights"]["norms"]
            if norms[0]["kind"] != "layernorm" or any(n["verdict"] != "holds" for n in norms):
                continue
            width = result["description"]["width"]
            gamma0 = norms[0]["gain_rms"]
            variant = run["variants"]["ffn"]
            radius = variant["layernorm_radius"]
            radial = float(np.max(variant["surface_radial"]))
            hyperplane = float(np.max(variant["surface_hyperplane"]))
            printed = width * gamma0**2
            corrected_ok = radial <= SURFACE_TOL_FLOAT32 and hyperplane <= SURFACE_TOL_FLOAT32
            numbers = {"width d = n+1": width, "gamma0": gamma0, "printed radius (n+1) gamma0^2": printed,
                       "sqrt(n+1) |gamma0|": math.sqrt(width) * abs(gamma0),
                       "measured |z - beta| min": radius["min"], "measured |z - beta| max": radius["max"],
                       "max | |u|^2/d - var/(var+eps) |": radial, "max |mean u|": hyperplane}
            common = dict(numbers=numbers, tolerance=SURFACE_TOL_FLOAT32,
                          tolerance_reason="float32 states: LayerNorm over d <= 4096 entries is exact to ~1e-5 relative")
            label = run_label(result, weights)
            if corrected_ok and abs(radius["max"] - printed) > 1e-3 * printed:
                records.append(claim_result(
                    "discrepancy",
                    detail=(f"The attention inputs of {label} (every block's ln_1, gain gamma0 = {gamma0:g}, all passes): "
                            f"|z - beta| lies in [{radius['min']:.4g}, {radius['max']:.4g}], not the printed radius "
                            f"(n+1) gamma0^2 = {printed:g}; sqrt(n+1)|gamma0| = {math.sqrt(width) * abs(gamma0):.4g} "
                            "times sqrt(var/(var+eps)) holds to float32 rounding, and the states lie in the hyperplane "
                            "1^T (z - beta) = 0."),
                    printed="if gamma = gamma0 1, the tokens lie on the n-sphere of center beta and radius (n+1) gamma0^2",
                    corrected=("the tokens lie on the sphere of center beta and radius sqrt(n+1)|gamma0| sqrt(var/(var+eps)) "
                               "(sqrt(n+1)|gamma0| as eps -> 0) within the hyperplane 1^T (z - beta) = 0"),
                    **common))
            else:
                records.append(claim_result("failed",
                                            detail=f"{label}: the normalised states are off the predicted surface.", **common))
    return records


def audit_records(results: list[dict[str, Any]]) -> list[CheckResult]:
    """Every claim record the audits support."""
    return [hemisphere_record(results), rate_record(results), ffn_record(results), scope_record(results),
            *layernorm_records(results)]
