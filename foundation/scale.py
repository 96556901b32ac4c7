"""The scale of a report build: ``full`` (the report's stated sizes) or ``smoke`` (every full check on tiny sizes).

``python -m reports build --scale smoke`` runs the same path as ``make report`` (one test process, every
``@pytest.mark.full`` check, the report written) with sizes small enough for CI: it shows that the path works
and stays within its memory, not what the paper's claims come to. A check whose sizes can shrink reads
:func:`report_scale`; the verdicts of a smoke build are the plumbing's, and its report says which scale it is.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Set by ``python -m reports build --scale``; unset means ``full``.
REPORT_SCALE_ENV = "CONSENSUS_REPORT_SCALE"
SCALES = ("full", "smoke")


def report_scale() -> str:
    """The scale of the report build this process belongs to (``full`` outside a build)."""
    scale = os.environ.get(REPORT_SCALE_ENV) or "full"
    if scale not in SCALES:
        raise ValueError(f"{REPORT_SCALE_ENV}={scale!r} must be one of {SCALES}.")
    return scale


def scaled(folder: Path) -> Path:
    """Where a build at this scale keeps what it would keep in ``folder``: ``folder`` itself at ``full`` scale,
    ``folder-smoke`` beside it at ``smoke`` scale (a smoke build never touches the full build's runs)."""
    folder = Path(folder)
    return folder if report_scale() == "full" else folder.with_name(f"{folder.name}-{report_scale()}")
