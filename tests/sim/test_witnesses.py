"""Every stored witness replays: a validated attractor away from the claimed outcome, reached from a start that
meets the conjecture's hypotheses (``sim.conjectures.replay``); the full check runs every search at the report's budget.

The committed witnesses (``sim/conjectures/witnesses/<claim>/<name>.json``) give the ``refuted`` records of ``make
test``.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from foundation.scale import report_scale, scaled
from sim.conjectures.families import FAMILIES
from sim.conjectures.distributed import check_result, run_search
from sim.conjectures.replay import load, record_of, replay
from sim.conjectures.witnessview import REACHED, draw, tables, trajectory

#: The stored witnesses (an ``index.json`` of hashes beside them is no witness).
STORED = sorted(p for p in (Path(__file__).parents[2] / "sim" / "conjectures" / "witnesses").glob("*/*.json")
                if p.name != "index.json")
#: The report's budget: instances per search (8 chunks of 32, each with its adversarial stage), on 2 workers; at the
#: smoke scale of a report build (foundation/scale.py) 2 chunks of 4.
FULL_INSTANCES, FULL_CHUNK = (8, 4) if report_scale() == "smoke" else (256, 32)


def test_witnesses_are_stored_for_the_refuted_conjectures():
    assert {p.parent.name for p in STORED} >= {"conj.multihead-causal", "conj.value-causal", "conj.value-full",
                                               "conj.value-causal-antipodal", "conj.value-full-antipodal",
                                               "conj.gradient-value", "conj.nonsymmetric-full"}, [str(p) for p in STORED]


@pytest.fixture(scope="module")
def figure_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("witness-figures")


@pytest.mark.parametrize("path", STORED, ids=[f"{p.parent.name}/{p.stem}" for p in STORED])
def test_stored_witness_replays(path, record, figure_dir):
    """The witness's record shows it: P, U, y0, y*, the certificate's two parts, and the trajectory's figure."""
    witness = load(path)
    assert witness["claim"] == path.parent.name
    outcome = replay(witness)
    result = record(record_of(outcome, f"sim/conjectures/witnesses/{path.parent.name}/{path.name}", witness,
                              figure_dir))
    assert outcome.refuted, outcome.summary()
    assert outcome.certificate.numbers["real_part_bound"] < 0 < outcome.certificate.numbers["basin_radius"]
    assert result.verdict == "refuted" and result.numbers["figure_end_distance"] <= REACHED, result.detail
    (figure,) = result.figures
    assert Path(figure.path).stat().st_size > 10_000 and "FLAGGED" not in figure.caption
    assert [t.title.split(":")[0] for t in result.tables] == ["Instance", "Start y0 and certified attractor y* "
                                                             "(token by token)", "Certificate"]


@pytest.mark.parametrize("path", STORED, ids=[f"{p.parent.name}/{p.stem}" for p in STORED])
def test_a_certificate_is_the_same_at_twice_the_precision(path):
    """The verdict of a certificate does not read the precision: at 212 bits the same box certifies, with the
    same bounds to their float64 printing."""
    from sim.conjectures.replay import _problem
    from sim.conjectures.validated import PRECISION, certify

    witness = load(path)
    single, double = (certify(_problem(witness), np.asarray(witness["equilibrium"]), bits)
                      for bits in (PRECISION, 2 * PRECISION))
    assert single.certified and double.certified
    assert single.numbers["box_radius"] == double.numbers["box_radius"]
    np.testing.assert_allclose(double.numbers["real_part_bound"], single.numbers["real_part_bound"], rtol=1e-6)


def test_replay_rejects_a_corrupted_witness():
    """Negative control: the multi-head witness with U_eta replaced by I (Theorem 5.1's case) has no attractor
    away from consensus there."""
    witness = load(next(p for p in STORED if p.parent.name == "conj.multihead-causal"))
    broken = dict(witness, U=np.broadcast_to(np.eye(len(witness["y0"][0])), np.shape(witness["U"])).tolist())
    assert not replay(broken).refuted


def test_replay_rejects_a_start_outside_the_hypotheses():
    """Negative control: the rotating triangle's start moved into an open half-circle (Theorem 4.1's case)."""
    witness = load(next(p for p in STORED if p.parent.name == "conj.nonsymmetric-full"))
    inside = np.array([[1.0, 0.0], [0.0, 1.0], [np.sqrt(0.5), np.sqrt(0.5)]])
    outcome = replay(dict(witness, y0=inside.tolist()))
    assert not outcome.refuted and "hypotheses" in outcome.reason


def test_replay_command_prints_the_certificate(capsys):
    from sim.__main__ import main

    path = next(p for p in STORED if p.parent.name == "conj.nonsymmetric-full")
    assert main(["replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert "REFUTED" in out and "basin_radius" in out and "float64, not validated" in out


def test_replay_command_refuses_a_file_that_is_no_witness(tmp_path, capsys):
    from sim.__main__ import main

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["replay", str(bad)]) == 2
    assert str(bad) in capsys.readouterr().err


@pytest.fixture(scope="module")
def cluster():
    """One LocalCluster of 2 worker processes for all the searches (starting one costs 10-30 s here)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as local:
        yield local.scheduler_address


@pytest.mark.full
@pytest.mark.parametrize("claim", [pytest.param(claim, marks=pytest.mark.claim(claim, method="search"))
                                   for claim in sorted(FAMILIES)])  # marked: skipped, it leaves each claim not-run
def test_conjecture_search(claim, record, request, cluster):
    out = scaled(Path("build") / "searches") / claim  # checkpointed: a rerun of the report reuses finished chunks
    summary = run_search(claim, FULL_INSTANCES, out, chunk_size=FULL_CHUNK, scheduler=cluster, progress=False)
    report_witnesses = Path(request.config.getoption("report_dir")) / "witnesses" / claim
    for name in summary["witnesses"]:
        source = out / "witnesses" / claim / f"{name}.json"
        assert replay(json.loads(source.read_text())).refuted, source
        report_witnesses.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, report_witnesses / f"{name}.json")
    record(check_result(summary))


def _stored(claim: str, stem: str | None = None) -> dict:
    return load(next(p for p in STORED if p.parent.name == claim and (stem is None or p.stem == stem)))


def test_witness_tables_show_every_head_the_start_and_both_parts_of_the_certificate():
    witness = _stored("conj.nonsymmetric-full", "seek-0-296-l7-d2-h2")
    instance, states, certificate = tables(witness, replay(witness))
    labels = [row[0] for row in instance.rows if row[0]]
    assert labels == ["P_1", "U_1", "P_2", "U_2"] and len(instance.rows) == 2 * 2 * 2
    assert len(states.rows) == 7 and states.columns == ("token", "y0", "y*")
    parts = [row[0] for row in certificate.rows]
    assert parts.index("float64, not validated") > parts.index("rigorous (Arb ball arithmetic)")
    rigorous = {row[1] for row in certificate.rows if row[0].startswith("rigorous")}
    assert {"Krawczyk box half-width (unique zero in it)", "every tangent eigenvalue has Re <= this",
            "radius of the certified ball of attraction"} <= rigorous
    float64 = {row[1] for row in certificate.rows if row[0].startswith("float64")}
    assert "Newton refinement of the chart centre (a starting point only)" in float64


def test_a_rotating_witness_is_drawn_in_its_co_rotating_frame(tmp_path):
    """The rotating triangle starts at its attractor: in the co-rotating frame it stays there (in the fixed frame
    it turns by mu t, far from y*), and the figure says which frame."""
    witness = _stored("conj.nonsymmetric-full", "rotating-triangle-l3-d2-h1")
    data = trajectory(witness)
    assert abs(data["mu"]) > 0.1 and np.max(data["distance"]) <= REACHED
    figure, numbers = draw(witness, tmp_path / "triangle.png", "triangle", data)
    assert "co-rotating frame" in figure.caption and numbers["figure_reaches_attractor"]


def test_a_witness_in_three_dimensions_is_drawn_on_the_sphere(tmp_path):
    """d = 3: the value-full witness embedded in R^3 (P, U block-diagonal with 1: the plane z = 0 is invariant)."""
    witness = _stored("conj.value-full", "chunk00000-l2-d2-h1")

    def lift(matrix):
        out = np.eye(3)
        out[:2, :2] = matrix
        return out

    lifted = dict(witness, P=[lift(p).tolist() for p in np.asarray(witness["P"])],
                  U=[lift(u).tolist() for u in np.asarray(witness["U"])],
                  y0=np.pad(np.asarray(witness["y0"]), ((0, 0), (0, 1))).tolist(),
                  equilibrium=np.pad(np.asarray(witness["equilibrium"]), ((0, 0), (0, 1))).tolist())
    figure, numbers = draw(lifted, tmp_path / "sphere.png", "lifted")
    assert "on the sphere" in figure.caption and numbers["figure_reaches_attractor"]
    assert (tmp_path / "sphere.png").stat().st_size > 10_000


def test_a_figure_whose_trajectory_misses_its_attractor_is_flagged(tmp_path):
    """Negative control: the d = 4 value-full witness with y* replaced by its antipode -y*; the trajectory from y0
    still goes to y*, so the figure is flagged and a record that shows it fails, though the replay refutes."""
    witness = _stored("conj.value-full", "chunk00001-l3-d4-h1")
    outcome = replay(witness)
    moved = dict(witness, equilibrium=(-np.asarray(witness["equilibrium"])).tolist())
    figure, numbers = draw(moved, tmp_path / "moved.png", "moved")
    assert not numbers["figure_reaches_attractor"] and figure.caption.startswith("FLAGGED")
    assert "PCA projection" in figure.caption
    result = record_of(outcome, "moved", moved, tmp_path)
    assert outcome.refuted and result.verdict == "failed" and result.detail.startswith("FLAGGED")


ATTRACTIVE = [p for p in STORED if p.parent.name == "conj.nonsymmetric-attractive"]


@pytest.mark.parametrize("path", [p for p in STORED if p.parent.name == "conj.nonsymmetric-full"],
                         ids=lambda p: p.stem)
def test_nonsymmetric_full_witnesses_do_not_need_their_skew_part(path):
    """What the claim text says: the symmetric part of P is negative definite (repulsive) and, P replaced by it,
    the certifier still finds the attractor (the rotating triangle) or the run from y0 still ends far from
    consensus (the two-head witness): non-symmetry plays no role in that refutation."""
    from sim.conjectures.skew import skew_matters

    witness = load(path)
    P = np.asarray(witness["P"])
    assert np.all(np.linalg.eigvalsh(0.5 * (P + np.swapaxes(P, -1, -2))) < 0)
    outcome = skew_matters(witness)
    # the attractor survives P -> sym(P) (certified), or the run from y0 still ends away from consensus
    assert not outcome["matters"], outcome
    assert outcome["certified_without_skew"] or outcome["diameter_without_skew"] > 1e-2, outcome


@pytest.mark.parametrize("path", ATTRACTIVE, ids=lambda p: p.stem)
def test_an_attractive_witness_fails_with_its_skew_part_and_not_without(path):
    """A witness of conj.nonsymmetric-attractive refutes with P and, P replaced by sym(P), has no certified attractor
    at y* and its run from y0 reaches consensus. (No witness is stored while the claim is supported.)"""
    from sim.conjectures.skew import skew_matters

    witness = load(path)
    assert replay(witness).refuted
    assert skew_matters(witness)["matters"]


def test_nonsymmetric_attractive_asks_for_an_attractive_symmetric_part_and_a_skew_part():
    """The family's hypotheses, decided exactly: a repulsive witness moved to the claim is refused; a symmetric
    positive-definite P is refused (the gradient case); a sym(P) that is positive definite only up to rounding-size
    terms is decided by exact leading minors; drawn instances meet them."""
    from sim.conjectures.families import FAMILIES, Shape, certified_positive_definite

    family = FAMILIES["conj.nonsymmetric-attractive"]
    moved = dict(_stored("conj.nonsymmetric-full", "rotating-triangle-l3-d2-h1"), claim=family.claim)
    refused = replay(moved)
    assert not refused.refuted and "positive definite" in refused.reason
    y0 = np.asarray(moved["y0"])
    assert any("skew" in p for p in family.hypotheses(np.array([[[2.0, 0.5], [0.5, 1.0]]]), np.eye(2)[None], y0))
    assert family.hypotheses(np.array([[[2.0, 3.0], [-3.0, 1.0]]]), np.eye(2)[None], y0) == []
    assert certified_positive_definite(np.array([[1.0, 1.0], [1.0, 1.0 + 2.0**-52]]))  # det 2^-52 > 0, exactly
    assert not certified_positive_definite(np.array([[1.0, 1.0], [1.0, 1.0]]))          # singular
    assert not certified_positive_definite(np.array([[1.0, 2.0], [0.0, 1.0]]))          # sym part singular
    _, batch = family.draw(np.random.default_rng(0), 64, Shape(2, 5, 3))
    assert batch.valid.sum() > 32
    for P, U, y in zip(batch.P[batch.valid], batch.U[batch.valid], batch.y0[batch.valid]):
        assert family.hypotheses(P, U, y) == []
