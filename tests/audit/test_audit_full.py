"""Theory meets practice on this machine's real models (expensive: `make report` / pytest --full).

SmolLM2-135M-Instruct and Gemma 3 270M trained (each with its architecture with random weights, for the
in-kind rate comparison), and the paper's two models (GPT-2 XL: 1.5e9 parameters, GPT-Neo 2.7B: 2.7e9, in
float32 on the CPU): trained (with random weights beside) wherever their weights are
(:mod:`empirical.sources`), else random weights only. Short prompts keep it to minutes: the settings are
stated in the report section.
"""

import time

import numpy as np
import pytest

from foundation.registration import check
from empirical.audit import cached_audit
from empirical.audit.report import (audit_section, ffn_record, hemisphere_record, layernorm_records, rate_record,
                                    run_rates, scope_record, trained_paper_audits)
from empirical.sources import PAPER_MODELS
from empirical import report_jobs
from empirical.suite import report_runs
from foundation.scale import check_sizes, scaled

#: The empirical suite's runs (figures 7-10 on this machine) and the audits, where the report's jobs left them
#: (empirical/report_jobs.py: run before the tests by `make report`); reused when present, made here otherwise.
RUNS, AUDITS = scaled(report_jobs.RUNS), scaled(report_jobs.AUDITS)
#: Trained GPT-2 XL / GPT-Neo 2.7B where their weights are: the budget of the trained in-kind families.
TRAINED_PAPER_SETTINGS = report_jobs.TRAINED_AUDIT[check_sizes()]


#: GPT-Neo 2.7B in float32 needs ~11.4 GiB; on a machine shared with other jobs wait this long for it.
MEMORY_WAIT_SECONDS = 1800


def _audit_when_memory_allows(model, weights, settings, folder=AUDITS):
    """The audit, retried while ``ensure_memory`` reports too little memory (up to MEMORY_WAIT_SECONDS)."""
    deadline = time.monotonic() + MEMORY_WAIT_SECONDS
    while True:
        try:
            return cached_audit(model, weights, settings, folder, isolate=True)
        except MemoryError:
            if time.monotonic() > deadline:
                raise
            time.sleep(30)


@pytest.fixture(scope="module")
def suite_rates():
    """Rate fits of every run of the report's empirical suite (run here if not run yet): the cpu profile, and
    trained GPT-2 XL / GPT-Neo 2.7B wherever their weights are."""
    return run_rates(report_runs(RUNS, isolate=True)[0])


@pytest.fixture(scope="module")
def audits():
    """In-kind trained families; the paper's models trained (with random beside) where their weights are."""
    trained, _ = trained_paper_audits(TRAINED_PAPER_SETTINGS, AUDITS, audit=_audit_when_memory_allows)
    return [*(_audit_when_memory_allows(*audit) for audit in report_jobs.report_audits()[:2]), *trained,
            *(_audit_when_memory_allows(*audit) for audit in report_jobs.report_audits()[2:])]


def _ran_trained_paper(audits):
    return any(a["weights"] == "trained" and a["model"] in PAPER_MODELS for a in audits)


@pytest.mark.full
@check("emp.audit-hemisphere", method="empirical")
def test_token_states_lie_in_one_open_hemisphere(audits, record):
    result = record(hemisphere_record(audits))
    assert result.verdict == "verified"


@pytest.mark.full
@check("emp.rate", method="empirical")
def test_trained_against_random_rates(audits, record):
    """Decided on trained GPT-2 XL / GPT-Neo 2.7B where their weights are; in kind on SmolLM2 and Gemma 3."""
    result = record(rate_record(audits))
    assert (result.verdict == "not-run") == (not _ran_trained_paper(audits))
    for in_kind in audits[:2]:  # SmolLM2 and Gemma 3
        for comparison in in_kind["trained_vs_random"].values():
            assert np.isfinite(comparison["difference"])
            assert comparison["verdict"] in ("faster", "slower", "indistinguishable")


@pytest.mark.full
@check("emp.full", method="empirical")
def test_ffn_effect_on_rates(audits, suite_rates, record):
    result = record(ffn_record(audits, suite_rates))
    assert (result.verdict == "not-run") == (not _ran_trained_paper(audits))
    for audit in audits:
        for run in audit["runs"].values():
            assert run["ffn_effect"]["verdict"] in ("faster", "slower", "indistinguishable")


@pytest.mark.full
@check("emp.theory-scope", method="empirical")
def test_value_hypotheses_are_audited_on_every_model(audits, record):
    result = record(scope_record(audits))
    assert (result.verdict == "not-run") == (not _ran_trained_paper(audits))
    for audit in audits:
        for rows in audit["hypotheses"].values():
            verdicts = {row["hypothesis"]: row["verdict"] for row in rows}
            # Every head's U_eta has rank d_head < d in these models: U = I cannot hold.
            assert verdicts["U_eta = I"] == "fails"


@pytest.mark.full
@check("model.layernorm", method="numeric")
def test_layernorm_states_of_the_paper_architectures_refute_the_printed_radius(audits, record):
    results = [record(r) for r in layernorm_records(audits)]
    assert len(results) == 2  # GPT-2 XL and GPT-Neo 2.7B (random: gain exactly 1); SmolLM2 uses RMSNorm
    assert all(r.verdict == "discrepancy" for r in results)


@pytest.mark.full
def test_theory_meets_practice_section(audits, suite_rates, report_section):
    section = report_section(audit_section(audits, suite_rates))
    assert section.tables[0].title.startswith("Hypothesis -> holds / nearly / fails")
    # SmolLM2 and Gemma 3 trained and random; GPT-2 XL, GPT-Neo random (and trained where their weights are)
    assert len(section.tables[0].columns) == 2 + sum(len(a["hypotheses"]) for a in audits) >= 2 + 6
    assert section.tables[1].title == "The trained families side by side"
    assert section.tables[1].columns[1:3] == ("smollm2-135m (trained)", "gemma3-270m (trained)")


#: Gemma 3's additions to the paper's block, and what SmolLM2 (Llama) has of them.
ADDITIONS = {
    "initial tokens are the embedding rows (no embedding scale)": ("holds", "fails"),
    "each token attends to all earlier tokens (no attention window)": ("holds", "fails"),
    "every head has its own keys and values (no grouped-query attention)": ("fails", "fails"),  # 9/3, 4/1 heads
    "attention logits z_i^T P_eta z_j with a fixed P_eta (no QK-norm)": ("holds", "fails"),
    "the block adds the attention output itself (no post-norm) [no-ffn]": ("holds", "fails"),
}


@pytest.mark.full
def test_the_audit_says_which_hypotheses_gemma3_breaks(audits):
    smollm2, gemma3 = audits[0], audits[1]
    assert gemma3["description"]["architecture"] == "gemma3_text" and gemma3["description"]["layers"] == 18
    for weights in ("trained", "random"):
        found = {name: tuple(next(r["verdict"] for r in audit["hypotheses"][weights] if r["hypothesis"] == name)
                             for audit in (smollm2, gemma3)) for name in ADDITIONS}
        assert found == ADDITIONS, weights
    scale = gemma3["runs"]["trained"]["weights"]["embedding_scale"]
    assert scale["factor"] == pytest.approx(640**0.5, rel=1e-6)
