"""grad.stable-consensus: with P = I the only asymptotically stable equilibria are consensus points."""

import numpy as np

from foundation.registration import check
from sim.field.dynamics import AttentionField
from sim.conjectures.linearisation import check_stable_consensus, equilibria, tangent_basis, tangent_jacobian


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
def test_only_consensus_is_stable_with_p_identity(record):
    result = record(check_stable_consensus())
    assert result.verdict == "verified", result.detail


@check(check_stable_consensus, control=True)
def test_check_rejects_a_repulsive_value_matrix():
    result = check_stable_consensus(value_sign=-1.0)
    assert result.verdict == "refuted"
    assert "consensus is NOT stable" in result.detail
