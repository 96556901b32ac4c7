"""Result records validate what they carry; aggregation takes the most severe verdict."""

import json
import math

import numpy as np
import pytest

from reports.records import NO_CHECK, CheckResult, worst_verdict


@pytest.mark.parametrize(
    "kwargs, message",
    [
        pytest.param(dict(claim="no.such", method="symbolic", verdict="verified"), "claim registry", id="unknown-claim"),
        pytest.param(dict(claim="full.wendel", method="exact", verdict="ok"), "verdict", id="unknown-verdict"),
        pytest.param(dict(claim="full.wendel", method="exact", verdict="discrepancy"), "printed statement",
                     id="discrepancy-without-correction"),
        pytest.param(dict(claim="full.wendel", method="exact", verdict="verified", tolerance=1e-9), "tolerance_reason",
                     id="tolerance-without-reason"),
        pytest.param(dict(claim="conj.value-full", method="search", verdict="verified"), "never 'verified'",
                     id="conjecture-verified"),
        pytest.param(dict(claim="full.wendel", method="exact", verdict="supported"), "for conjectures",
                     id="theorem-supported"),
    ],
)
def test_invalid_record_is_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CheckResult(**kwargs)


def test_record_json_handles_numpy_and_non_finite_numbers():
    result = CheckResult("full.wendel", "exact", "verified",
                         numbers={"p": np.float64(0.5), "n": np.int64(3), "inf": math.inf, "v": np.array([1.0, 2.0])})
    data = json.loads(json.dumps(result.to_json()))
    assert data["numbers"] == {"p": 0.5, "n": 3, "inf": "inf", "v": [1.0, 2.0]}


@pytest.mark.parametrize(
    "verdicts, expected",
    [
        ([], NO_CHECK),
        (["verified", "verified"], "verified"),
        (["verified", "discrepancy"], "discrepancy"),
        (["not-run", "verified"], "verified"),
        (["not-run"], "not-run"),
        (["verified", "failed", "refuted"], "failed"),
        (["supported", "not-run"], "supported"),
        (["supported", "refuted"], "refuted"),
    ],
)
def test_worst_verdict_takes_the_most_severe(verdicts, expected):
    assert worst_verdict(verdicts) == expected
