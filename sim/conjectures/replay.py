"""Witnesses of refuted conjectures: written once, replayed by anyone (``python -m sim replay WITNESS.json``).

A witness (JSON, schema version ``SCHEMA_VERSIONS["witness"]``, reports/schemas/witness.schema.json) holds an instance
(P, U, causal), an attractor (``equilibrium``, and a skew ``generator`` when the configuration rotates rigidly), a start
``y0`` meeting the conjecture's hypotheses, and the certificate it was stored with. A replay recomputes everything from
P, U and the equilibrium:

* validated (Arb balls, :mod:`sim.conjectures.validated`): a unique attractor in a box, its spectrum in Re < 0, a ball
  of attraction;
* float64 with a stated margin: the attractor lies away from the claimed outcome (distance >= ``AWAY``, against a
  box radius <= 1e-3) and the start lies inside the hypothesis set by ``hypothesis_margin`` (an open set: starts
  near y0 meet the hypotheses too);
* float64 evidence, only where y0 is not already inside the certified ball: two integrators (sim's Dopri5 and
  SciPy's LSODA on eq. 6 written independently, ``sim.field.eq6``) carry y0 into the ball.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp
from scipy.spatial import ConvexHull

from reports.checks import check
from reports.outputs import SCHEMA_VERSIONS
from reports.records import CheckResult
from reports.registry import SEARCHED

from sim.conjectures.certify import AWAY, attention_field, run
from sim.conjectures.families import FAMILIES, Family, top_eigenpair
from sim.field.eq6 import eq6
from sim.solvers import AdaptiveStepSize
from sim.conjectures.validated import Chart, Problem, ValidatedCertificate, certify

#: Integrations of the float64 evidence: rtol 1e-10 each; the end must lie inside the certified ball with a
#: factor 2 to spare, far above the 1e-8 the two integrators may differ by.
EVIDENCE = AdaptiveStepSize(rtol=1e-10, atol=1e-12)
#: Longest evidence run: the slowest certified rate is ~0.03, so 25 time constants are below 1000.
EVIDENCE_HORIZON = 1000.0


@dataclass
class Replay:
    """The outcome of a replay; ``refuted`` only when every part holds."""

    claim: str
    refuted: bool
    reason: str
    certificate: ValidatedCertificate
    numbers: dict = field(default_factory=dict)

    def summary(self) -> str:
        head = f"{self.claim}: {'REFUTED by this witness' if self.refuted else 'NOT a witness'} ({self.reason})"
        numbers = [f"  {key}: {value}" for key, value in self.numbers.items()]
        return "\n".join([head, *numbers, "certificate:", self.certificate.summary()])


def hypothesis_margin(claim: str, P: np.ndarray, U: np.ndarray, y: np.ndarray) -> float:
    """How far (float64) the state ``y`` lies inside the claim's hypothesis set on states; inf where the claim
    restricts no state ("almost every initial state")."""
    if claim.startswith("conj.multihead-causal"):
        _, _, v = top_eigenpair(np.sum(U, axis=0))
        return float(np.min(y @ v))                       # D^l(v) = {v^T y_i > 0}
    if claim == "conj.nonsymmetric-full":
        return inradius(y)                               # no open hemisphere: 0 inside the tokens' hull
    return float("inf")


def inradius(y: np.ndarray) -> float:
    """The radius of the largest ball around 0 inside the convex hull of the tokens (0 if 0 is not interior)."""
    try:
        hull = ConvexHull(y)
    except Exception:  # fewer than d + 1 affinely independent tokens: the hull has no interior
        return 0.0
    return float(max(0.0, np.min(-hull.equations[:, -1])))


def _problem(witness: dict) -> Problem:
    generator = witness.get("generator")
    return Problem(np.asarray(witness["P"], float), np.asarray(witness["U"], float), bool(witness["causal"]),
                   None if generator is None else np.asarray(generator, float))


def replay(witness: dict, family: Family | None = None) -> Replay:
    """Re-check a witness (see the module docstring); never trusts the stored certificate. ``family`` defaults to
    the claim's (``sim.conjectures.families.FAMILIES``); a search of another family passes its own."""
    claim = witness["claim"]
    problem = _problem(witness)
    P, U = problem.P, problem.U
    y0 = np.asarray(witness["y0"], float)
    certificate = certify(problem, np.asarray(witness["equilibrium"], float))
    y_star = certificate.equilibrium
    family = FAMILIES[claim] if family is None else family
    distance = float(family.distance(P[None], U[None], y_star[None])[0])
    margin = hypothesis_margin(claim, P, U, y0)
    numbers = {"distance_from_claim": distance, "hypothesis_margin_at_y0": margin}

    def result(refuted: bool, reason: str) -> Replay:
        return Replay(claim, refuted, reason, certificate, numbers)

    if not certificate.certified:
        return result(False, f"no validated attractor: {certificate.reason}")
    problems = family.hypotheses(P, U, y0)
    if problems:
        return result(False, "the start does not meet the hypotheses: " + "; ".join(problems))
    if distance < AWAY:
        return result(False, f"the attractor is the claimed outcome (distance {distance:.3g} < {AWAY:g})")
    if not margin > 2 * certificate.numbers["box_radius"]:
        return result(False, f"the start lies on the edge of the hypothesis set (margin {margin:.3g})")
    inside = _chart_distance(y_star, y0) < certificate.numbers["basin_radius"]
    numbers["start_inside_certified_ball"] = inside
    if inside:
        return result(True, "validated attractor; the start lies inside its certified ball")
    ends = _evidence(problem, y0, y_star)
    numbers.update(ends)
    if max(ends["sim_end_distance"], ends["scipy_end_distance"]) >= certificate.numbers["basin_radius"] / 2:
        return result(False, "float64 runs from the start do not reach the certified ball")
    return result(True, "validated attractor; float64 runs (two integrators) carry the start into its ball")


def _chart_distance(centre: np.ndarray, y: np.ndarray) -> float:
    """|u(y)| in the chart at ``centre`` (float64), the coordinates the ball of attraction is stated in."""
    chart = Chart.at(centre, exact=False)
    w = np.einsum("ide,ie->id", chart.inverse, y)
    return float(np.linalg.norm(w[:, 1:] / w[:, :1]))


def _evidence(problem: Problem, y0: np.ndarray, y_star: np.ndarray) -> dict:
    """Float64: sim's Dopri5 and SciPy's LSODA from ``y0``; chart distances of the ends from the attractor."""
    t1 = EVIDENCE_HORIZON
    ours = run(attention_field(problem.P, problem.U, problem.causal), y0, t1, EVIDENCE)[-1]

    def rhs(t, flat):
        y = flat.reshape(y0.shape)
        drift = np.sum(y * y, axis=-1, keepdims=True) - 1.0  # pulled back onto the sphere (zero on it)
        return (eq6(y, problem.P, problem.U, problem.causal) - 3.0 * drift * y).reshape(-1)

    theirs = solve_ivp(rhs, (0.0, t1), y0.reshape(-1), method="LSODA", rtol=1e-10, atol=1e-12).y[:, -1]
    theirs = theirs.reshape(y0.shape)
    return {"evidence_horizon": t1, "sim_end_distance": _chart_distance(y_star, ours),
            "scipy_end_distance": _chart_distance(y_star, theirs)}


@check(SEARCHED, method="search")
def record_of(outcome: Replay, name: str) -> CheckResult:
    """The record a stored witness gives its claim: ``refuted`` when it replays, ``failed`` when a stored witness
    no longer refutes (a regression of the certifier, the field or the witness)."""
    numbers = {key: value for key, value in outcome.certificate.numbers.items() if isinstance(value, float)}
    numbers.update({key: value for key, value in outcome.numbers.items() if isinstance(value, float)})
    return CheckResult(outcome.claim, "search", "refuted" if outcome.refuted else "failed",
                       detail=f"stored witness {name}: {outcome.reason}. Certificate: {outcome.certificate.reason}. "
                              f"Float64 parts: {'; '.join(outcome.certificate.float64_parts)}.",
                       numbers=numbers)


def witness_certificate(outcome: Replay) -> dict:
    """The certificate block a stored witness carries (what its replay established)."""
    return {"reason": outcome.certificate.reason, "numbers": outcome.certificate.numbers,
            "eigenvalues": outcome.certificate.eigenvalues, "float64_parts": outcome.certificate.float64_parts,
            "replay": outcome.numbers}


def draft(claim: str, problem: Problem, equilibrium: np.ndarray, y0: np.ndarray) -> dict:
    """A witness of ``claim`` before its replay (JSON-ready, no certificate yet)."""
    return {"schema_version": SCHEMA_VERSIONS["witness"], "claim": claim, "causal": problem.causal,
            "P": np.asarray(problem.P, float).tolist(), "U": np.asarray(problem.U, float).tolist(),
            "generator": None if problem.generator is None else np.asarray(problem.generator, float).tolist(),
            "equilibrium": np.asarray(equilibrium, float).tolist(), "y0": np.asarray(y0, float).tolist()}


def make_witness(claim: str, problem: Problem, equilibrium: np.ndarray, y0: np.ndarray, *, provenance: str,
                 seeds: dict | None = None) -> dict:
    """A witness dict (JSON-ready) whose replay refutes ``claim``; raises ValueError when it would not."""
    witness = dict(draft(claim, problem, equilibrium, y0), provenance=provenance, seeds=seeds or {})
    outcome = replay(witness)
    if not outcome.refuted:
        raise ValueError(f"not a witness of {claim}: {outcome.reason}")
    witness["equilibrium"] = outcome.certificate.equilibrium.tolist()
    witness["certificate"] = witness_certificate(outcome)
    return witness


def load(path: Path | str) -> dict:
    """A witness file; a clear error naming the file when it is not one."""
    path = Path(path)
    try:
        witness = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a readable witness file ({error})") from None
    missing = {"claim", "P", "U", "causal", "equilibrium", "y0"} - set(witness)
    if missing:
        raise ValueError(f"{path}: a witness needs the keys {sorted(missing)}")
    if witness["claim"] not in FAMILIES:
        raise ValueError(f"{path}: claim {witness['claim']!r} has no conjecture family; known: {sorted(FAMILIES)}")
    return witness
