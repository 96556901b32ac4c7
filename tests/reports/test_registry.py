"""The claim registry: every SPEC claim is there once, with its sources and evidence kinds."""

import pytest

from foundation.registry import CLAIMS, CLAIMS_BY_ID, Claim, get_claim

SPEC_IDS = [
    "model.projection", "model.continuum", "model.layernorm", "grad.projection", "grad.field",
    "grad.convergence", "grad.stable-consensus", "full.bounds", "full.invariance", "full.equilibria",
    "full.lyapunov", "full.convergence", "full.autonomous", "full.wendel", "causal.first-token",
    "causal.scalar", "causal.identity", "causal.reparam", "causal.first-token-symmetric", "causal.symmetric",
    "causal.time-varying", *[f"sim.fig{n}" for n in range(1, 7)], "emp.no-ffn", "emp.full",
    "emp.random-fixed", "emp.random-redrawn", "emp.rate",
    # not in the SPEC's list: the in-kind evidence for figures 7-8 (trained SmolLM2 and Gemma 3), a verdict of its own
    "emp.in-kind-trained",
]
CONJECTURE_IDS = [
    "conj.multihead-causal", "conj.multihead-causal-common", "conj.value-causal", "conj.value-causal-antipodal",
    "conj.value-full", "conj.value-full-antipodal", "conj.gradient-equilibria", "conj.gradient-value",
    "conj.nonsymmetric-full", "conj.nonsymmetric-attractive", "conj.karagodin-thm1.5",
    "conj.karagodin-thm2-normalized-component", "conj.karagodin-thm2-perp-projection",
]
#: Each reading of an ambiguous sentence is its own claim; the suite's own readings and questions say so.
SUITE_READINGS = ["conj.multihead-causal", "conj.multihead-causal-common", "conj.value-causal", "conj.value-full",
                  "conj.value-causal-antipodal", "conj.value-full-antipodal", "conj.gradient-value",
                  "conj.nonsymmetric-full", "conj.nonsymmetric-attractive", "emp.theory-scope"]


def test_every_spec_claim_is_registered():
    missing = [claim_id for claim_id in SPEC_IDS if claim_id not in CLAIMS_BY_ID]
    assert missing == []


def test_every_conjecture_is_registered_as_one():
    for claim_id in CONJECTURE_IDS:
        claim = get_claim(claim_id)
        assert claim.conjecture and "search" in claim.evidence, claim_id
        assert set(claim.evidence) <= {"search", "proof", "symbolic"}, claim_id
    assert [c.id for c in CLAIMS if c.conjecture] == CONJECTURE_IDS


def test_the_suites_own_readings_are_labelled_and_quote_their_source():
    for claim_id in SUITE_READINGS:
        claim = get_claim(claim_id)
        assert claim.origin == "suite", claim_id
        assert "this suite" in claim.statement or "This suite" in claim.statement, claim_id
    # only Karagodin et al.'s statements as their authors give them are cited (SPEC: the paper cites two conjectures,
    # thm1.5 and thm2, the latter in two readings; and their Theorem 1); the antipodal readings follow a third-party
    # summary, not the authors, and are the suite's
    assert [c.id for c in CLAIMS if c.origin == "cited"] == [
        "causal.karagodin-thm1", "conj.karagodin-thm1.5", "conj.karagodin-thm2-normalized-component",
        "conj.karagodin-thm2-perp-projection"]


def test_an_unknown_origin_is_refused():
    with pytest.raises(ValueError, match="origin='blog' must be one of"):
        Claim("x.y", "-", "-", "s", ("search",), "blog")


def test_claim_ids_are_unique():
    ids = [claim.id for claim in CLAIMS]
    assert len(ids) == len(set(ids))


def test_every_claim_has_a_statement_and_evidence():
    for claim in CLAIMS:
        assert claim.statement.strip(), claim.id
        assert claim.evidence, claim.id


def test_unknown_claim_id_names_the_registry():
    with pytest.raises(KeyError, match="not in the registry"):
        get_claim("full.invariant")


def test_unknown_evidence_kind_is_rejected():
    with pytest.raises(ValueError, match="evidence kinds"):
        Claim("x.y", "-", "-", "statement", ("vibes",))


def test_the_conjectures_page_lists_every_conjecture_with_its_registry_origin():
    """docs/conjectures.md's claims table names every conj.* claim, each with the origin the registry gives it (the
    page once listed the antipodal readings as the cited conjectures and left out Karagodin et al.'s own)."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "conjectures.md").read_text()
    table = page.split("| claim | origin |", 1)[1].split("\n\n", 1)[0]
    origins = {}
    for row in table.splitlines()[2:]:
        claims, origin = (cell.strip() for cell in row.split("|")[1:3])
        for claim_id in re.findall(r"`([\w.-]+)`", claims):
            origins[claim_id] = origin.split()[0]
    assert set(CONJECTURE_IDS) <= origins.keys()
    assert {claim_id: get_claim(claim_id).origin for claim_id in origins} == origins


def test_no_statement_calls_the_cited_conjectures_unknown():
    """The cited statements are registered verbatim (conj.karagodin-*): the value readings point to them."""
    assert not [c.id for c in CLAIMS if "not retrievable" in c.statement or "could not be retrieved" in c.statement]
    for claim_id in ("conj.value-causal", "conj.value-causal-antipodal"):
        assert "conj.karagodin-thm1.5" in get_claim(claim_id).statement, claim_id
