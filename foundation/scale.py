"""The scale of a report build: ``full``, ``short`` or ``smoke``.

* ``full``: every check at the report's stated sizes, the model runs of the paper's architectures included
  (GPT-2 XL and GPT-Neo 2.7B: figures 9-10 with random weights, and 7-8 wherever their trained weights are). On a
  2-core CPU those runs alone take hours (docs/report.md, "How long make report takes"); on a GPU, minutes.
* ``short``: the same checks at the same sizes, except those model runs, whose claims are recorded ``not-run``
  with the command that runs them. Every other verdict is decided by the same rule on the same data as at ``full``
  scale, so a short report is a full report with some claims left open, never a different one. ``make report``
  builds it where no CUDA device is (:func:`default_scale`); the audits of the paper's architectures (a few passes)
  still run.
* ``smoke``: every full check on tiny sizes, minutes: the path and its memory, not the verdicts (what CI runs).

A check whose sizes can shrink reads :func:`check_sizes`; the report says which scale it was built at.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Set by ``python -m reports build --scale``; unset means ``full``.
REPORT_SCALE_ENV = "CONSENSUS_REPORT_SCALE"
SCALES = ("full", "short", "smoke")
#: What each scale runs, in the words the build prints and the report's first screen shows.
SCALE_DESCRIPTIONS = {
    "full": "every check at the report's stated sizes",
    "short": "every check at the report's stated sizes except the model runs of the paper's architectures "
             "(GPT-2 XL, GPT-Neo 2.7B: figures 7-10), which are recorded not-run; `make report SCALE=full` "
             "or a GPU runs them",
    "smoke": "every full check on tiny sizes: the report's path and memory, not what the claims come to",
}


def report_scale() -> str:
    """The scale of the report build this process belongs to (``full`` outside a build)."""
    scale = os.environ.get(REPORT_SCALE_ENV) or "full"
    if scale not in SCALES:
        raise ValueError(f"{REPORT_SCALE_ENV}={scale!r} must be one of {SCALES}.")
    return scale


def default_scale(cuda_available: bool) -> str:
    """The scale ``make report`` builds: ``full`` with a CUDA device (the paper's architectures run in minutes),
    else ``short``."""
    return "full" if cuda_available else "short"


def check_sizes() -> str:
    """The sizes the checks run at: ``smoke`` at the smoke scale, else ``full`` (the short scale leaves some runs
    out, it never shrinks one)."""
    return "smoke" if report_scale() == "smoke" else "full"


def scaled(folder: Path) -> Path:
    """Where a build at this scale keeps what it would keep in ``folder``: ``folder`` itself at ``full`` and
    ``short`` scale (a short build's runs are the full build's, reused by it), ``folder-smoke`` beside it at ``smoke``
    scale (a smoke build never touches the full build's runs)."""
    folder = Path(folder)
    return folder if check_sizes() == "full" else folder.with_name(f"{folder.name}-smoke")
