"""The conjecture searches' parts: the batched field, the families, the certifier, the search's two verdicts."""

import json
from pathlib import Path

import numpy as np
import pytest

from foundation.outputs import OutputError
from sim import AttentionField
from sim.conjectures.certify import certify_equilibrium
from sim.conjectures.witness_index import INDEX, witness_files
from sim.conjectures.families import (FAMILIES, Batch, Shape, _reflected, attractive_problems,
                                      certified_positive_definite, diameter, distance_from_plus_minus_v,
                                      distance_from_v, get_family, symmetrised)
from sim.field.hemisphere import in_open_hemisphere
from sim.conjectures.distributed import check_result, run_search
from sim.conjectures.search import planted, search_chunk

#: The multi-head counterexample found by hand before the search (and by the search, see witnesses/):
#: head 1 attends token 2 to itself (P = 20 I) and pulls it to e2 (U_1 = diag(0, 2)), head 2 attends it to the
#: first token (P = -20 I) and pushes along U_2 v = e1; sum U = diag(1, 0) has v = e1. Token 2 rests at 60 degrees.
MULTIHEAD_P = np.array([20 * np.eye(2), -20 * np.eye(2)])
MULTIHEAD_U = np.array([np.diag([0.0, 2.0]), np.diag([1.0, -2.0])])
MULTIHEAD_Y0 = np.array([[1.0, 0.0], [np.cos(1.2), np.sin(1.2)]])
#: Cyclic pursuit: P = 3 J (a rotation by 90 degrees), 5 tokens near a regular pentagon on S^1 chase each other.
PURSUIT_P = np.array([3 * np.array([[0.0, -1.0], [1.0, 0.0]])])
PURSUIT_ANGLES = 2 * np.pi * np.arange(5) / 5 + 0.1 * np.array([0.3, -0.5, 0.2, 0.1, -0.4])
PURSUIT_Y0 = np.stack([np.cos(PURSUIT_ANGLES), np.sin(PURSUIT_ANGLES)], axis=1)


def _distance_from_e1(y):
    return float(np.max(np.linalg.norm(y - np.array([1.0, 0.0]), axis=-1)))


def _diameter(y):
    return float(diameter(None, None, y[None])[0])


@pytest.mark.parametrize("claim", sorted(FAMILIES))
def test_family_instances_meet_the_hypotheses(claim):
    family = FAMILIES[claim]
    rng = np.random.default_rng(2)
    for _ in range(3):
        shape = family.draw_shape(rng)
        _, batch = family.draw(rng, 16, shape)
        assert np.any(batch.valid), claim
        for i in np.flatnonzero(batch.valid):
            assert family.hypotheses(batch.P[i], batch.U[i], batch.y0[i]) == [], (claim, i)
            np.testing.assert_allclose(np.linalg.norm(batch.y0[i], axis=-1), 1.0, atol=1e-14)


def test_hypothesis_checks_reject_instances_outside_them():
    multihead = FAMILIES["conj.multihead-causal"]
    assert any("not symmetric" in p for p in multihead.hypotheses(MULTIHEAD_P, MULTIHEAD_U + np.triu(np.ones(2), 1),
                                                                    MULTIHEAD_Y0))
    assert any("D^l(v)" in p for p in multihead.hypotheses(MULTIHEAD_P, MULTIHEAD_U, -MULTIHEAD_Y0))
    assert multihead.hypotheses(MULTIHEAD_P, MULTIHEAD_U, MULTIHEAD_Y0) == []
    nonsymmetric = FAMILIES["conj.nonsymmetric-full"]
    assert nonsymmetric.hypotheses(PURSUIT_P, np.eye(2)[None], PURSUIT_Y0) == []
    hemisphere = np.array([[1.0, 0.0], [0.0, 1.0], [np.sqrt(0.5), np.sqrt(0.5)]])
    assert in_open_hemisphere(hemisphere) and nonsymmetric.hypotheses(PURSUIT_P, np.eye(2)[None], hemisphere)
    value = FAMILIES["conj.value-full"]
    rotation = np.array([[[0.0, -1.0], [1.0, 0.0]]])  # eigenvalues +-i: no real top eigenvalue
    assert value.hypotheses(PURSUIT_P, rotation, PURSUIT_Y0)


def _turns(*angles: float) -> np.ndarray:
    """Unit tokens in the plane at the given angles (in turns), shape=[l, 2]."""
    return np.array([[np.cos(2 * np.pi * a), np.sin(2 * np.pi * a)] for a in angles])


#: sum_eta U_eta = diag(3, 1.5): v = e_1 (its top eigenvalue 3 is simple and positive).
TWO_HEADS_U = np.array([np.diag([2.0, 1.0]), np.diag([1.0, 0.5])])


@pytest.mark.parametrize("claim, U, y, expected", [
    # the regular triangle's hull has inradius 1/2 around 0; the square's 1/sqrt(2)
    pytest.param("conj.nonsymmetric-full", np.eye(2)[None], _turns(0, 1 / 3, 2 / 3), 0.5, id="triangle"),
    pytest.param("conj.nonsymmetric-attractive", np.eye(2)[None], _turns(0, 1 / 4, 1 / 2, 3 / 4), 2 ** -0.5,
                 id="square"),
    # control: in no open hemisphere, but 0 on the hull's boundary (a closed half-plane holds them): no margin
    pytest.param("conj.nonsymmetric-full", np.eye(2)[None], _turns(0, 1 / 4, 1 / 2), 0.0, id="control-boundary"),
    # control: three tokens in one open half-plane: 0 is outside their hull
    pytest.param("conj.nonsymmetric-full", np.eye(2)[None], _turns(0, 0.1, 0.2), 0.0, id="control-hemisphere"),
    pytest.param("conj.multihead-causal", TWO_HEADS_U, _turns(0.1, -0.2), np.cos(0.4 * np.pi), id="in-cone"),
    # control: one token across the hyperplane v^T y = 0, out of D^l(v)
    pytest.param("conj.multihead-causal-common", TWO_HEADS_U, _turns(0.1, 0.3), np.cos(0.6 * np.pi),
                 id="control-out-of-cone"),
    pytest.param("conj.multihead-causal", np.array([np.diag([1.0, 1.0])] * 2), _turns(0.0, 0.1), -np.inf,
                 id="control-no-simple-top"),
    pytest.param("conj.value-full", np.eye(2)[None], _turns(0, 0.1), np.inf, id="no-state-hypothesis"),
])
def test_a_familys_state_margin_is_the_one_seek_and_replay_read(claim, U, y, expected):
    """One margin inside a claim's hypotheses on the state (``Family.state_margin``), which the seeking search
    scores equilibria by and the replay holds a witness's start to; > 0 exactly inside."""
    margin = get_family(claim).state_margin(U, y[None])
    assert margin.shape == (1,)
    assert margin[0] == pytest.approx(expected, abs=1e-12)  # float64 hulls and dot products of unit vectors


def test_gradient_case_with_W_equal_P_is_the_identity_case_on_the_sphere():
    """The isometry behind conj.gradient-equilibria's family: z = P^{1/2} y maps eq. 6 with W = P, U = I onto
    eq. 6 with P = U = W = I."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 3))
    P = a @ a.T + 0.5 * np.eye(3)
    values, vectors = np.linalg.eigh(P)
    root = vectors @ np.diag(np.sqrt(values)) @ vectors.T
    z = rng.standard_normal((4, 3))
    z /= np.linalg.norm(z, axis=-1, keepdims=True)
    y = np.linalg.solve(root, z.T).T  # on E_P
    on_ellipsoid = AttentionField(P=(P,), W=P)(0.0, y)
    on_sphere = AttentionField(P=(np.eye(3),))(0.0, z)
    np.testing.assert_allclose(on_ellipsoid @ root.T, on_sphere, atol=1e-13)
    # control: with W = I instead of W = P the map does not carry one field to the other
    assert np.max(np.abs(AttentionField(P=(P,))(0.0, z) - on_sphere)) > 1e-3


def test_certifier_accepts_a_stable_equilibrium_away_from_the_claim():
    certificate = certify_equilibrium(MULTIHEAD_P, MULTIHEAD_U, True, MULTIHEAD_Y0, 200.0, _distance_from_e1)
    assert certificate.certified, certificate.reason
    # 60 degrees in the limit of hard attention; the softmax weights of P = +-20 I leave e^-10 of the other token
    # in each head, moving it by ~3e-5
    np.testing.assert_allclose(certificate.equilibrium[1], [0.5, np.sqrt(0.75)], atol=1e-4)
    assert certificate.numbers["residual"] <= 1e-10 and np.max(certificate.eigenvalues.real) < -1e-6


def test_certifier_rejects_a_point_that_is_no_equilibrium():
    # no integration to speak of and no Newton step: the start itself is tested, and f(y0) != 0
    certificate = certify_equilibrium(MULTIHEAD_P, MULTIHEAD_U, True, MULTIHEAD_Y0, 1e-3, _distance_from_e1,
                                      refine_steps=0)
    assert not certificate.certified and "not an equilibrium" in certificate.reason


def test_certifier_rejects_an_unstable_equilibrium():
    # U = I, P = I: the antipodal pair (e1, -e1) is an equilibrium with an unstable direction
    antipodal = np.array([[1.0, 0.0], [-1.0, 0.0]])
    certificate = certify_equilibrium(np.eye(2)[None], np.eye(2)[None], False, antipodal, 1.0, _diameter)
    assert not certificate.certified and "not asymptotically stable" in certificate.reason


def test_certifier_rejects_consensus_where_consensus_is_claimed():
    start = np.array([[1.0, 0.0], [np.cos(0.3), np.sin(0.3)]])
    certificate = certify_equilibrium(np.eye(2)[None], np.eye(2)[None], False, start, 100.0, _diameter)
    assert not certificate.certified and "claimed outcome" in certificate.reason


def test_the_rotating_pentagon_is_certified_in_its_co_rotating_frame_and_a_gradient_control_is_not():
    """Cyclic pursuit (P = 3 J, U = I) turns a regular pentagon rigidly: an attractor modulo the rotation, certified
    on a slice; with P = I (a gradient flow) the pentagon is a saddle and the certifier refuses it."""
    from sim.conjectures.validated import Problem, certify

    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    pentagon = np.stack([np.cos(2 * np.pi * np.arange(5) / 5), np.sin(2 * np.pi * np.arange(5) / 5)], axis=1)
    assert certify(Problem(PURSUIT_P, np.eye(2)[None], False, rotation), PURSUIT_Y0).certified
    control = certify(Problem(np.eye(2)[None], np.eye(2)[None], False, rotation), pentagon)
    assert not control.certified, control.reason


#: The planted model's value matrix: repulsive (negative definite). Not -I: with U = -I the antipodal pairs form a
#: circle of equilibria (a neutral direction), so none is asymptotically stable and the certifier rightly refuses.
REPULSIVE_U = -np.diag([1.0, 3.0])


def _repulsive(theta, shape):
    """A planted non-conjecture: U = -diag(1, 3) (repulsive), P = I, the 'conjecture' being consensus."""
    n, d = len(theta), shape.dim
    P = np.broadcast_to(np.eye(d), (n, 1, d, d)).copy()
    U = np.broadcast_to(REPULSIVE_U, (n, 1, d, d)).copy()
    y0 = theta[:, : shape.tokens * d].reshape(n, shape.tokens, d)
    return Batch(P, U, y0 / np.linalg.norm(y0, axis=-1, keepdims=True), np.ones(n, dtype=bool))


def _repulsive_hypotheses(P, U, y0):
    return [] if U.shape[-1] == 2 and np.allclose(U[0], REPULSIVE_U) else ["U != -diag(1, 3)"]


@pytest.fixture
def repulsive_family():
    return planted(FAMILIES["conj.gradient-equilibria"], claim="planted.repulsive", tokens=(2, 3), dims=(2,),
                   horizon=50.0, decode=_repulsive, hypotheses=_repulsive_hypotheses)


def test_search_refutes_a_planted_non_conjecture(repulsive_family, tmp_path):
    summary = run_search(repulsive_family, 8, tmp_path, chunk_size=8, adversarial=False, progress=False)
    assert summary["verdict"] == "refuted" and summary["witnesses"]
    record = json.loads((tmp_path / "witnesses" / "planted.repulsive" / f"{summary['witnesses'][0]}.json")
                        .read_text())
    assert record["certificate"]["numbers"]["real_part_bound"] < 0 < record["certificate"]["numbers"]["basin_radius"]
    assert len(record["y0"]) == 2  # shrunk to the fewest tokens: an antipodal pair


def test_a_searched_start_reached_only_in_float64_gives_way_to_the_attractor_when_it_meets_the_hypotheses():
    """The hand-made multi-head instance from token 2 at 1.2 rad: its attractor (token 2 at 60 degrees, in D^l(v))
    is certified, but the start lies outside its ball, reached by float64 runs only. The search's certificate takes
    the attractor as the start (inside its ball, in D^l(v)), and the witness records it, y0 kept as searched_from."""
    from sim.conjectures.replay import replay
    from sim.conjectures.search import certify, witness_record

    family = FAMILIES["conj.multihead-causal"]
    certificate = certify(family, MULTIHEAD_P, MULTIHEAD_U, MULTIHEAD_Y0, seed=0)
    assert certificate.certified and np.array_equal(certificate.start, certificate.equilibrium)
    assert abs(np.arctan2(*certificate.start[1][::-1]) - np.pi / 3) < 1e-3
    witness = witness_record(family, MULTIHEAD_P, MULTIHEAD_U, MULTIHEAD_Y0, certificate, seeds={})
    assert witness["y0"] == certificate.start.tolist() and witness["searched_from"] == MULTIHEAD_Y0.tolist()
    moved = {key: value for key, value in witness.items() if key != "certificate"}  # another start: another block
    assert replay(witness).refuted and replay(dict(moved, y0=MULTIHEAD_Y0.tolist())).evidence


def test_a_searched_start_reached_only_in_float64_is_no_hit_when_the_attractor_breaks_the_hypotheses():
    """The former multi-head witness (tests/sim/data/float64-evidence): its attractor has a token at -v, outside
    D^l(v), and its start reaches it in float64 only: the search certifies nothing and says why."""
    from sim.conjectures.replay import load
    from sim.conjectures.search import certify

    witness = load(Path(__file__).parent / "data" / "float64-evidence" / "multihead-causal-l2-d2-h3.json")
    P, U, y0 = (np.asarray(witness[key]) for key in ("P", "U", "y0"))
    certificate = certify(FAMILIES["conj.multihead-causal"], P, U, y0, seed=0)
    assert not certificate.certified and certificate.start is None
    assert "a finite-time run is evidence, never a refutation" in certificate.reason
    assert "with the attractor as the start: the witness does not meet" in certificate.reason
    assert "D^l(v)" in certificate.reason


def test_a_search_folder_of_the_float64_start_rule_is_not_resumed(tmp_path, monkeypatch):
    """Version 3's chunks may list witnesses whose start reached the ball only in float64 runs: a folder written by
    it is refused, naming the versions, rather than resumed (and then refused over a witness that no longer
    replays). The control: the same folder at the current version resumes."""
    import sim.conjectures.distributed as distributed

    old, fresh = tmp_path / "old", tmp_path / "fresh"
    monkeypatch.setattr(distributed, "SEARCH_VERSION", 3)
    run_search("conj.gradient-equilibria", 2, old, chunk_size=2, adversarial=False, progress=False)
    monkeypatch.undo()
    with pytest.raises(OutputError, match=r"other settings \(version: 3 there, 4 here\)"):
        run_search("conj.gradient-equilibria", 2, old, chunk_size=2, adversarial=False, progress=False)
    run_search("conj.gradient-equilibria", 2, fresh, chunk_size=2, adversarial=False, progress=False)
    again = run_search("conj.gradient-equilibria", 2, fresh, chunk_size=2, adversarial=False, progress=False)
    assert again["timing"]["resumed_chunks"] == 1


def test_search_supports_a_true_statement(tmp_path, record):
    """conj.gradient-equilibria's family is P = U = W = I, where consensus is the only stable outcome. The record
    states its small size (6 instances and the adversarial stage); `make report` runs 64."""
    summary = run_search("conj.gradient-equilibria", 6, tmp_path, chunk_size=6, progress=False)
    assert summary["verdict"] == "supported" and summary["hits"] == 0 and summary["best_score"] < 1e-6
    assert (tmp_path / "summary.json").exists() and not (tmp_path / "witnesses").exists()
    record(check_result(summary))


def test_search_resumes_from_its_checkpoints(tmp_path):
    first = run_search("conj.gradient-equilibria", 6, tmp_path, chunk_size=2, adversarial=False, progress=False)
    (tmp_path / "chunks" / "chunk-00001.json").unlink()
    again = run_search("conj.gradient-equilibria", 6, tmp_path, chunk_size=2, adversarial=False, progress=False)
    assert again["timing"]["resumed_chunks"] == 2
    assert {k: v for k, v in again.items() if k != "timing"} == {k: v for k, v in first.items() if k != "timing"}
    # a folder of other settings (here: chunks of another size) is refused, and left as it was
    before = sorted((p.name, p.read_bytes()) for p in tmp_path.rglob("*") if p.is_file())
    with pytest.raises(OutputError, match=r"other settings \(chunk_size: 2 there, 3 here\)"):
        run_search("conj.gradient-equilibria", 6, tmp_path, chunk_size=3, adversarial=False, progress=False)
    assert sorted((p.name, p.read_bytes()) for p in tmp_path.rglob("*") if p.is_file()) == before


def test_a_smaller_search_in_the_same_folder_removes_the_witnesses_it_does_not_list(repulsive_family, tmp_path, capsys):
    larger = run_search(repulsive_family, 8, tmp_path, chunk_size=4, adversarial=False, progress=False)
    smaller = run_search(repulsive_family, 4, tmp_path, chunk_size=4, adversarial=False, progress=False)
    folder = tmp_path / "witnesses" / "planted.repulsive"
    assert sorted(p.stem for p in witness_files(folder)) == sorted(smaller["witnesses"])
    assert len(larger["witnesses"]) > len(smaller["witnesses"]) and "removed chunk00001-" in capsys.readouterr().err


def test_chunks_are_seeded_by_claim_and_index():
    family = get_family("conj.gradient-equilibria")
    a, b = (search_chunk(family, 3, 4, adversarial=False) for _ in range(2))
    assert a["seed"] == b["seed"] and a["best_random"] == b["best_random"] and a["shape"] == b["shape"]
    assert search_chunk(family, 4, 4, adversarial=False)["seed"] != a["seed"]


def test_unknown_claim_names_the_known_ones():
    with pytest.raises(KeyError, match="conj.multihead-causal"):
        get_family("conj.nope")
    with pytest.raises(ValueError, match="instances=0 must be a positive integer"):
        run_search("conj.value-full", 0, "unused")


def test_a_shape_is_an_instance_size():
    family = FAMILIES["conj.multihead-causal"]
    assert family.parameters(Shape(2, 3, 2)) == 2 * 2 * 4 + 3 * 2 + 4


def _tree(folder):
    return sorted((str(p.relative_to(folder)), p.read_bytes()) for p in folder.rglob("*") if p.is_file())


def _tamper_chunk(folder, sign):
    """Chunk 0 rewritten as an attacker would: 999 hits and no witnesses; ``sign``: its new sha256 recorded too."""
    from foundation.files import sha256

    path = folder / "chunks" / "chunk-00000.json"
    chunk = json.loads(path.read_text())
    path.write_text(json.dumps({**chunk, "hits": 999, "witnesses": []}))
    if sign:
        index = json.loads((folder / "chunks" / "index.json").read_text())
        (folder / "chunks" / "index.json").write_text(json.dumps({**index, path.name: sha256(path)}))


@pytest.mark.parametrize("damage, message", [
    pytest.param(lambda f: _tamper_chunk(f, sign=False), r"chunk-00000.json: its sha256 .* is not the one "
                 r"chunks/index.json records .*delete it to search that chunk again", id="tampered"),
    pytest.param(lambda f: _tamper_chunk(f, sign=True), r"witnesses/planted.repulsive/chunk00000-.*\.json is a "
                 r"certified counterexample \(it replays\) that .*chunk-00000.json does not list", id="tampered-signed"),
    pytest.param(lambda f: _flip(f / "chunks" / "chunk-00000.json"), r"chunk-00000.json: its sha256",
                 id="flipped-byte"),
    pytest.param(lambda f: (f / "chunks" / "index.json").write_text("[]"), r"index.json must be a JSON object",
                 id="index-not-an-object"),
])
def test_a_changed_chunk_is_refused_and_no_witness_is_deleted(repulsive_family, tmp_path, damage, message):
    """A search's chunks carry their sha256 in chunks/index.json; a chunk changed after it was written is refused,
    and one changed with its hash re-recorded cannot delete a certified witness: it replays, so the search stops."""
    first = run_search(repulsive_family, 4, tmp_path, chunk_size=4, adversarial=False, progress=False)
    assert first["witnesses"]
    again = run_search(repulsive_family, 4, tmp_path, chunk_size=4, adversarial=False, progress=False)  # control
    assert again["witnesses"] == first["witnesses"] and again["timing"]["resumed_chunks"] == 1
    damage(tmp_path)
    witnesses = _tree(tmp_path / "witnesses")
    with pytest.raises(OutputError, match=message):
        run_search(repulsive_family, 4, tmp_path, chunk_size=4, adversarial=False, progress=False)
    assert _tree(tmp_path / "witnesses") == witnesses
    assert len([name for name, _ in witnesses if not name.endswith(INDEX)]) == len(first["witnesses"])


def _flip(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_chunk_the_index_does_not_list_is_searched_again(repulsive_family, tmp_path, capsys):
    """A search stopped between writing a chunk and recording its hash: the chunk is searched again, not trusted."""
    first = run_search(repulsive_family, 4, tmp_path, chunk_size=4, adversarial=False, progress=False)
    (tmp_path / "chunks" / "index.json").write_text("{}")
    again = run_search(repulsive_family, 4, tmp_path, chunk_size=4, adversarial=False, progress=False)
    assert again["timing"]["resumed_chunks"] == 0 and again["witnesses"] == first["witnesses"]
    assert "does not record its sha256" in capsys.readouterr().err


def test_a_chunk_without_witnesses_is_refused_in_one_line(repulsive_family, tmp_path):
    from foundation.files import sha256

    run_search(repulsive_family, 4, tmp_path, chunk_size=4, adversarial=False, progress=False)
    path = tmp_path / "chunks" / "chunk-00000.json"
    path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != "witnesses"}))
    (tmp_path / "chunks" / "index.json").write_text(json.dumps({path.name: sha256(path)}))
    with pytest.raises(OutputError, match=r"must be a chunk's record .*missing witnesses") as error:
        run_search(repulsive_family, 4, tmp_path, chunk_size=4, adversarial=False, progress=False)
    assert "\n" not in str(error.value)


# --- each claim's hypotheses, word for word (what mismatches and replay report) -------------------------------------
I2, TRIANGLE_Y0 = np.eye(2), [[1.0, 0.0], [-0.5, 0.8660254037844386], [-0.5, -0.8660254037844387]]
NOT_ISOLATED = "Arb cannot isolate the eigenvalues of U (a multiple or clustered eigenvalue)"
NOT_COMMON = ("the heads' top eigenvectors are not one common v (float64: | |w_eta^T v| - 1 | < 1e-09) with simple "
              "positive eigenvalues (certified in balls)")
OFF_D_V = "y0 is not in D^l(v) (some v^T y_i <= 0)"
NOT_GRADIENT = "the instance is not P = U = I (the image of Hypothesis 3.1 under z = P^{1/2} y)"
Y = [[1.0, 0.0], [0.6, 0.8]]  # inside D^l(e_1)


def _rotation(angle: float) -> np.ndarray:
    return np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])


#: A head's eigenvectors turned by 1e-5 and 1e-4 rad: the float64 common-eigenvector test (1 - |cos| < 1e-9) admits
#: the first (5e-11) and refuses the second (5e-9); the wording says so.
ROTATED_1E5, ROTATED_1E4 = _rotation(1e-5), _rotation(1e-4)
HYPOTHESES = {  # claim, P, U, y0, the whole list of problems
    "multihead: control": ("conj.multihead-causal", [I2, -I2], [np.diag([2.0, -1.0]), np.diag([1.0, 0.0])], Y, []),
    "multihead: one head, U not symmetric": (
        "conj.multihead-causal", [I2], [[[2.0, 1.0], [0.0, -1.0]]], Y,
        ["h = 1 heads; the conjecture is about h >= 2", "some U_eta is not symmetric (entry by entry, exactly)"]),
    "multihead: the sum is I (Arb cannot isolate)": (
        "conj.multihead-causal", [I2, -I2], [I2 / 2, I2 / 2], Y,
        [f"the top eigenvalue of sum_eta U_eta (1) is not simple and positive ({NOT_ISOLATED})"]),
    "multihead: a gap of 1e-4 (below EIGEN_GAP, isolated by Arb)": (
        "conj.multihead-causal", [I2, -I2], [np.diag([1.0, 1.0 - 1e-4]), 0 * I2], Y,
        ["the top eigenvalue of sum_eta U_eta (1) is not simple and positive"]),
    "multihead: a token on v's equator (v^T y = 0 exactly)": (
        "conj.multihead-causal", [I2, -I2], [np.diag([2.0, -1.0]), np.diag([1.0, 0.0])], [[1.0, 0.0], [0.0, 1.0]],
        [OFF_D_V]),
    "common: control": ("conj.multihead-causal-common", [I2, -I2], [np.diag([2.0, -1.0]), np.diag([1.0, 0.5])], Y,
                        []),
    "common: a head not symmetric (nothing else read)": (
        "conj.multihead-causal-common", [I2, -I2], [np.diag([2.0, -1.0]), [[1.0, 1.0], [0.0, 0.5]]], Y,
        ["some U_eta is not symmetric (entry by entry, exactly)"]),
    "common: two top eigenvectors": (
        "conj.multihead-causal-common", [I2, -I2], [np.diag([2.0, -1.0]), np.diag([-1.0, 2.0])], Y, [NOT_COMMON]),
    "common: a head's gap of 1e-4": (
        "conj.multihead-causal-common", [I2, -I2], [np.diag([2.0, -1.0]), np.diag([1.0, 1.0 - 1e-4])], Y,
        [NOT_COMMON]),
    "common: two heads not certified": (
        "conj.multihead-causal-common", [I2, -I2], [I2, np.diag([-1.0, -2.0])], Y,
        [f"{NOT_COMMON} (head 1: {NOT_ISOLATED}; head 2: the eigenvalue of largest real part (-1) is not certified "
         "positive)"]),
    "common: top eigenvectors 1e-5 rad apart pass the float64 test (the stated limit ~4.5e-5 rad)": (
        "conj.multihead-causal-common", [I2, -I2],
        [np.diag([2.0, -1.0]), symmetrised(ROTATED_1E5 @ np.diag([1.0, 0.5]) @ ROTATED_1E5.T)], Y, []),
    "common: 1e-4 rad apart they do not": (
        "conj.multihead-causal-common", [I2, -I2],
        [np.diag([2.0, -1.0]), symmetrised(ROTATED_1E4 @ np.diag([1.0, 0.5]) @ ROTATED_1E4.T)], Y, [NOT_COMMON]),
    "common: a token on v's equator": (
        "conj.multihead-causal-common", [I2, -I2], [np.diag([2.0, -1.0]), np.diag([1.0, 0.5])],
        [[1.0, 0.0], [0.0, 1.0]], [OFF_D_V]),
    "value: control": ("conj.value-full", [I2], [np.diag([2.0, -1.0])], Y, []),
    "value: two heads, U = I": (
        "conj.value-full", [I2, I2], [I2, I2], Y,
        ["h = 2; the conjecture is about one head",
         f"U's eigenvalue of largest real part (1) is not real, simple and positive ({NOT_ISOLATED})",
         "U = I (Theorems 5.1 and 4.1's case; the conjecture is about U != I)"]),
    "value: a gap of 1e-4": ("conj.value-full", [I2], [np.diag([1.0, 1.0 - 1e-4])], Y,
                             ["U's eigenvalue of largest real part (1) is not real, simple and positive"]),
    "gradient: control": ("conj.gradient-equilibria", [I2], [I2], Y, []),
    "gradient: P = I, U = 2I": ("conj.gradient-equilibria", [I2], [2 * I2], Y, [NOT_GRADIENT]),
    "gradient: two heads of P = U = I": ("conj.gradient-equilibria", [I2, I2], [I2, I2], Y, [NOT_GRADIENT]),
    "gradient-value: control": ("conj.gradient-value", [np.diag([2.0, -1.0])], [np.diag([2.0, -1.0])], Y, []),
    "gradient-value: two heads, P not symmetric, U != P": (
        "conj.gradient-value", [[[1.0, 2.0], [0.0, 1.0]], I2], [I2, I2], Y,
        ["h = 2; the gradient case has one head", "P is not symmetric (entry by entry, exactly)",
         "U != P (the gradient condition W U = P with W = I)"]),
    "nonsymmetric: control": ("conj.nonsymmetric-full", [[[-2.0, -0.5], [0.5, -2.0]]], [I2], TRIANGLE_Y0, []),
    "nonsymmetric: every failure": (
        "conj.nonsymmetric-full", [-2 * I2], [2 * I2], Y,
        ["U != I", "every P_eta is symmetric (the claim is about non-symmetric P, outside the gradient case)",
         "y0 lies in an open hemisphere (Theorem 4.1's case, not the conjecture's)"]),
    "attractive: control": ("conj.nonsymmetric-attractive", [[[2.0, -0.5], [0.5, 2.0]]], [I2], TRIANGLE_Y0, []),
    "attractive: symmetric, not positive definite (not the non-symmetric family's words)": (
        "conj.nonsymmetric-attractive", [-2 * I2], [I2], TRIANGLE_Y0,
        ["sym(P_1) is not certified positive definite (exact leading minors)",
         "skew(P_eta) = 0 for every head: P is symmetric (the gradient case of Hypothesis 3.1, "
         "conj.gradient-equilibria), not the question"]),
}


@pytest.mark.parametrize("name", sorted(HYPOTHESES))
def test_each_hypothesis_refuses_with_its_own_words_and_the_controls_pass(name):
    """The whole list, word for word, on small instances at each check's edge (a gap of 1e-4: float64's EIGEN_GAP
    refuses what Arb isolates; a token with v^T y = 0 exactly); each claim's control instance meets every
    hypothesis."""
    claim, P, U, y0, expected = HYPOTHESES[name]
    assert FAMILIES[claim].hypotheses(np.asarray(P, float), np.asarray(U, float), np.asarray(y0, float)) == expected


def test_the_distances_to_the_claimed_outcomes_on_a_batch_of_two():
    """Two instances of 3 tokens in R^2 (batch, tokens and width all differ in size): v = e_1, then e_2 (U =
    diag(2, -1), diag(-1, 2)). By hand: the diameters 2 and |(0.8, -1.6)|; the largest |y_i - v|, 2 and
    |(0.8, -1.6)|; the largest min(|y_i - v|, |y_i + v|), |(0.4, 0.8)| for both. Tolerance: float64 rounding of the
    tokens' decimal entries."""
    y = np.array([[[1.0, 0.0], [0.6, 0.8], [-1.0, 0.0]], [[0.6, 0.8], [0.8, -0.6], [0.0, 1.0]]])
    U = np.array([[np.diag([2.0, -1.0])], [np.diag([-1.0, 2.0])]])
    P = np.zeros_like(U)  # not read: the outcomes are about the tokens and U's top eigenvector
    close = dict(rel=1e-15, abs=1e-15)
    assert diameter(P, U, y) == pytest.approx([2.0, np.sqrt(3.2)], **close)
    assert distance_from_v(P, U, y) == pytest.approx([2.0, np.sqrt(3.2)], **close)
    assert distance_from_plus_minus_v(P, U, y) == pytest.approx([np.sqrt(0.8), np.sqrt(0.8)], **close)


@pytest.mark.parametrize("S, definite", [
    pytest.param([[0.5, 0.0], [0.0, 0.5]], True, id="0.5 I: minors 0.5 and 0.25, below 1"),
    pytest.param([[2.0, -0.5], [0.5, 2.0]], True, id="a skew part is not read"),
    pytest.param([[1.0, 1.0], [1.0, 1.0]], False, id="semidefinite: the second minor is 0 exactly"),
    pytest.param([[0.5, 1.0], [0.0, 0.5]], False, id="sym = [[1/2, 1/2], [1/2, 1/2]]: singular, in exact halves"),
    pytest.param([[-1.0, 0.0], [0.0, 2.0]], False, id="a negative first minor"),
])
def test_positive_definiteness_is_decided_by_exact_leading_minors(S, definite):
    assert certified_positive_definite(np.array(S)) is definite


def test_one_head_given_as_a_matrix_is_read_as_one_head():
    """``attractive_problems`` takes [h, d, d] or one head [d, d]: -2 I given either way has the same two problems."""
    expected = ["sym(P_1) is not certified positive definite (exact leading minors)",
                "skew(P_eta) = 0 for every head: P is symmetric (the gradient case of Hypothesis 3.1, "
                "conj.gradient-equilibria), not the question"]
    assert attractive_problems(-2 * np.eye(2)) == attractive_problems(-2 * np.eye(2)[None]) == expected


def test_tokens_are_reflected_into_the_half_space_of_v_and_a_token_on_its_equator_stays_outside():
    """Per instance: a token with v^T y < 0 is negated, one with v^T y = 0 exactly is kept as it is, and the instance
    lies inside D^l(v) only when every token has v^T y > 0 after the reflection."""
    y0 = np.array([[[1.0, 0.0], [-0.6, 0.8], [0.0, 1.0]], [[-1.0, 0.0], [0.6, -0.8], [0.8, 0.6]]])
    reflected, inside = _reflected(y0, np.array([[1.0, 0.0], [1.0, 0.0]]))
    assert np.array_equal(reflected, [[[1.0, 0.0], [0.6, -0.8], [0.0, 1.0]], [[1.0, 0.0], [0.6, -0.8], [0.8, 0.6]]])
    assert inside.tolist() == [False, True]


@pytest.mark.parametrize("claim", ["conj.multihead-causal", "conj.multihead-causal-common", "conj.value-full",
                                   "conj.gradient-value", "conj.nonsymmetric-full", "conj.nonsymmetric-attractive"])
def test_decoded_heads_have_the_scales_their_scale_variables_give(claim):
    """Each decoder scales its heads by ``bounded_scale`` of the scale variables of theta: |P_eta|_2 (its symmetric
    part's for the gradient-value and attractive families, with the skew part's |.|_2 = SKEW_MAX scale) is
    P_MAX (1 + tanh z_P) / 2, the multi-head U_eta's |U_eta|_2 (its top eigenvalue, for the common-v family) is
    2 (1 + tanh z_U) / 2; the attractive family's least eigenvalue of sym(P_eta)
    is at least FLOOR / (1 + FLOOR) of its largest. The scale variables are drawn at +-4 too (a head near 0 and one
    near its bound). Tolerance: float64 rounding of norms and eigenvalues of 3 x 3 matrices (|.| <= 20)."""
    from sim.conjectures.families import FLOOR, SKEW_MAX
    from sim.conjectures.family import P_MAX, bounded_scale, split_theta

    family = FAMILIES[claim]
    shape = Shape(2 if "multihead" in claim else 1, 4, 3)
    theta = np.random.default_rng(5).standard_normal((6, family.parameters(shape)))
    h = shape.heads
    theta[:3, -2 * h:] = 4.0
    theta[3:, -2 * h:] = -4.0
    _, _, _, zP, zU = split_theta(theta, shape)
    batch = family.decode(theta, shape)
    close = dict(rel=1e-12, abs=1e-14)
    symmetric = 0.5 * (batch.P + np.swapaxes(batch.P, -1, -2))
    scaled = symmetric if claim in ("conj.gradient-value", "conj.nonsymmetric-attractive") else batch.P
    assert np.linalg.norm(scaled, ord=2, axis=(-2, -1)) == pytest.approx(bounded_scale(zP, P_MAX), **close)
    if claim == "conj.multihead-causal":
        assert np.linalg.norm(batch.U, ord=2, axis=(-2, -1)) == pytest.approx(bounded_scale(zU, 2.0), **close)
    if claim == "conj.multihead-causal-common":
        assert np.linalg.eigvalsh(batch.U)[..., -1] == pytest.approx(bounded_scale(zU, 2.0), **close)
    if claim == "conj.nonsymmetric-attractive":
        skew = batch.P - symmetric
        assert np.linalg.norm(skew, ord=2, axis=(-2, -1)) == pytest.approx(bounded_scale(zU, SKEW_MAX), **close)
        eigenvalues = np.linalg.eigvalsh(symmetric)
        assert np.all(eigenvalues[..., 0] >= FLOOR / (1 + FLOOR) * eigenvalues[..., -1] * (1 - 1e-12))
        assert np.any(eigenvalues[..., 0] < 2 * FLOOR * eigenvalues[..., -1])  # the floor is reached, not just met


def test_an_attractive_draw_is_valid_only_when_its_start_is_valid_too():
    """Two tokens in R^3 always lie in an open hemisphere (but for an antipodal pair, of probability 0): every
    draw's P meets the attractive hypotheses, and still none is valid, as its start is Theorem 4.1's case."""
    family = FAMILIES["conj.nonsymmetric-attractive"]
    shape = Shape(1, 2, 3)
    batch = family.decode(np.random.default_rng(6).standard_normal((8, family.parameters(shape))), shape)
    assert all(attractive_problems(p) == [] for p in batch.P)
    assert not np.any(batch.valid)
    assert all(in_open_hemisphere(y) for y in batch.y0)
