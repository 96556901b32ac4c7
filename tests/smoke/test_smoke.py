"""Fail-fast smoke tests: E, the loop's causal masks and the report's aggregation, in seconds.

`make test` runs this folder first (pyproject.toml testpaths; the Makefile keeps xdist's file order with
--no-loadscope-reorder), so a broken one of these three is named within the first minute instead of after the
slow suites (docs/report.md, "Failing fast"). Each check is parametrised over enough cases (every tiny family,
several verdict mixes) that one break fails at least --maxfail=5 of them and stops the run at once. The thorough
tests stay where they are (tests/empirical/test_consensus.py, test_causality.py, tests/reports/).
"""

import pytest
import torch

from empirical import adapter_for, load_model
from empirical.eq9 import misalignment
from empirical.loop import looped_consensus, run_pass
from empirical.models import TINY_MODELS
from reports.build import claim_entries
from foundation.evidence import TestEvidence
from foundation.records import CheckResult, NO_CHECK

TOKENS = 9
CHANGED = 5  # the perturbed position


def reference_misalignment(x: torch.Tensor) -> torch.Tensor:
    """E of eq. 9 written out token by token in float64: 1 - (1/l) sum_i cos(y_1, y_i)."""
    x = x.double()
    out = []
    for prompt in x:
        first = prompt[0] / prompt[0].norm()
        out.append(1.0 - sum(float(token @ first / token.norm()) for token in prompt) / len(prompt))
    return torch.tensor(out, dtype=torch.float64)


@pytest.fixture(scope="module", params=TINY_MODELS)
def adapter(request):
    return adapter_for(load_model(request.param, "random", seed=4))


# --- E ---------------------------------------------------------------------------------------------------------

#: (tokens of one prompt, its E by hand): aligned, orthogonal, opposite, scaled, one of three opposite.
HAND = [([[1.0, 0.0], [2.0, 0.0]], 0.0), ([[1.0, 0.0], [0.0, 3.0]], 0.5), ([[1.0, 0.0], [-1.0, 0.0]], 1.0),
        ([[0.0, 2.0], [0.0, 5.0], [0.0, 0.1]], 0.0), ([[1.0, 1.0], [1.0, 1.0], [-2.0, -2.0]], 2.0 / 3.0),
        ([[3.0, 4.0], [4.0, 3.0]], (1.0 - 24.0 / 25.0) / 2.0)]


@pytest.mark.parametrize("tokens,expected", HAND)
def test_E_by_hand(tokens, expected):
    assert misalignment(torch.tensor([tokens])).item() == pytest.approx(expected, abs=1e-6)


def test_E_of_every_block_in_the_loop_matches_the_formula(adapter):
    """The loop's E after every block of one pass equals eq. 9 computed from the same states."""
    ids = torch.randint(3, 90, (2, TOKENS), generator=torch.Generator().manual_seed(2))
    measured = looped_consensus(adapter, ids, passes=1)
    with torch.no_grad():
        x = adapter.embed(ids)
        expected = [reference_misalignment(x)]
        inputs = adapter.block_inputs(TOKENS, x.device, x.dtype)
        for index in range(adapter.num_layers):
            x = adapter.block(index, x, inputs)
            expected.append(reference_misalignment(x))
    assert torch.allclose(measured.double(), torch.stack(expected, dim=1), atol=1e-5)


# --- the loop's causal masks -----------------------------------------------------------------------------------

def test_a_later_token_never_changes_an_earlier_one_in_the_loop(adapter):
    """Two passes of the loop (its own masks, blocks and final norm): perturbing token CHANGED leaves every
    earlier token's state bit for bit as it was, and does change its own."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, TOKENS, adapter.width, generator=generator)
    y = x.clone()
    y[:, CHANGED] += torch.randn(2, adapter.width, generator=generator)
    inputs = adapter.block_inputs(TOKENS, x.device, x.dtype)
    for k in range(2):
        x = run_pass(adapter, x, inputs, measure=False, pass_index=k).hidden
        y = run_pass(adapter, y, inputs, measure=False, pass_index=k).hidden
    assert (x[:, :CHANGED] - y[:, :CHANGED]).abs().max().item() == 0.0
    assert (x[:, CHANGED] - y[:, CHANGED]).abs().max().item() > 1e-4


# --- the report's aggregation ----------------------------------------------------------------------------------

def _test(outcome, claims=("full.wendel",), records=(), control=False, name="t"):
    return TestEvidence(f"tests/x.py::{name}", tuple(claims), "exact", control, outcome=outcome,
                        message="why", records=list(records))


def _record(verdict, claim="full.wendel", method="exact"):
    return CheckResult(claim, method, verdict)


#: One test of full.wendel for each verdict source, and that verdict.
SOURCES = {"failed": lambda n: _test("failed", name=n), "refuted": lambda n: _test("passed", claims=(), name=n,
                                                                                  records=[_record("refuted")]),
           "verified": lambda n: _test("passed", name=n), "not-run": lambda n: _test("skipped", name=n)}
SEVERITY = ["failed", "refuted", "verified", "not-run"]  # the most severe first (foundation.records.VERDICTS)

#: (the tests behind full.wendel, its verdict): the most severe record wins whatever the order of the tests (every
#: ordered pair of sources, so that a rule reading the first or the last record fails several cases); nothing at all
#: is not-run (the registry names its checks: none ran); a negative control counts as any test.
AGGREGATION = [
    pytest.param([], "not-run", id="nothing"),
    *[pytest.param([SOURCES[a]("a"), SOURCES[b]("b")], min(a, b, key=SEVERITY.index), id=f"{a}-then-{b}")
      for a in SEVERITY for b in SEVERITY if a != b],
    pytest.param([_test("passed", name="a"), _test("passed", name="b"), _test("failed", name="c"),
                  _test("passed", name="d")], "failed", id="one-failed-among-passes"),
    pytest.param([_test("passed", control=True)], "verified", id="passing-control"),
    pytest.param([_test("failed", control=True)], "failed", id="failing-control"),
]


@pytest.mark.parametrize("tests,verdict", AGGREGATION)
def test_a_claims_verdict_is_its_worst_record(tests, verdict):
    entries = {entry["claim"].id: entry for entry in claim_entries(tests)}
    entry = entries["full.wendel"]
    assert entry["verdict"] == verdict
    assert [t.nodeid for t in entry["tests"]] == [t.nodeid for t in tests]
    assert entry["controls"] == [t for t in tests if t.control]
    assert all(e["verdict"] == "not-run" and not e["records"] for c, e in entries.items() if c != "full.wendel")


@pytest.mark.parametrize("outcome,count", [("passed", 2), ("failed", 2), ("skipped", 2)])
def test_a_test_marking_two_claims_counts_for_both(outcome, count):
    entries = {e["claim"].id: e for e in claim_entries([_test(outcome, claims=("emp.full", "emp.no-ffn"))])}
    verdicts = [entries[c]["verdict"] for c in ("emp.full", "emp.no-ffn")]
    assert len(set(verdicts)) == 1 and verdicts[0] != NO_CHECK
    assert sum(len(entries[c]["records"]) for c in ("emp.full", "emp.no-ffn")) == count
