"""The audit's claim records and tables (empirical.audit.report) on synthetic audits: each record's verdicts reached
(verified, refuted or failed, not-run, discrepancy) with a control beside each, every bound met exactly, and the
rows of the tables word for word. A synthetic audit is the dict :func:`empirical.audit.measure.audit_model` returns,
with the entries the report reads and simple values (under a second together)."""

import math

import numpy as np
import pytest

from empirical.audit import report
from empirical.audit.grading import SURFACE_TOL_FLOAT32
from empirical.audit.measure import comparison, rate_summary
from empirical.audit.rates import E_FLOOR
from empirical.decision import FLOOR_MARGIN
from empirical.sources import GPT2_XL, GPT_NEO, get_command


def _comparison(verdict, difference=0.25):
    return {"difference": difference, "ci_low": 0.125, "ci_high": 0.375, "ratio": 2.0, "verdict": verdict, "prompts": 3}


def _rate(rate=0.5):
    return {"floor": 1e-7, "rate": rate, "ci_low": 0.25, "ci_high": 0.75, "r2": 0.875, "half_life": math.log(2) / rate,
            "per_prompt": np.array([rate, rate, rate]), "window": [0, 4], "blocks_to_half": 2, "E_start": 0.5,
            "E_end": 0.0625}


def _variant(inside=True):
    flags = np.array([[True, True], [True, inside]])
    return {"inside_normalised": flags, "margin_normalised": np.array([[0.5, 0.25], [0.125, 0.0625]]),
            "inside_residual": np.ones((2, 3), dtype=bool), "margin_residual": np.array([[0.5, 0.5, 0.5], [1.0, 1.0, 1.0]]),
            "first_token_drift_block": np.array([[0.1, 0.2], [0.3, 0.05]]), "rate": _rate(),
            "layernorm_radius": {"min": 999.0, "max": 1001.0}, "surface_radial": np.array([1e-5, SURFACE_TOL_FLOAT32]),
            "surface_hyperplane": np.array([0.0, 1e-6])}


def _run(ffn_effect="faster", inside=True, kind="layernorm", verdict="holds"):
    norms = [{"kind": kind, "verdict": verdict, "gain_rms": 1.0}, {"kind": kind, "verdict": "holds", "gain_rms": 1.0}]
    heads = [{"P_spectral": 2.0, "U_asymmetry": 0.5, "U_simple_positive_top": True, "U_top_real": 1.0, "U_radius": 2.0,
              "U_spread": 0.5}]
    return {"weights": {"layers": [{"layer": 0, "heads": heads, "kv_heads": 1, "U_sum_asymmetry": 0.5}], "norms": norms},
            "variants": {"ffn": _variant(inside), "no-ffn": _variant(inside)}, "ffn_effect": _comparison(ffn_effect)}


def _rows(**verdicts):
    return [{"hypothesis": name, "needed_by": "Theorem", "verdict": verdict, "numbers": "n"}
            for name, verdict in verdicts.items()]


def _audit(model=GPT2_XL, weights="trained", *, versus=("faster", "faster"), hypotheses=None, length=1000, **run):
    runs = {weights: _run(**run)}
    result = {"model": model, "weights": weights, "settings": {"prompts": 3, "length": length, "passes": 2, "seed": 7},
              "dtype": "torch.float32", "runs": runs,
              "description": {"layers": 1, "width": 1000, "architecture": "gpt2", "parameters": 1.5e6},
              "hypotheses": {weights: hypotheses if hypotheses is not None else _rows(**{"U_eta = I": "holds"})}}
    if weights == "trained" and versus is not None:
        runs["random"] = _run()
        result["hypotheses"]["random"] = _rows(**{"U_eta = I": "fails"})
        result["trained_vs_random"] = {"ffn": _comparison(versus[0]), "no-ffn": _comparison(versus[1])}
    return result


# --- emp.audit-hemisphere --------------------------------------------------------------------------------------------
def test_the_hemisphere_record_is_verified_when_every_state_is_inside_and_refuted_otherwise():
    record = report.hemisphere_record([_audit(length=999)])
    assert record.verdict == "verified" and "All states lie in one open hemisphere." in record.detail
    assert record.numbers["gpt2-xl trained ffn normalised: inside share"] == 1.0
    assert record.numbers["gpt2-xl trained ffn normalised: min margin"] == 0.0625
    assert record.numbers["gpt2-xl random no-ffn residual: min margin"] == 0.5
    assert len(record.numbers) == 2 * 2 * 2 * 2  # runs x variants x (normalised, residual) x (share, margin)
    assert "shorter than the width" in record.detail
    refuted = report.hemisphere_record([_audit(length=999), _audit(GPT_NEO, "random", inside=False)])
    assert refuted.verdict == "refuted" and "Some states lie in no open hemisphere." in refuted.detail
    assert refuted.numbers["EleutherAI/gpt-neo-2.7B random ffn normalised: inside share"] == 0.75


def test_the_regime_of_remark_4_3_is_named_up_to_prompts_as_long_as_the_width():
    assert "shorter than the width" in report.hemisphere_record([_audit(length=1000)]).detail
    assert "shorter than the width" not in report.hemisphere_record([_audit(length=1001)]).detail
    assert "shorter than the width" not in report.hemisphere_record([_audit(length=10), _audit(length=1001)]).detail


# --- emp.rate --------------------------------------------------------------------------------------------------------
def test_the_rate_record_is_verified_when_every_trained_paper_model_is_faster_than_random():
    record = report.rate_record([_audit(), _audit(GPT_NEO)])
    assert record.verdict == "verified" and record.numbers["missing"] == {}
    assert record.numbers["decisive"] == {"gpt2-xl [ffn]": "faster", "gpt2-xl [no-ffn]": "faster",
                                          f"{GPT_NEO} [ffn]": "faster", f"{GPT_NEO} [no-ffn]": "faster"}
    assert record.numbers["gpt2-xl trained - random rate [ffn]"] == 0.25
    assert record.numbers["gpt2-xl trained - random CI [no-ffn]"] == "[0.125, 0.375]"
    assert record.seeds == {"random weights": 7}
    assert "Trained converges faster in every comparison" in record.detail and "Not run" not in record.detail


@pytest.mark.parametrize("versus,verdict", [(("faster", "indistinguishable"), "not-run"),
                                            (("slower", "faster"), "refuted")])
def test_the_rate_record_is_refuted_only_when_one_comparison_is_slower(versus, verdict):
    """'slower' (CI below 0) goes against the claim; 'indistinguishable' (CI holds 0) is no evidence either way."""
    record = report.rate_record([_audit(versus=versus), _audit(GPT_NEO)])
    assert record.verdict == verdict and "Trained does NOT converge faster" in record.detail
    assert record.numbers["missing"] == {}


def test_the_rate_record_needs_both_paper_models_for_verified():
    """Every comparison of GPT-2 XL faster, GPT-Neo 2.7B absent: the claim is about both, so not-run (naming the
    command); one model slower is enough to refute it."""
    record = report.rate_record([_audit()])
    assert record.verdict == "not-run" and "Trained converges faster in every comparison" in record.detail
    assert record.numbers["missing"] == {GPT_NEO: get_command(GPT_NEO)} and "Not run (weights absent)" in record.detail
    assert report.rate_record([_audit(versus=("slower", "faster"))]).verdict == "refuted"


def test_the_rate_record_is_not_run_without_a_trained_paper_model_compared_with_random():
    for results in ([], [_audit(weights="random")], [_audit("tiny-gpt2")], [_audit(versus=None)]):
        record = report.rate_record(results)
        assert record.verdict == "not-run" and set(record.numbers["missing"]) == {GPT2_XL, GPT_NEO}
    # the in-kind numbers are kept
    assert report.rate_record([_audit("tiny-gpt2")]).numbers["tiny-gpt2 trained vs random [ffn]"] == "faster"


# --- emp.full, its rate part -----------------------------------------------------------------------------------------
def test_the_ffn_record_reads_the_audits_printed_effects():
    assert report.ffn_record([_audit(ffn_effect="faster"), _audit(GPT_NEO, ffn_effect="slower")]).verdict == "supported"
    refuted = report.ffn_record([_audit(ffn_effect="faster"), _audit(GPT_NEO, ffn_effect="faster")])
    assert refuted.verdict == "refuted" and refuted.numbers["decisive"] == {GPT2_XL: "faster", GPT_NEO: "faster"}
    assert "the audits of the trained models" in refuted.detail
    one = report.ffn_record([_audit(ffn_effect="faster")])  # the claim is about both models
    assert one.verdict == "not-run" and one.numbers["missing"] == {GPT_NEO: get_command(GPT_NEO)}
    unclear = report.ffn_record([_audit(ffn_effect="faster"), _audit(GPT_NEO, ffn_effect="indistinguishable")])
    assert unclear.verdict == "not-run" and "no evidence either way" in unclear.detail
    assert report.ffn_record([_audit(weights="random")]).verdict == "not-run"
    numbers = one.numbers
    assert numbers["gpt2-xl trained: rate(FFN) - rate(no FFN)"] == 0.25 and numbers["gpt2-xl random: FFN effect"] == "faster"


def _suite_item(model, ffn, rates, weights="trained"):
    values = 0.8 * np.exp(-np.asarray(rates)[:, None] * np.arange(8)) * (1 + 0.01 * np.cos(np.arange(8)))
    return {"source": f"{model}-{ffn}", "group": f"{model} ({weights})", "ffn": ffn, "model": model, "weights": weights,
            "rate": rate_summary(values, 1e-7)}


def test_the_suite_runs_decide_the_ffn_effect_before_the_audits():
    fast, slow = [0.4, 0.5, 0.45], [0.2, 0.25, 0.22]
    suite = [_suite_item(GPT2_XL, True, fast), _suite_item(GPT2_XL, False, slow), _suite_item(GPT_NEO, True, slow),
             _suite_item(GPT_NEO, False, fast)]
    record = report.ffn_record([_audit(ffn_effect="slower")], suite)
    assert record.verdict == "supported" and record.numbers["decisive"] == {GPT2_XL: "faster", GPT_NEO: "slower"}
    assert "the suite's figure-8 runs" in record.detail
    assert record.numbers["gpt2-xl (trained), suite run: FFN effect"] == "FFN speeds"
    # control: the opposite pairing is refuted, whatever the audit says
    swapped = [_suite_item(GPT2_XL, True, slow), _suite_item(GPT2_XL, False, fast)]
    assert report.ffn_record([_audit(ffn_effect="faster")], swapped).verdict == "refuted"
    # random weights, unpaired runs, other models or unequal prompt counts are not suite evidence
    for items in ([_suite_item(GPT2_XL, True, fast, "random"), _suite_item(GPT2_XL, False, slow, "random")],
                  [_suite_item(GPT2_XL, True, fast)], [_suite_item("gpt2", True, fast), _suite_item("gpt2", False, slow)],
                  [_suite_item(GPT2_XL, True, fast), _suite_item(GPT2_XL, False, slow[:2])],
                  [_suite_item(GPT2_XL, None, fast), _suite_item(GPT2_XL, False, slow)]):
        assert report._suite_ffn_effects(items) == {}
    effects = report._suite_ffn_effects([_suite_item("openai-community/gpt2-xl", True, fast),
                                         _suite_item(GPT2_XL, False, slow)])
    assert effects == {GPT2_XL: comparison(suite[0]["rate"], suite[1]["rate"])}


# --- emp.theory-scope ------------------------------------------------------------------------------------------------
THEOREM_5_1 = {"P_eta bounded": "holds", "normalised states on a surface centred at 0 (E_W)": "holds",
               "U_eta = I": "holds"}
THEOREM_5_2 = {"P_eta bounded": "holds", "normalised states on a surface centred at 0 (E_W)": "holds",
               "one head (h = 1)": "holds", "U_eta symmetric": "holds", "top eigenvalue of U_eta real, simple, > 0": "holds",
               "P, U time-invariant": "holds", "tokens in one open hemisphere, normalised states [no-ffn]": "holds"}


def test_the_scope_record_is_verified_when_one_theorems_hypotheses_all_hold_in_every_model():
    record = report.scope_record([_audit(hypotheses=_rows(**THEOREM_5_1)),
                                  _audit(GPT_NEO, hypotheses=_rows(**THEOREM_5_2, **{"U_eta = I": "nearly"}))])
    assert record.verdict == "verified" and "The theorems cover every trained model that ran." in record.detail
    assert record.numbers["covered_by"] == {GPT2_XL: ["Theorem 5.1 (U_eta = I)"],
                                            GPT_NEO: ["Theorem 5.2 (h = 1, U symmetric, simple positive top eigenvalue)"]}
    assert record.numbers[f"{GPT_NEO} trained: U_eta = I"] == "nearly"
    assert record.numbers["gpt2-xl random: U_eta = I"] == "fails"
    assert "gpt2-xl trained: P_eta bounded" in record.numbers and "all hypotheses hold" in record.detail


@pytest.mark.parametrize("change", [{"U_eta = I": "nearly"}, {"P_eta bounded": "fails"},
                                    {"normalised states on a surface centred at 0 (E_W)": "nearly"}])
def test_the_scope_record_is_refuted_when_a_hypothesis_of_each_theorem_does_not_hold(change):
    record = report.scope_record([_audit(hypotheses=_rows(**{**THEOREM_5_1, **change})),
                                  _audit(GPT_NEO, hypotheses=_rows(**THEOREM_5_2))])
    assert record.verdict == "refuted" and record.numbers["covered_by"][GPT2_XL] == []
    assert "The theorems do not cover gpt2-xl." in record.detail
    name, verdict = next(iter(change.items()))
    assert f"fails on {name} ({verdict})" in record.detail


def test_an_unaudited_hypothesis_does_not_hold_and_no_trained_paper_model_is_not_run():
    record = report.scope_record([_audit(hypotheses=_rows(**{"U_eta = I": "holds"}))])
    assert record.verdict == "refuted" and "P_eta bounded (not audited)" in record.detail
    assert "'E decays': not audited" in record.detail
    assert report.scope_record([_audit(weights="random")]).verdict == "not-run"
    assert report.scope_record([_audit("tiny-gpt2", hypotheses=_rows(**THEOREM_5_1))]).verdict == "not-run"


# --- model.layernorm -------------------------------------------------------------------------------------------------
def test_layernorm_states_off_the_printed_radius_by_more_than_a_thousandth_are_a_discrepancy():
    """Width 1000 and gain 1: the printed radius (n+1) gamma0^2 is 1000 and a thousandth of it is 1.0 exactly."""
    audit = _audit(weights="random")
    variant = audit["runs"]["random"]["variants"]["ffn"]
    variant["layernorm_radius"] = {"min": 31.0, "max": math.nextafter(1001.0, 2000.0)}
    [record] = report.layernorm_records([audit])
    assert record.verdict == "discrepancy" and record.tolerance == SURFACE_TOL_FLOAT32
    assert record.numbers["printed radius (n+1) gamma0^2"] == 1000.0
    assert record.numbers["max | |u|^2/d - var/(var+eps) |"] == SURFACE_TOL_FLOAT32  # at the tolerance: on the surface
    assert record.numbers["sqrt(n+1) |gamma0|"] == math.sqrt(1000.0)
    assert record.numbers["measured |z - beta| min"] == 31.0 and record.numbers["max |mean u|"] == 1e-6
    for radius in (1001.0, 999.0, 1000.0):  # exactly a thousandth away, or on the printed radius: not a discrepancy
        variant["layernorm_radius"]["max"] = radius
        assert [r.verdict for r in report.layernorm_records([audit])] == ["failed"]
    variant["layernorm_radius"]["max"] = math.nextafter(999.0, 0.0)
    assert [r.verdict for r in report.layernorm_records([audit])] == ["discrepancy"]


@pytest.mark.parametrize("key", ["surface_radial", "surface_hyperplane"])
def test_layernorm_states_off_the_corrected_surface_fail(key):
    audit = _audit(weights="random")
    variant = audit["runs"]["random"]["variants"]["ffn"]
    variant["layernorm_radius"]["max"] = 31.0
    variant[key] = np.array([0.0, math.nextafter(SURFACE_TOL_FLOAT32, 1.0)])
    [record] = report.layernorm_records([audit])
    assert record.verdict == "failed" and "off the predicted surface" in record.detail


def test_only_layernorm_models_with_constant_gains_get_a_layernorm_record():
    assert report.layernorm_records([_audit(weights="random", kind="rmsnorm")]) == []
    assert report.layernorm_records([_audit(weights="random", verdict="nearly")]) == []
    audit = _audit(weights="random")
    audit["runs"]["random"]["weights"]["norms"][1]["verdict"] = "fails"  # any norm, not only the first
    assert report.layernorm_records([audit]) == []
    assert len(report.layernorm_records([_audit()])) == 2  # trained and random runs, one record each


# --- the pieces of the tables ----------------------------------------------------------------------------------------
def test_the_antisymmetric_part_over_the_symmetric_part_from_the_asymmetry():
    assert report._antisymmetric_over_symmetric(0.0) == 0.0
    assert report._antisymmetric_over_symmetric(1.2) == pytest.approx(0.6 / 0.8, rel=1e-15)  # a 3-4-5 triangle
    assert report._antisymmetric_over_symmetric(2.0) == math.inf  # U antisymmetric: no symmetric part
    assert report._antisymmetric_over_symmetric(math.nextafter(2.0, 0.0)) > 1e7
    # U = [[1, 1], [0, 1]]: |U - U^T| / |U| = sqrt(2) / sqrt(3), K = [[0, .5], [-.5, 0]], S = [[1, .5], [.5, 1]]
    assert report._antisymmetric_over_symmetric(math.sqrt(2 / 3)) == pytest.approx(math.sqrt(0.5 / 2.5), rel=1e-14)


def test_run_outputs_are_fitted_above_ten_times_their_effective_floor():
    values = 0.8 * np.exp(-0.5 * np.arange(12))[None, :].repeat(3, 0) * (1 + 0.01 * np.arange(3)[:, None])
    manifest = {"settings": {"model": "gpt2", "weights": "random", "ffn": True}, "floor": {"E_floor": 1e-4}}
    [item] = report.run_rates([("label", manifest, {"E": values.tolist()})])
    assert item == {"source": "label", "group": "gpt2 (random)", "ffn": True, "model": "gpt2", "weights": "random",
                    "rate": item["rate"]}
    expected = rate_summary(values, FLOOR_MARGIN * 1e-4)
    assert item["rate"]["floor"] == FLOOR_MARGIN * 1e-4 and item["rate"]["window"] == expected["window"]
    with_effective = {**manifest, "floor": {"E_floor": 1e-4, "effective_floor": 1e-3}}
    assert report.run_rates([("l", with_effective, {"E": values})])[0]["rate"]["floor"] == FLOOR_MARGIN * 1e-3
    [old] = report.run_rates([("old", {}, {"E": values})])  # a run made before floors: float32's floor of E
    assert old["rate"]["floor"] == FLOOR_MARGIN * E_FLOOR
    assert (old["group"], old["ffn"], old["model"], old["weights"]) == ("old (?)", None, None, None)


def test_the_hypothesis_summary_has_a_column_per_run_and_a_dash_where_a_run_has_no_row():
    first = _audit(hypotheses=_rows(**{"U_eta = I": "holds", "LayerNorm only": "nearly"}))
    second = _audit("tiny-llama", "random", hypotheses=_rows(**{"U_eta = I": "fails", "RMSNorm only": "holds"}))
    table = report.hypothesis_summary_table([first, second])
    assert table.columns == ("hypothesis", "needed by", "gpt2-xl (trained)", "gpt2-xl (random)", "tiny-llama (random)")
    assert table.rows == (("U_eta = I", "Theorem", "holds", "fails", "fails"),
                          ("LayerNorm only", "Theorem", "nearly", "-", "-"),
                          ("RMSNorm only", "Theorem", "-", "-", "holds"))


def test_the_comparison_table_words_each_verdict_and_pairs_suite_runs_by_group():
    table = report.comparison_table([_audit(ffn_effect="slower", versus=("indistinguishable", "slower"))])
    assert table.title == "In-kind rate comparisons (paired over the same prompts; 95% CI of the mean difference)"
    assert table.columns == ("model", "comparison", "rate difference", "95% CI", "rate ratio", "verdict")
    audit = _audit(ffn_effect="indistinguishable", versus=("faster", "faster"))
    audit["runs"]["random"]["ffn_effect"] = _comparison("faster")
    assert [row[-1] for row in report.comparison_table([audit]).rows] == [
        "indistinguishable", "FFN speeds", "trained faster", "trained faster"]
    assert table.rows == (
        ("gpt2-xl (trained)", "with FFN - without FFN", "0.25", "[0.125, 0.375]", "2", "FFN slows"),
        ("gpt2-xl (random)", "with FFN - without FFN", "0.25", "[0.125, 0.375]", "2", "FFN speeds"),
        ("gpt2-xl", "trained - random [ffn]", "0.25", "[0.125, 0.375]", "2", "indistinguishable"),
        ("gpt2-xl", "trained - random [no-ffn]", "0.25", "[0.125, 0.375]", "2", "trained slower"))
    fast, slow = [0.4, 0.5, 0.45], [0.2, 0.25, 0.22]
    items = [_suite_item("gpt2", True, fast), _suite_item("gpt2", False, slow), _suite_item("neo", True, fast),
             _suite_item("neo", False, slow[:2]), _suite_item("solo", True, fast), _suite_item("x", None, fast),
             _suite_item("alone", False, slow), _suite_item("slow", True, slow), _suite_item("slow", False, fast),
             _suite_item("same", True, fast), _suite_item("same", False, fast)]
    rows = report.comparison_table([], items).rows
    assert [row[:2] for row in rows] == [("gpt2 (trained), suite run", "with FFN - without FFN"),
                                         ("slow (trained), suite run", "with FFN - without FFN"),
                                         ("same (trained), suite run", "with FFN - without FFN")]
    assert [row[-1] for row in rows] == ["FFN speeds", "FFN slows", "indistinguishable"]


#: The fixed part of the section's text, word for word.
SECTION_TEXT = (
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
        "sublayer outputs; each has its own hypothesis row, measured on every model. ")


# --- the section's tables and text -----------------------------------------------------------------------------------
def test_fmt_writes_infinities_as_inf_and_three_significant_digits_otherwise():
    assert [report._fmt(v) for v in (math.inf, -math.inf, np.float64(np.inf), 1234.5, 0.000123456, 2)] == [
        "inf", "inf", "inf", "1.23e+03", "0.000123", "2"]


def test_the_rate_table_has_a_row_per_run_and_variant_and_per_suite_run():
    audit = _audit(versus=None)
    audit["runs"]["trained"]["variants"]["no-ffn"]["rate"] = {**_rate(0.125), "half_life": math.inf,
                                                               "blocks_to_half": None}
    extra = [{"source": "dir-a", "ffn": True, "rate": _rate(0.25)}, {"source": "dir-b", "ffn": False, "rate": _rate()},
             {"source": "dir-c", "rate": _rate()}]
    table = report.rate_table([audit], extra)
    assert table.columns == ("model", "variant", "rate r (1/layer)", "95% CI", "half-life (layers)", "median R^2",
                             "blocks to E/2", "mean E start -> end")
    assert table.rows == (
        ("gpt2-xl (trained)", "ffn", "0.5", "[0.25, 0.75]", "1.39", "0.88", "2", "0.5 -> 0.0625"),
        ("gpt2-xl (trained)", "no-ffn", "0.125", "[0.25, 0.75]", "inf", "0.88", "None", "0.5 -> 0.0625"),
        ("dir-a", "ffn", "0.25", "[0.25, 0.75]", "2.77", "0.88", "2", "0.5 -> 0.0625"),
        ("dir-b", "no-ffn", "0.5", "[0.25, 0.75]", "1.39", "0.88", "2", "0.5 -> 0.0625"),
        ("dir-c", "results.json", "0.5", "[0.25, 0.75]", "1.39", "0.88", "2", "0.5 -> 0.0625"))
    assert table.title.startswith("Exponential fits of E per layer")


def test_the_layer_table_reads_each_layers_heads_and_its_blocks_over_all_passes():
    audit = _audit(weights="random")
    run = audit["runs"]["random"]
    heads = [{"P_spectral": 2.0, "U_asymmetry": 1.2, "U_simple_positive_top": True, "U_top_real": 1.0, "U_radius": 4.0,
              "U_spread": 0.25},
             {"P_spectral": 3.0, "U_asymmetry": 0.0, "U_simple_positive_top": False, "U_top_real": 1.0, "U_radius": 0.0,
              "U_spread": 0.75},
             {"P_spectral": 1.0, "U_asymmetry": 2.0, "U_simple_positive_top": True, "U_top_real": -1.0, "U_radius": 2.0,
              "U_spread": 0.5}]
    run["weights"]["layers"] = [{"layer": 0, "heads": heads, "U_sum_asymmetry": 0.5},
                                {"layer": 1, "heads": heads[:1], "U_sum_asymmetry": math.inf}]
    variant = run["variants"]["ffn"]
    # two layers, two passes: columns 0 and 2 are layer 0's blocks, 1 and 3 layer 1's
    variant["inside_normalised"] = np.array([[True, False, True, False], [True, True, False, False]])
    variant["first_token_drift_block"] = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.05, 0.01, 0.02]])
    table = report.layer_table(audit, "random")
    assert table.rows == (
        (0, 3, "3", "1.2", "0.75", "2/3", "0", "0.5", "0.5", "0.75", "0.5"),  # Re(top)/radius 0.25, 0 (radius 0), -0.5
        (1, 1, "2", "1.2", "0.75", "1/1", "0.25", "0.25", "inf", "0.25", "0.4"))
    assert table.title == ("Per layer, gpt2-xl (random) (heads aggregated; states: full model, all passes)")
    assert table.columns == ("layer", "heads", "max |P_eta|_2", "median asym(U_eta)", "median |K|/|S| of U_eta",
                             "heads with simple top eig > 0", "median Re(top)/radius", "median spread", "asym(sum U)",
                             "share in open hemisphere", "max first-token drift")


def test_the_trained_families_are_side_by_side_from_two_trained_models():
    first = _audit(hypotheses=_rows(**{"U_eta symmetric": "holds", "conclusion: E decays [ffn]": "nearly"}))
    second = _audit(GPT_NEO, ffn_effect="slower", versus=("faster", "slower"))
    second["runs"]["trained"]["variants"]["no-ffn"]["rate"] = _rate(0.125)
    assert report.trained_families_table([first]) is None
    assert report.trained_families_table([first, _audit(weights="random")]) is None
    table = report.trained_families_table([first, _audit(weights="random"), second])
    assert table.columns == ("", "gpt2-xl (trained)", f"{GPT_NEO} (trained)")
    rows = {row[0]: row[1:] for row in table.rows}
    assert [row[0] for row in table.rows] == ["model", *report.TRAINED_SIDE_BY_SIDE,
                                               "E rate with FFN (1/layer, 95% CI)", "E rate without FFN (1/layer, 95% CI)",
                                               "FFN effect on the rate", "trained vs random rate [no-ffn]"]
    assert rows["model"] == ("gpt2, 1 layers, d = 1000, 1 heads / 1 kv, 2M parameters",) * 2  # 1.5e6 parameters
    assert rows["U_eta symmetric"] == ("holds", "-") and rows["conclusion: E decays [ffn]"] == ("nearly", "-")
    assert rows["E rate with FFN (1/layer, 95% CI)"] == ("0.5 [0.25, 0.75]; E 0.5 -> 0.0625",) * 2
    assert rows["E rate without FFN (1/layer, 95% CI)"][1] == "0.125 [0.25, 0.75]; E 0.5 -> 0.0625"
    assert rows["FFN effect on the rate"] == ("FFN speeds", "FFN slows")
    assert rows["trained vs random rate [no-ffn]"] == ("trained faster", "trained slower")
    third = _audit(ffn_effect="indistinguishable", versus=("faster", "indistinguishable"))
    fourth = _audit(versus=None)
    rows = {row[0]: row[1:] for row in report.trained_families_table([third, fourth]).rows}
    assert rows["FFN effect on the rate"] == ("indistinguishable", "FFN speeds")
    assert rows["trained vs random rate [no-ffn]"] == ("indistinguishable", "-")


def test_each_run_has_its_hypothesis_table():
    audit = _audit(hypotheses=_rows(**{"U_eta = I": "holds", "one head (h = 1)": "fails"}))
    tables = report.hypothesis_tables(audit)
    assert [t.title for t in tables] == ["Hypotheses in gpt2-xl (trained)", "Hypotheses in gpt2-xl (random)"]
    assert tables[0].columns == ("hypothesis", "needed by", "verdict", "numbers")
    assert tables[0].rows == (("U_eta = I", "Theorem", "holds", "n"), ("one head (h = 1)", "Theorem", "fails", "n"))
    assert tables[1].rows == (("U_eta = I", "Theorem", "fails", "n"),)


def test_the_section_orders_its_tables_and_says_which_trained_paper_models_ran():
    one = report.audit_section([_audit(weights="random")])
    assert one.title == "Theory meets practice" and one.order == 60
    assert [t.title.split(",")[0].split(" (")[0] for t in one.tables] == [
        "Hypothesis -> holds / nearly / fails", "Hypotheses in gpt2-xl", "Exponential fits of E per layer",
        "In-kind rate comparisons", "Per layer"]
    assert one.text == SECTION_TEXT + (
        "The paper's GPT-2 XL / GPT-Neo 2.7B claims concern trained weights that are not on this machine: the "
        "comparisons below are in kind and those claims stay not-run. ") + report.PAPER_MODELS_NOTE + (
        " Runs: " + report.settings_text([_audit(weights="random")]) + ".")
    assert one.figures == ()
    assert report.PAPER_MODELS_NOTE in one.text
    assert one.text.endswith(" Runs: " + report.settings_text([_audit(weights="random")]) + ".")
    pair = [_suite_item("gpt2", True, [0.4, 0.5, 0.45]), _suite_item("gpt2", False, [0.2, 0.25, 0.22])]
    both = report.audit_section([_audit(), _audit(GPT_NEO)], pair, order=7)
    assert both.order == 7 and both.tables[1].title == "The trained families side by side"
    assert len(both.tables) == 1 + 1 + 4 + 2 + 4 and both.tables[6].rows[-1][0] == "gpt2-False"
    assert both.tables[7].rows[-1][:2] == ("gpt2 (trained), suite run", "with FFN - without FFN")
    assert "Trained weights of gpt2-xl and EleutherAI/gpt-neo-2.7B are on this machine" in both.text
    assert "the suite's runs. " + report.PAPER_MODELS_NOTE in both.text and "the others' stay not-run" not in both.text
    single = report.audit_section([_audit()])
    assert "Trained weights of gpt2-xl are on this machine" in single.text
    assert "emp.theory-scope) get their verdicts from these audits and the suite's runs; the others' stay not-run. " \
        + report.PAPER_MODELS_NOTE in single.text


def test_the_settings_text_names_each_audits_runs_and_budget():
    assert report.settings_text([_audit(), _audit("m", "random")]) == (
        "gpt2-xl (trained, random; 1 layers, width 1000): 3 authors' prompts of 1000 tokens, 2 passes, seed 7, "
        "torch.float32; m (random; 1 layers, width 1000): 3 authors' prompts of 1000 tokens, 2 passes, seed 7, "
        "torch.float32")


def test_the_trained_paper_audits_are_made_where_their_weights_are_and_named_by_the_paper(monkeypatch, tmp_path):
    from types import SimpleNamespace

    source = SimpleNamespace(path=tmp_path / "neo", to_json=lambda: {"origin": "folder", "path": "P", "named_by": "N"})
    seen = []
    monkeypatch.setattr(report, "locate", lambda model, dirs: seen.append((model, dirs)) or
                        (source if model == GPT_NEO else None))
    calls = []

    def audit(model, weights, settings, folder):
        calls.append((model, weights, settings, folder))
        return _audit(model)

    audits, missing = report.trained_paper_audits("S", tmp_path, weights_dirs={"x": tmp_path}, audit=audit)
    assert seen == [(GPT2_XL, {"x": tmp_path}), (GPT_NEO, {"x": tmp_path})]
    assert calls == [(str(tmp_path / "neo"), "trained", "S", tmp_path)]
    assert [a["model"] for a in audits] == [GPT_NEO] and audits[0]["description"]["model"] == GPT_NEO
    assert audits[0]["weights_source"] == {"origin": "folder", "path": "P", "named_by": "N"}
    assert missing == {GPT2_XL: get_command(GPT2_XL)}
    assert report._origin(audits[0]) == f"{GPT_NEO} (weights from the folder P (N))"


def test_the_origin_of_weights_names_the_cache_a_folder_or_the_name():
    cached = {"model": "m", "weights_source": {"origin": "hf-cache", "repo_id": "org/m", "revision": "abc"}}
    assert report._origin(cached) == "m (weights from org/m at abc from the Hugging Face cache)"
    assert report._origin({"model": "m"}) == "m (weights from as named)"
    assert report._origin({"model": "m", "weights_source": None}) == "m (weights from as named)"


def test_not_run_names_what_is_needed_and_each_command():
    missing = report._missing(["openai-community/gpt2-xl"])
    assert missing == {GPT_NEO: get_command(GPT_NEO)}
    assert report._missing([]) == {GPT2_XL: get_command(GPT2_XL), GPT_NEO: get_command(GPT_NEO)}


def test_a_not_run_record_says_what_it_needs_and_the_commands_word_for_word():
    record = report.rate_record([_audit("tiny-gpt2")])
    assert record.detail == (
        "Not run: the comparison of pretrained and random weights needs the trained weights of GPT-2 XL / GPT-Neo 2.7B, "
        "which are not on this machine (no named folder, not in the Hugging Face cache). To run it, "
        f"gpt2-xl: {get_command(GPT2_XL)}; {GPT_NEO}: {get_command(GPT_NEO)}. The numbers are the in-kind "
        "measurements on the models that ran here.")
    assert record.numbers["missing"] == {GPT2_XL: get_command(GPT2_XL), GPT_NEO: get_command(GPT_NEO)}
    assert record.numbers["tiny-gpt2 trained - random rate [ffn]"] == 0.25


def test_the_audit_records_are_each_records_on_the_same_audits():
    audits = [_audit(), _audit(GPT_NEO, ffn_effect="slower")]
    records = report.audit_records(audits)
    expected = [report.hemisphere_record(audits), report.rate_record(audits), report.ffn_record(audits),
                report.scope_record(audits), *report.layernorm_records(audits)]
    assert [r.to_json() for r in records] == [r.to_json() for r in expected]
    assert [r.claim for r in records][:4] == [r.claim for r in expected][:4] and len(records) == 8
