"""The collapse test (empirical/decision.py, docs/empirical.md "The collapse test"): a table of synthetic shapes,
each with the decision a careful reader expects, read at every block; the grid of halved and doubled constants; and
each verdict reached on tiny models, in a run that stops when every cell has decided."""

import math

import numpy as np
import pytest

from empirical.checks import check_in_kind, check_random_weights, check_trained, collapse_verdict
from empirical.decision import (CollapseRule, decide, decide_grid, grid_needs_more_passes, needs_more_passes,
                                pass_ends)
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
    pytest.param(_blocks(lambda t: 0.5 * 0.9 ** t * (1 + 0.5 * math.sin(2 * math.pi * math.ceil(t) / 4))),
                 "converging", "converging", id="oscillation-decaying"),
    pytest.param(_floor_bound(), "converging", "converging", id="floor-bound"),
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
    assert len(decision.cells) == 10
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
    # a level at 5e-6 (5 x the floor) is rounding: the run is at the floor, never "settled" there
    at_floor = decide(_blocks(lambda t: 2e-6), LAYERS, FLOOR)
    assert at_floor.verdict == "converging" and "floor" in at_floor.reason and at_floor.exponent is None
    # the same level with a floor 100 times smaller is a level
    assert decide(_blocks(lambda t: 2e-6), LAYERS, FLOOR / 100).verdict == "settled"
    # a level straddling 10 x the floor decides nothing
    straddling = decide(_blocks(lambda t: 1e-5), LAYERS, FLOOR)
    assert straddling.verdict == "undecided" and straddling.censored > 0


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
    assert {name: (r.horizon, r.window, r.threshold, r.alpha, r.margin) for name, r in grid.items()} == {
        "base": (50, 1.0, 0.1, 0.05, 10.0),
        "horizon x 0.5": (25, 1.0, 0.1, 0.05, 10.0), "horizon x 2": (100, 1.0, 0.1, 0.05, 10.0),
        "window x 0.5": (50, 0.5, 0.1, 0.05, 10.0), "window x 2": (50, 2.0, 0.1, 0.05, 10.0),
        "threshold x 0.5": (50, 1.0, 0.05, 0.05, 10.0), "threshold x 2": (50, 1.0, 0.2, 0.05, 10.0),
        "alpha x 0.5": (50, 1.0, 0.1, 0.025, 10.0), "alpha x 2": (50, 1.0, 0.1, 0.1, 10.0),
        "margin x 2": (50, 1.0, 0.1, 0.05, 20.0)}
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
                               **{**BUDGET, "passes": 2 * RULE.horizon})
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
        assert results["passes"] < 2 * RULE.horizon
        assert grid_needs_more_passes(results["E_mean"][: -layers], layers, floor, RULE)


CLAIM_VERDICTS = [pytest.param(("collapse",), "verified", id="all-converge"),
                  pytest.param(("collapse", "identity-blocks"), "refuted", id="one-settles")]


def test_a_settled_run_refutes_a_claim_even_beside_an_undecided_or_sensitive_one():
    runs = [{"verdict": v} for v in ("undecided", "settled", "converging", "sensitive")]
    assert collapse_verdict(runs) == "refuted"
    assert collapse_verdict([runs[0], runs[2]]) == "not-run" and collapse_verdict(runs[2:3]) == "verified"
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
             "E_std": results["E_std"][:cut]}
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
