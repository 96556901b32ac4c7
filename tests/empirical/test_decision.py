"""The collapse rule (empirical/decision.py): each verdict is reached, on series and on tiny models, and none
changes when the maximum of passes and the plateau window double (or the threshold does)."""

from dataclasses import replace

import pytest

from empirical.checks import check_in_kind, check_random_weights, check_trained, collapse_verdict
from empirical.decision import FLOOR_MARGIN, CollapseRule, decide, decide_twice, needs_more_passes, pass_ends
from empirical.run import RunSettings, load_results, run_experiment

from .tiny_trained import BUDGET, RULE, tiny_model

FLOOR = 1e-6  # a float32-like floor for the series below


def _geometric(start, factor, passes):
    return [start * factor**k for k in range(passes + 1)]


# -- on series -------------------------------------------------------------------------------------------

def test_a_series_below_the_threshold_collapses_at_its_first_pass_below():
    ends = _geometric(0.8, 0.5, 20)  # 0.8 * 0.5^10 = 7.8e-4 < 1e-3 at pass 10
    decision = decide(ends, FLOOR)
    assert (decision.verdict, decision.decided_at, decision.first_below_threshold) == ("collapsed", 10, 10)
    assert decision.monotone and decision.E_final == ends[-1]


def test_a_flat_series_stalls_after_two_windows():
    decision = decide([0.9] + [0.5] * 30, FLOOR)
    assert (decision.verdict, decision.decided_at) == ("stalled", 2 * CollapseRule().window)


def test_a_series_falling_too_slowly_stalls_and_a_faster_one_does_not():
    window = CollapseRule().window
    # a fall of 5% per window is too slow; 20% per window is falling
    assert decide(_geometric(0.5, 0.95 ** (1 / window), 40), FLOOR).verdict == "stalled"
    assert decide(_geometric(0.5, 0.80 ** (1 / window), 40), FLOOR).verdict == "undecided"


def test_a_series_still_falling_at_the_maximum_is_undecided():
    decision = decide(_geometric(0.5, 0.97, 50), FLOOR)
    assert (decision.verdict, decision.decided_at, decision.passes_read) == ("undecided", None, 50)
    assert "neither below" in decision.reason


def test_oscillations_inside_a_window_are_not_a_stall():
    """Gemma 3 270M with FFN: pass ends swinging by a factor 2 while falling overall (measured, 31 passes)."""
    ends = [0.776, 0.247, 0.53, 0.606, 0.533, 0.564, 0.387, 0.399, 0.362, 0.312, 0.247, 0.24, 0.231, 0.173, 0.132,
            0.106, 0.0747, 0.0623, 0.0504, 0.0507, 0.0303, 0.017, 0.00803, 0.00453, 0.00557, 0.00526, 0.00293,
            0.00379, 0.00565, 0.00478, 0.00382, 0.00252, 0.00151, 0.00136, 0.00274, 0.00233, 0.0034, 0.0013,
            0.000793]
    two = decide_twice(ends, 1.5e-6, CollapseRule(max_passes=48))
    assert (two.base.verdict, two.base.decided_at, two.doubled.decided_at) == ("collapsed", 38, 38)
    assert not two.base.monotone and 2 in two.base.rises
    # windows of 4 passes call the lingering at 0.0015-0.0057 a stall: the reason the window is 8
    assert decide(ends, 1.5e-6, CollapseRule(window=4, max_passes=48)).verdict == "stalled"


def test_monotone_is_a_finding_beside_the_verdict():
    ends = [0.8, 0.1, 0.2, 0.05, 0.0005]
    decision = decide(ends, FLOOR)
    assert decision.verdict == "collapsed" and not decision.monotone and decision.rises == (2,)
    # a rise smaller than the floor is rounding, not a rise
    assert decide([0.8, 1e-4, 1e-4 + FLOOR / 2, 5e-5], FLOOR).monotone


def test_no_threshold_is_decided_within_a_factor_of_the_floor():
    ends = _geometric(0.8, 0.1, 10)
    floor = CollapseRule().threshold / FLOOR_MARGIN * 2
    decision = decide(ends, floor)
    assert decision.verdict == "undecided" and "floor" in decision.reason
    assert not needs_more_passes(ends, floor, CollapseRule())  # more passes cannot help: the dtype must change


def test_passes_beyond_the_maximum_are_not_read():
    ends = _geometric(0.8, 0.5, 20)
    decision = decide(ends, FLOOR, CollapseRule(max_passes=5))
    assert (decision.verdict, decision.passes_read) == ("undecided", 5)
    assert needs_more_passes(ends[:4], FLOOR, CollapseRule(max_passes=5))


SERIES = [pytest.param(_geometric(0.8, 0.5, 100), "collapsed", id="collapsing"),
          pytest.param([0.9] + [0.5] * 100, "stalled", id="flat"),
          pytest.param([0.9] + [0.5, 0.6] * 50, "stalled", id="oscillating-flat"),
          pytest.param(_geometric(0.9, 0.99, 100)[:1] + [0.5 * (1 + k) ** 0.2 for k in range(100)], "stalled",
                       id="rising")]


@pytest.mark.parametrize("ends,verdict", SERIES)
def test_decided_verdicts_survive_doubling_the_maximum_the_window_and_the_threshold(ends, verdict):
    two = decide_twice(ends, FLOOR, CollapseRule(max_passes=25))
    assert two.base.verdict == two.doubled.verdict == two.verdict == verdict
    assert decide(ends, FLOOR, CollapseRule(max_passes=25, threshold=2e-3)).verdict == verdict


BAD_RULES = [pytest.param(dict(threshold=0.0), "threshold=0.0 must lie in", id="zero-threshold"),
             pytest.param(dict(threshold=1.5), "threshold=1.5 must lie in", id="large-threshold"),
             pytest.param(dict(window=0), "window=0 must be a positive", id="zero-window"),
             pytest.param(dict(min_fall=1.0), "min_fall=1.0 must lie in", id="min-fall"),
             pytest.param(dict(max_passes=0), "max_passes=0 must be a positive", id="max-passes")]


@pytest.mark.parametrize("options,message", BAD_RULES)
def test_bad_rules_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        CollapseRule(**options)


def test_bad_series_are_refused():
    with pytest.raises(ValueError, match="at least one pass end"):
        decide([0.5], FLOOR)
    with pytest.raises(ValueError, match="must be finite"):
        decide([0.5, float("nan")], FLOOR)
    with pytest.raises(ValueError, match="floor=nan must be a non-negative"):
        decide([0.5, 0.4], float("nan"))
    with pytest.raises(ValueError, match="need 7"):
        pass_ends([0.1] * 6, layers=3, passes=2)


# -- on tiny models: the run stops when the rule and its doubled twin have decided ------------------------

KINDS = {"collapse": dict(attention="collapse"), "identity-blocks": dict(attention="still"),
         "slow": dict(attention="collapse", value_gain=0.05)}
VERDICT = {"collapse": "collapsed", "identity-blocks": "stalled", "slow": "undecided"}


@pytest.fixture(scope="module")
def decided(tmp_path_factory):
    """A tiny "trained" GPT-2 of each kind, without FFN, run until RULE and RULE.doubled() have decided."""
    root = tmp_path_factory.mktemp("decided")
    runs = {}
    for kind, weights in KINDS.items():
        tiny_model("gpt2", **weights).save_pretrained(root / kind / "model")
        settings = RunSettings(model=str(root / kind / "model"), weights="trained", ffn=False, device="cpu",
                               **{**BUDGET, "passes": 2 * RULE.max_passes})
        run_experiment(settings, root / kind / "run", progress=False, until=(RULE, RULE.doubled()))
        runs[kind] = load_results(root / kind / "run")
    return runs


@pytest.mark.parametrize("kind", KINDS)
def test_each_verdict_is_reached_on_a_tiny_model_and_survives_doubling(decided, kind):
    manifest, results = decided[kind]
    verdict, floor = VERDICT[kind], manifest["floor"]["E_floor"]
    two = decide_twice(results["E_pass_end"], floor, RULE)
    assert two.base.verdict == two.doubled.verdict == verdict
    assert decide(results["E_pass_end"], floor, replace(RULE, threshold=2 * RULE.threshold)).verdict == verdict
    # the run stopped where both rules had decided (the collapse at once, the stall after 2 doubled windows)
    expected_passes = {"collapsed": two.base.decided_at, "stalled": 2 * RULE.doubled().window,
                       "undecided": 2 * RULE.max_passes}[verdict]
    assert results["passes"] == expected_passes
    assert results["decision"]["verdict"] == verdict


CLAIM_VERDICTS = [pytest.param(("collapse",), "verified", id="all-collapse"),
                  pytest.param(("collapse", "identity-blocks"), "refuted", id="one-stalls"),
                  pytest.param(("collapse", "slow"), "not-run", id="one-undecided")]


def test_a_stall_refutes_a_claim_even_beside_an_undecided_run():
    runs = [{"verdict": v} for v in ("undecided", "stalled", "collapsed")]
    assert collapse_verdict(runs) == "refuted"
    assert collapse_verdict(runs[::2]) == "not-run" and collapse_verdict(runs[2:]) == "verified"


@pytest.mark.parametrize("kinds,verdict", CLAIM_VERDICTS)
def test_every_collapse_check_reaches_each_verdict(decided, tmp_path, kinds, verdict):
    runs = [decided[kind] for kind in kinds]
    for result in (check_in_kind(runs, tmp_path / "kind.png", rule=RULE),
                   check_random_weights("emp.random-fixed", runs, tmp_path / "fig9.png", "Fig. 9", "tiny", rule=RULE),
                   check_trained("emp.no-ffn", runs, {}, tmp_path / "fig7.png", "Fig. 7", "tiny", rule=RULE)):
        assert result.verdict == verdict, result.detail
        numbers = result.numbers["runs"]
        assert [run["verdict"] for run in numbers] == [VERDICT[kind] for kind in kinds]
        assert all({"decision", "decision_doubled", "monotone", "first_below_threshold", "E_final", "E_floor"}
                   <= run.keys() for run in numbers)  # both horizons recorded, the findings beside them
        assert result.tolerance == RULE.threshold
    if verdict == "not-run":
        assert "--until-decided" in result.detail


def test_a_bfloat16_run_cannot_decide_a_threshold_near_its_floor_where_float32_can(tmp_path):
    """The tiny collapsing GPT-2 stalls at its bfloat16 floor (8.5e-6, where its mean E goes below 5e-5 by pass 8): a
    threshold of 5e-5 is within a factor 10 of that floor, and 15 times float32's."""
    tiny_model("gpt2").save_pretrained(tmp_path / "model")
    rule = CollapseRule(threshold=5e-5, max_passes=10)
    verdicts = {}
    for dtype in ("float32", "bfloat16"):
        settings = RunSettings(model=str(tmp_path / "model"), weights="trained", ffn=False, device="cpu",
                               dtype=dtype, prompts=4, length=16, passes=10)
        results = run_experiment(settings, tmp_path / dtype, progress=False, rule=rule)
        verdicts[dtype] = results["decision"]["verdict"]
        assert results["E_floor"] == load_results(tmp_path / dtype)[0]["floor"]["E_floor"]
    assert verdicts == {"float32": "collapsed", "bfloat16": "undecided"}
