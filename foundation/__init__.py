"""The ground floor every package stands on: the claim registry, result records, checks registered by claim, and the
files, output folders, manifest, memory ledger and scale that the numerics and the report share (docs/layout.md)."""

from .records import VERDICTS, CheckResult, Figure, ReportSection, Table, worst_verdict
from .registry import CLAIMS, CLAIMS_BY_ID, Claim, get_claim

__all__ = ["CLAIMS", "CLAIMS_BY_ID", "VERDICTS", "CheckResult", "Claim", "Figure", "ReportSection", "Table",
           "get_claim", "worst_verdict"]
