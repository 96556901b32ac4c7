"""Certified hits per CPU-minute: the seeking search (``sim.conjectures.seek``) against random sampling, side by side in
one run.

Random sampling is the search of ``sim.conjectures.search`` with its random stage only: chunks of ``CHUNK`` instances
drawn from the claim's family (chunk k of a run with seed s by ``np.random.default_rng(chunk_seed(claim, k) + [s])``),
integrated to the family's horizon by the compiled solver, scored by the distance from the claimed outcome at T.
Every instance scoring above ``sim.conjectures.search.HIT`` is certified with ``sim.conjectures.validated.certify`` at
its end state (no cap per chunk, unlike ``sim.conjectures.search``'s two: the stronger baseline), and counts as a hit by
the same rule as the seeking search (``sim.conjectures.seek.certified_hit``): at most one hit per instance drawn.

Both searches run in this process for the same CPU budget (``time.process_time``), after a warm-up outside the
timing (Numba's compilation of the integrator, the first certification). BLAS runs on one thread.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from foundation.manifest import run_manifest

from sim.conjectures.families import FAMILIES, chunk_seed, get_family
from sim.field.products import limit_threads
from sim.conjectures.search import HIT, integrate
from sim.conjectures.seek import certified_hit, seek

#: Random instances per chunk (as ``sim.conjectures.distributed.CHUNK_SIZE``: one batched integration).
CHUNK = 64
#: The claims measured by default: the target's claim first.
DEFAULT_CLAIMS = ("conj.multihead-causal", "conj.value-causal", "conj.value-full", "conj.gradient-value",
                  "conj.nonsymmetric-full")


def random_search(claim: str, budget: float, seed: int = 0) -> dict:
    """Random sampling of ``claim``'s family for ``budget`` CPU seconds (the chunk under way is finished)."""
    family = get_family(claim)
    started = time.process_time()
    instances = candidates = 0
    hits, chunks = [], []
    while time.process_time() - started < budget:
        chunk_seeds = chunk_seed(claim, len(chunks)) + [seed]
        rng = np.random.default_rng(chunk_seeds)
        shape = family.draw_shape(rng)
        _, batch = family.draw(rng, CHUNK, shape)
        end = integrate(family, batch)
        scores = np.where(batch.valid, family.outcome_distance(batch.P, batch.U, end, batch.y0), 0.0)
        instances += int(np.sum(batch.valid))
        chunks.append(chunk_seeds)
        for i in np.flatnonzero(scores > HIT):
            candidates += 1
            check = certified_hit(family, batch.P[i], batch.U[i], end[i])
            if check.hit:
                hits.append({"seed": chunk_seeds, "index": int(i), "shape": [shape.heads, shape.tokens, shape.dim],
                             "score": float(scores[i]), "certificate": check.numbers})
    cpu = time.process_time() - started
    return {"search": "random", "claim": claim, "seed": seed, "budget_seconds": budget, "cpu_seconds": cpu,
            "instances": instances, "candidates_certified": candidates, "hits": len(hits),
            "hits_per_cpu_minute": 60.0 * len(hits) / cpu, "chunk_seeds": chunks, "hit_records": hits}


def _warm_up(claim: str) -> None:
    """Compile the integrator and load the certifier outside the timing."""
    family = get_family(claim)
    rng = np.random.default_rng(0)
    _, batch = family.draw(rng, 2, family.draw_shape(rng))
    integrate(family, batch, 1.0)
    seek(claim, 1e-9, seed=10**6, max_instances=1)


def compare(claims: tuple[str, ...] = DEFAULT_CLAIMS, budget: float = 60.0, seed: int = 0,
            sources: tuple[str, ...] | None = None) -> dict:
    """Both searches per claim at the same CPU budget; the ratio of their certified hits per CPU-minute.
    ``sources`` restricts the seeking search's sources (an ablation; default all that fit each claim)."""
    unknown = [c for c in claims if c not in FAMILIES]
    if unknown:
        raise ValueError(f"claims {unknown} have no search; known: {', '.join(FAMILIES)}")
    if budget <= 0:
        raise ValueError(f"budget={budget!r} must be a positive number of CPU seconds.")
    results = []
    load_before = os.getloadavg()
    with limit_threads(1):
        for claim in claims:
            _warm_up(claim)
            baseline = random_search(claim, budget, seed)
            seeking = seek(claim, budget, seed, sources=sources)
            ratio = (seeking["hits_per_cpu_minute"] / baseline["hits_per_cpu_minute"]
                     if baseline["hits"] else None)
            results.append({"claim": claim, "random": baseline, "seek": seeking, "ratio": ratio})
    return {"manifest": run_manifest(Path(__file__).parent, claims=list(claims), budget_seconds=budget, seed=seed,
                                     sources=sources and list(sources)),
            "budget_seconds": budget, "seed": seed, "clock": "time.process_time (CPU seconds of this process)",
            "load_average_before": load_before, "load_average_after": os.getloadavg(),
            "claims": results, "target": "seek >= 5x random on conj.multihead-causal"}
