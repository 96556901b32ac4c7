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

from reports.scale import report_scale, scaled
from sim.conjectures.families import FAMILIES
from sim.conjectures.distributed import check_result, run_search
from sim.conjectures.replay import load, record_of, replay

STORED = sorted(p for p in (Path(__file__).parents[2] / "sim" / "conjectures" / "witnesses").glob("*/*.json")
                if p.name != "index.json")
#: The report's budget: instances per search (8 chunks of 32, each with its adversarial stage), on 2 workers; at the
#: smoke scale of a report build (reports/scale.py) 2 chunks of 4.
FULL_INSTANCES, FULL_CHUNK = (8, 4) if report_scale() == "smoke" else (256, 32)


def test_witnesses_are_stored_for_the_refuted_conjectures():
    assert {p.parent.name for p in STORED} >= {"conj.multihead-causal", "conj.value-causal", "conj.value-full",
                                               "conj.value-causal-antipodal", "conj.value-full-antipodal",
                                               "conj.gradient-value", "conj.nonsymmetric-full"}, [str(p) for p in STORED]


@pytest.mark.parametrize("path", STORED, ids=[f"{p.parent.name}/{p.stem}" for p in STORED])
def test_stored_witness_replays(path, record):
    witness = load(path)
    assert witness["claim"] == path.parent.name
    outcome = replay(witness)
    record(record_of(outcome, f"sim/conjectures/witnesses/{path.parent.name}/{path.name}"))
    assert outcome.refuted, outcome.summary()
    assert outcome.certificate.numbers["real_part_bound"] < 0 < outcome.certificate.numbers["basin_radius"]


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
@pytest.mark.parametrize("claim", sorted(FAMILIES))
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
