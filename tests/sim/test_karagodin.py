"""Karagodin et al.'s conjectures (sim.conjectures.karagodin): hypotheses decided exactly, each with negative
controls; the stored thm1.5 witness meets them; the stored conj.value-* witnesses do not (the issue's point: they
never touched the cited conjecture); the seeking search is the CLI's default."""

import json
from pathlib import Path

import numpy as np
import pytest

from foundation.scale import report_scale
from sim.__main__ import main
from sim.conjectures.families import FAMILIES, Shape
from sim.conjectures.karagodin import (THM15, THM2_L, THM2_PERP, block_matrix, certified_spectrum,
                                       eigenspace_structure)
from sim.conjectures.replay import load, replay

WITNESSES = Path(__file__).parents[2] / "sim" / "conjectures" / "witnesses"


def test_distinct_positive_real_spectra_are_certified():
    assert certified_spectrum(np.diag([2.0, 1.0, 0.5])).ok
    assert certified_spectrum(np.array([[2.0, -1.0], [0.0, 1.0]])).ok          # non-orthogonal eigenvectors


@pytest.mark.parametrize("V, why", [
    (np.array([[0.0, -1.0], [1.0, 0.0]]), "real"),                             # a complex pair
    (np.array([[1.0, 1.0], [0.0, 1.0]]), "isolate"),                           # a Jordan block: not distinct
    (np.diag([2.0, -1.0]), "positive"),
    (np.diag([1.0, 0.0]), "positive"),                                         # a zero eigenvalue
    (np.diag([1.0, 1.0 + 2.0**-50]), ""),                                      # distinct, but 1e-15 apart
    (np.array([[1.0, 2.0], [-1e-3, 1.0]]), ""),                                # a complex pair 0.045 i off the axis
])
def test_spectra_outside_the_hypothesis_are_refused(V, why):
    spectrum = certified_spectrum(V)
    if V[1, 1] == 1.0 + 2.0**-50:  # Arb may isolate two eigenvalues 2^-50 apart at 106 bits: then they are distinct
        assert spectrum.ok == (len(set(np.diag(V))) == 2)
        return
    assert not spectrum.ok and why in " ".join(spectrum.problems)


def test_eigenspace_hypotheses_are_decided_exactly():
    assert eigenspace_structure(np.diag([1.0, 1.0, 0.5])).ok
    assert eigenspace_structure(np.diag([1.0, 1.0, 1.0])).ok                   # L = R^d: L^perp = 0, vacuous
    V = block_matrix(1.0, 2, np.random.default_rng(0).standard_normal(2 * 16))
    structure = eigenspace_structure(V)
    assert structure.ok and structure.dim == 2 and structure.lam == 1.0
    # negative controls: dim L = 1; L^perp not invariant; <Vz, z> >= lambda |z|^2 on L^perp; lambda <= 0
    assert not eigenspace_structure(np.diag([1.0, 0.5, 0.25])).ok
    assert "L^perp into L^perp" in " ".join(eigenspace_structure(np.array([[1.0, 0, 1], [0, 1, 0], [0, 0, 0.5]])).problems)
    assert "fails on L^perp" in " ".join(eigenspace_structure(np.diag([1.0, 1.0, 1.5])).problems)
    assert not eigenspace_structure(np.diag([-1.0, -1.0, -2.0])).ok
    # a rounding-level perturbation breaks the exact eigenspace (no tolerance decides it)
    assert not eigenspace_structure(np.diag([1.0, 1.0 + 2.0**-52, 0.5])).ok


@pytest.mark.parametrize("claim", [THM15, THM2_L, THM2_PERP])
def test_family_draws_meet_their_hypotheses_and_replay_calls_them(claim):
    family = FAMILIES[claim]
    rng = np.random.default_rng(7)
    for d in family.dims[:2]:
        _, batch = family.draw(rng, 8, Shape(1, 3, d))
        assert np.any(batch.valid)
        for k in np.flatnonzero(batch.valid):
            assert family.hypotheses(batch.P[k], batch.U[k], batch.y0[k]) == []


@pytest.mark.parametrize("path", [p for p in sorted(WITNESSES.glob("conj.value-*/*.json")) if p.name != "index.json"],
                         ids=lambda p: p.parent.name + "/" + p.stem)
def test_no_value_witness_meets_the_cited_hypothesis(path):
    """The suite's value-* witnesses have U with a zero, negative or complex eigenvalue: none refutes thm1.5."""
    witness = load(path)
    assert len(witness["U"]) != 1 or not certified_spectrum(np.asarray(witness["U"][0])).ok


def test_the_thm15_witness_needs_its_hypothesis():
    """The stored thm1.5 witness replays (tests/sim/test_witnesses.py replays it too); with V a rotation (a complex
    pair, outside the hypothesis) replay refuses it."""
    path = WITNESSES / THM15 / "two-tokens-l2-d2-h1.json"
    witness = load(path)
    assert replay(witness).refuted
    rotated = dict(witness, U=[[[0.0, -1.0], [1.0, 0.0]]])
    outcome = replay(rotated)
    assert not outcome.refuted


def test_thm15s_outcome_is_every_token_at_plus_or_minus_xi():
    """thm1.5 concludes that every token ends at +xi or -xi: an antipodal pair (xi, -xi) is that outcome (distance 0),
    so its replay must not refute. A distance to +xi alone (a mutant the referee found surviving every other test)
    called the antipodal attractor of V = diag(1, 0.5), P = 5 I a witness."""
    distance = FAMILIES[THM15].outcome_distance
    U = np.array([[np.diag([1.0, 0.5])]])
    xi = np.array([1.0, 0.0])
    for y in ([xi, -xi], [-xi, xi], [xi, xi], [-xi, -xi]):
        assert distance(5 * np.eye(2)[None, None], U, np.array([y]), np.array([y]))[0] == pytest.approx(0, abs=1e-15)
    away = np.array([[xi, [0.0, 1.0]]])
    assert distance(5 * np.eye(2)[None, None], U, away, away)[0] == pytest.approx(np.sqrt(2))
    witness = {"schema_version": 1, "claim": THM15, "P": [(5 * np.eye(2)).tolist()], "U": [np.diag([1.0, 0.5]).tolist()],
               "causal": True, "equilibrium": [xi.tolist(), (-xi).tolist()], "y0": [[1.0, 0.0], [-np.cos(0.05), np.sin(0.05)]],
               "provenance": "test: the antipodal attractor", "seeds": {}}
    outcome = replay(witness)
    assert not outcome.refuted and outcome.reason.startswith("the attractor is the claimed outcome"), outcome.reason


def test_the_default_search_is_the_seeking_one_and_reports_its_result(tmp_path, capsys):
    """Tiny budget: three instances of conj.nonsymmetric-full, seed 0 (the third, [0, 2], is a certified hit on this
    machine: the instances are seeded; which source each comes from reads CPU times, see allocation.py)."""
    assert main(["search", "--json", "conj.nonsymmetric-full", "--instances", "3", "--seed", "0", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    printed = json.loads(captured.out)
    assert printed["method"] == "seek" and printed["result"].startswith("refuted by 1 witnesses"), captured.err
    assert "verdict" not in printed
    stored = [Path(p) for p in printed["witnesses"]]
    assert stored and all(replay(load(p)).refuted for p in stored)
    assert "conj.nonsymmetric-full: refuted by" in captured.err


def test_a_seek_search_without_a_hit_says_so(tmp_path, capsys):
    """Negative control: conj.gradient-equilibria (proved) gives no hit; the result names the instances searched."""
    assert main(["search", "--json", "conj.gradient-equilibria", "--instances", "2", "--out", str(tmp_path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["result"].startswith("no certified counterexample in 2 instances (seeking search, seed 0")
    assert printed["witnesses"] == [] and "settles nothing" not in printed["result"]


def test_a_seek_search_that_can_certify_no_witness_says_it_settles_nothing(tmp_path, capsys):
    """thm2 read by its words: no attractor can be certified (a continuum of equilibria), so finding none is no support;
    the seeking search's result says so, as the random search's not-run record does (control: the test above)."""
    assert main(["search", "--json", THM2_L, "--instances", "2", "--out", str(tmp_path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["result"].startswith("no certified counterexample in 2 instances")
    assert "This search settles nothing: no witness of thm2 can be certified" in printed["result"]


def test_seek_refuses_the_random_search_options(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["search", "conj.value-full", "--workers", "2", "--out", str(tmp_path / "x")])
    assert "--method random" in capsys.readouterr().err


def documented_commands() -> list[list[str]]:
    """The reproduction commands of docs/searches.md (the fenced block after 'reproduce-refutations')."""
    text = (Path(__file__).parents[2] / "docs" / "searches.md").read_text()
    block = text.split("<!-- reproduce-refutations -->", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [line.split("python -m sim ", 1)[1].split() for line in block.splitlines() if "python -m sim search" in line]


def test_every_refuted_claim_has_a_documented_command():
    claims = {command[1] for command in documented_commands()}
    assert claims >= {"conj.multihead-causal", "conj.value-causal", "conj.value-full", "conj.value-causal-antipodal",
                      "conj.value-full-antipodal", "conj.gradient-value", "conj.nonsymmetric-full", THM15}


def _commands_at_this_scale() -> list[list[str]]:
    """Every documented command; at the smoke scale of a report build (foundation/scale.py) the first only (CI)."""
    commands = documented_commands()
    return commands[:1] if report_scale() == "smoke" else commands


@pytest.mark.full  # each command takes up to its CPU budget (<= 60 s) plus replays: minutes in all, on 2 cores
@pytest.mark.parametrize("command", _commands_at_this_scale(), ids=lambda c: c[1])
def test_documented_command_reproduces_a_certified_witness(command, tmp_path, capsys):
    args = [*command, "--json"]
    args[args.index("--out") + 1] = str(tmp_path)
    assert main(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["result"].startswith("refuted by"), printed
    assert all(replay(load(p)).refuted for p in printed["witnesses"])


# --- thm2: a search that can certify no witness settles nothing; the claimed limit is read at the start ------------
def _chunk_without_witnesses(claim: str) -> dict:
    """A chunk record as ``sim.conjectures.search.search_chunk`` writes it, with no witness."""
    return {"claim": claim, "index": 0, "size": 4, "seed": [0, 0], "shape": {"heads": 1, "tokens": 2, "dim": 3},
            "valid_random": 4, "evaluated": 4, "best_random": 1.4, "best_adversarial": None, "hits": 1,
            "rejected": [{"score": 1.4, "stage": "random", "reason": "Krawczyk isolated no zero"}], "witnesses": [],
            "seconds": 0.1}


@pytest.mark.parametrize("claim", [THM2_L, THM2_PERP])
def test_a_thm2_search_without_a_witness_is_not_run_not_supported(claim):
    """thm2's families declare why no witness can be certified; their search without one is not-run, its detail
    says why. The control: the same chunk under thm1.5 (which can certify) is supported."""
    from sim.conjectures.distributed import check_result, summarise

    family = FAMILIES[claim]
    assert "continuum" in family.no_witness and not FAMILIES[THM15].no_witness
    summary = summarise(family, [_chunk_without_witnesses(claim)], instances=4, chunk_size=4, adversarial=False)
    result = check_result(summary)
    assert summary["verdict"] == result.verdict == "not-run"
    assert result.detail.startswith(f"not-run: 0 certified witness(es) (no counterexample). This search settles "
                                    f"nothing, whatever it finds in float64: {family.no_witness}. What ran instead")
    control = summarise(FAMILIES[THM15], [_chunk_without_witnesses(THM15)], instances=4, chunk_size=4,
                        adversarial=False)
    assert control["verdict"] == check_result(control).verdict == "supported"


def test_a_thm2_equilibrium_with_token_1_on_the_sphere_of_L_is_never_certified():
    """What ``no_witness`` says, on one instance: V = diag(1, 1, 1/2) (L = span(e_1, e_2)), P = 0, both tokens at
    e_1. Token 1's equilibria fill the circle of L: Krawczyk cannot isolate the zero. The control: with V =
    diag(1, 1/2, 1/4) (dim L = 1, outside thm2) the same state is a certified attractor."""
    from sim.conjectures.validated import Problem, certify

    y = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    P = np.zeros((1, 3, 3))
    continuum = certify(Problem(P, np.diag([1.0, 1.0, 0.5])[None], True), y)
    assert not continuum.certified and "Krawczyk" in continuum.reason
    assert certify(Problem(P, np.diag([1.0, 0.5, 0.25])[None], True), y).certified


def test_thm2s_claimed_limit_is_read_from_x1_at_the_start():
    """Token 1 moves as x_1(t) = e^{tV} x_1(0) / |.|; V = blockdiag(I_2, D), D non-normal. The direction of
    P_L x_1(t) stays that of P_L x_1(0), so reading 1's limit read off the state's token 1 agrees with the start's;
    that of P_{L^perp} x_1(t) turns, so reading 2's must be read at the start (it was read off the state's token 1)."""
    from scipy.linalg import expm

    V = block_matrix(1.0, 2, np.random.default_rng(3).standard_normal(2 * 16))
    first = np.array([0.5, 0.5, 0.5, 0.5])
    moved = expm(3.0 * V) @ first
    moved /= np.linalg.norm(moved)
    P, U = np.zeros((1, 1, 4, 4)), V[None, None]
    y0, y = np.array([[first, first]]), np.array([[moved, moved]])
    for claim, agree in ((THM2_L, True), (THM2_PERP, False)):
        family = FAMILIES[claim]
        reading = "L" if claim == THM2_L else "perp"
        along = np.diag([1.0, 1.0, 0.0, 0.0]) if reading == "L" else np.diag([0.0, 0.0, 1.0, 1.0])
        target = along @ first / np.linalg.norm(along @ first)
        expected = np.max(np.linalg.norm(y[0] - target, axis=-1))
        assert family.outcome_distance(P, U, y, y0)[0] == pytest.approx(expected, abs=1e-12), claim
        assert bool(abs(family.distance(P, U, y)[0] - expected) < 1e-9) == agree, claim
