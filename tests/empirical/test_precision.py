"""A run against its float64 twin (issue 35: "a verdict that differs between the dtype and its twin is
precision-limited"): :func:`empirical.decision.precision_check` decides the twinned prompts twice, in the run's dtype
with its effective floor and in float64 with float64's floor; where the two differ the run's verdict is
``precision-limited`` and a claim that reads it gets no verdict from it. Each verdict of the check is reached, with a
control: the same sequences in both precisions agree; a tiny run with a twin agrees and records it; forging the
twin's E into a level makes the run precision-limited and the claim not-run."""


import pytest

from empirical.checks import check_in_kind, collapse_verdict, summary
from empirical.decision import RUN_VERDICTS, CollapseRule, decide_grid, precision_check, run_verdict
from empirical.run import RunSettings, load_results, run_experiment

from .test_decision import FLOOR, LAYERS, _blocks
from .tiny_trained import BUDGET, RULE, tiny_model

#: A float64 twin's floor in these synthetic tests: the float32 floor times the ratio of the unit round-offs, the
#: order of what the twin's measured floor comes to (the tiny run below measures it).
FLOAT64_FLOOR = FLOOR * 2.0 ** -29


def test_a_level_in_the_dtype_that_float64_sees_falling_is_precision_limited():
    """The shape of issue 35's Gemma 3 run: in float32 E hovers at a level (settled); in float64 it keeps falling
    (converging). Decided on the same prompts, they differ: ``precision-limited``, and a claim reads no verdict."""
    dtype = _blocks(lambda t: 2e-4, noise=0.1)
    float64 = _blocks(lambda t: 0.5 * 0.9 ** t)
    rule = CollapseRule()
    check = precision_check(dtype, float64, LAYERS, 2, FLOOR, FLOAT64_FLOOR, rule)
    assert (check.dtype.verdict, check.float64.verdict, check.agree) == ("settled", "converging", False)
    grid = decide_grid(dtype, LAYERS, FLOOR, rule)
    assert grid.verdict == "settled" and run_verdict(grid, check, "float32") == "precision-limited" in RUN_VERDICTS
    assert check.to_json()["dtype_verdict"] == "settled" and check.to_json()["float64"]["verdict"] == "converging"
    # control: the same values in both precisions agree, and the run keeps its grid's verdict
    same = precision_check(dtype, dtype, LAYERS, 2, FLOOR, FLOOR, rule)
    assert same.agree and run_verdict(grid, same, "float32") == "settled" == run_verdict(grid, None, "float32")
    # a run settled beside a precision-limited one still goes against the claim; a precision-limited one alone
    # decides nothing
    assert collapse_verdict([{"verdict": "precision-limited"}, {"verdict": "converging"}]) == "not-run"
    assert collapse_verdict([{"verdict": "precision-limited"}, {"verdict": "settled"}]) == "unsupported"


def test_the_twin_is_decided_with_float64s_floor_not_the_runs():
    """A float32 effective floor as large as 1e-3 censors everything below 1e-2: in the dtype a level of 5e-3 reads
    as "at the floor" (converging); float64, whose floor is 1e-12, sees the same level settled. The control: the twin
    decided with the run's floor would agree and hide it."""
    level = _blocks(lambda t: 5e-3 if t > 2 else 0.5)
    check = precision_check(level, level, LAYERS, 2, 1e-3, 1e-3 * 2.0 ** -29)
    assert (check.dtype.verdict, check.float64.verdict) == ("converging", "settled")
    assert precision_check(level, level, LAYERS, 2, 1e-3, 1e-3).agree


def test_the_runs_e_and_its_twins_must_be_the_same_measurements():
    with pytest.raises(ValueError, match="the same measurements"):
        precision_check([0.5] * 9, [0.5] * 5, LAYERS, 2, FLOOR, FLOOR)



def test_the_precision_check_records_both_grids_with_the_rule_and_floors_it_was_given():
    """Every field of the record, each grid decided with the rule passed (not the default) and its own floor; the
    control: the default rule decides these values otherwise, so a grid decided with it would show."""
    dtype, float64 = _blocks(lambda t: 2e-4, noise=0.1), _blocks(lambda t: 0.5 * 0.9 ** t)
    rule = CollapseRule(alpha=0.01)
    floor64 = FLOAT64_FLOOR
    check = precision_check(dtype, float64, LAYERS, 3, FLOOR, floor64, rule)
    grids = decide_grid(dtype, LAYERS, FLOOR, rule).to_json(), decide_grid(float64, LAYERS, floor64, rule).to_json()
    assert check.to_json() == {"prompts": 3, "agree": False, "dtype_verdict": "settled",
                               "float64_verdict": "converging", "float64_floor": floor64, "dtype": grids[0],
                               "float64": grids[1]}
    assert decide_grid(dtype, LAYERS, FLOOR).to_json() != grids[0]
    assert decide_grid(float64, LAYERS, floor64).to_json() != grids[1]


@pytest.fixture(scope="module")
def twinned(tmp_path_factory):
    """A tiny "trained" GPT-2 whose attention collapses, float32 with a float64 twin of 2 prompts, run until every
    cell of RULE's grid has decided, for the run and for the twin."""
    root = tmp_path_factory.mktemp("twinned")
    tiny_model("gpt2", attention="collapse").save_pretrained(root / "model")
    settings = RunSettings(model=str(root / "model"), weights="trained", ffn=False, device="cpu", twin="float64",
                           twin_prompts=2, **{**BUDGET, "passes": 2 * RULE.horizon})
    run_experiment(settings, root / "run", progress=False, until=tuple(RULE.grid().values()), rule=RULE)
    return load_results(root / "run")


def test_a_run_and_its_twin_that_agree_keep_the_grids_verdict(twinned):
    manifest, results = twinned
    precision = results["precision"]
    assert precision["prompts"] == 2 and precision["agree"]
    assert precision["dtype_verdict"] == precision["float64_verdict"] == "converging"
    assert results["verdict"] == results["decision"]["verdict"] == "converging"
    measured = manifest["floor"]["float64_twin"]
    assert precision["float64_floor"] == measured["E_floor"] and measured["dtype"] == "float64"
    assert measured["probe_prompts"] == 2 and measured["E_floor"] < manifest["floor"]["E_floor"] * 1e-6
    assert summary(manifest, results, RULE)["verdict"] == "converging"  # the report reads what the run wrote


def test_a_forged_twin_that_settles_makes_the_run_precision_limited(twinned, tmp_path):
    """The control of the test above: the same run, its twin's E replaced by a level of 0.05 after the embeddings
    (as if float64 saw no collapse), is precision-limited, and the claim that reads it is not-run with the float64
    command."""
    manifest, results = twinned
    columns = len(results["E_mean"])
    level = [results["twin"]["E_mean"][0], *[0.05] * (columns - 1)]
    forged = {**results, "twin": {**results["twin"], "E_mean": level, "E": [level, level]}}
    s = summary(manifest, forged, RULE)
    assert s["verdict"] == "precision-limited" and s["precision"]["float64_verdict"] != "converging"
    result = check_in_kind([(manifest, forged)], tmp_path / "kind.png", rule=RULE)
    assert result.verdict == "not-run" and "--dtype float64" in result.detail and "DIFFER" in result.detail
