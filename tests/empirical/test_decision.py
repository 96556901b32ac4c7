"""The collapse test (empirical/decision.py, docs/empirical.md "The collapse test"): a table of synthetic shapes,
each with the decision a careful reader expects, read at every block; the grid of halved and doubled constants; and
each verdict reached on tiny models, in a run that stops when every cell has decided."""

import math

import numpy as np
import pytest

from empirical.checks import check_in_kind, check_random_weights, check_trained, collapse_verdict
from empirical.decision import (CollapseRule, decide, decide_grid, grid_needs_more_passes, needs_more_passes,
                                pass_ends, precision_check, run_verdict)
from empirical.run import RunSettings, load_results, run_experiment

from .tiny_trained import BUDGET, RULE, tiny_model

FLOOR = 1e-6  # a float32-like effective floor: values up to 1e-5 are censored
LAYERS = 4
#: Every shape has this depth profile inside each pass (E varies with depth inside a pass: the test must compare
#: block position with block position, not pass end with pass end).
PROFILE = (1.0, 1.6, 0.7, 1.3)
PASSES = 100  # the doubled horizon


def _blocks(level, passes=PASSES, noise=0.0, seed=0):
    """``E`` after the embeddings (0.7) and after every block: ``level(depth)`` (depth in passes, block b of pass k
    at k - 1 + b / 4) times the depth profile, times a uniform factor in 1 +- ``noise`` drawn per block."""
    rng = np.random.default_rng(seed)
    depth = np.arange(1, passes * LAYERS + 1) / LAYERS
    values = np.array([level(t) for t in depth]) * np.tile(PROFILE, passes)
    if noise:
        values = values * (1 + rng.uniform(-noise, noise, values.shape))
    return [0.7, *values.tolist()]


def _floor_bound():
    """A fast geometric decay that meets rounding: below the floor the values are the floor times 0.5-3."""
    rng = np.random.default_rng(1)
    values = np.array(_blocks(lambda t: 0.5 * 0.6 ** t)[1:])
    return [0.7, *(values + FLOOR * rng.uniform(0.5, 3.0, values.shape)).tolist()]


def _dip_then_rise(t):
    """Halves every pass to 1.9e-3 at pass 8, then grows by 1.5 a pass up to 0.1, and stays there."""
    return 0.5 * 0.5 ** t if t < 8 else min(0.1, 0.5 * 0.5 ** 8 * 1.5 ** (t - 8))


# shape, expected verdict of the base rule, expected verdict over the grid, and why
SHAPES = [
    pytest.param(_blocks(lambda t: 5e-2), "settled", "settled", id="flat-5e-2"),
    pytest.param(_blocks(lambda t: 5e-4), "settled", "settled", id="flat-5e-4-below-1e-3"),
    pytest.param(_blocks(lambda t: 1.05e-3, noise=0.1), "settled", "settled", id="hovering-1.05e-3-10pc"),
    pytest.param(_blocks(lambda t: 0.5 / t), "converging", "converging", id="power-0.5/k"),
    pytest.param(_blocks(lambda t: 0.5 / math.sqrt(t)), "converging", "converging", id="power-0.5/sqrt-k"),
    pytest.param(_blocks(lambda t: 0.5 * 0.99 ** t), "converging", "converging", id="geometric-0.99"),
    pytest.param(_blocks(lambda t: 0.5 * 0.5 ** t), "converging", "converging", id="geometric-0.5-to-the-floor"),
    pytest.param(_blocks(lambda t: 0.5 * 0.95 ** t, noise=0.3), "converging", "converging", id="noisy-geometric"),
    pytest.param(_blocks(_dip_then_rise), "settled", "settled", id="dip-then-rise"),
    pytest.param(_blocks(lambda t: 9e-4 if t < 3 else 0.1), "settled", "settled", id="dip-to-9e-4-then-0.1"),
    pytest.param(_blocks(lambda t: 1e-3 * (1 + t) ** 0.3), "settled", "settled", id="rising"),
    # E swinging by 2 between passes: 25 passes cannot tell an exponent of -0.1 from 0 (a 7% fall per octave)
    pytest.param(_blocks(lambda t: 0.02 * (2 if math.ceil(t) % 2 else 1)), "undecided", "undecided",
                 id="oscillation-x2-around-a-level"),
    pytest.param(_blocks(lambda t: 0.02 * (1 + 0.2 * math.sin(2 * math.pi * math.ceil(t) / 3))), "undecided",
                 "undecided", id="oscillation-20pc-around-a-level"),
    # E swinging by 3 every 4 passes as it decays: the halved horizon's and the halved window's later halves (7 and 8
    # passes) are too short to show that it still falls at their end
    pytest.param(_blocks(lambda t: 0.5 * 0.9 ** t * (1 + 0.5 * math.sin(2 * math.pi * math.ceil(t) / 4))),
                 "converging", "sensitive", id="oscillation-decaying"),
    # the referee's approach to a level (1e-3 + 0.5 exp(-k / 8)): still falling at pass 50, flat from pass 76 on, where
    # only the doubled horizon reads; its fall over the whole window alone would call it converging in every cell
    pytest.param(_blocks(lambda t: 1e-3 + 0.5 * math.exp(-t / 8)), "converging", "sensitive",
                 id="approach-to-a-level"),
    pytest.param(_floor_bound(), "converging", "converging", id="floor-bound"),
    # the referee's slow approaches to a level: still falling faster than depth^-0.1 through every window, but ever more
    # slowly; E = c + a depth^q through the window's halves puts the level at more than half of E (0.03 + 0.5/k), at
    # about half at the base horizon and more at the doubled one (1e-2 + 0.5/k), and so for the earlier blind case
    # 1e-3 + 0.5/k^2 (only the halved horizon, passes 13-25, sees E still four times its level there)
    pytest.param(_blocks(lambda t: 0.03 + 0.5 / t), "undecided", "undecided", id="slow-approach-to-3e-2"),
    pytest.param(_blocks(lambda t: 1e-2 + 0.5 / t), "converging", "sensitive", id="slow-approach-to-1e-2"),
    pytest.param(_blocks(lambda t: 1e-3 + 0.5 / t ** 2), "undecided", "sensitive", id="approach-to-1e-3-as-k^-2"),
    # a power law with a correction: its exponent rises towards -1, not 0 (the implied level is 1/33 of E)
    pytest.param(_blocks(lambda t: 1 / t + 1 / t ** 2), "converging", "converging", id="power-law-with-correction"),
    # a slow oscillation (period 40 passes): one phase of it reads as a fall at the halved horizon
    pytest.param(_blocks(lambda t: 0.02 * 1.5 ** math.sin(2 * math.pi * t / 40)), "settled", "sensitive",
                 id="slow-oscillation"),
    # depth^-0.05 sits exactly at the halved threshold: only that cell cannot call it
    pytest.param(_blocks(lambda t: 0.5 * t ** -0.05), "settled", "sensitive", id="power-exponent-0.05"),
]


@pytest.mark.parametrize("E,base,grid", SHAPES)
def test_each_shape_gets_the_decision_a_careful_reader_expects(E, base, grid):
    decision = decide_grid(E, LAYERS, FLOOR)
    assert decision.base.verdict == base, decision.base.reason
    assert decision.verdict == grid, {name: (d.verdict, d.reason) for name, d in decision.cells.items()}
    assert len(decision.cells) == 12
    if grid != "sensitive":  # agreement: every cell says the same
        assert {d.verdict for d in decision.cells.values()} == {grid}


def test_a_flat_level_is_never_convergence_whichever_side_of_1e_3_it_sits():
    for level in (5e-4, 1.05e-3, 2e-3):
        decision = decide(_blocks(lambda t: level), LAYERS, FLOOR)
        assert decision.verdict == "settled" and decision.exponent == pytest.approx(0, abs=1e-9)
        assert decision.level == pytest.approx(level * math.prod(PROFILE) ** (1 / 4))


def test_a_power_law_is_read_as_its_exponent_at_every_horizon():
    E = _blocks(lambda t: 0.5 / t, passes=400)
    for horizon in (25, 50, 100, 200, 400):
        decision = decide(E, LAYERS, FLOOR, CollapseRule(horizon=horizon))
        assert decision.verdict == "converging" and decision.exponent == pytest.approx(-1, abs=1e-9)


def test_every_block_is_read_not_only_the_pass_ends():
    """Pass ends flat at 1e-3 while the first three blocks of every pass rise: not a level, not a fall."""
    E = [0.7]
    for k in range(1, 51):
        E += [1e-3 * k ** 0.5, 1e-3 * k ** 0.5, 1e-3 * k ** 0.5, 1e-3]
    assert len(set(pass_ends(E, LAYERS, 50)[1:])) == 1
    decision = decide(E, LAYERS, FLOOR)
    assert decision.verdict == "settled" and decision.exponent > 0.2
    assert decision.window_max == pytest.approx(1e-3 * 50 ** 0.5)


def test_values_within_ten_times_the_floor_are_censored():
    # a level at 5e-6 (5 x the floor) is rounding: the run is at the floor, never "settled" there; the verdict rests
    # on the floor (the run's verdict needs a float64 twin: test_a_level_within_the_floor_decides_nothing_alone)
    at_floor = decide(_blocks(lambda t: 2e-6), LAYERS, FLOOR)
    assert at_floor.verdict == "converging" and "floor" in at_floor.reason and at_floor.exponent is None
    assert at_floor.at_floor
    # the same level with a floor 100 times smaller is a level
    assert decide(_blocks(lambda t: 2e-6), LAYERS, FLOOR / 100).verdict == "settled"
    # a level straddling 10 x the floor decides nothing
    straddling = decide(_blocks(lambda t: 1e-5), LAYERS, FLOOR)
    assert straddling.verdict == "undecided" and straddling.censored > 0


def test_a_level_within_the_floor_decides_nothing_alone():
    """The referee's level within 10 x a floor of 2.4e-6 (1e-5 here, times the depth profile's 0.7-1.6), from the
    first pass on: in its dtype it is "at the floor"
    in every cell, yet it never falls. A float32 run without a twin is precision-limited there; a float64 twin that
    sees the level makes it precision-limited too; one that sees E fall agrees, and the run converges. The same
    values read in float64 (its floor the finest any floating run has) keep their verdict."""
    level = _blocks(lambda t: 1e-5)
    grid = decide_grid(level, LAYERS, 2.4e-6)
    assert grid.verdict == "converging" and grid.rests_on_floor and all(d.at_floor for d in grid.cells.values())
    assert run_verdict(grid, None, "float32") == "precision-limited" == run_verdict(grid, None, "bfloat16")
    assert run_verdict(grid, None, "float64") == "converging"
    sees_level = precision_check(level, level, LAYERS, 2, 2.4e-6, 1e-15)
    assert sees_level.float64.verdict == "settled" and run_verdict(grid, sees_level, "float32") == "precision-limited"
    falling = _blocks(lambda t: 1e-5 * 0.5 ** t)
    sees_fall = precision_check(level, falling, LAYERS, 2, 2.4e-6, 1e-15)
    assert sees_fall.agree and run_verdict(grid, sees_fall, "float32") == "converging"
    # twinned prompts that agree without converging (both undecided, swinging around 0.03) confirm no fall to the
    # floor: the run that rests on it stays precision-limited (the referee's case: a twin made the verdict bolder)
    swinging = _blocks(lambda t: 0.03 * (2 if math.ceil(t) % 2 else 1))
    undecided = precision_check(swinging, swinging, LAYERS, 2, 2.4e-6, 1e-15)
    assert undecided.agree and undecided.float64.verdict == "undecided"
    assert run_verdict(grid, undecided, "float32") == "precision-limited"
    # a fall well above the floor rests on nothing: no twin needed
    power = decide_grid(_blocks(lambda t: 0.5 / t), LAYERS, FLOOR)
    assert not power.rests_on_floor and run_verdict(power, None, "float32") == "converging"
    # converging by its trend, reaching the floor in the later half of a window: that cell rests on the floor too
    reaches = decide(_blocks(lambda t: 0.5 * 0.7 ** t, passes=50), LAYERS, 1e-8)
    assert reaches.verdict == "converging" and reaches.exponent is not None and reaches.at_floor


def test_the_later_half_must_still_fall():
    """The approach to a level read at the doubled horizon: over passes 51-100 the exponent is well below -0.1, but
    over the later half (76-100) E is flat: undecided, naming the slowing fall. Without the tail's condition (the
    control, read over the window alone) it would converge."""
    E = _blocks(lambda t: 1e-3 + 0.5 * math.exp(-t / 8))
    decision = decide(E, LAYERS, FLOOR, CollapseRule(horizon=100))
    assert decision.exponent_high < -0.1 and decision.tail_exponent_high >= -0.1
    assert decision.verdict == "undecided" and "slows down" in decision.reason
    assert decide(E[: 1 + 50 * LAYERS], LAYERS, FLOOR).verdict == "converging"  # at pass 50 it still falls
    # a rise that turns into a fall (as 1 / depth) at pass 40: over the window E rises (settled, read alone); its
    # later half falls, so it is not settled
    turning = _blocks(lambda t: 0.05 * t / 40 if t <= 40 else 0.05 * 40 / t, passes=50)
    late = decide(turning, LAYERS, FLOOR)
    assert late.exponent_low > -0.1 and late.tail_exponent_high < -0.1
    assert late.verdict == "undecided" and "starting to fall" in late.reason


def test_a_per_block_floor_is_read_value_by_value():
    E = _blocks(lambda t: 1e-3, passes=50)
    floor = np.full(len(E), FLOOR)
    assert decide(E, LAYERS, floor).verdict == "settled"
    floor[-13 * LAYERS:] = 1e-3  # the twin diverged by 1e-3 over the last 13 passes: those values are censored
    decision = decide(E, LAYERS, floor)
    assert decision.verdict == "converging" and "floor" in decision.reason
    floor[-13 * LAYERS] = FLOOR  # one value of the later half of the window is readable again
    assert decide(E, LAYERS, floor).verdict == "undecided"
    with pytest.raises(ValueError, match="one value per measurement"):
        decide(E, LAYERS, floor[:-1])


def test_a_run_shorter_than_the_horizon_needs_more_passes_unless_at_the_floor():
    E = _blocks(lambda t: 0.5 / t, passes=30)
    decision = decide(E, LAYERS, FLOOR)
    assert decision.verdict == "undecided" and "30 of the horizon's 50" in decision.reason
    assert needs_more_passes(E, LAYERS, FLOOR, CollapseRule())
    assert not needs_more_passes(_blocks(lambda t: 0.5 / t), LAYERS, FLOOR, CollapseRule())
    fast = _blocks(lambda t: 0.5 * 0.3 ** t, passes=30)  # at the floor from pass 10
    assert decide(fast, LAYERS, FLOOR).verdict == "converging"
    # the doubled horizon's window is 50 passes: 30 passes are too few for it, so the grid needs more
    assert grid_needs_more_passes(fast, LAYERS, FLOOR)
    assert not grid_needs_more_passes(_blocks(lambda t: 0.5 * 0.3 ** t, passes=60), LAYERS, FLOOR)


def test_passes_beyond_the_horizon_are_not_read():
    E = _blocks(_dip_then_rise)  # the rise starts at pass 8
    assert decide(E, LAYERS, FLOOR, CollapseRule(horizon=12)).verdict == "undecided"  # its window straddles it
    assert decide(E[: 1 + 12 * LAYERS], LAYERS, FLOOR, CollapseRule(horizon=12)).passes_read == 12


def test_the_grid_halves_and_doubles_every_disputable_constant_once():
    grid = CollapseRule().grid()
    assert {name: (r.horizon, r.window, r.threshold, r.alpha, r.margin, r.level_ratio) for name, r in grid.items()} == {
        "base": (50, 1.0, 0.1, 0.05, 10.0, 1.0),
        "horizon x 0.5": (25, 1.0, 0.1, 0.05, 10.0, 1.0), "horizon x 2": (100, 1.0, 0.1, 0.05, 10.0, 1.0),
        "window x 0.5": (50, 0.5, 0.1, 0.05, 10.0, 1.0), "window x 2": (50, 2.0, 0.1, 0.05, 10.0, 1.0),
        "threshold x 0.5": (50, 1.0, 0.05, 0.05, 10.0, 1.0), "threshold x 2": (50, 1.0, 0.2, 0.05, 10.0, 1.0),
        "alpha x 0.5": (50, 1.0, 0.1, 0.025, 10.0, 1.0), "alpha x 2": (50, 1.0, 0.1, 0.1, 10.0, 1.0),
        "level_ratio x 0.5": (50, 1.0, 0.1, 0.05, 10.0, 0.5),
        "level_ratio x 2": (50, 1.0, 0.1, 0.05, 10.0, 2.0), "margin x 2": (50, 1.0, 0.1, 0.05, 20.0, 1.0)}
    assert [grid[n].window_passes for n in ("base", "horizon x 0.5", "window x 0.5", "window x 2")] == [25, 13, 15, 38]


def test_a_sensitive_verdict_shows_its_cells():
    decision = decide_grid(_blocks(lambda t: 0.5 * t ** -0.05), LAYERS, FLOOR)
    assert decision.verdict == "sensitive"
    record = decision.to_json()
    assert record["cells"]["threshold x 0.5"]["verdict"] == "undecided"
    assert record["cells"]["base"]["verdict"] == "settled"
    assert record["cells"]["base"]["rule"]["threshold"] == 0.1


def test_monotone_is_a_finding_beside_the_verdict():
    E = _blocks(lambda t: 0.5 * 0.5 ** t * (3 if math.ceil(t) == 2 else 1))
    decision = decide_grid(E, LAYERS, FLOOR)
    assert decision.verdict == "converging" and not decision.monotone and decision.rises == (2,)
    # pass 17 is the first whose largest value, block 2 (x 1.6 at depth k - 0.5), is at most 1e-5: 0.8 * 0.5^16.5 < 1e-5
    assert decision.first_at_floor == 17


BAD_RULES = [pytest.param(dict(horizon=0), "horizon=0 must be a positive", id="zero-horizon"),
             pytest.param(dict(window=0), "window=0 must be a positive", id="zero-window"),
             pytest.param(dict(threshold=0.0), "threshold=0.0 must lie in", id="zero-threshold"),
             pytest.param(dict(alpha=0.5), "alpha=0.5 must lie in", id="alpha"),
             pytest.param(dict(margin=5.0), "margin=5.0 must be at least 10", id="margin-below-spec"),
             pytest.param(dict(horizon=4), "leave 2 passes in the window", id="short-window")]


@pytest.mark.parametrize("options,message", BAD_RULES)
def test_bad_rules_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        CollapseRule(**options)


def test_bad_values_are_refused():
    with pytest.raises(ValueError, match="whole passes of 4 blocks"):
        decide([0.5, 0.4], LAYERS, FLOOR)
    with pytest.raises(ValueError, match="must be finite"):
        decide([0.5, float("nan"), 0.1, 0.1, 0.1], LAYERS, FLOOR)
    with pytest.raises(ValueError, match="must be positive and finite"):
        decide([0.5, 0.4, 0.3, 0.2, 0.1], LAYERS, float("nan"))
    with pytest.raises(ValueError, match="need 7"):
        pass_ends([0.1] * 6, layers=3, passes=2)


# -- on tiny models: the run stops when every cell of the grid has decided ----------------------------------

KINDS = {"collapse": dict(attention="collapse"), "identity-blocks": dict(attention="still")}
VERDICT = {"collapse": "converging", "identity-blocks": "settled"}


@pytest.fixture(scope="module")
def decided(tmp_path_factory):
    """A tiny "trained" GPT-2 of each kind, without FFN, run until every cell of RULE's grid has decided."""
    root = tmp_path_factory.mktemp("decided")
    runs = {}
    for kind, weights in KINDS.items():
        tiny_model("gpt2", **weights).save_pretrained(root / kind / "model")
        settings = RunSettings(model=str(root / kind / "model"), weights="trained", ffn=False, device="cpu",
                               twin="float64", **{**BUDGET, "passes": 2 * RULE.horizon})
        run_experiment(settings, root / kind / "run", progress=False, until=tuple(RULE.grid().values()), rule=RULE)
        runs[kind] = load_results(root / kind / "run")
    return runs


@pytest.mark.parametrize("kind", KINDS)
def test_each_verdict_is_reached_on_a_tiny_model_over_the_whole_grid(decided, kind):
    manifest, results = decided[kind]
    layers, floor = results["layers"], manifest["floor"]["E_floor"]
    grid = decide_grid(results["E_mean"], layers, floor, RULE)
    assert grid.verdict == VERDICT[kind] and results["decision"]["verdict"] == VERDICT[kind]
    assert results["decision"]["cells"].keys() == RULE.grid().keys()
    assert not grid_needs_more_passes(results["E_mean"], layers, floor, RULE)
    # it stopped where the last cell decided: the identity blocks need the doubled horizon; the collapse stops as
    # soon as the longest window (the doubled horizon's) has its later half at the floor
    if kind == "identity-blocks":
        assert results["passes"] == 2 * RULE.horizon
    else:
        # (or its float64 twin's grid, which has to decide too: the run compares the two on as many passes)
        assert results["passes"] < 2 * RULE.horizon
        twin_floor = manifest["floor"]["float64_twin"]["E_floor"]
        assert (grid_needs_more_passes(results["E_mean"][: -layers], layers, floor, RULE)
                or grid_needs_more_passes(results["twin"]["E_mean"][: -layers], layers, twin_floor, RULE))


CLAIM_VERDICTS = [pytest.param(("collapse",), "supported", id="all-converge"),
                  pytest.param(("collapse", "identity-blocks"), "unsupported", id="one-settles")]


def test_a_settled_run_goes_against_a_claim_even_beside_an_undecided_or_sensitive_one():
    """A settled run makes the claim ``unsupported``, never ``refuted``: a finite run cannot refute E -> 0."""
    runs = [{"verdict": v} for v in ("undecided", "settled", "converging", "sensitive")]
    assert collapse_verdict(runs) == "unsupported"
    assert collapse_verdict([runs[0], runs[2]]) == "not-run" and collapse_verdict(runs[2:3]) == "supported"
    assert collapse_verdict(runs[2:]) == "not-run"


@pytest.mark.parametrize("kinds,verdict", CLAIM_VERDICTS)
def test_every_collapse_check_reaches_each_verdict(decided, tmp_path, kinds, verdict):
    runs = [decided[kind] for kind in kinds]
    for result in (check_in_kind(runs, tmp_path / "kind.png", rule=RULE),
                   check_random_weights("emp.random-fixed", runs, tmp_path / "fig9.png", "Fig. 9", "tiny", rule=RULE),
                   check_trained("emp.no-ffn", runs, {}, tmp_path / "fig7.png", "Fig. 7", "tiny", rule=RULE)):
        assert result.verdict == verdict, result.detail
        numbers = result.numbers["runs"]
        assert [run["verdict"] for run in numbers] == [VERDICT[kind] for kind in kinds]
        assert all({"decision", "monotone", "first_at_floor", "E_final", "E_floor"} <= run.keys() for run in numbers)
        assert all(run["decision"]["cells"].keys() == RULE.grid().keys() for run in numbers)
        assert result.tolerance == RULE.threshold


def test_a_short_run_is_not_run_with_the_command_that_decides_it(decided, tmp_path):
    manifest, results = decided["identity-blocks"]
    cut = 20 * results["layers"] + 1
    short = {**results, "E_mean": results["E_mean"][:cut], "E": [e[:cut] for e in results["E"]], "passes": 20,
             "E_std": results["E_std"][:cut], "twin": {**results["twin"], "E_mean": results["twin"]["E_mean"][:cut]}}
    result = check_in_kind([(manifest, short)], tmp_path / "kind.png", rule=RULE)
    assert result.verdict == "not-run" and "--until-decided" in result.detail and "sensitive" in result.detail


def test_the_doubled_horizon_alone_can_make_a_run_sensitive():
    """E flat for the base horizon's 50 passes, then falling as 1/depth: only the doubled horizon (100 passes, its
    window the last 50) reads the fall. Its cell alone disagrees, and that is enough for ``sensitive``; without it
    (the negative control: the other nine cells) the run would read as settled."""
    E = _blocks(lambda t: 0.05 if t <= 50 else 0.05 * 50 / t)
    decision = decide_grid(E, LAYERS, FLOOR)
    assert decision.base.verdict == "settled", decision.base.reason
    assert decision.cells["horizon x 2"].verdict == "converging", decision.cells["horizon x 2"].reason
    assert {d.verdict for name, d in decision.cells.items() if name != "horizon x 2"} == {"settled"}
    assert decision.verdict == "sensitive"
    assert decide(E, LAYERS, FLOOR, CollapseRule(horizon=100)).verdict == "converging"


# -- boundaries of the rule (make mutants: each inequality and field of empirical/decision.py) ------------------

def test_the_rules_bounds_are_strict_where_stated():
    assert CollapseRule(horizon=6).window_passes == 3  # the fewest passes a trend may use: accepted
    with pytest.raises(ValueError, match="leave 1 passes"):
        CollapseRule(horizon=1)  # a positive horizon, refused for its window only
    for options, message in [(dict(threshold=10.0), "threshold"), (dict(threshold=10.5), "threshold"),
                             (dict(alpha=0.0), "alpha")]:
        with pytest.raises(ValueError, match=message):
            CollapseRule(**options)


def test_the_values_bounds():
    assert decide([0.5] * 51, 1, FLOOR).passes_read == 50  # one block per pass is a model
    bad = [(dict(E=[0.5] * 5, layers=1.5), "layers"), (dict(E=[0.5], layers=2), "whole passes"),
           (dict(E=np.full((5, 2), 0.5), layers=4), "whole passes"), (dict(E=[0.5] * 5, floor=0.0), "floor"),
           (dict(E=[0.5] * 5, floor=math.inf), "floor")]
    for options, message in bad:
        options = {"layers": LAYERS, "floor": FLOOR, **options}
        with pytest.raises(ValueError, match=message):
            decide(options["E"], options["layers"], options["floor"])


def _assert_cells_are_whole(decision, rule, passes):
    assert decision.rule == rule and isinstance(decision.reason, str) and decision.reason
    assert decision.passes_read == min(passes, rule.horizon)
    assert decision.decided_at == (None if decision.verdict == "undecided" else decision.passes_read)


def test_each_decision_carries_its_rule_reason_and_window():
    for level, verdict, reason in [(lambda t: 0.5 / t, "converging", "falls faster"),
                                   (lambda t: 5e-2, "settled", "falls slower"),
                                   (lambda t: 0.02 * (2 if math.ceil(t) % 2 else 1), "undecided", "the bounds hold -0.1"),
                                   (lambda t: 0.5 * 0.5 ** t, "converging", "E reached the floor")]:
        decision = decide(_blocks(level, passes=50), LAYERS, FLOOR)
        assert decision.verdict == verdict and reason in decision.reason, decision.reason
        _assert_cells_are_whole(decision, CollapseRule(), 50)
        assert decision.window == (26, 50) and decision.to_json()["window"] == [26, 50]
        assert decision.to_json()["rule"] == {"horizon": 50, "window": 1.0, "threshold": 0.1, "alpha": 0.05,
                                              "margin": 10.0, "level_ratio": 1.0}
        if "floor" in reason:
            assert "passes 38-50" in decision.reason and decision.exponent is None
        else:
            assert "one-sided 95% bounds" in decision.reason and "over passes 26-50" in decision.reason
            assert decision.exponent_low < decision.exponent < decision.exponent_high
    short = decide(_blocks(lambda t: 0.5 / t, passes=20), LAYERS, FLOOR)
    assert short.reason == "20 passes read; the window needs 25" and short.censored == 0
    assert short.window is None and short.to_json()["window"] is None and short.rule == CollapseRule()


def test_a_run_of_exactly_the_window_is_read_and_one_layer_runs_count_passes():
    decision = decide(_blocks(lambda t: 0.5 / t, passes=25), LAYERS, FLOOR)
    assert decision.window == (1, 25) and "25 of the horizon's 50" in decision.reason
    one_layer = decide([0.7, *[0.5 / k for k in range(1, 31)]], 1, FLOOR)
    assert one_layer.passes_read == 30 and "30 of the horizon's 50" in one_layer.reason


def test_a_value_exactly_at_the_margin_is_censored():
    at_margin = decide([0.7] + [10 * FLOOR] * (50 * LAYERS), LAYERS, FLOOR)
    assert at_margin.verdict == "converging" and at_margin.censored == 25 * LAYERS
    grid = decide_grid([0.7] + [10 * FLOOR] * (50 * LAYERS), LAYERS, FLOOR)
    assert grid.first_at_floor == 1


def test_an_undecided_reason_names_the_censored_values():
    # E flat (bounds above -0.1), but one value is within 10 x its own floor: not settled, because of it
    E = _blocks(lambda t: 5e-2, passes=50)
    floor = np.full(len(E), FLOOR)
    floor[-1] = E[-1] / 10
    decision = decide(E, LAYERS, floor)
    assert decision.verdict == "undecided" and "1 values within 10 x the floor" in decision.reason


def test_needs_more_passes_only_below_the_horizon_and_pass_ends_has_every_pass():
    oscillating = _blocks(lambda t: 0.02 * (2 if math.ceil(t) % 2 else 1), passes=50)
    assert decide(oscillating, LAYERS, FLOOR).verdict == "undecided"
    assert not needs_more_passes(oscillating, LAYERS, FLOOR, CollapseRule())
    assert pass_ends(list(range(9)), 4, 2) == [0.0, 4.0, 8.0]


def test_the_grids_findings():
    E = _blocks(lambda t: 0.5 / t)
    E[-LAYERS:] = [0.5, 0.5, 0.5, 0.5]  # the last pass end rises
    grid = decide_grid(E, LAYERS, FLOOR)
    assert grid.rises == (PASSES,) and grid.monotone is False and grid.E_final == 0.5 and grid.passes_run == PASSES
    record = grid.to_json()
    assert set(record) == {"verdict", "cells", "monotone", "rises", "first_at_floor", "E_final", "passes_run",
                           "rests_on_floor"}
    assert record["rises"] == [PASSES] and record["E_final"] == 0.5 and record["passes_run"] == PASSES
    steady = decide_grid(_blocks(lambda t: 0.5 / t), LAYERS, FLOOR)
    assert steady.monotone is True and steady.rises == () and steady.E_final == pytest.approx(0.5 / PASSES * 1.3)
    # a pass end exactly one floor above the previous one is no rise (binary fractions: exact sums)
    flat = [0.5] * (1 + 60 * LAYERS)
    flat[-1] = 0.5 + 0.25
    assert decide_grid(flat, LAYERS, 0.25).rises == ()
    for rule in CollapseRule().grid().values():
        _assert_cells_are_whole(grid.cells[next(n for n, r in CollapseRule().grid().items() if r == rule)], rule,
                                PASSES)


def _reference_trend(x, y, alpha, lags):
    """OLS with an intercept, its slope's variance as the full sandwich (X'X)^-1 S (X'X)^-1 with Bartlett weights,
    times n / (n - 2), against the ordinary s^2 (X'X)^-1; the larger, with t(n - 2) quantiles."""
    from scipy import stats

    n = len(x)
    X = np.column_stack([np.ones(n), x])
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    e = y - X @ beta
    inverse = np.linalg.inv(X.T @ X)
    ordinary = (e @ e) / (n - 2) * inverse[1, 1]
    u = X * e[:, None]
    S = u.T @ u
    for lag in range(1, lags + 1):
        gamma = u[lag:].T @ u[:-lag]
        S += (1 - lag / (lags + 1)) * (gamma + gamma.T)
    hac = (inverse @ S @ inverse)[1, 1] * n / (n - 2)
    q = stats.t.ppf(1 - alpha, n - 2)
    se = math.sqrt(max(ordinary, hac))
    return beta[1], beta[1] - q * se, beta[1] + q * se, math.sqrt(ordinary), math.sqrt(hac)


@pytest.mark.parametrize("n,lags", [(13, 2), (25, 2), (100, 4), (400, 5)])
@pytest.mark.parametrize("correlation", [0.8, -0.8], ids=["newey-west-wider", "ordinary-wider"])
def test_the_trend_is_the_documented_regression(n, lags, correlation):
    from empirical.decision import _trend

    rng = np.random.default_rng(n)
    x = np.log(np.arange(1, n + 1) + 5.0)
    noise = np.zeros(n)
    for i in range(n):
        noise[i] = correlation * (noise[i - 1] if i else 0.0) + rng.normal()
    y = -0.3 * x + 0.1 * noise
    slope, low, high, ordinary, hac = _reference_trend(x, y, 0.05, lags)
    assert _trend(x, y, 0.05) == pytest.approx((slope, low, high), rel=1e-9, abs=1e-12)
    # the data sit on the side of the max they were made for, so both errors are checked
    if n >= 25:
        assert (hac > ordinary) == (correlation > 0)


def test_the_last_boundaries_float32_input_one_layer_grids_and_exact_reasons():
    # E and floors in float32 (a torch run's dtype) are read as float64, as lists are
    E = np.array(_blocks(lambda t: 0.5 / t, passes=50), dtype=np.float32)
    assert decide(E, LAYERS, FLOOR) == decide(E.astype(np.float64), LAYERS, FLOOR)
    floor = np.full(len(E), 1.1e-6, dtype=np.float32)
    at_floor = np.full(len(E), 1e-6)
    assert decide(at_floor, LAYERS, floor) == decide(at_floor, LAYERS, floor.astype(np.float64))
    assert decide(at_floor, LAYERS, floor).reason == ("every value of passes 38-50 is within 10 x the effective floor: "
                                                      "E reached the floor and stayed there")
    assert decide(_blocks(lambda t: 0.5 / t, passes=30), LAYERS, FLOOR).rule == CollapseRule()
    one_layer = decide_grid([0.7, *[0.5 / k for k in range(1, 61)]], 1, FLOOR)
    assert one_layer.passes_run == 60 and one_layer.E_final == 0.5 / 60
    with pytest.raises(ValueError, match="leave 1 passes"):  # the halved horizon is at least 1, not 2
        CollapseRule(horizon=3, window=2.0).grid()


def test_the_rule_describes_itself_with_each_of_its_constants():
    """The sentence the collapse tables and claims quote (empirical.checks), word for word, with no constant at its
    default (a constant left out or swapped for another would show)."""
    rule = CollapseRule(horizon=64, window=2.0, threshold=0.25, alpha=0.01, margin=20.0, level_ratio=1.5)
    assert rule.describe() == (
        "converging when the exponent p of E ~ depth^p over the last 2 octave(s) of 64 passes (every block; the "
        "larger of the ordinary and Newey-West errors) is below -0.25 at one-sided level 0.01 over that window and "
        "over its later half, and E's falling part is at least 1.5 x the level its slowing fall implies (E = c + a "
        "depth^q through the window's two halves), or when E stays within 20 x the effective floor for that later half (in a dtype other "
        "than float64, confirmed by a float64 twin); settled when p is above -0.25 at that level, the later half not "
        "falling faster, with no value within 20 x the floor; recomputed with each constant halved and doubled (a "
        "verdict only where all agree)")
