"""Result records validate what they carry; aggregation takes the most severe verdict."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from foundation.records import NO_CHECK, CheckResult, Figure, ReportSection, Table, holding_verdict, worst_verdict


@pytest.mark.parametrize(
    "kwargs, message",
    [
        pytest.param(dict(claim="no.such", method="symbolic", verdict="verified"), "claim registry", id="unknown-claim"),
        pytest.param(dict(claim="full.wendel", method="exact", verdict="ok"), "verdict", id="unknown-verdict"),
        pytest.param(dict(claim="full.wendel", method="exact", verdict="discrepancy"), "printed statement",
                     id="discrepancy-without-either-statement"),
        pytest.param(dict(claim="full.wendel", method="exact", verdict="discrepancy", printed="p = 1/2"),
                     "printed statement", id="discrepancy-without-correction"),
        pytest.param(dict(claim="full.wendel", method="exact", verdict="discrepancy", corrected="p = 1/4"),
                     "printed statement", id="discrepancy-without-printed-statement"),
        pytest.param(dict(claim="full.wendel", method="exact", verdict="verified", tolerance=1e-9), "tolerance_reason",
                     id="tolerance-without-reason"),
        pytest.param(dict(claim="conj.value-full", method="search", verdict="verified"),
                     "gives 'supported', not 'verified'", id="conjecture-verified-by-a-search"),
        pytest.param(dict(claim="full.wendel", method="exact", verdict="supported"), "gives 'verified', not 'supported'",
                     id="theorem-supported-by-an-exact-check"),
        pytest.param(dict(claim="full.wendel", method="monte-carlo", verdict="verified"),
                     "gives 'supported', not 'verified'", id="theorem-verified-by-a-sample"),
        pytest.param(dict(claim="full.convergence", method="property", verdict="verified"),
                     "gives 'supported', not 'verified'", id="theorem-verified-by-property-tests"),
        pytest.param(dict(claim="emp.no-ffn", method="empirical", verdict="verified"),
                     "gives 'supported', not 'verified'", id="limit-verified-by-a-run"),
        pytest.param(dict(claim="sim.fig3", method="figure", verdict="supported"), "gives 'verified', not 'supported'",
                     id="figure-supported"),
        pytest.param(dict(claim="sim.fig4", method="figure", verdict="verified"), "gives 'supported', not 'verified'",
                     id="limit-figure-verified-by-its-run"),
        pytest.param(dict(claim="conj.value-full", method="search", verdict="unsupported"), "not for a conjecture",
                     id="conjecture-unsupported"),
        pytest.param(dict(claim="conj.value-full", method="numeric", verdict="unsupported"), "not for a conjecture",
                     id="conjecture-unsupported-by-a-run"),
        pytest.param(dict(claim="full.wendel", method="exact", verdict="unsupported"), "not for a conjecture nor by 'exact'",
                     id="exact-check-unsupported"),
    ],
)
def test_invalid_record_is_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CheckResult(**kwargs)


@pytest.mark.parametrize("claim, method, verdict", [
    ("grad.stable-consensus", "numeric", "supported"), ("full.wendel", "monte-carlo", "supported"),
    ("full.convergence", "property", "supported"), ("emp.no-ffn", "empirical", "supported"),
    ("full.wendel", "exact", "verified"), ("grad.stable-consensus", "proof", "verified"),
    ("sim.fig3", "figure", "verified"), ("sim.fig4", "figure", "supported"), ("emp.prompts", "empirical", "verified"),
    ("conj.gradient-equilibria", "proof", "verified"), ("conj.value-full", "search", "supported")])
def test_what_finds_nothing_against_a_claim_verifies_it_only_where_it_can_prove_it(claim, method, verdict):
    """The controls of the rejections above: a finite method supports a theorem, a limit or a conjecture; a rigorous
    one verifies a theorem, a proof a conjecture; a figure's or a finite observation's run verifies it unless it
    states a limit (Fig. 4: E -> 0). Beside a
    proof's verified, a claim reads verified."""
    assert CheckResult(claim, method, verdict).verdict == holding_verdict(claim, method) == verdict
    assert worst_verdict(["supported", "verified"]) == "verified"


@pytest.mark.parametrize("claim, method", [("emp.full", "empirical"), ("full.convergence", "numeric"),
                                           ("full.wendel", "monte-carlo"), ("sim.fig4", "figure")])
def test_a_finite_run_of_a_claim_may_leave_it_unsupported(claim, method):
    """The control of the rejections above: a run, a simulation, a sample (any claim but a conjecture)."""
    assert CheckResult(claim, method, "unsupported").verdict == "unsupported"


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
        (["verified", "unsupported"], "unsupported"),
        (["unsupported", "not-run"], "unsupported"),
        (["unsupported", "discrepancy"], "discrepancy"),
    ],
)
def test_worst_verdict_takes_the_most_severe(verdicts, expected):
    assert worst_verdict(verdicts) == expected


class _Opaque:
    """Neither a number nor an array: has an ``item`` method but no ``ndim`` (the record keeps its text)."""

    def item(self):
        return 1

    def __str__(self):
        return "opaque"


def test_record_json_holds_only_plain_python_values():
    result = CheckResult("full.wendel", "exact", "verified", detail="d", numbers={
        "f64": np.float64(0.25), "i64": np.int64(3), "f32": np.float32(0.5), "t": torch.tensor(2.5),
        "nan": np.float64("nan"), "path": Path("a/b.png"), 1: (np.int64(1), [2.0]), "other": _Opaque()})
    numbers = result.to_json()["numbers"]
    assert numbers == {"f64": 0.25, "i64": 3, "f32": 0.5, "t": 2.5, "nan": "nan", "path": "a/b.png", "1": [1, [2.0]],
                       "other": "opaque"}
    plain = {"f64": float, "i64": int, "f32": float, "t": float, "nan": str, "path": str, "1": list, "other": str}
    assert {k: type(v) for k, v in numbers.items()} == plain  # no numpy or torch types left


def test_section_json_carries_its_tables_and_figures():
    section = ReportSection("Bench", "text", tables=(Table("t", ("a",), ((math.nan,),)),),
                            figures=(Figure("f.png", "caption"),), order=7)
    assert json.loads(json.dumps(section.to_json())) == {
        "title": "Bench", "text": "text", "order": 7,
        "tables": [{"title": "t", "columns": ["a"], "rows": [["nan"]]}],
        "figures": [{"path": "f.png", "caption": "caption", "paper_figure": None}]}


def test_a_section_is_read_back_from_its_json_whole_and_with_only_a_title():
    """How a test worker hands its sections to the process writing the report: from_json undoes to_json (tables'
    lists back to tuples, figures back to Figure); a section file with only a title gets the defaults."""
    section = ReportSection("Bench", "text", tables=(Table("t", ("a", "b"), ((1, "x"), (2.5, None))),),
                            figures=(Figure("f.png", "caption", "Fig. 4"),), order=7)
    assert ReportSection.from_json(json.loads(json.dumps(section.to_json()))) == section
    assert ReportSection.from_json({"title": "Only"}) == ReportSection("Only", "", (), (), 100)


def test_a_record_is_read_back_from_its_json_with_its_figures_and_tables_and_without_them():
    """How a parallel test worker hands its records to the report: from_json undoes to_json; a record without
    figures or tables (they are optional in the data) gets none."""
    record = CheckResult("full.wendel", "exact", "verified", detail="d", numbers={"E": 0.5},
                         tables=(Table("t", ("a",), ((1,),)),), figures=(Figure("f.png", "caption", "Fig. 1"),))
    back = CheckResult.from_json(json.loads(json.dumps(record.to_json())))
    assert back == record and back.to_json() == record.to_json()
    bare = {key: value for key, value in record.to_json().items() if key not in ("figures", "tables")}
    assert CheckResult.from_json(bare) == CheckResult("full.wendel", "exact", "verified", detail="d",
                                                      numbers={"E": 0.5})


@pytest.mark.parametrize("method", ["search", "proof"])
def test_a_conjecture_has_no_discrepancy(method):
    with pytest.raises(ValueError, match="is a conjecture: .* never 'discrepancy'"):
        CheckResult("conj.value-full", method, "discrepancy")


def test_complex_numbers_become_real_and_imaginary_parts():
    from foundation.records import jsonable

    assert jsonable(np.complex128(1.5 - 2j)) == [1.5, -2.0]
    assert json.loads(json.dumps(jsonable({"z": 3j}))) == {"z": [0.0, 3.0]}


def test_the_verdicts_schema_names_every_verdict():
    """A verdict the schema of verdicts.json leaves out would make every report holding it invalid."""
    import json
    from pathlib import Path

    from foundation.records import NO_CHECK, VERDICTS

    schema = json.loads((Path(__file__).resolve().parents[2] / "foundation" / "schemas" /
                         "verdicts.schema.json").read_text())
    assert schema["$defs"]["verdict"]["enum"] == [*VERDICTS, NO_CHECK]
