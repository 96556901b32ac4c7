"""Result records: what every check returns and the report reads.

Check functions in ``theory``, ``sim`` and ``empirical`` are pure: they return a
:class:`CheckResult` and never print. Tests hand the records to the pytest plugin through the
``record`` fixture; the report is built only from records.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .registry import CLAIMS_BY_ID

#: The verdicts of SPEC section 5, most severe first (the order aggregation uses). ``verified`` and ``supported`` are
#: the two verdicts of a check that found nothing against its claim, told apart by what the check can prove
#: (``Claim.can_verify``): ``verified`` by a proof, a symbolic identity or an exact computation, or, for an observation
#: (a figure, an experiment), by the run that shows it; ``supported`` by a finite method (a search, a simulation, a
#: numeric spot check, property tests on generated instances) of a conjecture or a mathematical statement: it proves
#: nothing, and beside a proof's ``verified`` the claim reads ``verified``.
#: ``unsupported``, the dual of ``supported`` for a statement about a limit checked by a finite computation (an
#: ``emp.*`` claim's "mean E -> 0"; a theorem's convergence as t -> oo run to a horizon): the run went against it
#: within its stated horizon, which never refutes a statement about the limit. Hence only from a finite method
#: (:data:`FINITE_METHODS`).
VERDICTS = ("failed", "refuted", "discrepancy", "unsupported", "verified", "supported", "not-run")
NO_CHECK = "no check yet"
#: The evidence kinds (``foundation.registry.EVIDENCE_KINDS``) that are finite computations: runs, simulations,
#: samples. Only these give ``unsupported``.
FINITE_METHODS = ("numeric", "figure", "empirical", "monte-carlo")


def holding_verdict(claim: str, method: str) -> str:
    """The verdict of a check of ``claim`` by ``method`` that found nothing against it: ``verified`` where the method
    can prove the claim (``Claim.can_verify``), else ``supported``."""
    return "verified" if CLAIMS_BY_ID[claim].can_verify(method) else "supported"


@dataclass(frozen=True)
class Figure:
    """A PNG written by a check. ``paper_figure`` names the paper's figure it reproduces ("Fig. 4")."""

    path: str
    caption: str
    paper_figure: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Figure":
        """The figure of its ``to_json`` data (``asdict``)."""
        return cls(**data)


@dataclass(frozen=True)
class Table:
    """A small table for the report: ``rows`` are lists of cells, one per column."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Table":
        """The table of its JSON data (lists back to tuples)."""
        return cls(data["title"], tuple(data["columns"]), tuple(tuple(row) for row in data["rows"]))


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check of one claim.

    ``numbers`` holds the measured quantities (residuals, rates, counts); ``tolerance`` is the
    threshold the verdict used, with ``tolerance_reason`` saying why it is that size.
    ``expression`` is the identity that was verified, readable (e.g. the expression that
    simplified to zero). For a ``discrepancy``, ``printed`` is the statement as printed,
    ``corrected`` the statement that holds (and was verified).
    """

    claim: str
    method: str
    verdict: str
    detail: str = ""
    numbers: Mapping[str, Any] = field(default_factory=dict)
    tolerance: float | None = None
    tolerance_reason: str | None = None
    expression: str | None = None
    printed: str | None = None
    corrected: str | None = None
    figures: tuple[Figure, ...] = ()
    tables: tuple[Table, ...] = ()
    seeds: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.claim not in CLAIMS_BY_ID:
            raise ValueError(f"claim={self.claim!r} must be an id of the claim registry (foundation/registry.py).")
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict={self.verdict!r} must be one of {VERDICTS}.")
        claim = CLAIMS_BY_ID[self.claim]
        if claim.conjecture and self.verdict == "discrepancy":
            raise ValueError(f"claim {self.claim!r} is a conjecture: a search gives 'supported' or 'refuted', never "
                             "'discrepancy'.")
        if self.verdict in ("verified", "supported") and self.verdict != holding_verdict(self.claim, self.method):
            raise ValueError(f"a check of {self.claim!r} by {self.method!r} that finds nothing against it gives "
                             f"{holding_verdict(self.claim, self.method)!r}, not {self.verdict!r}: only a proof, a "
                             "symbolic identity or an exact computation verifies a mathematical claim (a conjecture: "
                             "only a proof), a statement about a limit too; a figure or an experiment that states no "
                             "limit is verified by the run that shows it.")
        if self.verdict == "unsupported" and (claim.conjecture or self.method not in FINITE_METHODS):
            raise ValueError(f"verdict 'unsupported' is for a statement about a limit that a finite run ({FINITE_METHODS})"
                             f" went against; not for a conjecture nor by {self.method!r} ({self.claim!r}).")
        if self.verdict == "discrepancy" and not (self.printed and self.corrected):
            raise ValueError("a 'discrepancy' verdict must carry the printed statement and the corrected one.")
        if self.tolerance is not None and not self.tolerance_reason:
            raise ValueError("a tolerance must come with tolerance_reason saying why it has that size.")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (non-finite floats become strings, numpy scalars plain numbers)."""
        return jsonable(asdict(self))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "CheckResult":
        """The record of its ``to_json`` data, whose ``to_json`` is that data again (how a test run on a parallel
        worker hands its records to the process writing the report)."""
        return cls(**{**data, "figures": tuple(Figure.from_json(f) for f in data.get("figures", ())),
                      "tables": tuple(Table.from_json(t) for t in data.get("tables", ()))})


@dataclass(frozen=True)
class ReportSection:
    """A free-standing section of the report (e.g. "Theory meets practice", a benchmark)."""

    title: str
    text: str = ""
    tables: tuple[Table, ...] = ()
    figures: tuple[Figure, ...] = ()
    order: int = 100

    def to_json(self) -> dict[str, Any]:
        return jsonable(asdict(self))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ReportSection":
        """The section of its JSON data (``to_json``, or a ``*.section.json`` file of a benchmark)."""
        return cls(title=data["title"], text=data.get("text", ""), order=data.get("order", 100),
                   tables=tuple(Table.from_json(t) for t in data.get("tables", ())),
                   figures=tuple(Figure.from_json(f) for f in data.get("figures", ())))


def worst_verdict(verdicts: list[str]) -> str:
    """Aggregate verdicts of one claim: the most severe wins; none at all is a visible gap."""
    present = [v for v in VERDICTS if v in verdicts]
    return present[0] if present else NO_CHECK


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: mappings and sequences recursively, numpy / torch scalars and arrays as numbers
    and lists, non-finite floats as strings ("nan", "inf"), complex numbers as [real, imaginary], anything else as
    its string."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()  # numpy / torch scalar
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, complex):
        return [jsonable(value.real), jsonable(value.imag)]
    if hasattr(value, "tolist"):
        return jsonable(value.tolist())
    return str(value)
