"""The report's model work as jobs of their own, run one at a time before its tests.

A float32 GPT-Neo 2.7B run peaks at 11.0 GiB of resident memory (measured: 4 prompts x 64 tokens, random weights),
GPT-2 XL at 6.8 GiB; the project's machine has 23 GiB, and the report must stay under half of it. Run inside the
test process, or in a child beside it, a model adds to whatever the test process holds (up to 4.8 GiB after the
whole suite). So ``python -m reports build`` runs each job below as a command of its own, alone, before pytest
(``python -m empirical.report_jobs --run NAME``, its peak measured: ``foundation.memory``); the tests then read the
runs and audits the jobs left under ``build/`` (``run_variant`` and ``cached_audit`` reuse a finished run or audit
of the same settings), and compute anything missing themselves, in a child process.

``python -m empirical.report_jobs --list`` prints the job names of the report's scale (``foundation.scale``), one a line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from foundation.scale import check_sizes, report_scale, scaled

from .audit.measure import AuditSettings
from .audit.store import cached_audit
from .sources import PAPER_MODELS, locate
from .suite import SMOKE_STAND_INS, report_profile_variants, run_variant

ROOT = Path(__file__).resolve().parent.parent
#: Where the report keeps its runs and audits (``build/runs``, ``build/audits``; ``-smoke`` beside them at the smoke
#: scale): tests/empirical/test_claims.py and tests/audit/test_audit_full.py read them there.
RUNS, AUDITS = ROOT / "build" / "runs", ROOT / "build" / "audits"

#: The audits' sizes (tests/audit/test_audit_full.py states them in the report): trained SmolLM2-135M, Gemma 3 270M
#: and trained GPT-2 XL / GPT-Neo 2.7B where their weights are get 8 prompts (so the rate comparisons' t-intervals
#: over prompts are not too wide) of 64 tokens, 3 passes; the paper's architectures with random weights 4 x 32 tokens,
#: 2 passes (each loads the whole model: 10.6 GB in float32 for GPT-Neo 2.7B). At the smoke scale, tiny sizes.
TRAINED_AUDIT = {"full": AuditSettings(prompts=8, length=64, passes=3, seed=0),
                 "smoke": AuditSettings(prompts=2, length=16, passes=1, seed=0)}
RANDOM_PAPER_AUDIT = {"full": AuditSettings(prompts=4, length=32, passes=2, seed=0),
                      "smoke": AuditSettings(prompts=2, length=8, passes=1, seed=0)}


def report_audits() -> list[tuple[str, str, AuditSettings]]:
    """The audits of the report at its scale, as ``(model, weights, settings)``: the in-kind trained families, and
    the paper's architectures with random weights where their trained weights are absent (at the smoke scale, their
    tiny stand-ins). Trained paper models, where present, are audited by ``trained_paper_audits``."""
    sizes = check_sizes()
    absent = [model for model in PAPER_MODELS if locate(model) is None]
    return [("smollm2-135m", "trained", TRAINED_AUDIT[sizes]), ("gemma3-270m", "trained", TRAINED_AUDIT[sizes]),
            *((SMOKE_STAND_INS[m] if sizes == "smoke" else m, "random", RANDOM_PAPER_AUDIT[sizes]) for m in absent)]


def jobs() -> dict[str, tuple]:
    """Job name -> what it does: ``("run", variant)`` or ``("audit", model, weights, settings)``, in the order the
    report runs them (the runs of the report's cpu profile that need no download, at its scale, then the audits)."""
    runs = {f"run {v.key}": ("run", v) for v in report_profile_variants()}
    audits = {f"audit {model} ({weights})": ("audit", model, weights, settings)
              for model, weights, settings in report_audits()}
    return {**runs, **audits}


def run_job(name: str) -> None:
    """Run the job ``name`` (or find it done) into the report's folders."""
    job = jobs()[name]
    if job[0] == "run":
        run_variant(job[1], scaled(RUNS), progress=False, decide=True)
    else:
        cached_audit(*job[1:], scaled(AUDITS))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m empirical.report_jobs",
                                     description="The report's model work, one job at a time (run by `python -m "
                                                 "reports build` before its tests).")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="print the jobs' names, one a line")
    action.add_argument("--run", metavar="NAME", help="run one job (a name that --list prints)")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(jobs()))
        return 0
    if args.run not in jobs():
        parser.error(f"--run {args.run!r} is not a job of the report at the {report_scale()} scale: {list(jobs())}.")
    run_job(args.run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
