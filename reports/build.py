"""Build the HTML verification report and ``verdicts.json`` (schema: foundation/schemas/verdicts.schema.json) from
collected evidence."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from foundation.registration import COVERED, GAP, coverage as registered_coverage
from foundation.evidence import TestEvidence, records_of
from foundation.files import atomic_write, write_json
from foundation.manifest import run_manifest
from foundation.memory import MEMORY_LEDGER_ENV, read_ledger, summary as memory_summary
from foundation.outputs import SCHEMA_VERSIONS
from foundation.records import NO_CHECK, CheckResult, worst_verdict
from foundation.registry import CLAIMS
from foundation.scale import report_scale
from .render import mathjax_bundle, render_html

if TYPE_CHECKING:
    from foundation.records import ReportSection

EXTRA_SECTIONS_DIR_ENV = "CONSENSUS_SECTIONS_DIR"
#: The key a report section written by a benchmark carries once the build has checked it: the git revision it
#: was measured at (``foundation.manifest.git_revision``).
SECTION_REVISION_KEY = "git_revision"
#: Set by ``python -m reports build --max-rss``: the bound of the report's peak resident memory, in bytes.
MEMORY_BOUND_ENV = "CONSENSUS_MEMORY_BOUND_BYTES"


class ReportInputError(ValueError):
    """A report's output folder or reused input cannot be used; the message says which and what to do."""


def read_section(path: Path) -> dict:
    """A report section JSON written by a benchmark: a dict with at least a ``title``."""
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise ReportInputError(f"report section {path} cannot be read as JSON ({error}); rerun the build with "
                               "its benchmarks, or delete the file.") from error
    if not isinstance(raw, dict) or not isinstance(raw.get("title"), str):
        raise ReportInputError(f"report section {path} must be a JSON object with a 'title'; rerun the build "
                               "with its benchmarks, or delete the file.")
    return raw


def check_reused_sections(folder: Path, revision: str, *, known: tuple[str, ...], reused: bool = True) -> None:
    """Refuse a section in ``folder`` that no benchmark of the build writes (its name not in ``known``: a file put
    there, never measured by this build), and, where the sections are ``reused`` (``--no-bench``), one measured at
    another git revision than ``revision`` (or unstamped): a report must not show another revision's measurements,
    nor anyone's, as this one's."""
    for path in sorted(Path(folder).glob("*.section.json")):
        if path.name.removesuffix(".section.json") not in known:
            raise ReportInputError(f"{path} is not a section any benchmark of this build writes ({', '.join(known)}): "
                                   f"delete it, or delete {folder}.")
        if not reused:
            continue
        measured = read_section(path).get(SECTION_REVISION_KEY)
        if measured != revision:
            at = f"at revision {measured}" if measured else "at an unrecorded revision"
            raise ReportInputError(
                f"{path} was measured {at}, not at this tree's revision {revision}: run the build without "
                f"--no-bench to measure again, or delete {folder} to build the report without the benchmarks.")


def claim_entries(evidence: list[TestEvidence], covered: dict[str, dict[str, str]] | None = None) -> list[dict]:
    """One entry per registry claim, in registry order: its verdict, records, the tests behind them, and for each
    declared evidence kind whether a check of it exists (``covered``) or not (``gap``). A kind is covered by a
    registered check (``covered``, by default ``foundation.registration.coverage`` of the checks registered in this process)
    or by a record of that method handed over outside a negative control (a search names its conjecture in its
    record, not on the test)."""
    covered = registered_coverage() if covered is None else covered
    records: dict[str, list[CheckResult]] = {c.id: [] for c in CLAIMS}
    tests: dict[str, list[TestEvidence]] = {c.id: [] for c in CLAIMS}
    recorded: dict[str, set[str]] = {c.id: set() for c in CLAIMS}
    for ev in evidence:
        results = records_of(ev)
        for claim in dict.fromkeys([*ev.claims, *(r.claim for r in results)]):
            tests[claim].append(ev)
        for result in results:
            records[result.claim].append(result)
        if not ev.control:
            for result in ev.records:
                recorded[result.claim].add(result.method)
    entries = []
    for claim in CLAIMS:
        kinds = {kind: COVERED if kind in recorded[claim.id] else state for kind, state in covered[claim.id].items()}
        verdict = worst_verdict([r.verdict for r in records[claim.id]])
        if verdict == NO_CHECK and claim.checks:  # the registry names its checks: none of them ran in this run
            verdict = "not-run"
        entries.append({
            "claim": claim,
            "verdict": verdict,
            "methods": sorted({r.method for r in records[claim.id]}),
            "records": records[claim.id],
            "tests": tests[claim.id],
            "controls": [t for t in tests[claim.id] if t.control],
            "evidence": kinds,
            "gaps": [kind for kind, state in kinds.items() if state == GAP],
        })
    return entries


def _load_extra_sections() -> list["ReportSection"]:
    """Sections written by commands run before pytest (benchmarks), as JSON files in a folder."""
    from foundation.records import ReportSection

    folder = os.environ.get(EXTRA_SECTIONS_DIR_ENV)
    if not folder or not Path(folder).is_dir():
        return []
    return [ReportSection.from_json(read_section(path)) for path in sorted(Path(folder).glob("*.section.json"))]


def memory_record() -> dict | None:
    """The memory of the report's stages so far (``foundation.memory``), when a build names a ledger; else ``None``."""
    ledger = os.environ.get(MEMORY_LEDGER_ENV)
    if not ledger:
        return None
    bound = os.environ.get(MEMORY_BOUND_ENV)
    return memory_summary(read_ledger(ledger), int(bound) if bound else None)


def write_report(out: Path, *, evidence: list[TestEvidence], sections: list["ReportSection"], started: float,
                 exitstatus: int, full: bool, covered: dict[str, dict[str, str]] | None = None) -> Path:
    """Write ``out/index.html`` and ``out/verdicts.json``; return the HTML path. ``covered``: the evidence kinds
    with a check, per claim (``foundation.registration.coverage``; by default of the checks registered in this process)."""
    out.mkdir(parents=True, exist_ok=True)
    entries = claim_entries(evidence, covered)
    sections = sorted([*sections, *_load_extra_sections()], key=lambda s: (s.order, s.title))
    seeds = {}
    for entry in entries:
        for result in entry["records"]:
            seeds.update({f"{result.claim}:{k}": v for k, v in result.seeds.items()})
    manifest = run_manifest(
        seeds=seeds,
        hypothesis_profile=os.environ.get("HYPOTHESIS_PROFILE", "ci"),
        full_checks=full,
        scale=report_scale(),
        pytest_exitstatus=exitstatus,
        duration_seconds=round(time.time() - started, 1),
        tests=len(evidence),
        # failed tests that mark no claim and hand over no record (helper machinery): no claim shows them
        failed_tests_without_claim=[{"nodeid": ev.nodeid, "message": ev.message.strip().splitlines()[-1:]}
                                    for ev in evidence if ev.outcome == "failed" and not ev.claims and not ev.records],
        **({"memory": memory} if (memory := memory_record()) else {}),
    )
    counts = {}
    for entry in entries:
        counts[entry["verdict"]] = counts.get(entry["verdict"], 0) + 1

    verdicts = {
        "schema_version": SCHEMA_VERSIONS["verdicts"],
        "manifest": manifest,
        "counts": counts,
        "gaps": {e["claim"].id: e["gaps"] for e in entries if e["gaps"]},
        "claims": [
            {
                "claim": e["claim"].id,
                "source_long": e["claim"].source_long,
                "source_icml": e["claim"].source_icml,
                "statement": e["claim"].statement,
                "verdict": e["verdict"],
                "methods": e["methods"],
                "evidence": e["evidence"],
                "gaps": e["gaps"],
                "records": [r.to_json() for r in e["records"]],
                "tests": [{"nodeid": t.nodeid, "outcome": t.outcome, "control": t.control, "examples": t.examples}
                          for t in e["tests"]],
            }
            for e in entries
        ],
        "sections": [s.to_json() for s in sections],
    }
    write_json(out / "verdicts.json", verdicts)

    html = render_html(entries=entries, sections=sections, manifest=manifest, counts=counts,
                       mathjax=mathjax_bundle())
    path = out / "index.html"
    atomic_write(path, lambda stream: stream.write(html))
    return path

