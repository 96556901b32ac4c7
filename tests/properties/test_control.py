"""The rows of the property tables (tests/properties/control.py) can fail, and each row draws its own instances.

Hypothesis derives a derandomised test's seed (the ci profile) and its database key from the test function; every
row runs the same inner function, so ``EveryInstance.run`` adds the row's node id to that digest
(``control.with_row_digest``), and keeps the row's statistics on its item, where the report counts the examples
(``control.noted``). Controls: without either, two rows draw the same instances, or the report sees no examples."""

import re
from types import SimpleNamespace

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from sim.properties.conclusions import Outcome
from tests.properties import control
from tests.properties.control import EveryInstance, FirstViolation

#: Derandomised like the ci profile, so the instances a row draws depend on its digest only.
FIVE = settings(max_examples=5, derandomize=True, database=None)


@pytest.fixture(autouse=True)
def unobserved(monkeypatch):
    """These rows are no property of a claim: nothing goes to the report's summary."""
    monkeypatch.setattr(control, "observe", lambda name, outcome: outcome)


def drawn(node_id: str, holds: bool = True, item: SimpleNamespace | None = None) -> list[int]:
    """The instances an ``EveryInstance`` row of ``node_id`` (on ``item``, a stand-in of its pytest item) draws (its
    check holds on each)."""
    seen = []

    def check(instance):
        seen.append(instance)
        return Outcome(True, {})

    item = item or SimpleNamespace(nodeid=node_id)
    EveryInstance("drawn", check, st.integers(0, 2**62), FIVE, holds=holds).run(item, record=None)
    return seen


def passing_examples(item: SimpleNamespace) -> int | None:
    """How many examples passed, as the report reads it from the item's Hypothesis statistics
    (``reports.pytest_plugin``); None without statistics."""
    statistics = getattr(item, "hypothesis_statistics", None)
    return sum(int(n) for n in re.findall(r"(\d+) passing", statistics)) if statistics else None


def test_each_row_draws_its_own_instances_the_same_on_every_run():
    assert drawn("table[a]") == drawn("table[a]")
    assert drawn("table[a]") != drawn("table[b]")


def test_control_without_the_row_digest_two_rows_draw_the_same_instances(monkeypatch):
    monkeypatch.setattr(control, "with_row_digest", lambda test, node_id: test)
    assert drawn("table[a]") == drawn("table[b]")


def test_control_a_control_row_fails_where_its_check_holds():
    with pytest.raises(AssertionError):
        drawn("table[control]", holds=False)


def test_control_a_search_control_fails_when_its_broken_model_never_fails():
    never_fails = FirstViolation("never fails", lambda instance, **broken: Outcome(True, {}), st.integers(),
                                 {"model": None}, "a model that is not broken", max_examples=3)
    with pytest.raises(NoSuchExample):
        never_fails.run(SimpleNamespace(nodeid="table[search]"), record=None)


def test_a_rows_examples_reach_the_report():
    item = SimpleNamespace(nodeid="table[a]")
    drawn("table[a]", item=item)
    assert passing_examples(item) == 5


def test_control_without_the_noted_statistics_the_report_sees_no_examples(monkeypatch):
    monkeypatch.setattr(control, "noted", lambda item, statistics: None)
    item = SimpleNamespace(nodeid="table[a]")
    drawn("table[a]", item=item)
    assert passing_examples(item) is None
