"""The counterexample search of one chunk of a conjecture's family (``sim.conjectures.families``).

A chunk (claim, index) is deterministic: its generator is seeded by ``chunk_seed(claim, index)``, so it gives the
same result on any worker. Stages:

1. random: ``size`` instances of one shape drawn from the family, integrated to the horizon T by the compiled
   whole integrations of ``sim.solvers.compiled`` (adaptive Dopri5, each instance with its own step size, retracted to
   the sphere); score = distance from the claimed outcome at T;
2. adversarial: SciPy's ``differential_evolution`` (seeded, vectorised: each generation is one batched solve)
   maximises that distance over the family's parameter vector (matrices and initial state), starting from the
   random stage's best instances;
3. certification of the best hits: the end state refined to an equilibrium and screened in float64
   (``sim.conjectures.certify``), then certified in ball arithmetic (``sim.conjectures.validated`` through
   ``sim.conjectures.replay``: a unique attractor with a ball of attraction, away from the claimed outcome, and a start
   meeting the hypotheses inside that ball). A finite-time run alone is never a hit: a random start that only the
   float64 runs carry into the ball is replaced by the attractor itself, which must then meet the hypotheses (an
   attractor outside the hypothesis set, reached from a start inside it only in float64, is rejected);
4. shrinking of a certified hit, Hypothesis-style: fewer tokens, lower dimension, round numbers, each step kept
   only when the smaller instance still meets the hypotheses and is certified again.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
from scipy.optimize import differential_evolution

from sim.conjectures.certify import Certificate, certify_equilibrium
from sim.conjectures.families import Batch, Family, Shape, chunk_seed, distance_from_plus_minus_v, top_eigenpair
from sim.solvers.compiled import solve_instances
from sim.field.instances import InstanceField
from sim.conjectures.replay import draft, replay, witness_certificate
from sim.solvers import AdaptiveStepSize
from sim.conjectures.validated import Problem

#: Search runs: every instance meets rtol 1e-7 (each is stepped alone, ``sim.solvers.compiled``); the scores compare
#: distances of order 0.1-2 against the hit threshold, far above that error.
SEARCH_CONTROLLER = AdaptiveStepSize(rtol=1e-7, atol=1e-9)
#: Explicit step budget of a search solve (long horizons, up to 10^5 steps are expected for P of norm 20).
SEARCH_MAX_STEPS = 500_000
#: A state this far from the claimed outcome at T is a hit worth certifying (the certifier asks for 1e-2).
HIT = 5e-2
#: Certifications per chunk (each is several tight solves).
CERTIFY_PER_CHUNK = 2
#: Differential evolution: about this many instances per generation, this many generations.
DE_POPULATION = 48
DE_GENERATIONS = 4
#: Entries are rounded to this many decimals, coarsest first, when shrinking.
ROUNDINGS = (0, 1, 2)


def integrate(family: Family, batch: Batch, horizon: float | None = None) -> np.ndarray:
    """The states at the horizon of every instance of ``batch``, shape=[n, l, d] (``sim.solvers.compiled``: one compiled
    adaptive Dopri5 integration per instance)."""
    t1 = family.horizon if horizon is None else horizon
    return solve_instances(InstanceField(batch.P, batch.U, family.causal), batch.y0, t1, controller=SEARCH_CONTROLLER,
                           max_steps=SEARCH_MAX_STEPS).y1


def scores(family: Family, batch: Batch) -> np.ndarray:
    """Distance from the claimed outcome at the horizon, 0 for invalid instances, shape=[n]."""
    end = integrate(family, batch)
    return np.where(batch.valid, family.outcome_distance(batch.P, batch.U, end, batch.y0), 0.0)


def _take(batch: Batch, index) -> Batch:
    return Batch(batch.P[index], batch.U[index], batch.y0[index], batch.valid[index])


def certify(family: Family, P, U, y0, *, seed: int) -> Certificate:
    """Certify one instance as a counterexample of ``family``'s conjecture: the float64 screen of
    ``sim.conjectures.certify`` (run, refine, linearise), then the validated replay (``sim.conjectures.replay``) of the
    equilibrium it found; the certificate's ``numbers`` are the validated ones when it is certified.

    When the replay finds y0 outside the certified ball (reached only in float64: evidence, not a refutation), the
    attractor itself is replayed as the start: certified only if it meets the hypotheses, and then ``start`` is that
    attractor (the witness's y0), y0 being where the search came from."""
    def distance(y):
        return float(family.outcome_distance(P[None], U[None], y[None], y0[None])[0])
    screen = certify_equilibrium(P, U, family.causal, y0, family.horizon, distance, seed=seed)
    if not screen.certified:
        return screen
    outcome = replay(_draft(family, P, U, y0, screen.equilibrium), family)
    start = None
    if outcome.evidence:
        y_star = outcome.certificate.equilibrium
        at_attractor = replay(_draft(family, P, U, y_star, y_star), family)
        if not at_attractor.refuted:
            return Certificate(False, f"float64 screen passed; validated replay: {outcome.reason}; with the attractor "
                                      f"as the start: {at_attractor.reason}", "equilibrium",
                               equilibrium=screen.equilibrium, eigenvalues=screen.eigenvalues, numbers=screen.numbers)
        outcome, start = at_attractor, at_attractor.certificate.equilibrium
    if not outcome.refuted:
        return Certificate(False, f"float64 screen passed; validated replay: {outcome.reason}", "equilibrium",
                           equilibrium=screen.equilibrium, eigenvalues=screen.eigenvalues, numbers=screen.numbers)
    return Certificate(True, outcome.certificate.reason, "equilibrium", equilibrium=outcome.certificate.equilibrium,
                       eigenvalues=screen.eigenvalues, numbers=witness_certificate(outcome), start=start)


def _draft(family: Family, P, U, y0, equilibrium) -> dict:
    """A witness of ``family``'s claim before its replay (``sim.conjectures.replay.draft``)."""
    return draft(family.claim, Problem(np.asarray(P, float), np.asarray(U, float), family.causal), equilibrium, y0)


def _valid(family: Family, P, U, y0) -> bool:
    return not family.hypotheses(P, U, y0)


def shrink(family: Family, P, U, y0, *, seed: int, budget: int = 8):
    """A smaller certified witness: drop tokens (the last ones first: causal prefixes are closed systems), drop
    coordinates, round entries (coarsest first); returns (P, U, y0, certificate, steps taken)."""
    best = (P, U, y0)
    best_certificate = None
    steps: list[str] = []
    tried = 0

    def attempt(candidate, label) -> bool:
        nonlocal best, best_certificate, tried
        if tried >= budget:
            return False
        cP, cU, cy = candidate
        if not _valid(family, cP, cU, cy) or len(cy) < min(family.tokens) or cy.shape[1] < min(family.dims):
            return False
        tried += 1
        certificate = certify(family, cP, cU, cy, seed=seed)
        if certificate.certified:
            best, best_certificate = candidate, certificate
            steps.append(label)
        return certificate.certified

    changed = True
    while changed and tried < budget:  # fewest tokens
        changed = False
        P0, U0, y = best
        for drop in reversed(range(len(y))):
            if attempt((P0, U0, np.delete(y, drop, axis=0)), f"dropped token {drop + 1}"):
                changed = True
                break
    changed = True
    while changed and tried < budget:  # lowest dimension
        changed = False
        P0, U0, y = best
        for drop in reversed(range(y.shape[1])):
            keep = [k for k in range(y.shape[1]) if k != drop]
            sub = y[:, keep]
            if np.any(np.linalg.norm(sub, axis=1) < 1e-3):
                continue
            candidate = (P0[:, keep][:, :, keep], U0[:, keep][:, :, keep], sub / np.linalg.norm(sub, axis=1)[:, None])
            if attempt(candidate, f"dropped coordinate {drop + 1}"):
                changed = True
                break
    for decimals in ROUNDINGS:  # round numbers
        P0, U0, y = best
        rounded_y = np.round(y, decimals)
        if np.any(np.linalg.norm(rounded_y, axis=1) < 1e-3):
            continue
        candidate = (np.round(P0, decimals), np.round(U0, decimals),
                     rounded_y / np.linalg.norm(rounded_y, axis=1)[:, None])
        if attempt(candidate, f"rounded to {decimals} decimals"):
            break
    return (*best, best_certificate, steps)


def search_chunk(family: Family, index: int, size: int, *, adversarial: bool = True) -> dict:
    """Search chunk ``index`` (``size`` random instances, then the adversarial stage); a JSON-ready dict with the
    counts, the best scores and the certified (shrunk) witnesses."""
    if size < 1:
        raise ValueError(f"size={size!r} must be a positive number of instances.")
    started = time.perf_counter()
    seed = chunk_seed(family.claim, index)
    rng = np.random.default_rng(seed)
    shape = family.draw_shape(rng)
    theta, batch = family.draw(rng, size, shape)
    random_scores = scores(family, batch)
    candidates = [(float(s), "random", batch.P[i], batch.U[i], batch.y0[i]) for i, s in enumerate(random_scores)]
    evaluated = int(np.sum(batch.valid))
    adversarial_best = None
    if adversarial:
        bounds = [(-3.0, 3.0)] * theta.shape[1]
        popsize = max(1, DE_POPULATION // theta.shape[1])
        population = popsize * theta.shape[1]
        order = np.argsort(-random_scores)
        init = np.clip(theta[order[:population]], -3.0, 3.0)
        if len(init) < max(population, 5):
            extra = rng.uniform(-3.0, 3.0, (max(population, 5) - len(init), theta.shape[1]))
            init = np.concatenate([init, extra])
        found: list[tuple[float, Batch]] = []

        def objective(x: np.ndarray) -> np.ndarray:  # x : shape=[parameters, S] (scipy's vectorised layout)
            decoded = family.decode(np.ascontiguousarray(x.T), shape)
            values = scores(family, decoded)
            found.append((float(np.max(values)), _take(decoded, [int(np.argmax(values))])))
            return -values

        differential_evolution(objective, bounds, maxiter=DE_GENERATIONS, popsize=popsize, init=init,
                               seed=np.random.default_rng(seed + [1]), vectorized=True, updating="deferred",
                               polish=False, tol=0.0)
        evaluated += len(init) * (DE_GENERATIONS + 1)
        found.sort(key=lambda item: -item[0])
        if found:
            adversarial_best = found[0][0]
            for value, best in found[:CERTIFY_PER_CHUNK]:
                candidates.append((value, "adversarial", best.P[0], best.U[0], best.y0[0]))
    candidates.sort(key=lambda c: -c[0])
    witnesses, rejected = [], []
    for rank, (value, stage, P, U, y0) in enumerate([c for c in candidates if c[0] > HIT][:CERTIFY_PER_CHUNK]):
        certificate = certify(family, P, U, y0, seed=rank)
        if not certificate.certified:
            rejected.append({"score": value, "stage": stage, "reason": certificate.reason})
            continue
        sP, sU, sy, shrunk_certificate, steps = shrink(family, P, U, y0, seed=rank)
        final = shrunk_certificate or certificate
        witnesses.append(witness_record(family, sP, sU, sy, final, seeds={"chunk": seed, "rank": rank},
                                        extra={"score": value, "stage": stage, "shrinking": steps,
                                               "original_shape": [int(s) for s in y0.shape]}))
        break  # one certified witness per chunk is enough
    return {"claim": family.claim, "index": index, "size": size, "seed": seed,
            "shape": {"heads": shape.heads, "tokens": shape.tokens, "dim": shape.dim},
            "valid_random": int(np.sum(batch.valid)), "evaluated": evaluated,
            "best_random": float(np.max(random_scores)), "best_adversarial": adversarial_best,
            "hits": int(sum(1 for c in candidates if c[0] > HIT)), "rejected": rejected, "witnesses": witnesses,
            "seconds": time.perf_counter() - started}


def plus_minus_v_distance(U, y) -> float | None:
    """``sim.conjectures.families.distance_from_plus_minus_v`` of one instance (None if the top eigenvalue of sum_eta
    U_eta is not real, simple and positive): 0 when every token sits at +v or -v, the two antipodal clusters a weaker
    reading of 'consensus' allows."""
    U = np.asarray(U)
    if not top_eigenpair(np.sum(U, axis=0))[0]:
        return None
    return float(distance_from_plus_minus_v(None, U[None], np.asarray(y)[None])[0])


def witness_record(family: Family, P, U, y0, certificate: Certificate, *, seeds: dict,
                   extra: dict | None = None) -> dict:
    """The JSON of a certified witness (``witnesses/<claim>/<name>.json``, ``sim.conjectures.replay``'s format): its
    start is the certificate's (``searched_from`` keeps ``y0`` when that was the attractor instead: y0's run into the
    ball is float64 evidence only)."""
    record = _draft(family, P, U, y0 if certificate.start is None else certificate.start, certificate.equilibrium)
    if certificate.start is not None:
        record["searched_from"] = np.asarray(y0, float).tolist()
    record.update(certificate=certificate.numbers, seeds=seeds,
                  provenance=f"sim.conjectures.search chunk {seeds.get('chunk')} (rank {seeds.get('rank')}), horizon "
                             f"{family.horizon:g}", tokens_from_plus_minus_v=plus_minus_v_distance(U, certificate.equilibrium))
    record.update(extra or {})
    return record


def planted(family: Family, **changes) -> Family:
    """A copy of ``family`` with fields replaced (tests plant non-conjectures this way)."""
    return replace(family, **changes)
