"""``consensus search CLAIM`` by the seeking search (``sim.conjectures.seek``): its summary, stored witnesses and the
one-line result a user reads.

The result is never a verdict on the conjecture: "refuted by W witnesses" (each a certified hit, re-replayed and
stored), or "no certified counterexample in N instances (...)" with the search stated. Candidates that failed
certification are counted by reason.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np

from sim.conjectures.replay import make_witness
from sim.conjectures.seek import seek
from sim.conjectures.validated import Problem
from sim.conjectures.witness_index import write_index

from sim.conjectures.families import get_family

#: Certified hits re-replayed and stored as witness files (the rest are counted): each replay costs ~0.1-1 s.
STORED_WITNESSES = 4


def reason_class(reason: str) -> str:
    """A reason with its numbers removed, so that reasons of one kind count together."""
    return re.sub(r"[-+]?\d[\d.e+-]*", "#", reason.split(";")[0]).strip()


def rejected_counts(summary: dict) -> dict[str, int]:
    """Why the instances without a hit gave none, by reason."""
    counts: Counter = Counter()
    for miss in summary["misses"]:
        if miss.get("certifications"):
            counts.update(f"certification: {reason_class(r)}" for r in miss["certifications"])
        elif miss.get("score") is None:
            counts["no equilibrium away from the claimed outcome found (or no valid instance)"] += 1
        else:
            counts["no linearly stable equilibrium away from the claimed outcome (best score >= 0)"] += 1
    return dict(counts.most_common())


def result_line(claim: str, summary: dict, stored: int) -> str:
    if summary["hits"]:
        return (f"refuted by {summary['hits']} witnesses ({stored} stored) in {summary['instances']} instances of "
                f"{claim}")
    return (f"no certified counterexample in {summary['instances']} instances (seeking search, seed "
            f"{summary['seed']}, {summary['cpu_seconds']:.0f} CPU s of a {summary['budget_seconds']:g} s budget, "
            f"family: {get_family(claim).description})")


def run_seek(claim: str, out: Path, budget: float, seed: int = 0, instances: int | None = None,
             keep: int = STORED_WITNESSES) -> dict:
    """Seek ``claim`` for ``budget`` CPU seconds (at most ``instances`` instances); write ``out/summary.json`` and up
    to ``keep`` witnesses ``out/witnesses/<claim>/seek-<seed>-<k>-l<l>-d<d>.json``; return the summary."""
    summary = seek(claim, budget, seed, max_instances=instances)
    folder = Path(out) / "witnesses" / claim
    names = []
    for record in summary["hit_records"][:keep]:
        family = get_family(claim)
        problem = Problem(np.asarray(record["P"], float), np.asarray(record["U"], float), family.causal)
        y = np.asarray(record["equilibrium"], float)
        witness = make_witness(claim, problem, y, y, provenance=f"sim.conjectures.seek seed {record['seed']} "
                               f"({record['structure']})", seeds={"seek": record["seed"]})
        name = f"seek-{record['seed'][0]}-{record['seed'][1]}-l{y.shape[0]}-d{y.shape[1]}-h{len(problem.P)}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.json").write_text(json.dumps(witness, indent=1))
        names.append(name)
    if names:
        write_index(folder)
    summary = dict(summary, witnesses=names, rejected=rejected_counts(summary),
                   result=result_line(claim, summary, len(names)))
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / "summary.json").write_text(json.dumps(summary, indent=1, default=float))
    return summary
