"""Every registry entry names its checks (``Claim.checks``), the names lead to registered checks of that claim,
every registered check is named by its claim, and no declared evidence kind is left without a check: the
report's gaps list is empty."""

import importlib
import inspect
import pkgutil
import textwrap
from dataclasses import replace

import pytest

from foundation.registration import REGISTERED, Check, coverage, gaps
from foundation.registry import CLAIMS, SEARCH_CHECKS, Claim, get_claim
from reports.named_checks import naming_problems, resolve

#: The packages whose modules hold the registered check functions (the tests hold none: the registry may not name
#: a function in them, tests/reports/test_layout.py).
PACKAGES = ("theory", "sim", "empirical")


@pytest.fixture(scope="module")
def suite_checks() -> list[Check]:
    """Every check function of the suite, registered by importing every module of PACKAGES but the test modules
    (a test that calls a check registers with the check's own name, ``@check(function)``)."""
    for package in PACKAGES:
        for module in pkgutil.walk_packages(importlib.import_module(package).__path__, f"{package}."):
            leaf = module.name.rsplit(".", 1)[-1]
            if not (leaf.startswith("test_") or leaf in ("__main__", "conftest")):
                importlib.import_module(module.name)
    return [c for c in REGISTERED if not c.name.split(":")[0].rsplit(".", 1)[-1].startswith("test_")]


def test_every_claim_names_checks_that_lead_to_it(suite_checks):
    assert all(claim.checks for claim in CLAIMS), [claim.id for claim in CLAIMS if not claim.checks]
    assert naming_problems(CLAIMS, suite_checks) == []


def test_the_gaps_list_is_empty_over_the_named_and_the_registered_checks(suite_checks):
    named = [c for claim in CLAIMS for name in claim.checks for c in resolve(name)]
    assert gaps(coverage(named)) == {}
    assert gaps(coverage(suite_checks)) == {}


def test_naming_problems_report_a_missing_check_an_unnamed_one_and_a_gap():
    """Negative control: planted entries with a name leading nowhere, a name of another claim's check, a registered
    check left unnamed, and a declared kind without a check are each reported."""
    wendel = get_claim("full.wendel")
    exact, monte_carlo = (f"theory.wendel:{name}" for name in ("check_closed_forms", "check_monte_carlo"))
    planted = [replace(wendel, checks=(exact, "theory.wendel:no_such_check")),
               replace(get_claim("causal.scalar"), checks=(exact, "theory.causal:check_scalar",
                                                            "theory.causal:numeric_scalar"))]
    registered = [*resolve(exact), *resolve(monte_carlo), *resolve("theory.causal:check_scalar"),
                  *resolve("theory.causal:numeric_scalar")]
    problems = naming_problems(planted, registered)
    assert any("theory.wendel:no_such_check: no such function" in p for p in problems)
    assert any(p.startswith("causal.scalar: theory.wendel:check_closed_forms is a registered check, but not of")
               for p in problems)
    assert f"full.wendel: the registered check {monte_carlo} is not named in its entry's checks." in problems
    assert "full.wendel: no named check of the declared kind 'monte-carlo' (a gap)." in problems
    assert len(problems) == 4, problems
    assert naming_problems([replace(wendel, checks=(exact, monte_carlo))], registered) == []


def test_a_name_of_an_unregistered_function_does_not_resolve():
    with pytest.raises(LookupError, match="not a registered check"):
        resolve("foundation.registration:coverage")
    with pytest.raises(LookupError, match="no such function"):
        resolve("sim.no_such_module:check")


def test_a_planted_kind_without_a_check_is_a_gap(suite_checks):
    """Negative control of the empty gaps list: a claim declaring a kind none of its checks has, and the suite
    without the numeric check of Fig. 2, each give a gap."""
    wendel = get_claim("full.wendel")
    planted = replace(wendel, evidence=(*wendel.evidence, "figure"))
    assert naming_problems([planted], suite_checks) == [
        "full.wendel: no named check of the declared kind 'figure' (a gap)."]
    without = [c for c in suite_checks if (c.claim, c.method) != ("sim.fig2", "numeric")]
    assert gaps(coverage(without)) == {"sim.fig2": ["numeric"]}


#: The rules of a conjecture's family that a reader of its search checks reads (sim.conjectures.families.Family).
FAMILY_RULES = ("decode", "distance", "hypotheses", "state_margin")


def files_to_a_check(claim: Claim, families: dict) -> set[str]:
    """The files a reader opens from ``claim``'s registry entry to the code that decides it: the registry, the
    module of its first named check, and when that is a search check the modules holding its family's rules
    (``FAMILY_RULES``; the default "no hypothesis on the state" is no rule to read)."""
    from sim.conjectures.families import no_state_hypothesis

    first = claim.checks[0].partition(":")[0]
    files = {inspect.getsourcefile(Claim), inspect.getsourcefile(importlib.import_module(first))}
    if claim.checks[0] in SEARCH_CHECKS:
        rules = [getattr(families[claim.id], name) for name in FAMILY_RULES]
        files |= {inspect.getsourcefile(rule) for rule in rules if rule is not no_state_hypothesis}
    return files


def test_every_claim_leads_to_its_check_in_at_most_three_files():
    """The figures docs/layout.md states ("From a claim to its check"): 2 files for a claim that names its check
    directly, 3 for a conjecture whose first check is a search (registry, replay, its family's module)."""
    from sim.conjectures.families import FAMILIES

    counts = {claim.id: len(files_to_a_check(claim, FAMILIES)) for claim in CLAIMS}
    searched = {c.id for c in CLAIMS if c.checks[0] in SEARCH_CHECKS}
    assert {c: n for c, n in counts.items() if c not in searched} == {c: 2 for c in counts if c not in searched}
    assert {c: n for c, n in counts.items() if c in searched} == {c: 3 for c in searched}


def test_negative_control_a_family_rule_kept_elsewhere_costs_a_file():
    """A conjecture whose hypotheses were kept in a module of their own would take a fourth file (here: textwrap's
    dedent stands in for that module's function)."""
    from sim.conjectures.families import FAMILIES

    claim = get_claim("conj.nonsymmetric-full")
    moved = {claim.id: replace(FAMILIES[claim.id], hypotheses=textwrap.dedent)}
    assert len(files_to_a_check(claim, FAMILIES)) == 3
    assert len(files_to_a_check(claim, moved)) == 4
