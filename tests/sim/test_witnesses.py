"""Every stored witness replays: through ``sim`` and through an independent SciPy integration of eq. 6.

The committed witnesses (``sim/witnesses/<claim>/<name>.json``, written by ``python -m sim search``) give the
``refuted`` verdicts of ``make test``; the full check runs every search at the report's budget, records its
verdict (``supported`` or ``refuted``), copies its witnesses into the report folder and replays them too.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from reports.records import CheckResult
from sim.certify import AWAY, PERTURBATION, RESIDUAL, attention_field, run
from sim.conjectures import FAMILIES
from sim.distributed import check_result, run_search
from sim.solvers import AdaptiveStepSize

STORED = sorted((Path(__file__).parents[2] / "sim" / "witnesses").glob("*/*.json"))
#: The report's budget: instances per search (8 chunks of 32, each with its adversarial stage), on 2 workers.
FULL_INSTANCES, FULL_CHUNK = 256, 32
#: Replays must end within the radius the certificate's return test covers (perturbations of 1e-3 came back to y*):
#: a slowly attracting witness (eigenvalue ~ -0.02) may still be 1e-4 from y* at t1.
REPLAY_ATOL = PERTURBATION
#: The two integrations (rtol 1e-10 each) must agree to this: 10^4 x their tolerance, over horizons of 200.
AGREE = 1e-6
AGREE_REASON = (f"sim's Dopri5 and SciPy's LSODA (rtol 1e-10, atol 1e-12 each, horizons up to 200) must agree to "
                f"{AGREE:g}, 10^4 x their tolerance: every number of a replay is read off these integrations, so it is "
                f"known to that precision (the ends must also lie within {REPLAY_ATOL:g} of the certified equilibrium, "
                f"whose residual must be at most {RESIDUAL:g}, and the closest approach stay {AWAY:g} or more from the "
                f"conjecture's outcome)")
REPLAY = AdaptiveStepSize(rtol=1e-10, atol=1e-12)


def eq6(P, U, causal, stabilise: bool = False):
    """Eq. 6 on the sphere written from the SPEC alone (not sim.dynamics): for every token i,
    dy_i/dt = (I - y_i y_i^T) sum_eta sum_j alpha_ij^eta U_eta y_j, alpha_ij^eta = exp(y_i^T P_eta y_j) / Z_i^eta,
    Z_i^eta = sqrt(d) sum_j exp(y_i^T P_eta y_j) over j (j <= i when causal).

    ``stabilise`` adds -k (|y_i|^2 - 1) y_i, zero on the sphere: off it, d|y_i|^2/dt = 2 (1 - |y_i|^2) y_i^T f_i,
    so where y_i^T f_i < 0 (a token opposite the others' pull, as in the witnesses) the sphere repels in R^d and an
    integrator without retraction drifts off it exponentially from rounding level (the first replay left a
    certified equilibrium at t ~ 50 that way). k = 3 (1 + sum_eta |U_eta|_2) exceeds that rate, 2 |f_i| <=
    2 sum_eta |U_eta|_2 (the weights of a row sum to 1/sqrt(d) <= 1).
    """
    P, U = np.asarray(P, float), np.asarray(U, float)
    k = 3.0 * (1.0 + sum(np.linalg.norm(u, 2) for u in U)) if stabilise else 0.0
    d = P.shape[-1]

    def rhs(t, flat):
        y = flat.reshape(-1, d)
        scores = np.einsum("id,hde,je->hij", y, P, y)  # y_i^T P_eta y_j
        if causal:
            scores = np.where(np.tril(np.ones((len(y), len(y)), dtype=bool)), scores, -np.inf)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights /= np.sqrt(d) * weights.sum(axis=-1, keepdims=True)
        total = np.einsum("hde,hij,je->id", U, weights, y)  # sum_eta sum_j alpha_ij^eta U_eta y_j
        radial = np.sum(y * total, axis=-1, keepdims=True)
        return (total - radial * y - k * (np.sum(y * y, axis=-1, keepdims=True) - 1.0) * y).reshape(-1)

    return rhs


def replay(witness: dict) -> dict:
    """Integrate the witness both ways; the numbers its claim is judged on."""
    P, U, y0 = (np.asarray(witness[k], float) for k in ("P", "U", "y0"))
    t1 = float(witness["t1"])
    family = FAMILIES[witness["claim"]] if witness["claim"] in FAMILIES else None
    distance = family.distance if family else None
    ts = np.linspace(t1 / 2, t1, 51)
    ours = run(attention_field(P, U, witness["causal"]), y0, t1, REPLAY, ts=ts)
    # LSODA (Adams / BDF with stiffness detection): another family of integrator than sim's Dopri5, and quick on the
    # stabilised equation (DOP853 needs 5-50 thousand evaluations there, LSODA 0.7-2 thousand, same end points)
    theirs = solve_ivp(eq6(P, U, witness["causal"], stabilise=True), (0.0, t1), y0.reshape(-1), method="LSODA",
                       rtol=1e-10, atol=1e-12, t_eval=ts).y.T.reshape(len(ts), *y0.shape)
    numbers = {"sim_vs_scipy": float(np.max(np.abs(ours - theirs)))}
    if distance is not None:
        numbers["closest_sim"] = float(min(distance(P[None], U[None], y[None])[0] for y in ours))
        numbers["closest_scipy"] = float(min(distance(P[None], U[None], y[None])[0] for y in theirs))
    if "equilibrium" in witness:
        star = np.asarray(witness["equilibrium"])
        numbers["end_to_equilibrium"] = float(max(np.max(np.abs(ours[-1] - star)), np.max(np.abs(theirs[-1] - star))))
        numbers["scipy_residual"] = float(np.max(np.abs(eq6(P, U, witness["causal"])(0.0, star.reshape(-1)))))
    return numbers


def assert_replays(witness: dict, numbers: dict) -> None:
    assert numbers["sim_vs_scipy"] <= AGREE, numbers
    if "equilibrium" in witness:
        assert numbers["end_to_equilibrium"] <= REPLAY_ATOL, numbers
        assert numbers["scipy_residual"] <= RESIDUAL, numbers
        assert max(witness["eigenvalues"]["real"]) < 0
    assert numbers["closest_sim"] >= AWAY and numbers["closest_scipy"] >= AWAY, numbers


def test_witnesses_are_stored_for_the_refuted_conjectures():
    assert {p.parent.name for p in STORED} >= {"conj.multihead-causal", "conj.value-causal", "conj.value-full",
                                           "conj.gradient-value", "conj.nonsymmetric-full"}, [str(p) for p in STORED]


@pytest.mark.parametrize("path", STORED, ids=[f"{p.parent.name}/{p.stem}" for p in STORED])
def test_stored_witness_replays(path, record):
    witness = json.loads(path.read_text())
    assert witness["claim"] == path.parent.name
    assert FAMILIES[witness["claim"]].hypotheses(np.asarray(witness["P"]), np.asarray(witness["U"]),
                                                 np.asarray(witness["y0"])) == []
    numbers = replay(witness)
    assert_replays(witness, numbers)
    record(CheckResult(witness["claim"], "search", "refuted",
                       detail=f"stored witness sim/witnesses/{path.parent.name}/{path.name} ({witness['kind']}, "
                              f"l = {len(witness['y0'])}, d = {len(witness['y0'][0])}, h = {len(witness['P'])}) "
                              f"replays through sim and through an independent SciPy LSODA integration of eq. 6: "
                              f"{witness['certificate']}.",
                       numbers=numbers, tolerance=AGREE, tolerance_reason=AGREE_REASON,
                       seeds={"chunk_index": witness["seeds"]["chunk"][1]}))


def test_replay_rejects_a_corrupted_witness():
    """Negative control: the multi-head witness with U_eta replaced by I (Theorem 5.1's case) reaches consensus."""
    witness = json.loads(next(p for p in STORED if p.parent.name == "conj.multihead-causal").read_text())
    broken = dict(witness, U=np.broadcast_to(np.eye(len(witness["y0"][0])), np.shape(witness["U"])).tolist())
    numbers = replay(broken)
    with pytest.raises(AssertionError):
        assert_replays(broken, numbers)


@pytest.fixture(scope="module")
def cluster():
    """One LocalCluster of 2 worker processes for all the searches (starting one costs 10-30 s here)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as local:
        yield local.scheduler_address


@pytest.mark.full
@pytest.mark.parametrize("claim", sorted(FAMILIES))
def test_conjecture_search(claim, record, request, cluster):
    out = Path("build") / "searches" / claim  # checkpointed: a rerun of the report reuses finished chunks
    summary = run_search(claim, FULL_INSTANCES, out, chunk_size=FULL_CHUNK, scheduler=cluster, progress=False)
    report_witnesses = Path(request.config.getoption("report_dir")) / "witnesses" / claim
    for name in summary["witnesses"]:
        witness = json.loads((out / "witnesses" / claim / f"{name}.json").read_text())
        assert_replays(witness, replay(witness))
        report_witnesses.mkdir(parents=True, exist_ok=True)
        shutil.copy(out / "witnesses" / claim / f"{name}.json", report_witnesses / f"{name}.json")
    record(check_result(summary))
