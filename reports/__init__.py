"""The claim registry, result records and the HTML verification report."""

from .records import VERDICTS, CheckResult, Figure, ReportSection, Table, worst_verdict
from .registry import CLAIMS, CLAIMS_BY_ID, Claim, get_claim

__all__ = ["CLAIMS", "CLAIMS_BY_ID", "VERDICTS", "CheckResult", "Claim", "Figure", "ReportSection", "Table",
           "get_claim", "worst_verdict"]
