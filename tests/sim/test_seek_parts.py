"""The seeking search's parts (sim.conjectures.seek) with their collaborators replaced by stand-ins: the budget loop on
a ticking clock, the record of one instance, the evolution strategy's steps, the Newton starts and the score.

The stand-ins make every number known in advance (a clock that ticks one second per reading, evaluations whose
score is a function of theta), so each rule is checked at its edge; the real searches are in test_seek.py."""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from sim.conjectures import seek as seeking
from sim.conjectures.allocation import FactoredSampler
from sim.conjectures.equilibria import Instance
from sim.conjectures.families import Shape, get_family, top_eigenpair
from sim.conjectures.seek import (CERTIFY_PER_INSTANCE, CHILD_STARTS, FIRST_SIGMA, GENERATIONS, OFFSPRING, ROUNDS,
                                  STARTS, WARM_STARTS, Assessment, Equilibrium, HitCheck, assess, certified_hit,
                                  evaluate, optimise, seek, seek_instance, starts)
from sim.conjectures.structured import NoInstance, draw_structured, shapes, structures

CLAIM = "conj.multihead-causal"


class _Clock:
    """``time.process_time`` that advances one second at every reading."""

    def __init__(self):
        self.now = 0.0

    def process_time(self) -> float:
        self.now += 1.0
        return self.now


def _fake_instance(draw, rng):
    """A record as seek_instance gives it: a hit for even k, with what seek passed in (theta, one draw of rng)."""
    return {"structure": draw.structure, "seed": draw.seed, "shape": [draw.shape.heads, draw.shape.tokens,
            draw.shape.dim], "first_score": 1.0, "score": -1.0, "certifications": ["checked"],
            "hit": draw.seed[1] % 2 == 0, "theta": draw.theta, "drawn": int(rng.integers(2**62))}


@pytest.fixture
def clocked(monkeypatch):
    """seek on the ticking clock with the stand-in instance search."""
    monkeypatch.setattr(seeking, "time", _Clock())
    monkeypatch.setattr(seeking, "seek_instance", _fake_instance)


# --- seek: the budget loop -------------------------------------------------------------------------------------------
# On the clock: started = 1; before instance k the loop reads 2 + 3k (elapsed 1 + 3k), the instance begins at 3 + 3k
# and ends at 4 + 3k (1 CPU second); the loop stops at the first elapsed time >= budget, and the total is read after.
def test_the_budget_is_spent_instance_by_instance_and_the_bound_is_strict(clocked):
    assert seek(CLAIM, 4.0, seed=3)["instances"] == 1  # elapsed 1 < 4, then 4 < 4 is false
    assert seek(CLAIM, np.nextafter(4.0, 5.0), seed=3)["instances"] == 2
    summary = seek(CLAIM, 7.0, seed=3)
    assert summary["instances"] == 2 and summary["cpu_seconds"] == 8.0  # read at 9, started at 1
    assert summary["budget_seconds"] == 7.0 and summary["hits"] == 1  # k = 0 is a hit, k = 1 is not
    assert summary["hits_per_cpu_minute"] == 60.0 * 1 / 8.0


def test_max_instances_stops_the_loop_before_the_budget_does(clocked):
    assert seek(CLAIM, 100.0, seed=3, max_instances=2)["instances"] == 2
    assert seek(CLAIM, 100.0, seed=3, max_instances=1)["instances"] == 1
    assert seek(CLAIM, 10.0, seed=3)["instances"] == 3  # no cap: the budget alone (elapsed 1, 4, 7 < 10)


def test_each_instance_is_drawn_from_its_seed_and_searched_with_its_own_generator(clocked):
    summary = seek(CLAIM, 7.0, seed=5)
    hit = summary["hit_records"][0]
    assert hit["seed"] == [5, 0] and hit["cpu_seconds"] == 1.0 and hit["hit"] is True
    draw = draw_structured(CLAIM, [5, 0], structure=hit["structure"], shape=Shape(*hit["shape"]))
    np.testing.assert_array_equal(hit["theta"], draw.theta)
    assert hit["drawn"] == np.random.default_rng([5, 0, 1]).integers(2**62)
    (miss,) = summary["misses"]
    assert miss["seed"] == [5, 1] and set(miss) == {"structure", "seed", "shape", "first_score", "score",
                                                    "certifications"}
    assert miss["certifications"] == ["checked"] and miss["score"] == -1.0 and miss["first_score"] == 1.0


def test_the_sources_are_chosen_by_the_seeded_sampler_that_learns_from_each_record(clocked):
    summary = seek(CLAIM, 100.0, seed=7, max_instances=6)
    sampler = FactoredSampler({"structure": structures(CLAIM), **shapes(CLAIM)})
    chooser = np.random.default_rng([7, 2**32 - 1])
    expected = []
    for k in range(6):
        choice = sampler.choose(chooser)
        expected.append((choice["structure"], [choice["heads"], choice["tokens"], choice["dim"]], [7, k]))
        sampler.record(choice, k % 2 == 0, 1.0)
    got = sorted(((r["structure"], r["shape"], r["seed"]) for r in summary["hit_records"] + summary["misses"]),
                 key=lambda r: r[2])
    assert got == expected
    assert summary["allocation"] == sampler.summary()
    assert summary["sources"] == list(structures(CLAIM)) and summary["wide_shapes"] is False
    assert (summary["search"], summary["claim"], summary["seed"]) == ("seek", CLAIM, 7)
    assert [hit["seed"] for hit in summary["hit_records"]] == [[7, 0], [7, 2], [7, 4]]


def test_wide_shapes_and_a_selection_of_sources_are_what_the_sampler_chooses_from(clocked):
    summary = seek(CLAIM, 100.0, seed=1, wide=True, sources=("random", "skew"), max_instances=1)
    assert summary["sources"] == ["random", "skew"] and summary["wide_shapes"] is True
    assert set(summary["allocation"]["structure"]) == {"random", "skew"}
    assert set(summary["allocation"]["tokens"]) == {str(t) for t in shapes(CLAIM, wide=True)["tokens"]}
    assert set(seek(CLAIM, 100.0, seed=1, sources=(), max_instances=1)["allocation"]["structure"]) == set(
        structures(CLAIM))  # an empty selection is every source


def test_a_source_without_an_instance_is_recorded_as_a_failure_and_costs_its_time(clocked, monkeypatch):
    def no_instance(claim, seed, *, structure, shape):
        raise NoInstance(f"nothing at {seed}")

    monkeypatch.setattr(seeking, "draw_structured", no_instance)
    summary = seek(CLAIM, 100.0, seed=2, sources=("random",), max_instances=1)
    (miss,) = summary["misses"]
    chosen = [[int(level) for level, spent in summary["allocation"][factor].items() if spent["cpu_seconds"]]
              for factor in ("heads", "tokens", "dim")]
    assert miss == {"structure": "random", "seed": [2, 0], "shape": [levels[0] for levels in chosen],
                    "first_score": None, "score": None, "certifications": []}
    assert summary["hits"] == 0 and summary["hit_records"] == []
    assert summary["allocation"]["structure"]["random"] == {"hits": 0, "cpu_seconds": 1.0}


def test_the_failure_record_is_complete(monkeypatch):
    monkeypatch.setattr(seeking, "time", _Clock())
    kept = []

    def no_instance(claim, seed, *, structure, shape):
        raise NoInstance("no draw")

    class Sampler(FactoredSampler):
        def record(self, choice, hit, seconds):
            kept.append((hit, seconds))
            super().record(choice, hit, seconds)

    monkeypatch.setattr(seeking, "draw_structured", no_instance)
    monkeypatch.setattr(seeking, "FactoredSampler", Sampler)
    monkeypatch.setattr(seeking, "seek_instance", lambda draw, rng: pytest.fail("no draw, no search"))
    summary = seek(CLAIM, 100.0, seed=2, sources=("random",), max_instances=1)
    assert kept == [(False, 1.0)] and summary["instances"] == 1


@pytest.mark.parametrize("budget", [0.0, -1.0])
def test_a_budget_that_is_not_positive_is_refused(budget):
    with pytest.raises(ValueError, match="must be a positive number of CPU seconds"):
        seek(CLAIM, budget)


def test_a_small_positive_budget_is_accepted(clocked):
    assert seek(CLAIM, 0.5)["instances"] == 0  # elapsed 1 >= 0.5 at the first reading
    summary = seek(CLAIM, 1.5)
    assert summary["instances"] == 1 and summary["seed"] == 0 and summary["hit_records"][0]["seed"] == [0, 0]


def test_sources_outside_the_claims_are_refused_even_beside_fitting_ones():
    with pytest.raises(ValueError, match="must be a selection of"):
        seek(CLAIM, 1.0, sources=("random", "spiral"))


# --- seek_instance: the record of one instance -----------------------------------------------------------------------
def _equilibrium(score: float, y: float = 0.0) -> Equilibrium:
    """An equilibrium scoring ``score`` (its margin far larger than any score here) at y = ``y`` everywhere."""
    return Equilibrium(np.full((2, 2), y), largest_real_part=score, distance=1.0, margin=10.0)


def _assessment(*scores: float, theta=(0.0,)) -> Assessment:
    return Assessment(np.array(theta), np.full((1, 2, 2), 2.0), np.full((1, 2, 2), 3.0),
                      [_equilibrium(s, y=k) for k, s in enumerate(scores)])


@pytest.fixture
def one_instance(monkeypatch):
    """seek_instance with evaluate, optimise and certified_hit replaced; what they were given is kept."""
    calls = SimpleNamespace(optimised=[], certified=[], hits=set(), first=_assessment(-2.0, -1.0, -0.5, 0.5))

    def evaluate(draw, theta, rng):
        calls.evaluated = (draw, theta, rng)
        return calls.first

    def optimise(draw, parent, rng):
        calls.optimised.append(parent)
        return _assessment(-0.25, theta=(9.0,)), 12

    def certify(family, P, U, y):
        calls.certified.append((family.claim, P, U, y))
        hit = float(y[0, 0]) in calls.hits
        return HitCheck(hit, f"reason {y[0, 0]:g}", {"number": y[0, 0]}, y + 10.0 if hit else None)

    monkeypatch.setattr(seeking, "evaluate", evaluate)
    monkeypatch.setattr(seeking, "optimise", optimise)
    monkeypatch.setattr(seeking, "certified_hit", certify)
    return calls


def _draw():
    return draw_structured(CLAIM, [4, 1], structure="random", shape=Shape(2, 2, 2))


def test_an_instance_already_scoring_negative_is_certified_without_optimising(one_instance):
    draw, rng = _draw(), np.random.default_rng(0)
    record = seek_instance(draw, rng)
    assert one_instance.evaluated[0] is draw and one_instance.evaluated[1] is draw.theta
    assert one_instance.evaluated[2] is rng and one_instance.optimised == []
    # at most two candidates, most negative first, none a hit
    assert [c[3][0, 0] for c in one_instance.certified] == [0.0, 1.0] and CERTIFY_PER_INSTANCE == 2
    assert all(c[0] == CLAIM for c in one_instance.certified)
    assert record == {"structure": "random", "seed": [4, 1], "shape": [2, 2, 2], "first_score": -2.0,
                      "score": -2.0, "optimised": 0, "hit": False, "certifications": ["reason 0", "reason 1"]}


def test_the_first_hit_is_recorded_with_its_instance_and_certificate_and_ends_the_certification(one_instance):
    one_instance.hits = {1.0, 2.0}
    record = seek_instance(_draw(), np.random.default_rng(0))
    assert [c[3][0, 0] for c in one_instance.certified] == [0.0, 1.0]
    assert record["hit"] is True and record["certifications"] == ["reason 0", "reason 1"]
    assert record["P"] == np.full((1, 2, 2), 2.0).tolist() and record["U"] == np.full((1, 2, 2), 3.0).tolist()
    assert record["equilibrium"] == np.full((2, 2), 11.0).tolist() and record["largest_real_part"] == -1.0
    assert record["certificate"] == {"number": 1.0}
    one_instance.hits, one_instance.certified = {0.0}, []
    assert seek_instance(_draw(), np.random.default_rng(0))["certifications"] == ["reason 0"]
    assert len(one_instance.certified) == 1


def test_an_instance_scoring_zero_is_optimised_and_its_best_certified(one_instance):
    one_instance.first = _assessment(0.0, 1.0)
    draw, rng = _draw(), np.random.default_rng(0)
    record = seek_instance(draw, rng)
    assert one_instance.optimised == [one_instance.first]
    assert record["first_score"] == 0.0 and record["score"] == -0.25 and record["optimised"] == 12
    assert [c[3][0, 0] for c in one_instance.certified] == [0.0]
    one_instance.first, one_instance.certified = _assessment(), []
    record = seek_instance(draw, rng)  # no equilibrium: score +inf, recorded as None; optimised, then certified
    assert record["first_score"] is None and record["score"] == -0.25  # the optimised instance's
    assert [c[3][0, 0] for c in one_instance.certified] == [0.0] and len(one_instance.optimised) == 2


def test_only_negative_scores_are_candidates(one_instance):
    one_instance.first = _assessment(-1.0, 0.0, 0.0)
    seek_instance(_draw(), np.random.default_rng(0))
    assert [c[3][0, 0] for c in one_instance.certified] == [0.0]


# --- optimise: the (1+lambda) evolution strategy ---------------------------------------------------------------------
@pytest.fixture
def children(monkeypatch):
    """evaluate replaced: the n-th child (from 1) scores ``scores[n]``, 5.0 when not given; every call is kept."""
    state = SimpleNamespace(calls=[], scores={})

    def evaluate(draw, theta, rng, warm=(), count=STARTS, rounds=ROUNDS):
        state.calls.append({"theta": theta, "warm": list(warm), "count": count, "rounds": rounds, "rng": rng})
        score = state.scores.get(len(state.calls), 5.0)
        return Assessment(theta, None, None, [_equilibrium(score)])

    monkeypatch.setattr(seeking, "evaluate", evaluate)
    return state


def _parent(score: float, count: int = 3) -> Assessment:
    return Assessment(np.array([0.0, 1.0]), None, None, [_equilibrium(score, y=k) for k in range(count)])


def _steps(parent_theta, children_thetas, rng_seed):
    """The sigma of each child: (child - parent) / the standard normal the same generator drew."""
    rng = np.random.default_rng(rng_seed)
    return [float(np.mean((child - parent_theta) / rng.standard_normal(len(parent_theta))))
            for child in children_thetas]


def test_a_child_is_a_normal_step_of_sigma_which_grows_on_success_and_shrinks_otherwise(children):
    draw = SimpleNamespace(structure="random")
    children.scores = {2: 0.5}  # generation 1: the second child beats the parent (1.0); later none does
    parent = _parent(1.0)
    best, evaluated = optimise(draw, parent, np.random.default_rng(8))
    assert evaluated == OFFSPRING * GENERATIONS == 12 and len(children.calls) == 12
    thetas = [call["theta"] for call in children.calls]
    np.testing.assert_allclose(thetas[:4], [parent.theta + FIRST_SIGMA * np.random.default_rng(8).standard_normal(
        (4, 2))[k] for k in range(4)], rtol=0, atol=1e-15)  # each child draws its own step, in order
    sigmas = _steps(np.array([0.0, 1.0]), thetas[:4], 8)
    np.testing.assert_allclose(sigmas, FIRST_SIGMA, rtol=1e-12)
    # generation 2 starts from the successful child with sigma x 1.5, generation 3 from it with sigma x 1.5 x 0.82
    rng = np.random.default_rng(8)
    rng.standard_normal((4, 2))
    second = thetas[1]
    np.testing.assert_allclose(thetas[4:8], second + 1.5 * FIRST_SIGMA * rng.standard_normal((4, 2)), atol=1e-15)
    np.testing.assert_allclose(thetas[8:], second + 1.5 * 0.82 * FIRST_SIGMA * rng.standard_normal((4, 2)),
                               atol=1e-15)
    assert best.score == 0.5 and best.theta is thetas[1]


def test_a_child_equal_to_its_parent_is_no_success_and_the_best_child_is_the_least(children):
    draw = SimpleNamespace(structure="random")
    children.scores = {1: 1.0, 2: 3.0, 3: 1.0, 4: 2.0, 5: 0.75, 6: 0.25, 7: 0.5, 8: 0.25}
    best, _ = optimise(draw, _parent(1.0), np.random.default_rng(8), generations=2)
    rng = np.random.default_rng(8)
    rng.standard_normal((4, 2))  # generation 1: no child below 1.0, sigma x 0.82
    thetas = [call["theta"] for call in children.calls]
    np.testing.assert_allclose(thetas[4:], np.array([0.0, 1.0]) + 0.82 * FIRST_SIGMA * rng.standard_normal((4, 2)),
                               atol=1e-15)
    assert best.score == 0.25 and best.theta is thetas[5]  # the first of two equal best children


def test_the_strategy_stops_once_the_parent_scores_negative(children):
    draw = SimpleNamespace(structure="random")
    best, evaluated = optimise(draw, _parent(-0.5), np.random.default_rng(0))
    assert evaluated == 0 and children.calls == [] and best.score == -0.5
    best, evaluated = optimise(draw, _parent(0.0), np.random.default_rng(0))  # a score of 0 is not yet negative
    assert evaluated == 12
    children.calls, children.scores = [], {3: -1.0}
    best, evaluated = optimise(draw, _parent(0.5), np.random.default_rng(0))
    assert evaluated == 4 and best.score == -1.0  # one generation, then the parent is negative


def test_children_are_solved_from_the_parents_best_equilibria_or_fresh_starts(children):
    parent, rng = _parent(1.0), np.random.default_rng(0)
    optimise(SimpleNamespace(structure="random"), parent, rng, generations=1)
    assert all(call["warm"] == parent.equilibria[:WARM_STARTS] and len(call["warm"]) == 2 for call in children.calls)
    assert all(call["rng"] is rng for call in children.calls)  # the strategy's generator solves the children too
    assert all(call["count"] == 0 and call["rounds"] == 1 for call in children.calls)
    children.calls = []
    optimise(SimpleNamespace(structure="random"), _parent(1.0, count=0), np.random.default_rng(0), generations=1)
    # a parent without equilibria: CHILD_STARTS fresh starts in one pass
    assert all(call["warm"] == [] and call["count"] == CHILD_STARTS == 6 and call["rounds"] == 1
               for call in children.calls)
    children.calls = []
    optimise(SimpleNamespace(structure="planted"), parent, np.random.default_rng(0), generations=1)
    # a planted child: from its own planted state alone (evaluate adds it), no warm starts, no fresh starts
    assert all(call["warm"] == [] and call["count"] == 0 and call["rounds"] == 1 for call in children.calls)


# --- evaluate: the passes of deflated Newton -------------------------------------------------------------------------
@pytest.fixture
def passes(monkeypatch):
    """find_equilibria replaced: each pass returns one given root; the starts it was given are kept."""
    state = SimpleNamespace(calls=[], roots=[])

    def find(instance, initial, rounds, known):
        state.calls.append({"initial": np.array(initial), "rounds": rounds, "known": np.array(known),
                            "instance": instance})
        return state.roots[len(state.calls) - 1]

    monkeypatch.setattr(seeking, "find_equilibria", find)
    return state


#: The multi-head counterexample of test_seek.py: P = +-20 I; the second token at 60 degrees is a stable root away
#: from consensus, (e1, e1) is consensus, (e1, e2) no root of interest (its score is positive: unstable).
WITNESS = np.array([[1.0, 0.0], [0.5, np.sqrt(0.75)]])


def _multihead_draw(monkeypatch, planted=None):
    P = np.array([20 * np.eye(2), -20 * np.eye(2)])
    U = np.array([np.diag([0.0, 2.0]), np.diag([1.0, -2.0])])
    monkeypatch.setattr(seeking, "decode_with_state", lambda draw, theta: (P, U, planted))
    return SimpleNamespace(claim=CLAIM, shape=Shape(2, 2, 2), structure="random"), P, U


def test_fresh_starts_run_in_the_given_number_of_passes_until_a_negative_score(monkeypatch, passes):
    draw, P, U = _multihead_draw(monkeypatch)
    consensus = np.array([[1.0, 0.0], [1.0, 0.0]])
    passes.roots = [consensus[None], np.zeros((0, 2, 2)), WITNESS[None], consensus[None]]
    result = evaluate(draw, np.array([1.0]), np.random.default_rng(3), count=4, rounds=4)
    assert len(passes.calls) == 3  # stopped after the witness scored negative
    expected = starts(Instance(P, U, True), 2, np.random.default_rng(3), 4)
    for call in passes.calls:  # the same fresh starts in every pass, one deflated round each, on the instance
        np.testing.assert_array_equal(call["initial"], expected)
        assert call["rounds"] == 1 and call["instance"].causal is True
        np.testing.assert_array_equal(call["instance"].P, P)
    assert [len(call["known"]) for call in passes.calls] == [0, 1, 1]  # deflated by every root found before
    assert result.score < 0 and len(result.equilibria) == 1  # consensus is not scored
    np.testing.assert_array_equal(result.equilibria[0].y, WITNESS)
    np.testing.assert_array_equal(result.theta, [1.0])
    assert result.P is P and result.U is U
    assert passes.calls[0]["known"].shape == (0, 2, 2)


def test_by_default_two_passes_of_sixteen_fresh_starts(monkeypatch, passes):
    draw, _, _ = _multihead_draw(monkeypatch)
    passes.roots = [np.zeros((0, 2, 2))] * 3
    result = evaluate(draw, np.array([1.0]), np.random.default_rng(3))
    assert [call["initial"].shape for call in passes.calls] == [(16, 2, 2)] * 2
    assert result.equilibria == [] and result.score == np.inf


def test_warm_starts_and_the_planted_state_go_first_in_a_pass_of_their_own(monkeypatch, passes):
    planted = np.array([[0.0, 1.0], [0.0, 1.0]])
    draw, _, _ = _multihead_draw(monkeypatch, planted=planted)
    passes.roots = [np.zeros((0, 2, 2))] * 3
    warm = [_equilibrium(1.0, y=0.5)]
    evaluate(draw, np.array([1.0]), np.random.default_rng(3), warm, count=0)
    (call,) = passes.calls  # count 0: the warm pass alone
    np.testing.assert_array_equal(call["initial"], [np.full((2, 2), 0.5), planted])
    passes.calls = []
    evaluate(draw, np.array([1.0]), np.random.default_rng(3), count=3, rounds=1)
    assert [call["initial"].shape for call in passes.calls] == [(1, 2, 2), (3, 2, 2)]


def test_an_instance_outside_the_hypotheses_is_not_solved(monkeypatch, passes):
    monkeypatch.setattr(seeking, "decode_with_state",
                        lambda draw, theta: (np.zeros((1, 2, 2)), np.eye(2)[None], None))  # P = 0: invalid heads
    result = evaluate(SimpleNamespace(claim=CLAIM, shape=Shape(1, 2, 2), structure="random"), np.array([2.0]),
                      np.random.default_rng(0))
    assert passes.calls == [] and result.equilibria == [] and result.score == np.inf
    np.testing.assert_array_equal(result.theta, [2.0])
    np.testing.assert_array_equal(result.P, np.zeros((1, 2, 2)))
    np.testing.assert_array_equal(result.U, np.eye(2)[None])


# --- starts ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("top", [0, 1])
def test_the_starts_are_the_structured_ones_in_a_random_order_then_random_points(top):
    U = np.diag([1.0, 1.0])[None] + np.diag(np.eye(2)[top])[None]  # v = e_top; eigenvectors e1, e2 twice
    instance = Instance(np.eye(2)[None], U, True)
    got = starts(instance, 2, np.random.default_rng(5), count=16)
    e1, e2 = np.eye(2)
    v = np.eye(2)[top]
    assert np.array_equal(top_eigenpair(U[0])[2], v)
    structured = [[v, v], [-v, -v], [v, -v]] + [[v, s * e] for e in (e1, e2, e1, e2) for s in (1.0, -1.0)]
    rng = np.random.default_rng(5)
    order = rng.permutation(11)
    random = rng.standard_normal((8, 2, 2))
    random /= np.linalg.norm(random, axis=-1, keepdims=True)
    random[:4] *= np.where(random[:4] @ v < 0, -1.0, 1.0)[..., None]
    np.testing.assert_allclose(got, np.concatenate([np.array(structured)[order[:8]], random]), rtol=0, atol=0)


def test_a_count_beyond_twice_the_structured_starts_fills_up_with_random_ones():
    instance = Instance(np.eye(2)[None], np.diag([2.0, 1.0])[None], True)
    got = starts(instance, 3, np.random.default_rng(1), count=40)
    # three tokens: 2 + 2 splits + 8 eigenvector starts = 12 structured, 28 random (14 reflected)
    assert got.shape == (40, 3, 2)
    np.testing.assert_allclose(np.linalg.norm(got, axis=-1), 1.0, rtol=1e-15)
    assert np.all(got[12:26] @ np.eye(2)[0] >= 0) and np.any(got[26:] @ np.eye(2)[0] < 0)
    assert starts(instance, 3, np.random.default_rng(1)).shape == (STARTS, 3, 2)


def test_without_a_top_eigenvector_the_first_axis_stands_in_for_v():
    # sum U = diag(1, 3, 3): a double top eigenvalue, whose eigenvector top_eigenpair still gives is e2, not e1
    instance = Instance(np.eye(3)[None], np.diag([1.0, 3.0, 3.0])[None], True)
    assert top_eigenpair(instance.U[0])[0] is False and top_eigenpair(instance.U[0])[2][0] == 0.0
    got = starts(instance, 2, np.random.default_rng(2), count=4)
    e1 = np.eye(3)[0]
    rng = np.random.default_rng(2)
    eigenvectors = [np.real(e) for e in np.linalg.eig(instance.U[0])[1].T]
    structured = [[e1, e1], [-e1, -e1], [e1, -e1]] + [[e1, s * e] for e in eigenvectors * 2 for s in (1.0, -1.0)]
    order = rng.permutation(len(structured))
    np.testing.assert_array_equal(got[:2], np.array(structured)[order[:2]])
    assert np.all(got[2] @ e1 >= 0)  # the first random start is reflected into e1's hemisphere


def test_eigenvectors_of_a_rotation_enter_by_their_real_parts_normalised():
    U = np.array([[[0.0, -1.0], [1.0, 0.0]], [[3.0, 0.0], [0.0, 1.0]]])  # a rotation: eigenvectors (1, -+i)/sqrt 2
    instance = Instance(np.array([np.eye(2)] * 2), U, True)
    got = starts(instance, 2, np.random.default_rng(0), count=40)
    np.testing.assert_allclose(np.linalg.norm(got, axis=-1), 1.0, rtol=1e-15)  # every start on the sphere


# --- assess and certified_hit ----------------------------------------------------------------------------------------
def test_assess_scores_only_roots_at_least_away_from_the_claim_and_sorts_them(monkeypatch):
    from sim.conjectures.certify import AWAY

    instance = Instance(np.array([20 * np.eye(2), -20 * np.eye(2)]),
                        np.array([np.diag([0.0, 2.0]), np.diag([1.0, -2.0])]), True)
    distances = np.array([AWAY, np.nextafter(AWAY, 0.0), 0.5])
    seen = {}

    def distance(P, U, y):
        seen.update(P=P, U=U, y=y)
        return distances

    family = dataclasses.replace(get_family(CLAIM), distance=distance)
    roots = np.array([WITNESS, WITNESS * [[1.0, 1.0], [1.0, -1.0]], [[0.0, 1.0], [1.0, 0.0]]])
    scored = assess(family, instance, roots)
    assert seen["P"].shape == (3, 2, 2, 2) and seen["U"].shape == (3, 2, 2, 2) and seen["y"] is roots
    np.testing.assert_array_equal(seen["P"][2], instance.P)
    np.testing.assert_array_equal(seen["U"][1], instance.U)
    assert len(scored) == 2 and [e.distance for e in scored] == [AWAY, 0.5]  # the witness first
    assert scored[0].score <= scored[1].score and scored[0].score < 0
    np.testing.assert_array_equal(scored[0].y, WITNESS)
    assert scored[0].margin == pytest.approx(float(family.state_margin(instance.U, WITNESS[None])[0]), abs=0)
    assert isinstance(scored[0].largest_real_part, float) and isinstance(scored[0].margin, float)
    near = dataclasses.replace(family, distance=lambda P, U, y: np.full(len(y), np.nextafter(AWAY, 0.0)))
    assert assess(near, instance, roots) == []
    assert assess(family, instance, np.zeros((0, 2, 2))) == []


def test_an_equilibriums_score_is_its_largest_real_part_or_its_missing_margin():
    assert Equilibrium(np.zeros((2, 2)), -1.0, 1.0, 0.5).score == -0.5
    assert Equilibrium(np.zeros((2, 2)), -0.25, 1.0, 0.5).score == -0.25
    assert Equilibrium(np.zeros((2, 2)), -0.25, 1.0, -0.5).score == 0.5


def test_a_certified_hit_passes_the_instance_as_float64_to_the_replay(monkeypatch):
    seen = {}

    def draft(claim, problem, start, attractor):
        seen.update(claim=claim, problem=problem, start=start, attractor=attractor)
        return "the witness"

    def replay(witness, family):
        seen.update(witness=witness, family=family)
        certificate = SimpleNamespace(numbers={"a": 1, "b": 2}, equilibrium=np.ones((2, 2)))
        return SimpleNamespace(refuted=True, reason="certified", certificate=certificate, numbers={"b": 3, "c": 4})

    monkeypatch.setattr(seeking, "draft", draft)
    monkeypatch.setattr(seeking, "replay", replay)
    family = get_family(CLAIM)
    P, U = np.array([[[20, 0], [0, 20]]]), np.array([[[1, 0], [0, 2]]])  # integers
    check = certified_hit(family, P, U, WITNESS)
    assert seen["claim"] == CLAIM and seen["start"] is WITNESS and seen["attractor"] is WITNESS
    assert seen["problem"].P.dtype == seen["problem"].U.dtype == np.float64 and seen["problem"].causal is True
    np.testing.assert_array_equal(seen["problem"].P, P)
    np.testing.assert_array_equal(seen["problem"].U, U)
    assert seen["witness"] == "the witness" and seen["family"] is family
    assert check.hit is True and check.reason == "certified"
    assert check.numbers == {"a": 1, "b": 3, "c": 4}  # the replay's numbers over the certificate's
    np.testing.assert_array_equal(check.equilibrium, np.ones((2, 2)))


def test_the_passes_stop_at_the_first_negative_score_not_at_zero(monkeypatch, passes):
    draw, _, _ = _multihead_draw(monkeypatch)
    passes.roots = [np.full((1, 2, 2), k) for k in range(4)]
    scores = iter([0.0, 0.5, -1e-300, -2.0])
    monkeypatch.setattr(seeking, "assess", lambda family, instance, new: [_equilibrium(next(scores))])
    result = evaluate(draw, np.array([1.0]), np.random.default_rng(3), count=2, rounds=4)
    assert len(passes.calls) == 3  # 0 and 0.5 go on, -1e-300 stops
    assert [e.score for e in result.equilibria] == [-1e-300, 0.0, 0.5]  # all scored so far, best first
