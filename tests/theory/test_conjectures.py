"""The proofs of theory.conjectures: the conjugacy of conj.gradient-equilibria and its case P = I (grad.stable-consensus),
each beside a broken model it must reject (conj.multihead-causal-common's proof: tests/theory/test_multihead_cascade.py)."""

import sympy as sp

from foundation.registration import check
from theory.conjectures import check_gradient_equilibria_proof, check_stable_consensus_proof
from theory.gram import Form


@check(check_gradient_equilibria_proof)
def test_the_conjugacy_proves_the_gradient_equilibria_conjecture(record):
    result = check_gradient_equilibria_proof()
    record(result)
    assert result.method == "proof" and "FAILS" not in result.expression


def test_the_conjugacy_fails_for_a_non_symmetric_square_root():
    """Negative control: S not symmetric, so S^2 is no metric and z = S y no isometry."""
    a, b, c, d = sp.symbols("a b c d", real=True)
    result = check_gradient_equilibria_proof(root=sp.Matrix([[a, b], [c, d]]), dims=(2,))
    assert "FAILS" in result.expression


@check(check_stable_consensus_proof)
def test_with_p_identity_only_consensus_is_asymptotically_stable_by_proof(record):
    result = record(check_stable_consensus_proof())
    assert (result.claim, result.method, result.verdict) == ("grad.stable-consensus", "proof", "verified")
    assert "FAILS" not in result.expression


@check(check_stable_consensus_proof, control=True)
def test_stable_consensus_proof_fails_when_phi_is_not_monotone():
    """Negative control: with W != P the step dPhi/dt = sum Z_i |F_i|^2 fails, and the proof with it."""
    assert check_stable_consensus_proof(W=Form("W"), P=Form("P")).verdict == "failed"
