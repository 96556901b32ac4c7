"""The audit's grades (empirical.audit.grading) and its table (empirical.audit.checklist) on synthetic runs: every
threshold met exactly and passed by one float, every verdict of every row reached, the numbers column word for word.

A synthetic run is the dict :func:`empirical.audit.measure.audit_adapter` returns, with the entries the table reads
and simple values (one layer of one head, width 4, one prompt of 3 tokens), so that every number is known by hand."""

import copy

import numpy as np
import pytest

from empirical.audit.checklist import hypothesis_rows
from empirical.audit.grading import (Hypothesis, RunView, decay_graded, decay_numbers, decay_verdict, graded,
                                     share_graded, worst)

ABOVE = np.nextafter  # the next float64 after a bound, towards the second argument


# --- grading ---------------------------------------------------------------------------------------------------------
def test_graded_holds_up_to_1e_6_and_is_nearly_up_to_a_tenth_both_inclusive():
    assert graded(0.0) == graded(1e-6) == "holds"
    assert graded(ABOVE(1e-6, 1.0)) == graded(0.1) == "nearly"
    assert graded(ABOVE(0.1, 1.0)) == graded(np.inf) == "fails"
    # bounds given by the caller replace both defaults
    assert graded(0.5, exact=0.5, nearly=0.75) == "holds" and graded(0.75, exact=0.5, nearly=0.75) == "nearly"
    assert graded(ABOVE(0.5, 1.0), exact=0.5) == "fails"  # nearly's default 0.1 is below exact here
    assert graded(0.75, nearly=0.75) == "nearly" and graded(ABOVE(0.75, 1.0), nearly=0.75) == "fails"


def test_share_graded_holds_for_every_one_and_is_nearly_from_nine_tenths():
    assert share_graded(1.0) == "holds"
    assert share_graded(ABOVE(1.0, 0.0)) == share_graded(0.9) == "nearly"
    assert share_graded(ABOVE(0.9, 0.0)) == share_graded(0.0) == "fails"


@pytest.mark.parametrize("verdicts, expected", [
    (["holds", "nearly", "fails"], "fails"), (["fails", "holds"], "fails"), (["holds", "nearly"], "nearly"),
    (["nearly", "holds"], "nearly"), (["holds", "holds"], "holds"), ([], "holds")])
def test_worst_is_fails_before_nearly_before_holds(verdicts, expected):
    assert worst(verdicts) == expected


def _rate(**changes):
    return {"rate": 0.5, "ci_low": 0.25, "ci_high": 0.75, "r2": 0.987, "E_start": 1.0, "E_end": 0.5, **changes}


def test_e_decays_holds_for_a_resolved_positive_rate_with_e_lower_at_the_end():
    assert decay_graded(_rate()) == "holds"
    # controls: each of the two conditions alone is not enough (both bounds strict)
    assert decay_graded(_rate(ci_low=0.0)) == "fails"
    assert decay_graded(_rate(E_end=1.0)) == "fails"
    assert decay_graded(_rate(ci_low=-1.0, E_end=0.5)) == "fails"


def test_e_decays_is_nearly_when_e_fell_tenfold_without_a_resolved_rate():
    assert decay_graded(_rate(ci_low=-1.0, E_end=0.1)) == "nearly"  # exactly ten-fold: inclusive
    assert decay_graded(_rate(ci_low=-1.0, E_end=ABOVE(0.1, 1.0))) == "fails"
    assert decay_graded(_rate(ci_low=-1.0, E_start=2.0, E_end=0.2)) == "nearly"  # relative to the start
    assert decay_graded(_rate(ci_low=-1.0, E_start=2.0, E_end=ABOVE(0.2, 1.0))) == "fails"


def test_the_decay_numbers_read_the_rate_and_the_mean_curve():
    values = np.array([[1.0, 0.5, 0.125, 0.25], [3.0, 0.5, 0.375, 0.25]])  # mean 2, 0.5, 0.25, 0.25: lowest first at 2
    held = "E 1 -> 0.5 (mean over prompts; lowest 0.25 after block 2); rate 0.5/layer [0.25, 0.75], R^2 0.99"
    assert decay_numbers(_rate(), values) == held
    assert decay_verdict(_rate(), values) == {"verdict": "holds", "numbers": held}
    nearly = _rate(ci_low=-1.0, E_end=0.1)
    assert decay_verdict(nearly, values) == {"verdict": "nearly", "numbers": (
        "E 1 -> 0.1 (mean over prompts; lowest 0.25 after block 2); rate 0.5/layer [-1, 0.75], R^2 0.99; "
        "E fell at least 10-fold, but not as one exponential over the blocks")}
    assert decay_numbers(_rate(E_end=1.0), values).endswith("R^2 0.99")  # fails: no sentence added


# --- a synthetic run -------------------------------------------------------------------------------------------------
def _variant(ffn: bool) -> dict:
    updates = 0 if ffn else 3
    return {"E": np.array([[1.0, 0.5, 0.25, 0.125]]),
            "inside_residual": np.ones((1, 4), bool), "margin_residual": np.array([[0.5, 0.75, 0.5, 0.625]]),
            "inside_normalised": np.ones((1, 3), bool), "margin_normalised": np.array([[0.25, 0.5, 0.375]]),
            "first_token_drift_block": np.zeros((1, 3)), "first_token_drift_pass": np.zeros((1, 1)),
            "surface_radial": np.array([1e-5, 3e-5, 2e-5]), "surface_hyperplane": np.array([2e-5, 1e-5, 0.0]),
            "qk_scale_spread": np.zeros((1, 3)),
            "update_distance": np.zeros((1, updates)), "update_within_rounding": np.ones((1, updates), bool),
            "rate": _rate(rate=0.693, ci_low=0.625, ci_high=0.75, r2=1.0, E_end=0.125)}


def _run() -> dict:
    head = {"P_spectral": 2.5, "U_asymmetry": 0.0, "U_simple_positive_top": True, "P_asymmetry": 0.0}
    layer = {"width": 4, "head_dim": 4, "kv_heads": 1, "qk_norm": False, "window": None, "heads": [head],
             "U_sum_identity_distance": 0.0, "U_sum_condition": 1.0}
    norm = {"kind": "layernorm", "verdict": "holds", "axis_ratio": 1.0, "bias_norm": 0.0, "gain_rms": 1.0}
    return {"weights": {"layers": [layer], "norms": [norm], "qk_norms": [],
                        "embedding_scale": {"factor": 1.0, "sqrt_width": 2.0, "residual": 0.0}},
            "variants": {"ffn": _variant(True), "no-ffn": _variant(False)}, "context_length": 8}


def _rows(run: dict, tokens: int = 3) -> dict[str, dict[str, str]]:
    return {row["hypothesis"]: row for row in hypothesis_rows(run, tokens)}


def _table(run: dict, tokens: int = 3) -> dict[str, tuple[str, str]]:
    return {title: (row["verdict"], row["numbers"]) for title, row in _rows(run, tokens).items()}


def _layers(run: dict, count: int) -> dict:
    """The run with ``count`` copies of its layer, each of ``heads`` copies of its head."""
    run["weights"]["layers"] = [copy.deepcopy(run["weights"]["layers"][0]) for _ in range(count)]
    return run


PAPER_TABLE = {
    "P_eta bounded": ("holds", "fixed finite weights; max |P_eta|_2 = 2.5 over all heads"),
    "P, U time-invariant": ("holds", "1 blocks with their own weights (per pass; periodic over passes)"),
    "U_eta = I": ("holds", "each U_eta is d x d with d_head = d = 4; summed over heads: |sum U - I|_F / sqrt(d) = "
                           "0 .. 0"),
    "one head (h = 1)": ("holds", "h = 1 heads per block"),
    "U_eta symmetric": ("holds", "|U - U^T|_F/|U|_F median 0, range 0 .. 0 (random matrices: ~1.41)"),
    "top eigenvalue of U_eta real, simple, > 0": ("holds", "1 of 1 heads"),
    "U invertible": ("holds", "each head's U_eta is d x d with d_head = d = 4; summed U condition number 1 .. 1"),
    "P symmetric positive definite (W = P)": ("holds", "each P_eta is d x d with d_head = d = 4; "
                                                       "|P - P^T|_F/|P|_F median 0"),
    "normalisation onto a sphere (constant gain)": ("holds", "layernorm; gain axis ratio max|g|/min|g| median 1, "
                                                             "max 1 over 1 norms"),
    "normalised states on a surface centred at 0 (E_W)": (
        "holds", "LayerNorm centre beta: max |beta| / (sqrt(d) rms(gamma)) = 0; states also lie in the hyperplane "
                 "1^T (z - beta)/gamma = 0"),
    "initial tokens are the embedding rows (no embedding scale)": (
        "holds", "embed(ids) = c W_E[ids] with c = 1 (sqrt(d) = 2), fit residual 0"),
    "each token attends to all earlier tokens (no attention window)": (
        "holds", "every layer attends to all earlier tokens"),
    "every head has its own keys and values (no grouped-query attention)": (
        "holds", "h = 1 heads, each with its own W_K, W_V"),
    "attention logits z_i^T P_eta z_j with a fixed P_eta (no QK-norm)": (
        "holds", "no QK-norm: the logits are s (W_Q z_i)^T (W_K z_j) (rotary aside)"),
    "the block adds the attention output itself (no post-norm) [no-ffn]": (
        "holds", "update x_out - x_in against the output projection's output a: |update - a|/|a| median 0, max 0; "
                 "3 of 3 (prompt, block) updates equal a to float32 rounding"),
    **{title.format(variant=name): row for name in ("ffn", "no-ffn") for title, row in {
        "normalised states on the predicted surface [{variant}]": (
            "holds", "max | |u|^2/d - s/(s+eps) | = 3e-05, max |mean u| = 2e-05 (tolerance 0.0001: float32)"),
        "tokens in one open hemisphere, normalised states [{variant}]": (
            "holds", "3 of 3 (prompt, block) states; min LP margin 0.25; l = 3 tokens, d = 4"),
        "tokens in one open hemisphere, residual stream [{variant}]": (
            "holds", "4 of 4 (prompt, block) states; min LP margin 0.5; l = 3 tokens, d = 4"),
        "first token fixed [{variant}]": (
            "holds", "1 - cos per block: median 0, max 0; same block, consecutive passes: max 0, last pass max 0"),
        "conclusion: E decays [{variant}]": (
            "holds", "E 1 -> 0.125 (mean over prompts; lowest 0.125 after block 3); rate 0.693/layer [0.625, 0.75], "
                     "R^2 1.00"),
    }.items()},
}


def test_a_run_meeting_every_hypothesis_gets_every_row_word_for_word_in_the_tables_order():
    rows = hypothesis_rows(_run(), 3)
    assert [(row["verdict"], row["numbers"]) for row in rows] == list(PAPER_TABLE.values())
    assert [row["hypothesis"] for row in rows] == list(PAPER_TABLE)
    assert rows[0]["needed_by"] == "Lemma 4.1; Thm 4.1, 5.1, 5.2"
    assert rows[-1]["needed_by"] == "Thm 4.1, 5.1, 5.2 (conclusion)"
    assert [row["needed_by"] for row in rows[-5:]] == [
        "Remark 2.3 (corrected); model.layernorm", "Thm 4.1 (premise)", "Thm 4.1 (premise)",
        "Thm 5.1 (consequence of U = I)", "Thm 4.1, 5.1, 5.2 (conclusion)"]


def test_the_weights_rows_read_every_head_of_every_layer():
    run = _layers(_run(), 2)
    second = run["weights"]["layers"][1]
    second["heads"] = [dict(second["heads"][0], P_spectral=7.5, U_asymmetry=0.5, U_simple_positive_top=False,
                            P_asymmetry=0.25), dict(second["heads"][0], P_asymmetry=0.125)]
    second.update(U_sum_identity_distance=1e-6, U_sum_condition=3.0)
    table = _table(run)
    assert table["P_eta bounded"] == ("holds", "fixed finite weights; max |P_eta|_2 = 7.5 over all heads")
    assert table["P, U time-invariant"] == ("fails", "2 blocks with their own weights (per pass; periodic over passes)")
    assert table["U_eta = I"] == ("holds", "each U_eta is d x d with d_head = d = 4; summed over heads: "
                                           "|sum U - I|_F / sqrt(d) = 0 .. 1e-06")
    assert table["one head (h = 1)"] == ("holds", "h = 1 heads per block")  # the first layer's count
    # median of 0, 0.5, 0 is 0: nearly, though one head is far from symmetric
    assert table["U_eta symmetric"] == ("nearly", "|U - U^T|_F/|U|_F median 0, range 0 .. 0.5 (random matrices: "
                                                  "~1.41)")
    assert table["top eigenvalue of U_eta real, simple, > 0"] == ("fails", "2 of 3 heads")  # 2/3 < 0.9
    assert table["U invertible"] == ("holds", "each head's U_eta is d x d with d_head = d = 4; summed U condition "
                                              "number "
                                              "1 .. 3")
    # median of 0, 0.25, 0.125 is 0.125, beyond a tenth
    assert table["P symmetric positive definite (W = P)"] == (
        "fails", "each P_eta is d x d with d_head = d = 4; |P - P^T|_F/|P|_F median 0.125")


def test_u_equals_i_and_symmetry_are_graded_at_their_bounds():
    run = _run()
    layer = run["weights"]["layers"][0]
    layer["U_sum_identity_distance"] = ABOVE(1e-6, 1.0)
    assert _table(run)["U_eta = I"][0] == "nearly"
    layer["U_sum_identity_distance"] = ABOVE(0.1, 1.0)
    assert _table(run)["U_eta = I"][0] == "fails"
    # a head narrower than the width: U_eta = W_O W_V has rank <= 2 < 4, never the identity, never invertible,
    # P_eta never definite, whatever the summed distance says
    for head_dim in (2, 3):
        narrow = _run()
        narrow["weights"]["layers"][0]["head_dim"] = head_dim
        table = _table(narrow)
        assert table["U_eta = I"][0] == table["U invertible"][0] == "fails"
        assert table["P symmetric positive definite (W = P)"][0] == "fails"
        assert table["U_eta = I"][1] == (f"each U_eta has rank <= d_head = {head_dim} < d = 4; summed over heads: "
                                         "|sum U - I|_F / sqrt(d) = 0 .. 0")
        assert table["U invertible"][1] == (f"each head's U_eta has rank <= d_head = {head_dim} < d = 4; summed U "
                                            "condition number 1 .. 1")
        assert table["P symmetric positive definite (W = P)"][1] == (
            f"each P_eta has rank <= d_head = {head_dim} < d = 4 (not definite); |P - P^T|_F/|P|_F median 0")
    asymmetric = _run()
    head = asymmetric["weights"]["layers"][0]["heads"][0]
    head["U_asymmetry"] = 1e-6
    assert _table(asymmetric)["U_eta symmetric"][0] == "holds"
    head["U_asymmetry"] = ABOVE(1e-6, 1.0)
    assert _table(asymmetric)["U_eta symmetric"][0] == "nearly"
    head["U_asymmetry"] = 0.1
    assert _table(asymmetric)["U_eta symmetric"][0] == "nearly"
    head["U_asymmetry"] = ABOVE(0.1, 1.0)
    assert _table(asymmetric)["U_eta symmetric"][0] == "fails"
    head["P_asymmetry"] = ABOVE(1e-6, 1.0)
    assert _table(asymmetric)["P symmetric positive definite (W = P)"][0] == "nearly"
    head["P_asymmetry"] = ABOVE(0.1, 1.0)
    assert _table(asymmetric)["P symmetric positive definite (W = P)"][0] == "fails"


def test_a_model_of_several_heads_fails_one_head_and_nine_tenths_of_heads_is_nearly():
    run = _run()
    layer = run["weights"]["layers"][0]
    layer["heads"] = [dict(layer["heads"][0]) for _ in range(10)]
    layer["heads"][0]["U_simple_positive_top"] = False
    table = _table(run)
    assert table["one head (h = 1)"] == ("fails", "h = 10 heads per block")
    assert table["top eigenvalue of U_eta real, simple, > 0"] == ("nearly", "9 of 10 heads")


def test_the_invertible_row_names_no_condition_number_when_the_run_has_none():
    run = _run()
    del run["weights"]["layers"][0]["U_sum_condition"]
    assert _table(run)["U invertible"] == ("holds", "each head's U_eta is d x d with d_head = d = 4")


def test_the_normalisation_rows_read_every_norm():
    run = _run()
    norm = run["weights"]["norms"][0]
    run["weights"]["norms"] = [norm, dict(norm, verdict="nearly", axis_ratio=1.25, bias_norm=0.5, gain_rms=0.25),
                               dict(norm, axis_ratio=1.0625)]
    table = _table(run)
    assert table["normalisation onto a sphere (constant gain)"] == (
        "nearly", "layernorm; gain axis ratio max|g|/min|g| median 1.06, max 1.25 over 3 norms")
    # the centre: |beta| / (sqrt(4) rms(gamma)) = 0.5 / (2 * 0.25) = 1 for the second norm
    assert table["normalised states on a surface centred at 0 (E_W)"] == (
        "fails", "LayerNorm centre beta: max |beta| / (sqrt(d) rms(gamma)) = 1; states also lie in the hyperplane "
                 "1^T (z - beta)/gamma = 0")
    run["weights"]["norms"][1].update(verdict="fails", bias_norm=0.2, gain_rms=0.5)  # 0.2 / (2 * 0.5) = 0.2
    table = _table(run)
    assert table["normalisation onto a sphere (constant gain)"][0] == "fails"
    assert table["normalised states on a surface centred at 0 (E_W)"][0] == "fails"
    run["weights"]["norms"][1].update(bias_norm=0.1)  # 0.1: nearly (inclusive)
    assert _table(run)["normalised states on a surface centred at 0 (E_W)"][0] == "nearly"


def test_an_rmsnorm_run_gets_the_ellipsoid_row_and_no_layernorm_centre():
    run = _run()
    norm = {"kind": "rmsnorm", "verdict": "fails", "axis_ratio": 4.0, "W_min": 0.0625, "W_max": 1.0}
    run["weights"]["norms"] = [norm, dict(norm, W_min=0.125, W_max=2.0)]
    for variant in run["variants"].values():
        variant["surface_hyperplane"] = np.array([0.5])  # RMSNorm has no hyperplane: never read
    rows = _rows(run)
    assert rows["normalised states on a surface centred at 0 (E_W)"] == {
        "hypothesis": "normalised states on a surface centred at 0 (E_W)", "needed_by": "eq. 2 (E_W)",
        "verdict": "holds", "numbers": "RMSNorm: E_W with W = diag(1/(d g^2)), entries 0.0625 .. 2; the map is "
                                       "diag(g) . pi_{I/d}, not pi_W"}
    assert len([row for row in hypothesis_rows(run, 3) if row["hypothesis"].startswith("normalised states on a s")]) == 1
    assert rows["normalisation onto a sphere (constant gain)"] == {
        "hypothesis": "normalisation onto a sphere (constant gain)", "needed_by": "Remark 2.3; all theorems (W = I)",
        "verdict": "fails", "numbers": "rmsnorm; gain axis ratio max|g|/min|g| median 4, max 4 over 2 norms"}
    assert rows["normalised states on the predicted surface [ffn]"]["numbers"] == (
        "max | |u|^2/d - s/(s+eps) | = 3e-05 (tolerance 0.0001: float32)")
    del run["weights"]["norms"][1]["W_min"]  # a zero gain: W undefined
    assert _rows(run)["normalised states on a surface centred at 0 (E_W)"]["numbers"] == (
        "RMSNorm: E_W with W = diag(1/(d g^2)), entries undefined (a zero gain); the map is diag(g) . pi_{I/d}, "
        "not pi_W")


def test_an_embedding_scale_is_graded_by_its_distance_from_one_and_explained():
    run = _run()
    run["weights"]["embedding_scale"] = {"factor": 1.0 + 2e-6, "sqrt_width": 2.0, "residual": 1.5e-7}
    assert _table(run)["initial tokens are the embedding rows (no embedding scale)"] == (
        "nearly", "embed(ids) = c W_E[ids] with c = 1 (sqrt(d) = 2), fit residual 1.5e-07; N(c y) = N(y) up to eps, "
                  "but each block's first update is 1 times smaller relative to the stream than with unscaled "
                  "embeddings")
    run["weights"]["embedding_scale"]["factor"] = 2.0
    assert _table(run)["initial tokens are the embedding rows (no embedding scale)"] == (
        "fails", "embed(ids) = c W_E[ids] with c = 2 (sqrt(d) = 2), fit residual 1.5e-07; N(c y) = N(y) up to eps, "
                 "but each block's first update is 2 times smaller relative to the stream than with unscaled "
                 "embeddings")
    run["weights"]["embedding_scale"]["factor"] = 1.0 - 2.0**-20  # |c - 1| = 9.5e-7, exactly: holds
    assert _table(run)["initial tokens are the embedding rows (no embedding scale)"][0] == "holds"


def test_an_attention_window_fails_only_when_it_restricts_the_context():
    run = _layers(_run(), 3)
    layers = run["weights"]["layers"]
    layers[0]["window"], layers[2]["window"] = 8, 4
    title = "each token attends to all earlier tokens (no attention window)"
    assert _table(run, tokens=3)[title] == (
        "fails", "2 of 3 layers see only the last [4, 8] tokens: for prompts longer than that a token no longer sees "
                 "the first ones; the audited prompts (l = 3) fit in the window")
    assert _table(run, tokens=4)[title][1].endswith("the audited prompts (l = 4) fit in the window")
    assert _table(run, tokens=5)[title][1].endswith("the audited prompts (l = 5) are longer")
    layers[2]["window"] = 8  # windows as long as the context restrict nothing: holds, the numbers still name them
    assert _table(run)[title] == (
        "holds", "2 of 3 layers see only the last [8] tokens: for prompts longer than that a token no longer sees the "
                 "first ones; the audited prompts (l = 3) fit in the window")
    layers[2]["window"] = 7
    assert _table(run)[title][0] == "fails"
    del run["context_length"]  # no context length known: every window restricts
    layers[2]["window"] = 8
    assert _table(run)[title][0] == "fails"


def test_grouped_query_attention_fails_and_names_its_groups():
    run = _run()
    layer = run["weights"]["layers"][0]
    layer["heads"] = [dict(layer["heads"][0]) for _ in range(6)]
    title = "every head has its own keys and values (no grouped-query attention)"
    layer["kv_heads"] = 6
    assert _table(run)[title] == ("holds", "h = 6 heads, each with its own W_K, W_V")
    layer["kv_heads"] = 2
    assert _table(run)[title] == (
        "fails", "h = 6 query heads share 2 key/value head(s) (3 per group): P_eta = s W_Q,eta^T W_K,g and U_eta = "
                 "W_O,eta W_V,g with the group's W_K,g, W_V,g, so the U_eta of a group share their row space")


def test_a_qk_norm_is_graded_by_the_spread_of_its_divisor():
    run = _layers(_run(), 2)
    run["weights"]["layers"][1]["qk_norm"] = True
    run["weights"]["qk_norms"] = [{"axis_ratio": 1.5}, {"axis_ratio": 3.0}]
    run["variants"]["ffn"]["qk_scale_spread"] = np.array([[0.0, 1e-6, 0.0]])
    run["variants"]["no-ffn"]["qk_scale_spread"] = np.array([[0.0, 0.0, 0.0]])
    title = "attention logits z_i^T P_eta z_j with a fixed P_eta (no QK-norm)"
    assert _table(run)[title] == (
        "holds", "QK-norm in 1 of 2 layers: the logit is a fixed bilinear form divided by rms(W_Q z_i) rms(W_K z_j); "
                 "over token pairs that divisor varies by max/min - 1 = median 0, max 1e-06 (per prompt, head and "
                 "block); q/k norm gain axis ratio up to 3")
    run["variants"]["no-ffn"]["qk_scale_spread"] = np.array([[0.05, 0.0, 0.0]])  # both variants read
    assert _table(run)[title][0] == "nearly"
    run["variants"]["no-ffn"]["qk_scale_spread"] = np.array([[0.5, 0.0, 0.0]])
    assert _table(run)[title][0] == "fails"
    run["weights"]["layers"][1]["qk_norm"] = False
    for variant in run["variants"].values():  # no QK-norm, no spread measured: nothing varies
        variant["qk_scale_spread"] = np.zeros((1, 0))
    assert _table(run)[title] == ("holds", "no QK-norm: the logits are s (W_Q z_i)^T (W_K z_j) (rotary aside)")


def test_a_qk_norm_whose_spread_was_never_measured_fails_and_says_so():
    """A run with QK-norm layers but no looped block (no spread measured): nothing shows the divisor constant."""
    run = _layers(_run(), 2)
    run["weights"]["layers"][1]["qk_norm"] = True
    run["weights"]["qk_norms"] = [{"axis_ratio": 1.5}]
    for variant in run["variants"].values():
        variant["qk_scale_spread"] = np.zeros((1, 0))
    title = "attention logits z_i^T P_eta z_j with a fixed P_eta (no QK-norm)"
    assert _table(run)[title] == (
        "fails", "QK-norm in 1 of 2 layers: the logit is a fixed bilinear form divided by rms(W_Q z_i) rms(W_K z_j); "
                 "over token pairs that divisor varies by max/min - 1 = not measured (no block was looped); q/k norm "
                 "gain axis ratio up to 1.5")
    # control: the same run with a spread of 0 measured in one block holds
    run["variants"]["ffn"]["qk_scale_spread"] = np.zeros((1, 1))
    assert _table(run)[title][0] == "holds"


def test_a_post_norm_update_is_graded_by_its_distance_from_the_projections_output():
    run = _run()
    variant = run["variants"]["no-ffn"]
    variant["update_within_rounding"] = np.array([[True, False, True]])
    variant["update_distance"] = np.array([[0.0, 0.1, 0.025]])
    title = "the block adds the attention output itself (no post-norm) [no-ffn]"
    assert _table(run)[title] == (
        "nearly", "update x_out - x_in against the output projection's output a: |update - a|/|a| median 0.025, max "
                  "0.1; 2 of 3 (prompt, block) updates equal a to float32 rounding; a norm rescales a to a fixed rms "
                  "times its gain before it joins the stream, which is not the projection pi_W of the stream")
    variant["update_distance"] = np.array([[0.0, ABOVE(0.1, 1.0), 0.025]])
    assert _table(run)[title][0] == "fails"
    del run["variants"]["no-ffn"]  # the row exists only for a run without FFN
    assert title not in _table(run)


def test_the_surface_row_holds_up_to_the_float32_tolerance_and_fails_without_a_norm():
    run = _run()
    title = "normalised states on the predicted surface [ffn]"
    run["variants"]["ffn"]["surface_radial"] = np.array([1e-4, 0.0])
    assert _table(run)[title][0] == "holds"
    run["variants"]["ffn"]["surface_radial"] = np.array([ABOVE(1e-4, 1.0), 0.0])
    assert _table(run)[title][0] == "fails"
    run["variants"]["ffn"]["surface_radial"] = np.zeros(0)  # attention reads the raw stream
    assert _table(run)[title] == ("fails", "no norm before attention: it reads the un-normalised residual stream")
    assert _table(run)["normalised states on the predicted surface [no-ffn]"][0] == "holds"  # per variant


def test_the_hemisphere_rows_are_graded_by_the_share_of_states_inside():
    run = _run()
    variant = run["variants"]["no-ffn"]
    variant["inside_residual"] = np.ones((2, 5), bool)
    variant["margin_residual"] = np.full((2, 5), 0.5)
    variant["inside_residual"][0, 0] = False
    variant["margin_residual"][0, 0] = -0.25
    table = _table(run)
    assert table["tokens in one open hemisphere, residual stream [no-ffn]"] == (
        "nearly", "9 of 10 (prompt, block) states; min LP margin -0.25; l = 3 tokens, d = 4")
    assert table["tokens in one open hemisphere, residual stream [ffn]"][0] == "holds"
    variant["inside_normalised"] = np.array([[True, False, True]])
    assert _table(run)["tokens in one open hemisphere, normalised states [no-ffn]"] == (
        "fails", "2 of 3 (prompt, block) states; min LP margin 0.25; l = 3 tokens, d = 4")


def test_the_first_token_is_graded_with_a_nearly_bound_of_one_hundredth():
    run = _layers(_run(), 2)
    variant = run["variants"]["ffn"]
    variant["first_token_drift_block"] = np.array([[0.0, 1e-6, 0.0]])
    variant["first_token_drift_pass"] = np.array([[0.5, 0.25, 0.125]])  # the last pass: its last 2 (layers) blocks
    assert _table(run)["first token fixed [ffn]"] == (
        "holds", "1 - cos per block: median 0, max 1e-06; same block, consecutive passes: max 0.5, last pass max 0.25")
    variant["first_token_drift_block"] = np.array([[0.0, 0.01, 0.0]])
    assert _table(run)["first token fixed [ffn]"][0] == "nearly"
    variant["first_token_drift_block"] = np.array([[0.0, ABOVE(0.01, 1.0), 0.0]])
    assert _table(run)["first token fixed [ffn]"][0] == "fails"
    variant["first_token_drift_pass"] = np.zeros((1, 0))  # one pass: no consecutive passes to compare
    assert _table(run)["first token fixed [ffn]"][1] == "1 - cos per block: median 0, max 0.01"


def test_e_decays_per_variant_reads_its_own_rate():
    run = _run()
    run["variants"]["no-ffn"]["rate"] = _rate(ci_low=-0.5, E_end=0.05)
    table = _table(run)
    assert table["conclusion: E decays [ffn]"][0] == "holds"
    assert table["conclusion: E decays [no-ffn]"] == (
        "nearly", "E 1 -> 0.05 (mean over prompts; lowest 0.125 after block 3); rate 0.5/layer [-0.5, 0.75], R^2 0.99; "
                  "E fell at least 10-fold, but not as one exponential over the blocks")


# --- the view and the row --------------------------------------------------------------------------------------------
def test_a_view_reads_the_first_layers_shape_and_norm_and_one_view_per_variant():
    run = _layers(_run(), 2)
    run["weights"]["layers"][1].update(width=9, head_dim=3)
    run["weights"]["norms"].append({"kind": "rmsnorm"})
    view = RunView(run, 3)
    assert (view.width, view.head_dim, view.norm_kind, view.name, view.variant) == (4, 4, "layernorm", "", None)
    assert view.layers is run["weights"]["layers"] and view.norms is run["weights"]["norms"]
    assert len(view.heads) == 2 and view.heads[1] is run["weights"]["layers"][1]["heads"][0]
    views = view.per_variant()
    assert [(v.name, v.tokens, v.run) for v in views] == [("ffn", 3, run), ("no-ffn", 3, run)]
    assert [v.variant for v in views] == [run["variants"]["ffn"], run["variants"]["no-ffn"]]


def test_a_hypothesis_row_measures_grades_and_describes_and_applies_by_default():
    hypothesis = Hypothesis("x [{variant}]", "Thm 0", lambda view: view.tokens, lambda n: f"graded {n}",
                            lambda n: f"described {n}")
    view = RunView(_run(), 7, "no-ffn", {})
    assert hypothesis.applies(view) is True
    assert hypothesis.row(view) == {"hypothesis": "x [no-ffn]", "needed_by": "Thm 0", "verdict": "graded 7",
                                    "numbers": "described 7"}
