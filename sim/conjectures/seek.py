"""The seeking search of a conjecture: solve for equilibria, score them smoothly, optimise the instance, certify.

For one instance (``sim.conjectures.structured``: a structured or random draw meeting the claim's hypotheses on the
heads):

1. equilibria by deflated Newton from many starts (``sim.conjectures.equilibria``): tokens at +-v, at +-eigenvectors
   of every U_eta and of sum_eta U_eta, antipodal splits, random points (uniform, and reflected into the hemisphere
   of v);
2. the score: at each equilibrium away from the claimed outcome (``family.distance`` >=
   ``sim.conjectures.certify.AWAY``), max(largest real part of the tangent spectrum, -(margin inside the claim's
   state hypotheses, ``family.state_margin``, the margin the replay holds a witness's start to)); the instance's
   score is the least of these, negative exactly when some such equilibrium is linearly stable and admissible
   (for the multi-head claim the margin is min_i v^T y_i, so the equilibrium lies in D^l(v); for "in no open
   hemisphere" the inradius of the tokens' hull around 0);
3. while the score is not negative, a (1+lambda) evolution strategy with the one-fifth success rule (Rechenberg,
   1973) moves the instance's parameter vector, Newton warm-started from the parent's equilibria;
4. the candidates (negative score, most negative first) go to ``sim.conjectures.validated.certify``; a **certified
   hit** is a certified attractor away from the claimed outcome that meets the claim's hypotheses with the
   equilibrium as the start (``certified_hit``). At most one hit is counted per instance drawn.

``seek`` repeats this for a CPU budget, drawing each instance from the source (structure, heads, tokens, dimension)
that Thompson sampling (``sim.conjectures.allocation``) expects to give the most certified hits per CPU second.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from sim.conjectures.allocation import FactoredSampler
from sim.conjectures.certify import AWAY
from sim.conjectures.families import Family, Shape, get_family, top_eigenpair
from sim.conjectures.equilibria import Instance, find_equilibria, tangent_spectrum
from sim.conjectures.structured import (Draw, NoInstance, decode_with_state, draw_structured, instance_problems, shapes,
                                        structures)
from sim.conjectures.replay import draft, replay
from sim.conjectures.validated import Problem

#: Newton starts per instance (structured ones first, random ones fill up).
STARTS = 16
#: Deflated passes over the starts for a fresh instance (the second finds what the first's roots hid).
ROUNDS = 2
#: Evolution strategy: offspring per generation, generations per instance, first step (theta is standard normal,
#: so 0.3 moves a scale or an entry by a third of its spread); a child is solved from its parent's best
#: ``WARM_STARTS`` equilibria (continuation) and ``CHILD_STARTS`` fresh starts.
OFFSPRING = 4
WARM_STARTS = 2
CHILD_STARTS = 6
GENERATIONS = 3
FIRST_SIGMA = 0.3
#: Candidates certified per instance, most negative score first (a failed one is usually a near-degenerate one).
CERTIFY_PER_INSTANCE = 2


@dataclass(frozen=True)
class Equilibrium:
    """An equilibrium ``y : shape=[l, d]`` with what the score reads: the largest real part of its tangent
    spectrum (float64), its distance from the claimed outcome, its margin inside the state hypotheses."""

    y: np.ndarray
    largest_real_part: float
    distance: float
    margin: float

    @property
    def score(self) -> float:
        return max(self.largest_real_part, -self.margin)


@dataclass
class HitCheck:
    """The decision on one candidate: ``hit`` when certified, away and admissible; ``numbers`` JSON-ready."""

    hit: bool
    reason: str
    numbers: dict = field(default_factory=dict)
    equilibrium: np.ndarray | None = None


def assess(family: Family, instance: Instance, roots: np.ndarray) -> list[Equilibrium]:
    """The roots away from the claimed outcome (shape=[N, l, d]) with their scores, best (most negative) first."""
    if len(roots) == 0:
        return []
    P, U = instance.P, instance.U
    distances = family.distance(np.broadcast_to(P, (len(roots), *P.shape)),
                                np.broadcast_to(U, (len(roots), *U.shape)), roots)
    away = np.flatnonzero(distances >= AWAY)
    if len(away) == 0:
        return []
    largest = tangent_spectrum(roots[away], instance).real.max(axis=-1)
    margins = family.state_margin(U, roots[away])
    found = [Equilibrium(roots[k], float(real), float(distances[k]), float(margin))
             for k, real, margin in zip(away, largest, margins)]
    return sorted(found, key=lambda e: e.score)


def starts(instance: Instance, tokens: int, rng: np.random.Generator, count: int = STARTS) -> np.ndarray:
    """``count`` Newton starts of ``tokens`` tokens, shape=[count, l, d]: structured ones (every token at v or -v,
    antipodal splits, the first token at v and the rest at one +-eigenvector of sum_eta U_eta or of a U_eta, in a
    random order), then random points, half of them reflected into the hemisphere of v."""
    dim = instance.U.shape[-1]
    summed = instance.U.sum(axis=0)
    ok, _, v = top_eigenpair(summed)
    v = v if ok else np.eye(dim)[0]
    eigenvectors = np.concatenate([np.real(np.linalg.eig(matrix)[1]).T for matrix in (summed, *instance.U)])
    lengths = np.linalg.norm(eigenvectors, axis=1)
    kept = lengths > 0.1  # the real part of a complex eigenvector may (nearly) vanish
    eigenvectors = eigenvectors[kept] / lengths[kept, None]
    structured = [np.tile(v, (tokens, 1)), np.tile(-v, (tokens, 1))]
    structured += [np.array([v] * k + [-v] * (tokens - k)) for k in range(1, tokens)]
    structured += [np.array([v] + [sign * e] * (tokens - 1)) for e in eigenvectors for sign in (1.0, -1.0)]
    order = rng.permutation(len(structured))
    chosen = [structured[k] for k in order[:count // 2]]
    random = rng.standard_normal((count - len(chosen), tokens, dim))
    random /= np.linalg.norm(random, axis=-1, keepdims=True)
    half = len(random) // 2
    random[:half] *= np.where(random[:half] @ v < 0, -1.0, 1.0)[..., None]
    return np.concatenate([np.array(chosen).reshape(-1, tokens, dim), random])


def certified_hit(family: Family, P: np.ndarray, U: np.ndarray, y: np.ndarray) -> HitCheck:
    """Whether the equilibrium near ``y : shape=[l, d]`` of (P, U) is a certified hit of ``family``'s conjecture:
    the replay of a witness with ``y`` as its attractor and its start (``sim.conjectures.replay``, the one rule every
    witness meets): a validated attractor, at least ``AWAY`` from the claimed outcome, the claim's hypotheses holding at
    the start with a margin beyond the certified box."""
    problem = Problem(np.asarray(P, float), np.asarray(U, float), family.causal)
    outcome = replay(draft(family.claim, problem, y, y), family)
    numbers = {**outcome.certificate.numbers, **outcome.numbers}
    return HitCheck(outcome.refuted, outcome.reason, numbers, outcome.certificate.equilibrium)


@dataclass
class Assessment:
    """An instance and its scored equilibria (``equilibria`` best first); ``score`` +inf when it has none."""

    theta: np.ndarray
    P: np.ndarray
    U: np.ndarray
    equilibria: list[Equilibrium]

    @property
    def score(self) -> float:
        return self.equilibria[0].score if self.equilibria else np.inf


def evaluate(draw: Draw, theta: np.ndarray, rng: np.random.Generator, warm: list[Equilibrium] = (),
             count: int = STARTS, rounds: int = ROUNDS) -> Assessment:
    """Decode ``theta``, find its equilibria and score them: first from the warm starts alone (the parent's
    equilibria, the planted state), then ``rounds`` deflated passes of ``count`` fresh starts, stopping as soon as an
    equilibrium scores negative."""
    family = get_family(draw.claim)
    P, U, planted = decode_with_state(draw, theta)
    if instance_problems(draw.claim, P, U):
        return Assessment(theta, P, U, [])
    instance = Instance(P, U, family.causal)
    warm_states = [e.y for e in warm] + ([] if planted is None else [planted])
    passes = [np.array(warm_states)] if warm_states else []
    if count:  # the same fresh starts in every pass: deflation sends the later passes elsewhere
        passes += [starts(instance, draw.shape.tokens, rng, count)] * rounds
    roots = np.zeros((0, draw.shape.tokens, draw.shape.dim))
    scored: list[Equilibrium] = []
    for initial in passes:
        new = find_equilibria(instance, initial, rounds=1, known=roots)
        roots = np.concatenate([roots, new])
        scored = sorted(scored + assess(family, instance, new), key=lambda e: e.score)
        if scored and scored[0].score < 0:
            break
    return Assessment(theta, P, U, scored)


def optimise(draw: Draw, parent: Assessment, rng: np.random.Generator,
             generations: int = GENERATIONS) -> tuple[Assessment, int]:
    """The (1+lambda) evolution strategy on theta until the score is negative; (best, instances evaluated).
    A child is scored by continuation: Newton from its parent's best ``WARM_STARTS`` equilibria (a planted child
    from its own planted state alone), with ``CHILD_STARTS`` fresh starts only when the parent has none."""
    sigma, evaluated = FIRST_SIGMA, 0
    for _ in range(generations):
        if parent.score < 0:
            break
        warm = [] if draw.structure == "planted" else parent.equilibria[:WARM_STARTS]  # planted: its own state
        children = [evaluate(draw, parent.theta + sigma * rng.standard_normal(len(parent.theta)), rng, warm,
                             count=0 if warm or draw.structure == "planted" else CHILD_STARTS, rounds=1)
                    for _ in range(OFFSPRING)]
        evaluated += len(children)
        best = min(children, key=lambda child: child.score)
        success = best.score < parent.score
        sigma *= 1.5 if success else 0.82  # one fifth of the generations succeeding keeps sigma (1.5 x 0.82^4 ~ 0.7)
        parent = best if success else parent
    return parent, evaluated


def seek_instance(draw: Draw, rng: np.random.Generator) -> dict:
    """Search one drawn instance: equilibria, score, optimisation, certification; a JSON-ready record."""
    family = get_family(draw.claim)
    first = evaluate(draw, draw.theta, rng)
    best, evaluated = optimise(draw, first, rng) if first.score >= 0 else (first, 0)
    record = {"structure": draw.structure, "seed": draw.seed, "shape": [draw.shape.heads, draw.shape.tokens,
              draw.shape.dim], "first_score": _finite(first.score), "score": _finite(best.score),
              "optimised": evaluated, "hit": False, "certifications": []}
    for candidate in [e for e in best.equilibria if e.score < 0][:CERTIFY_PER_INSTANCE]:
        check = certified_hit(family, best.P, best.U, candidate.y)
        record["certifications"].append(check.reason)
        if check.hit:
            record.update(hit=True, P=best.P.tolist(), U=best.U.tolist(), equilibrium=check.equilibrium.tolist(),
                          largest_real_part=candidate.largest_real_part, certificate=check.numbers)
            break
    return record


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def seek(claim: str, budget: float, seed: int = 0, *, wide: bool = False, sources: tuple[str, ...] | None = None,
         max_instances: int | None = None) -> dict:
    """Seek certified hits of ``claim`` for ``budget`` seconds of CPU time (``time.process_time``; the instance
    under way is finished). Instance k is drawn with seed [seed, k]; its source (structure, heads, tokens, dim)
    is chosen by Thompson sampling (``sim.conjectures.allocation``, its generator seeded [seed, 2^32 - 1]) over
    ``sources`` (default ``sim.conjectures.structured.structures(claim)``) and
    ``sim.conjectures.structured.shapes(claim, wide)``. JSON-ready."""
    if budget <= 0:
        raise ValueError(f"budget={budget!r} must be a positive number of CPU seconds.")
    fitting = structures(claim)
    sources = tuple(sources or fitting)
    if any(source not in fitting for source in sources):
        raise ValueError(f"sources={sources!r} must be a selection of {fitting} (the sources of {claim})")
    sampler = FactoredSampler({"structure": sources, **shapes(claim, wide)})
    chooser = np.random.default_rng([seed, 2**32 - 1])
    started = time.process_time()
    records = []
    while time.process_time() - started < budget and (max_instances is None or len(records) < max_instances):
        k, begun = len(records), time.process_time()
        choice = sampler.choose(chooser)
        shape = Shape(choice["heads"], choice["tokens"], choice["dim"])
        try:
            draw = draw_structured(claim, [seed, k], structure=choice["structure"], shape=shape)
            record = seek_instance(draw, np.random.default_rng([seed, k, 1]))
        except NoInstance as error:  # the sampler learns that this source costs time and gives nothing
            record = {"structure": choice["structure"], "seed": [seed, k], "failure": str(error), "hit": False,
                      "shape": [shape.heads, shape.tokens, shape.dim], "first_score": None, "score": None,
                      "certifications": []}
        record["cpu_seconds"] = time.process_time() - begun
        sampler.record(choice, record["hit"], record["cpu_seconds"])
        records.append(record)
    cpu = time.process_time() - started
    hits = [r for r in records if r["hit"]]
    return {"search": "seek", "claim": claim, "seed": seed, "budget_seconds": budget, "cpu_seconds": cpu,
            "instances": len(records), "hits": len(hits), "hits_per_cpu_minute": 60.0 * len(hits) / cpu,
            "sources": list(sources), "allocation": sampler.summary(), "wide_shapes": wide, "hit_records": hits,
            "misses": [{k: r[k] for k in ("structure", "seed", "shape", "first_score", "score", "certifications")}
                       for r in records if not r["hit"]]}
