"""``python -m theory check``: the command-line contract of SPEC section 6."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from theory.__main__ import main
from theory.claim_checks import CHECKS


def test_every_check_is_registered_under_a_claim_with_symbolic_exact_proof_or_reduction_evidence():
    """theory checks symbolically: a proof, an identity, an exact computation, or the identities of a reduction whose
    remainder is argued in words (causal.karagodin-thm1, causal.time-varying: supported)."""
    from foundation.registry import get_claim
    for claim in CHECKS:
        assert {"symbolic", "exact", "proof", "reduction"} & set(get_claim(claim).evidence), claim


def test_json_output_lists_claim_verdict_method_detail():
    out = subprocess.run([sys.executable, "-m", "theory", "check", "full.equilibria", "causal.first-token", "--json"],
                         capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[2]).stdout
    records = json.loads(out)
    assert [r["claim"] for r in records] == ["full.equilibria", "causal.first-token"]
    assert all(set(r) == {"claim", "verdict", "method", "detail"} and r["verdict"] == "verified" for r in records)


def test_unknown_claim_id_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "no.such-claim"])
    assert exit_info.value.code == 2
    assert "no.such-claim" in capsys.readouterr().err
