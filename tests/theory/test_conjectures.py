"""The proof of theory.conjectures: the conjugacy of conj.gradient-equilibria, beside a broken model it must reject
(conj.multihead-causal-common's proof: tests/theory/test_multihead_cascade.py)."""

import sympy as sp

from foundation.registration import check
from theory.conjectures import check_gradient_equilibria_proof


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
