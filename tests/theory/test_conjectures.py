"""The proofs of theory.conjectures: the conjugacy of conj.gradient-equilibria and the scalar equation of
conj.multihead-causal-common (reading B), each beside a broken model it must reject."""

import sympy as sp

from foundation.registration import check
from theory.conjectures import check_gradient_equilibria_proof, check_multihead_common_scalar


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


@check(check_multihead_common_scalar)
def test_reading_b_scalar_equation_holds(record):
    result = check_multihead_common_scalar()
    record(result)
    assert "residual of the scalar equation: 0" in result.expression


def test_reading_b_scalar_equation_fails_when_v_is_no_eigenvector():
    """Negative control: U_eta couples v to another direction (reading A's heads): the scalar equation breaks."""
    result = check_multihead_common_scalar(mixing=sp.Symbol("m", positive=True))
    assert "residual of the scalar equation: 0" not in result.expression
