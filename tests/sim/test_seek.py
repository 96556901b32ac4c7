"""The seeking search: deflated Newton (sim.conjectures.equilibria), structured and planted families
(sim.conjectures.structured, sim.conjectures.planted), the score and the certified hits (sim.conjectures.seek), the
allocation (sim.conjectures.allocation), the side-by-side measurement (sim.bench.seek)."""

import numpy as np
import pytest

from sim.conjectures.allocation import ThompsonSampler
from sim.conjectures.families import FAMILIES, Shape, get_family, top_eigenpair
from sim.field.eq6 import eq6
from sim.conjectures.equilibria import (SAME_ROOT, Instance, field, find_equilibria, newton, residual_and_jacobian,
                                        tangent_bases, tangent_spectrum)
from sim.conjectures.seek import assess, certified_hit, seek, seek_instance
from sim.bench.seek import random_search
from sim.conjectures.structured import (P_MAX, WIDE_DIMS, WIDE_TOKENS, NoInstance, decode, decode_with_state,
                                        draw_structured, instance_problems, structures)
from sim.conjectures.validated import Chart, Problem, _jacobian

#: Isolated equilibria: causal, P = I, U = diag(1, 1/2). (P = U = I has continua of equilibria, every rotation of
#: one is one, and deflation removes a point of a continuum, not the continuum.) The first token rests at an
#: eigenvector of U; with y_1 = e1 the second has consensus (e1, e1) and the antipodal pair (e1, -e1) among its
#: equilibria.
ISOLATED = Instance(np.eye(2)[None], np.diag([1.0, 0.5])[None], causal=True)
CONSENSUS = np.array([[1.0, 0.0], [1.0, 0.0]])
#: The multi-head counterexample of tests/sim/test_conjectures.py: P = +-20 I, the second token rests at 60 degrees.
MULTIHEAD = Instance(np.array([20 * np.eye(2), -20 * np.eye(2)]), np.array([np.diag([0.0, 2.0]), np.diag([1.0, -2.0])]),
                     causal=True)
#: Agreement of two float64 evaluations of eq. 6 (values of order 1): a few roundings.
FLOAT_AGREEMENT = 1e-13


def _unit(rng, *shape):
    y = rng.standard_normal(shape)
    return y / np.linalg.norm(y, axis=-1, keepdims=True)


# --- sim.conjectures.equilibria
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("causal", [True, False])
def test_batched_field_agrees_with_eq6(causal):
    rng = np.random.default_rng(1)
    instance = Instance(rng.standard_normal((2, 3, 3)) * 5, rng.standard_normal((2, 3, 3)), causal)
    y = _unit(rng, 4, 5, 3)
    expected = np.stack([eq6(state, instance.P, instance.U, causal) for state in y])
    np.testing.assert_allclose(field(y, instance), expected, atol=FLOAT_AGREEMENT)


def test_tangent_bases_are_orthonormal_and_tangent():
    rng = np.random.default_rng(2)
    y = _unit(rng, 3, 4, 5)
    y[0, 0] = -np.eye(5)[0]  # the reflection's sign switch
    bases = tangent_bases(y)
    # a Householder reflection is orthogonal to rounding: 1e-15 is a few ulps
    np.testing.assert_allclose(np.einsum("sldk,sld->slk", bases, y), 0.0, atol=1e-15)
    np.testing.assert_allclose(np.swapaxes(bases, -1, -2) @ bases, np.broadcast_to(np.eye(4), (3, 4, 4, 4)),
                               atol=1e-15)


def test_complex_step_spectrum_agrees_with_the_jets_at_an_equilibrium():
    y, converged = newton(MULTIHEAD, np.array([[[1.0, 0.0], [0.6, 0.8]]]))
    assert converged[0]
    chart = Chart.at(y[0], exact=False)
    _, jets = _jacobian(Problem(MULTIHEAD.P, MULTIHEAD.U, True).field(chart, exact=False), np.zeros(2), exact=False)
    ours = np.sort(tangent_spectrum(y, MULTIHEAD)[0].real)
    # the chart's Jacobian and ours are the same linearisation in two bases of the tangent space: similar matrices;
    # both are exact to rounding and the eigenvalues are of order 1, so 1e-12 leaves 1e3 x rounding
    np.testing.assert_allclose(ours, np.sort(np.linalg.eigvals(jets.astype(float)).real), atol=1e-12)


def test_deflation_sends_newton_to_a_new_root():
    start = np.array([[[1.0, 0.0], [np.cos(0.3), np.sin(0.3)]]])
    first, converged = newton(ISOLATED, start)
    assert converged[0]
    np.testing.assert_allclose(first[0], CONSENSUS, atol=1e-10)  # converged: residual and step below 1e-9
    second, converged = newton(ISOLATED, start, roots=first)
    assert converged[0] and np.max(np.linalg.norm(second[0] - first[0], axis=-1)) > 0.1
    assert np.max(np.abs(residual_and_jacobian(second, ISOLATED)[0])) < 1e-10


def test_without_deflation_the_same_root_comes_back():
    start = np.array([[[1.0, 0.0], [np.cos(0.3), np.sin(0.3)]]])
    first, _ = newton(ISOLATED, start)
    again, _ = newton(ISOLATED, start)
    np.testing.assert_allclose(again, first, atol=1e-14)  # the same arithmetic twice: equal to rounding
    assert len(find_equilibria(ISOLATED, start, rounds=3, deflate=False)) == 1


def test_deflated_passes_from_one_start_find_two_distinct_roots():
    start = np.array([[[1.0, 0.0], [np.cos(0.3), np.sin(0.3)]]])
    roots = find_equilibria(ISOLATED, start, rounds=2)
    assert len(roots) == 2 and np.max(np.linalg.norm(roots[0] - roots[1], axis=-1)) > 0.1


def test_deflated_passes_find_distinct_roots_including_consensus_and_the_antipodal_pair():
    rng = np.random.default_rng(0)
    roots = find_equilibria(ISOLATED, _unit(rng, 8, 2, 2), rounds=2)
    assert len(roots) >= 4
    gaps = [np.max(np.linalg.norm(a - b, axis=-1)) for i, a in enumerate(roots) for b in roots[i + 1:]]
    assert min(gaps) > SAME_ROOT  # never the same root twice
    for target in (CONSENSUS, np.array([[1.0, 0.0], [-1.0, 0.0]])):  # up to y -> -y (eq. 6 is odd)
        # 1e-8: converged roots are within the Newton step bound 1e-9 of the exact ones
        assert min(np.max(np.linalg.norm(root - sign * target, axis=-1)) for root in roots for sign in (1, -1)) < 1e-8


# --- the score -------------------------------------------------------------------------------------------------------
def test_score_ranks_a_stable_admissible_equilibrium_above_an_unstable_one():
    family = get_family("conj.multihead-causal")
    rng = np.random.default_rng(3)
    roots = find_equilibria(MULTIHEAD, _unit(rng, 12, 2, 2), rounds=2)
    scored = assess(family, MULTIHEAD, roots)
    stable = [e for e in scored if e.largest_real_part < 0 and e.margin > 0]
    unstable = [e for e in scored if e.largest_real_part > 0]
    assert stable and unstable
    assert scored[0] in stable and scored[0].score < 0 < min(e.score for e in unstable)
    # the known witness: the second token at 60 degrees (hard attention; e^-10 of the other token moves it ~3e-5)
    np.testing.assert_allclose(np.abs(scored[0].y[1]), [0.5, np.sqrt(0.75)], atol=1e-4)


def test_claimed_outcome_is_not_scored():
    family = get_family("conj.multihead-causal")
    v = top_eigenpair(MULTIHEAD.U.sum(axis=0))[2]
    assert assess(family, MULTIHEAD, np.array([[v, v]])) == []


# --- structured and planted families ---------------------------------------------------------------------------------
def _admissible_state(claim, U, shape, rng):
    """A state meeting the claim's state hypotheses: (v..v) in D^l(v); alternating +-e1 in no open hemisphere."""
    if claim == "conj.multihead-causal":
        return np.tile(top_eigenpair(U.sum(axis=0))[2], (shape.tokens, 1))
    if claim == "conj.nonsymmetric-full":
        return np.array([(-1.0) ** i * np.eye(shape.dim)[0] for i in range(max(shape.tokens, 2))])
    return _unit(rng, shape.tokens, shape.dim)


@pytest.mark.parametrize("claim", sorted(c for c, family in FAMILIES.items() if family.value_rule))
def test_structured_draws_meet_the_hypotheses(claim):
    family = FAMILIES[claim]
    rng = np.random.default_rng(4)
    norms = []
    for structure in structures(claim):
        for k, shape in enumerate([Shape(max(family.heads), 2, 2), Shape(min(family.heads), max(WIDE_TOKENS) // 4,
                                                                          max(WIDE_DIMS) // 2)]):
            try:
                draw = draw_structured(claim, [4, k], structure=structure, shape=shape)
            except NoInstance:
                assert structure == "planted"  # more equations than value entries at this shape
                continue
            P, U = decode(draw)
            assert P.shape == U.shape == (shape.heads, shape.dim, shape.dim)
            assert instance_problems(claim, P, U) == []
            assert family.hypotheses(P, U, _admissible_state(claim, U, shape, rng)) == [], (structure, shape)
            norms += list(np.linalg.norm(P, 2, axis=(1, 2)))
    assert max(norms) <= P_MAX + 1e-9 and max(norms) > 20.0  # beyond the random families' cap of 20


def test_wide_shapes_reach_16_tokens_and_dimension_8():
    assert max(WIDE_TOKENS) >= 16 and max(WIDE_DIMS) >= 8
    draw = draw_structured("conj.multihead-causal", [5], structure="commuting", shape=Shape(2, 16, 8))
    P, U = decode(draw)
    assert instance_problems("conj.multihead-causal", P, U) == []
    # commuting heads: Q diag Q^T products with |P| <= 50 agree to 1e-12 (about 100 ulps of 50)
    np.testing.assert_allclose([p @ q - q @ p for p in P for q in U], 0.0, atol=1e-12)


@pytest.mark.parametrize("claim", ["conj.multihead-causal", "conj.value-causal", "conj.value-full"])
def test_planted_state_is_an_equilibrium(claim):
    family = FAMILIES[claim]
    draw = draw_structured(claim, [6], structure="planted", shape=Shape(max(family.heads), 3, 3))
    P, U, y = decode_with_state(draw)
    # the projection is a least-squares solve of a small well-scaled system: f(y*) vanishes to ~1e-15
    np.testing.assert_allclose(eq6(y, P, U, family.causal), 0.0, atol=1e-12)
    if claim == "conj.multihead-causal":
        np.testing.assert_allclose(U, np.swapaxes(U, 1, 2), atol=1e-12)  # symmetric to the rounding of the solve
        assert family.hypotheses(P, U, y) == []  # y* in D^l(v)


@pytest.mark.parametrize("claim, structure, message", [
    pytest.param("conj.gradient-value", "skew", "does not fit", id="skew P where U = P must be symmetric"),
    pytest.param("conj.multihead-causal", "spiral", "does not fit", id="unknown structure"),
    pytest.param("conj.nonsymmetric-full", "pm-identity", "does not fit", id="symmetric P where P must not be"),
])
def test_unfit_structures_are_refused(claim, structure, message):
    with pytest.raises(ValueError, match=message):
        draw_structured(claim, [0], structure=structure, shape=Shape(2, 2, 2))


# --- certified hits and the search -----------------------------------------------------------------------------------
def test_certified_hit_accepts_the_known_witness_and_rejects_the_claimed_outcome():
    family = get_family("conj.multihead-causal")
    witness = np.array([[1.0, 0.0], [0.5, np.sqrt(0.75)]])
    check = certified_hit(family, MULTIHEAD.P, MULTIHEAD.U, witness)
    assert check.hit, check.reason
    # control: the consensus (v, v) of the same instance is a certified attractor, but it is the claimed outcome
    control = certified_hit(family, MULTIHEAD.P, MULTIHEAD.U, CONSENSUS)
    assert not control.hit and "claimed outcome" in control.reason


def test_a_seeded_planted_instance_is_a_certified_hit():
    draw = draw_structured("conj.multihead-causal", [0, 1], structure="planted", shape=Shape(3, 2, 2))
    record = seek_instance(draw, np.random.default_rng([0, 1, 1]))
    assert record["hit"], record["certifications"]
    family = get_family("conj.multihead-causal")
    P, U, y = (np.array(record[key]) for key in ("P", "U", "equilibrium"))
    assert family.hypotheses(P, U, y) == [] and family.distance(P[None], U[None], y[None])[0] >= 1e-2
    assert record["seed"] == [0, 1]


def test_small_seeking_run_finds_certified_hits_with_their_seeds():
    summary = seek("conj.multihead-causal", budget=2.0, seed=11)
    assert summary["hits"] >= 1 and summary["hits"] == len(summary["hit_records"])
    assert all(len(hit["seed"]) == 2 and hit["seed"][0] == 11 for hit in summary["hit_records"])
    assert summary["cpu_seconds"] >= 2.0


def test_seek_refuses_sources_that_do_not_fit_the_claim():
    with pytest.raises(ValueError, match="sources="):
        seek("conj.gradient-value", 1.0, sources=("planted",))  # U = P leaves no value matrix to plant


def test_thompson_sampler_prefers_the_productive_level():
    sampler = ThompsonSampler(["fast", "slow"])
    sampler.record("fast", True, 0.1)
    for _ in range(10):
        sampler.record("fast", True, 0.1)
        sampler.record("slow", False, 0.5)
    rng = np.random.default_rng(7)
    choices = [sampler.choose(rng) for _ in range(200)]
    assert choices.count("fast") > 190


@pytest.mark.full  # compiles the integrator when its cache is cold (about 30 s here)
def test_random_baseline_counts_only_certified_hits():
    summary = random_search("conj.multihead-causal", budget=3.0, seed=0)
    assert summary["hits"] <= summary["candidates_certified"] <= summary["instances"]
    assert all(hit["seed"][-1] == 0 for hit in summary["hit_records"])


# --- the command line ------------------------------------------------------------------------------------------------
def test_seek_bench_command_names_an_unknown_claim(capsys):
    from sim.__main__ import main

    assert main(["search-bench", "--seek", "--claim", "conj.nope", "--budget", "1"]) == 2
    assert "conj.nope" in capsys.readouterr().err


@pytest.mark.full  # both searches for 2 CPU seconds each, plus the integrator's compilation when its cache is cold
def test_seek_bench_command_writes_both_searches_per_claim(tmp_path):
    import json

    from sim.__main__ import main

    out = tmp_path / "seek.json"
    assert main(["search-bench", "--seek", "--claim", "conj.multihead-causal", "--budget", "2", "--seed", "3",
                 "--out", str(out)]) == 0
    numbers = json.loads(out.read_text())
    (claim,) = numbers["claims"]
    assert claim["claim"] == "conj.multihead-causal" and numbers["seed"] == 3
    for search in ("random", "seek"):
        assert claim[search]["cpu_seconds"] >= 2 and claim[search]["seed"] == 3
