"""Witnesses of refuted conjectures: written once, replayed by anyone (``python -m sim replay WITNESS.json``).

A witness (JSON, schema version ``SCHEMA_VERSIONS["witness"]``, foundation/schemas/witness.schema.json) holds an
instance (P, U, causal), an attractor (``equilibrium``, and a skew ``generator`` when the configuration rotates
rigidly), a start ``y0`` meeting the conjecture's hypotheses, and the certificate it was stored with. A replay
recomputes everything from P, U and the equilibrium:

* validated (Arb balls, :mod:`sim.conjectures.validated`): a unique attractor in a box, its spectrum in Re < 0, a ball
  of attraction;
* float64 with a stated margin: the attractor lies away from the claimed outcome (distance >= ``AWAY``, against a
  box radius <= 1e-3) and the start lies inside the hypothesis set by the family's ``state_margin`` (an open set:
  starts near y0 meet the hypotheses too);
* validated (balls): the start lies inside the certified ball of attraction. Only then does the witness refute its
  claim: the ball is an open set of starts near y0, meeting the hypotheses too, all attracted away from the claimed
  outcome, so no "every start" or "almost every start" statement survives it.

A start outside the certified ball is never a refutation (SPEC section 5: a finite-time run is evidence, never a
refutation). The replay then runs two integrators (sim's Dopri5 and SciPy's LSODA on eq. 6 written independently,
``sim.field.eq6``) from y0; when both end well inside the ball the outcome is ``evidence`` (float64 evidence only,
the attractor and its ball rigorous, the path from y0 to them float64), otherwise not a witness at all. A search whose
random start is only carried in by float64 stores the attractor itself as the start when it meets the hypotheses
(``sim.conjectures.search``); when it does not (a multi-head attractor with a token at -v, outside D^l(v)), nothing is
stored.

Before any of it, the witness is checked against its claim (:func:`mismatches`): shapes, finite entries in range,
the mask (``causal``) equal to the claim family's, and every hypothesis of the claim on the witness's own P, U and
y0 (the family's ``hypotheses``: head count, U = I or U = P, symmetry or non-symmetry, spectra certified in Arb
balls; in float64 with stated margins: hemisphere sets by an LP, a common top eigenvector to 1e-9). A file is also
validated against foundation/schemas/witness.schema.json on load (:func:`load`); ``python -m sim replay`` refuses a
malformed or mismatched witness with exit 2 and one line.

"Inside the certified ball" is measured from the certified zero u*, not from the chart centre: |u(y0)| (an upper
bound in balls, on the slice for rotating states: :func:`sim.conjectures.validated.start_distance`) plus the far
corner of u*'s tight Krawczyk box (``zero_enclosure``) must not exceed the ball's radius.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

from foundation.outputs import SCHEMA_VERSIONS, schema_path
from foundation.records import CheckResult
from foundation.registration import named_check

from sim.conjectures.certify import AWAY, EVIDENCE, EVIDENCE_HORIZON, attention_field, integrate
from sim.conjectures.families import FAMILIES, Family
from sim.conjectures.witness_index import check_indexed
from sim.field.eq6 import eq6
from sim.conjectures.validated import (Problem, ValidatedCertificate, certify, commutes, start_distance,
                                       starts_inside)

#: The witness schema (validated on load; its version is ``SCHEMA_VERSIONS["witness"]``).
SCHEMA = schema_path("witness")
#: A witness is a few kB (the largest stored one ~10 kB); a bigger file is refused before it is parsed.
MAX_BYTES = 1 << 20
#: |entry| of P, U and the generator (the schema's bound too): 20x the largest |P|_2 any search draws (50).
ENTRY_MAX = 1000.0
#: |P_eta|_2 bound: eq. 6 is evaluated unshifted (``sim.field.eq6``) and |y_i^T P y_j| <= |P|_2 must stay below
#: float64's exp overflow at 709.
P_NORM_MAX = 500.0
#: Tokens of y0 and of the equilibrium lie on the unit sphere: |y_i| - 1 within this (float64 normalisation leaves
#: ~1e-16; a state off the sphere is not a state of the model).
UNIT = 1e-9


#: The reason of a replay whose start reaches the certified ball only in float64 runs (what is rigorous, what is not).
FLOAT64_ONLY = ("the attractor, its spectrum and its ball of attraction are validated (ball arithmetic); the start "
                "lies outside that ball, and only two float64 integrators (rtol "
                f"{EVIDENCE.rtol:g}, to t = {EVIDENCE_HORIZON:g}) carry it in: a finite-time run is evidence, never a "
                "refutation")


@dataclass
class Replay:
    """The outcome of a replay; ``refuted`` only when every part holds, the start inside the certified ball included
    (ball arithmetic). ``evidence``: every part holds except that one, which only float64 runs show (not a
    refutation)."""

    claim: str
    refuted: bool
    reason: str
    certificate: ValidatedCertificate
    numbers: dict = field(default_factory=dict)
    evidence: bool = False

    def summary(self) -> str:
        verdict = ("REFUTED by this witness" if self.refuted else
                   "FLOAT64 EVIDENCE only, not a refutation" if self.evidence else "NOT a witness")
        head = f"{self.claim}: {verdict} ({self.reason})"
        numbers = [f"  {key}: {value}" for key, value in self.numbers.items()]
        return "\n".join([head, *numbers, "certificate:", self.certificate.summary()])


def mismatches(witness: dict, family: Family) -> list[str]:
    """What keeps ``witness`` from being an instance of ``family``'s claim ([] when nothing): the arrays' shapes
    (``P, U : shape=[h, d, d]``, ``y0, equilibrium : shape=[l, d]``, ``generator : shape=[d, d]`` or None), finite
    entries within ``ENTRY_MAX`` and ``P_NORM_MAX``, unit tokens, the mask, a generator that commutes, and the
    claim's hypotheses on P, U and y0 (``family.hypotheses``)."""
    if not isinstance(witness.get("causal"), bool):
        return [f"causal must be true or false, not {witness.get('causal')!r:.40}"]
    arrays = {}
    for key, ndim in (("P", 3), ("U", 3), ("y0", 2), ("equilibrium", 2), ("generator", 2)):
        if key == "generator" and witness.get(key) is None:
            continue
        try:
            array = np.asarray(witness[key], dtype=float)
        except (KeyError, TypeError, ValueError, OverflowError) as error:
            return [f"{key} is not an array of numbers ({str(error)[:80]})"]
        if array.ndim != ndim or 0 in array.shape:
            return [f"{key} must be a non-empty {ndim}-dimensional array, not shape {list(array.shape)}"]
        if not np.all(np.isfinite(array)):
            return [f"{key} has an entry that is not a finite number"]
        arrays[key] = array
    P, U, y0, equilibrium = arrays["P"], arrays["U"], arrays["y0"], arrays["equilibrium"]
    h, d = P.shape[0], P.shape[-1]
    if P.shape != (h, d, d) or U.shape != P.shape:
        return [f"P and U must both have shape [h, d, d]; P {list(P.shape)}, U {list(U.shape)}"]
    if d < 2:  # S^0 is two points: no tangent space to certify an attractor in
        return [f"the tokens must live on a sphere S^(d-1) with d >= 2, not d = {d}"]
    if y0.shape[1] != d or equilibrium.shape != y0.shape:
        return [f"y0 and equilibrium must both have shape [l, {d}]; y0 {list(y0.shape)}, equilibrium "
                f"{list(equilibrium.shape)}"]
    if "generator" in arrays and arrays["generator"].shape != (d, d):
        return [f"generator must have shape [{d}, {d}], not {list(arrays['generator'].shape)}"]
    if max(float(np.max(np.abs(a))) for key, a in arrays.items() if key in ("P", "U", "generator")) > ENTRY_MAX:
        return [f"an entry of P, U or generator exceeds {ENTRY_MAX:g} in magnitude"]
    if np.max(np.linalg.norm(P, ord=2, axis=(1, 2))) > P_NORM_MAX:
        return [f"|P_eta|_2 exceeds {P_NORM_MAX:g} (exp(y^T P y) would overflow float64)"]
    for key in ("y0", "equilibrium"):
        if np.max(np.abs(np.linalg.norm(arrays[key], axis=-1) - 1.0)) > UNIT:
            return [f"the tokens of {key} must be unit vectors (|y_i| = 1 within {UNIT:g})"]
    problems = []
    if witness["causal"] != family.causal:
        problems.append(f"mask: the witness has {'causal' if witness['causal'] else 'full'} attention, the claim "
                        f"{family.claim} is about {'causal' if family.causal else 'full'} attention")
    generator = arrays.get("generator")
    if generator is not None and not commutes(Problem(P, U, witness["causal"], generator)):
        problems.append("the generator is not a nonzero skew matrix commuting with every P_eta and U_eta")
    problems += family.hypotheses(P, U, y0)
    return problems


def _problem(witness: dict) -> Problem:
    generator = witness.get("generator")
    return Problem(np.asarray(witness["P"], float), np.asarray(witness["U"], float), bool(witness["causal"]),
                   None if generator is None else np.asarray(generator, float))


def replay(witness: dict, family: Family | None = None) -> Replay:
    """Re-check a witness (see the module docstring); never trusts the stored certificate, and a stored certificate
    block that differs from the one the replay establishes (:func:`certificate_differences`: edited, or copied from
    another witness) makes a witness that would refute (or be evidence) no witness. ``family`` defaults to the claim's
    (``sim.conjectures.families.FAMILIES``); a search of another family passes its own."""
    outcome = _replay_instance(witness, family)
    differences = certificate_differences(witness["certificate"], outcome) if "certificate" in witness else []
    if differences and (outcome.refuted or outcome.evidence):  # else the replay's own reason says why it is none
        return Replay(outcome.claim, False, "the stored certificate block differs from the one this replay "
                      f"establishes ({'; '.join(differences)}): it was edited or copied from another witness",
                      outcome.certificate, outcome.numbers)
    return outcome


#: How far a stored certificate's numbers may lie from the replay's: relative 1e-9 (the certified bounds are
#: outward-rounded Arb balls, the same to the last bits wherever the certified zero is the same; its float64 Newton
#: refinement may move it by rounding, ~1e-16 relative), absolute 1e-13 for quantities at rounding (|F| at the centre,
#: ~1e-16, which differs with the BLAS that refined it).
CERTIFICATE_RTOL, CERTIFICATE_ATOL = 1e-9, 1e-13


def certificate_differences(stored: dict, outcome: Replay) -> list[str]:
    """What a stored certificate block says that the replay's (:func:`witness_certificate` of ``outcome``) does not:
    a missing or extra entry, a reason, eigenvalue or float64 part that differs, a number beyond
    CERTIFICATE_RTOL / CERTIFICATE_ATOL."""
    replayed = witness_certificate(outcome)
    differences = [f"{key} differs" for key in ("reason", "eigenvalues", "float64_parts")
                   if stored.get(key) != replayed[key]]
    for part in ("numbers", "replay"):
        ours, theirs = replayed[part], stored.get(part) or {}
        for key in sorted(ours.keys() | theirs.keys()):
            a, b = theirs.get(key), ours.get(key)
            close = (a == b if not all(isinstance(v, (int, float)) for v in (a, b)) else
                     math.isclose(a, b, rel_tol=CERTIFICATE_RTOL, abs_tol=CERTIFICATE_ATOL))
            if not close:
                differences.append(f"{part}.{key}: stored {a}, replayed {b}")
    return differences


def _replay_instance(witness: dict, family: Family | None) -> Replay:
    """:func:`replay`'s checks of the instance, the attractor and the start."""
    claim = witness["claim"]
    family = FAMILIES[claim] if family is None else family
    problems = mismatches(witness, family)
    if problems:
        refused = ValidatedCertificate(False, "not attempted: the witness does not match its claim",
                                       np.zeros((0, 0)))
        return Replay(claim, False, "the witness does not meet its claim's hypotheses: " + "; ".join(problems),
                      refused)
    problem = _problem(witness)
    P, U = problem.P, problem.U
    y0 = np.asarray(witness["y0"], float)
    certificate = certify(problem, np.asarray(witness["equilibrium"], float))
    y_star = certificate.equilibrium
    distance = float(family.outcome_distance(P[None], U[None], y_star[None], y0[None])[0])
    margin = float(family.state_margin(U, y0[None])[0])
    numbers = {"distance_from_claim": distance, "hypothesis_margin_at_y0": margin}

    def result(refuted: bool, reason: str, evidence: bool = False) -> Replay:
        return Replay(claim, refuted, reason, certificate, numbers, evidence)

    if not certificate.certified:
        return result(False, f"no validated attractor: {certificate.reason}")
    if distance < AWAY:
        return result(False, f"the attractor is the claimed outcome (distance {distance:.3g} < {AWAY:g})")
    if not margin > 2 * certificate.numbers["box_radius"]:
        return result(False, f"the start lies on the edge of the hypothesis set (margin {margin:.3g})")
    basin, enclosure = certificate.numbers["basin_radius"], certificate.numbers["zero_enclosure"]
    inside, numbers["start_from_centre"] = starts_inside(certificate, problem, y0)  # from u*'s box, not the centre
    numbers["start_inside_certified_ball"] = inside
    if inside:
        return result(True, "validated attractor; the start lies inside its certified ball (measured from the "
                            "certified zero's enclosure)")
    ends = _evidence(problem, y0, y_star)
    numbers.update(ends)
    if max(ends["sim_end_distance"], ends["scipy_end_distance"]) + enclosure >= basin / 2:
        return result(False, "float64 runs from the start do not reach the certified ball")
    return result(False, FLOAT64_ONLY, evidence=True)


def _evidence(problem: Problem, y0: np.ndarray, y_star: np.ndarray) -> dict:
    """Float64: sim's Dopri5 and SciPy's LSODA from ``y0``; chart distances of the ends from the attractor."""
    t1 = EVIDENCE_HORIZON
    ours = integrate(attention_field(problem.P, problem.U, problem.causal), y0, t1, EVIDENCE)[-1]

    def rhs(t, flat):
        y = flat.reshape(y0.shape)
        drift = np.sum(y * y, axis=-1, keepdims=True) - 1.0  # pulled back onto the sphere (zero on it)
        return (eq6(y, problem.P, problem.U, problem.causal) - 3.0 * drift * y).reshape(-1)

    theirs = solve_ivp(rhs, (0.0, t1), y0.reshape(-1), method="LSODA", rtol=1e-10, atol=1e-12).y[:, -1]
    theirs = theirs.reshape(y0.shape)
    return {"evidence_horizon": t1, "sim_end_distance": start_distance(problem, y_star, ours),
            "scipy_end_distance": start_distance(problem, y_star, theirs)}


@named_check
def record_of(outcome: Replay, name: str, witness: dict | None = None, figure_dir: Path | str | None = None
              ) -> CheckResult:
    """The record a stored witness gives its claim: ``refuted`` when it replays, ``failed`` when a stored witness
    no longer refutes (a regression of the certifier, the field or the witness).

    With ``witness`` the record shows it (:mod:`sim.conjectures.witnessview`): P_eta, U_eta, y0 beside y* and the
    certificate split into its rigorous and float64 parts (tables); with ``figure_dir`` too, the trajectory from y0
    to the attractor (a figure written there). A refuting witness whose drawn trajectory does not reach its
    attractor is ``failed`` (the figure and the replay disagree)."""
    return _record_of(outcome, name, witness, figure_dir)


def _record_of(outcome: Replay, name: str, witness: dict | None = None, figure_dir: Path | str | None = None
              ) -> CheckResult:
    """The body of :func:`record_of`, undecorated: mutation testing (mutmut) skips decorated functions."""
    numbers = {key: value for key, value in outcome.certificate.numbers.items() if isinstance(value, float)}
    numbers.update({key: value for key, value in outcome.numbers.items() if isinstance(value, float)})
    detail = (f"stored witness {name}: {outcome.reason}. Certificate: {outcome.certificate.reason}. "
              f"Float64 parts: {'; '.join(outcome.certificate.float64_parts)}.")
    verdict = "refuted" if outcome.refuted else "failed"
    tables, figures = (), ()
    if witness is not None:
        from sim.conjectures import witnessview

        tables = witnessview.tables(witness, outcome)
        if figure_dir is not None:
            stem = Path(name).stem
            path = Path(figure_dir) / f"witness-{witness['claim']}-{stem}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            figure, drawn = witnessview.draw(witness, path, stem)
            figures = (figure,)
            numbers.update({key: value for key, value in drawn.items() if isinstance(value, float)})
            if not drawn["figure_reaches_attractor"]:
                verdict = "failed"  # the figure and the replay disagree
                detail = (f"FLAGGED: the figure's trajectory from y0 ends {drawn['figure_end_distance']:.3g} from "
                          f"the attractor (more than {witnessview.REACHED:g}). " + detail)
    return CheckResult(outcome.claim, "search", verdict, detail=detail, numbers=numbers, tables=tables,
                       figures=figures)


def witness_certificate(outcome: Replay) -> dict:
    """The certificate block a stored witness carries (what its replay established)."""
    return {"reason": outcome.certificate.reason, "numbers": strict_numbers(outcome.certificate.numbers),
            "eigenvalues": outcome.certificate.eigenvalues, "float64_parts": outcome.certificate.float64_parts,
            "replay": strict_numbers(outcome.numbers)}


def strict_numbers(numbers: dict) -> dict:
    """``numbers`` for strict JSON: an infinite margin (a claim that restricts no state) is written as null."""
    return {key: None if isinstance(value, float) and not math.isfinite(value) else value
            for key, value in numbers.items()}


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
    """A witness file, checked before anything is computed from it; a ValueError of one line naming the file and
    what failed otherwise: unreadable or not strict JSON (NaN and Infinity refused, too deep), not valid against
    foundation/schemas/witness.schema.json (types, ``schema_version``, ranges), a claim without a family, or a witness
    that does not match its claim (:func:`mismatches`), or bytes that the witness index beside it does not record
    (:func:`sim.conjectures.witness_index.check_indexed`)."""
    import jsonschema

    path = Path(path)
    try:
        check_indexed(path)
    except OSError as error:
        raise ValueError(f"{path}: not a readable witness file ({_one_line(error)})") from None
    try:
        if path.stat().st_size > MAX_BYTES:
            raise ValueError(f"larger than {MAX_BYTES} bytes")
        witness = json.loads(path.read_text(encoding="utf-8"), parse_constant=_refuse_constant)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ValueError(f"{path}: not a readable witness file ({_one_line(error)})") from None
    try:
        error = jsonschema.exceptions.best_match(_validator().iter_errors(witness))
    except RecursionError:
        raise ValueError(f"{path}: not a witness (nested too deeply)") from None
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "the document"
        raise ValueError(f"{path}: not a valid witness ({SCHEMA.name}): at {where}: {_one_line(error.message)}")
    if witness["claim"] not in FAMILIES:
        raise ValueError(f"{path}: claim {witness['claim']!r:.60} has no conjecture family; known: "
                         f"{_known()}")
    problems = mismatches(witness, FAMILIES[witness["claim"]])
    if problems:
        raise ValueError(f"{path}: not a witness of {witness['claim']}: {_one_line('; '.join(problems))}")
    return witness


def _known() -> str:
    """The known claim ids, shortened to 150 characters (the refusal stays one short line as families grow)."""
    known = ", ".join(sorted(FAMILIES))
    return known if len(known) <= 150 else known[:147] + "..."


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number a witness may hold")


def _one_line(text) -> str:
    """``text`` on one line, at most 200 characters (a 401-digit number is not repeated in full)."""
    text = " ".join(str(text).split())
    return text if len(text) <= 200 else text[:197] + "..."


def _validator():
    import jsonschema

    return jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
