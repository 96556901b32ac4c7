"""``consensus search CLAIM`` by the seeking search (``sim.conjectures.seek``): its summary, stored witnesses and the
one-line result a user reads.

The result is never a verdict on the conjecture: "refuted by W witnesses" (each a certified hit, re-replayed and
stored), or "no certified counterexample in N instances (...)" with the search stated. Candidates that failed
certification are counted by reason.

The output folder follows the rules of every command's (``foundation.outputs``), as the random search's
(``sim.conjectures.distributed``): it is checked before the search starts (a file, a folder of other files, of
another command or of other settings is refused with one line, nothing written), locked for the search's whole life,
and claimed (``settings.json``) just before the first write; every file is written atomically. A rerun with the same
settings searches again and replaces the earlier run's witnesses (those its index lists). The witness index lists
the witnesses this search wrote and no other file: a file put beside them is not vouched for, and replay refuses it.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np

from foundation.files import write_json
from foundation.outputs import SCHEMA_VERSIONS, check_output_folder, claim_output_folder, output_lock, say_rebuilt
from sim.conjectures.distributed import SEARCH_COMMAND
from sim.conjectures.replay import make_witness
from sim.conjectures.seek import seek
from sim.conjectures.validated import Problem
from sim.conjectures.witness_index import indexed, write_index

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
    family = get_family(claim)
    line = (f"no certified counterexample in {summary['instances']} instances (seeking search, seed "
            f"{summary['seed']}, {summary['cpu_seconds']:.0f} CPU s of a {summary['budget_seconds']:g} s budget, "
            f"family: {family.description})")
    # a search that can certify no witness supports nothing by finding none (as the random search's record says)
    return line + (f". This search settles nothing: {family.no_witness}" if family.no_witness else "")


def seek_settings(claim: str, budget: float, seed: int, instances: int | None, keep: int) -> dict:
    """What a seeking search's folder is written with; a rerun must repeat them to write into it."""
    return {"claim": claim, "method": "seek", "budget_seconds": budget, "seed": seed, "instances": instances,
            "stored_witnesses": keep}


def run_seek(claim: str, out: Path | str, budget: float, seed: int = 0, instances: int | None = None,
             keep: int = STORED_WITNESSES) -> dict:
    """Seek ``claim`` for ``budget`` CPU seconds (at most ``instances`` instances); write ``out/summary.json`` (schema:
    foundation/schemas/seek-summary.schema.json) and up to ``keep`` witnesses
    ``out/witnesses/<claim>/seek-<seed>-<k>-l<l>-d<d>-h<h>.json``; return the summary. An
    ``OutputError`` (one line) before the search when ``out`` cannot take its output (see the module's docstring)."""
    with output_lock(out, command=SEARCH_COMMAND):
        output = check_output_folder(out, command=SEARCH_COMMAND,
                                     settings=seek_settings(claim, budget, seed, instances, keep))
        summary = seek(claim, budget, seed, max_instances=instances)
        witnesses = dict(_witness(claim, record) for record in summary["hit_records"][:keep])
        out = claim_output_folder(output)
        _store(out / "witnesses" / claim, witnesses)
        summary = dict(schema_version=SCHEMA_VERSIONS["seek-summary"], **summary, witnesses=list(witnesses),
                       rejected=rejected_counts(summary), result=result_line(claim, summary, len(witnesses)))
        write_json(out / "summary.json", summary, default=float)
    return summary


def _witness(claim: str, record: dict) -> tuple[str, dict]:
    """A certified hit's witness (replayed again by ``make_witness``) and its file name without ``.json``."""
    family = get_family(claim)
    problem = Problem(np.asarray(record["P"], float), np.asarray(record["U"], float), family.causal)
    y = np.asarray(record["equilibrium"], float)
    witness = make_witness(claim, problem, y, y, provenance=f"sim.conjectures.seek seed {record['seed']} "
                           f"({record['structure']})", seeds={"seek": record["seed"]})
    return f"seek-{record['seed'][0]}-{record['seed'][1]}-l{y.shape[0]}-d{y.shape[1]}-h{len(problem.P)}", witness


def _store(folder: Path, witnesses: dict[str, dict]) -> None:
    """Write ``witnesses`` (file name without ``.json`` -> witness) into ``folder``, each atomically, and an index
    listing them and nothing else. The witnesses of an earlier run into this folder (those its index lists) that
    this run does not write again are removed first, and said so; any other file is left as it is, unindexed."""
    paths = [folder / f"{name}.json" for name in witnesses]
    for earlier in indexed(folder) if folder.is_dir() else []:
        if earlier not in paths:
            earlier.unlink()
            say_rebuilt(folder, f"removed {earlier.name}, a witness of the earlier search with these settings")
    if witnesses:
        folder.mkdir(parents=True, exist_ok=True)
    for path, witness in zip(paths, witnesses.values()):
        write_json(path, witness)
    if folder.is_dir():
        write_index(folder, paths)
