"""grad.stable-consensus: with P = I the only asymptotically stable equilibria are consensus points (the numeric search;
its proof: tests/theory/test_conjectures.py)."""

import numpy as np

from foundation.registration import check
from sim.field.dynamics import AttentionField
from sim.conjectures.linearisation import (CONSENSUS_E, check_stable_consensus, equilibria, tangent_basis,
                                          tangent_jacobian)


def test_tangent_basis_is_orthonormal_and_tangent():
    y = equilibria(4, 3)["regular polygon"]
    basis = tangent_basis(y)
    np.testing.assert_allclose(basis.T @ basis, np.eye(basis.shape[1]), atol=1e-14)
    for i in range(4):
        block = basis[3 * i:3 * i + 3]
        np.testing.assert_allclose(y[i] @ block, 0, atol=1e-14)


def test_named_configurations_are_equilibria():
    field = AttentionField(P=(np.eye(3),))
    for name, y in equilibria(5, 3).items():
        np.testing.assert_allclose(field(0.0, y), 0, atol=1e-15, err_msg=name)


def test_jacobian_of_a_linear_tangent_field_is_exact():
    # The field y -> P_y A y with A = diag(1, 2, 3) at y = e1: its tangent linearisation is diag(2-1, 3-1).
    a = np.diag([1.0, 2.0, 3.0])

    def field(t, y):
        drive = y @ a.T
        return drive - np.sum(drive * y, axis=-1, keepdims=True) * y

    y = np.array([[1.0, 0.0, 0.0]])
    eigenvalues = np.sort(np.linalg.eigvals(tangent_jacobian(field, y)).real)
    np.testing.assert_allclose(eigenvalues, [1.0, 2.0], atol=1e-8)


@check(check_stable_consensus)
def test_search_at_p_identity_finds_no_stable_non_consensus_equilibrium_and_only_supports(record):
    """A finite search of a universal statement: finding nothing is ``supported`` (the claim's verified is its
    proof's, theory.conjectures:check_stable_consensus_proof), never ``verified``."""
    result = record(check_stable_consensus())
    assert result.verdict == "supported", result.detail
    assert result.numbers["starts_reaching_consensus"] == result.numbers["starts"]
    assert "consensus is stable" in result.detail and "with no unstable direction: none" in result.detail


def test_search_verdict_is_the_same_at_a_doubled_horizon_and_consensus_threshold():
    base = check_stable_consensus(starts=8)
    doubled = check_stable_consensus(starts=8, horizon=400.0, consensus_e=2 * CONSENSUS_E)
    halved = check_stable_consensus(starts=8, consensus_e=CONSENSUS_E / 2)
    assert base.verdict == doubled.verdict == halved.verdict == "supported"


@check(check_stable_consensus, control=True)
def test_check_finds_a_repulsive_value_matrix_unsupported_not_refuted():
    """Negative control: U = -I makes consensus unstable; uncertified, so the search says unsupported."""
    result = check_stable_consensus(value_sign=-1.0)
    assert result.verdict == "unsupported"
    assert "consensus is NOT stable" in result.detail
