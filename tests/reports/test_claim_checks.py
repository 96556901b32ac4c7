"""Every registry entry names its checks (``Claim.checks``), the names lead to registered checks of that claim by the
method beside them, every product check is registered from the registry alone, and no declared evidence kind is left
without a check: the report's gaps list is empty."""

import importlib
import inspect
import pkgutil
import textwrap
from dataclasses import replace

import pytest

from foundation.registration import REGISTERED, Check, check, coverage, gaps
from foundation.registry import CLAIMS, SEARCH_CHECKS, Claim, get_claim
from reports.named_checks import naming_problems, resolve

#: The packages whose modules hold the registered check functions (the tests hold none: the registry may not name
#: a function in them, tests/reports/test_layout.py).
PACKAGES = ("theory", "sim", "empirical")


def product_checks(registered) -> list[Check]:
    """The registrations of functions of PACKAGES among ``registered`` (not of the tests, which type their ids)."""
    return [c for c in registered if c.name.split(".", 1)[0] in PACKAGES]


@pytest.fixture(scope="module")
def suite_checks() -> list[Check]:
    """Every check function of the suite, registered by importing every module of PACKAGES (a test that calls a
    check registers with the test's own name, ``@check(function)``)."""
    for package in PACKAGES:
        for module in pkgutil.walk_packages(importlib.import_module(package).__path__, f"{package}."):
            if module.name.rsplit(".", 1)[-1] != "__main__":
                importlib.import_module(module.name)
    return product_checks(REGISTERED)


def test_every_claim_names_checks_that_lead_to_it():
    assert all(claim.checks for claim in CLAIMS), [claim.id for claim in CLAIMS if not claim.checks]
    assert naming_problems(CLAIMS) == []


def registry_pairs(claims) -> list[tuple[str, str, str]]:
    """(claim, method, name) of every check the entries ``claims`` name, sorted."""
    return sorted((claim.id, method, name) for claim in claims for name, method in claim.checks)


def test_every_product_check_is_registered_from_the_registry_alone(suite_checks):
    """The product code types no claim id: its registrations are exactly the registry's (claim, method, name), each
    once, none a control; a check registered by an id typed on it (``@check("id", ...)`` in theory, say) would be
    one more, and a function decorated twice would be registered twice."""
    assert sorted((c.claim, c.method, c.name) for c in suite_checks) == registry_pairs(CLAIMS)
    assert not any(c.control for c in suite_checks)


def test_negative_control_an_id_typed_on_a_product_check_is_seen(suite_checks):
    """A function of theory registered by an id typed on it, not named by the registry, is one registration more."""
    def typed_on_the_function():
        pass

    typed_on_the_function.__module__ = "theory.wendel"  # poses as a function of theory
    before = list(REGISTERED)
    try:
        check("full.wendel", method="exact")(typed_on_the_function)
        extra = {(c.claim, c.method, c.name) for c in product_checks(REGISTERED)} - set(registry_pairs(CLAIMS))
    finally:
        REGISTERED[:] = before
    assert extra == {("full.wendel", "exact", "theory.wendel:test_negative_control_an_id_typed_on_a_product_check_is_"
                      "seen.<locals>.typed_on_the_function")}


def test_the_gaps_list_is_empty_over_the_named_and_the_registered_checks(suite_checks):
    named = [c for claim in CLAIMS for name in claim.check_names for c in resolve(name)]
    assert gaps(coverage(named)) == {}
    assert gaps(coverage(suite_checks)) == {}


def test_naming_problems_report_a_missing_check_a_wrong_claim_or_method_and_a_gap():
    """Negative control: planted entries with a name leading nowhere, a name of another claim's check, a name with
    another method than its check's, and a declared kind without a check are each reported."""
    wendel = get_claim("full.wendel")
    exact, monte_carlo = (("theory.wendel:check_closed_forms", "exact"), ("theory.wendel:check_monte_carlo",
                                                                          "monte-carlo"))
    planted = [replace(wendel, checks=(exact, ("theory.wendel:no_such_check", "monte-carlo"))),
               replace(get_claim("causal.scalar"), checks=(("theory.wendel:check_closed_forms", "symbolic"),
                                                            ("theory.causal:check_scalar", "symbolic"),
                                                            ("theory.causal:numeric_scalar", "numeric"))),
               replace(get_claim("causal.reparam"), checks=(("theory.causal:check_reparam", "numeric"),))]
    problems = naming_problems(planted)
    assert any("theory.wendel:no_such_check: no such function" in p for p in problems)
    assert ("causal.scalar: theory.wendel:check_closed_forms is a registered check, but not of causal.scalar by "
            "symbolic.") in problems
    assert ("causal.reparam: theory.causal:check_reparam is a registered check, but not of causal.reparam by "
            "numeric.") in problems
    assert "full.wendel: no named check of the declared kind 'monte-carlo' (a gap)." in problems
    assert "causal.reparam: no named check of the declared kind 'symbolic' (a gap)." in problems
    assert len(problems) == 5, problems
    assert naming_problems([replace(wendel, checks=(exact, monte_carlo))]) == []


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
    assert naming_problems([planted]) == [
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

    first = claim.check_names[0].partition(":")[0]
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
