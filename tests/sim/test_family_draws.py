"""How the conjecture families decode theta into instances, read back from theta's parts (``split_theta``): the
searches' draws. Each decoder states its construction (the last token opposite the others, one basis for the
common-v heads, the attractive skew part); the tests rebuild it from theta and compare, with a differently built
instance as control."""

import numpy as np
import pytest

from sim.conjectures.families import (FAMILIES, SKEW_MAX, Shape, _common_top, distance_from_v, onto_sphere,
                                      summed_top_vectors, top_eigenpair)
from sim.conjectures.family import bounded_scale, split_theta, unit_spectral_norm

#: float64 rounding of a QR, an eigendecomposition or a spectral norm of 3 x 3 matrices with entries below 20.
CLOSE = dict(rel=1e-12, abs=1e-12)


def _draw(claim: str, shape: Shape, n: int = 5, seed: int = 3):
    family = FAMILIES[claim]
    theta = np.random.default_rng(seed).standard_normal((n, family.parameters(shape)))
    return theta, family.decode(theta, shape)


@pytest.mark.parametrize("claim", sorted(FAMILIES))
def test_every_family_marks_its_draws_with_one_boolean_per_instance(claim):
    shape = Shape(2 if "multihead" in claim else 1, 3, 3)
    _, batch = _draw(claim, shape)
    assert batch.valid.dtype == np.bool_ and batch.valid.shape == (5,)


def test_the_nonsymmetric_last_token_is_opposite_the_others_sum_plus_half_its_own_draw():
    shape = Shape(1, 4, 3)
    theta, batch = _draw("conj.nonsymmetric-full", shape)
    rawy = split_theta(theta, shape)[2]
    others = onto_sphere(rawy[:, :-1])
    np.testing.assert_array_equal(batch.y0[:, :-1], others)
    np.testing.assert_allclose(batch.y0[:, -1], onto_sphere(-others.sum(axis=1) + 0.5 * rawy[:, -1]),
                               rtol=1e-12, atol=1e-12)
    # control: the last token of the plain draw is another point
    assert np.max(np.abs(batch.y0[:, -1] - onto_sphere(rawy[:, -1]))) > 0.1


def test_the_attractive_skew_part_is_the_drawn_k_added_to_the_symmetric_part():
    shape = Shape(1, 3, 3)
    theta, batch = _draw("conj.nonsymmetric-attractive", shape)
    _, rawK, _, _, zK = split_theta(theta, shape)
    K = unit_spectral_norm(rawK - np.swapaxes(rawK, -1, -2)) * bounded_scale(zK, SKEW_MAX)[..., None, None]
    skew = 0.5 * (batch.P - np.swapaxes(batch.P, -1, -2))
    np.testing.assert_allclose(skew, K, rtol=1e-12, atol=1e-12)
    assert np.max(np.abs(skew + K)) > 0.1  # control: -K is far from it


def test_the_common_v_heads_share_the_basis_of_the_first_heads_block_with_their_own_spectra():
    """Q from the QR of theta's first U block: each head is Q diag(t, t tanh(row 0 of its own block)) Q^T."""
    shape = Shape(2, 3, 3)
    theta, batch = _draw("conj.multihead-causal-common", shape)
    _, rawU, _, _, zU = split_theta(theta, shape)
    tops = bounded_scale(zU, 2.0)
    for i in range(len(theta)):
        basis = np.linalg.qr(rawU[i, 0])[0]
        for eta in range(shape.heads):
            spectrum = np.concatenate([[tops[i, eta]], tops[i, eta] * np.tanh(rawU[i, eta, 0, 1:])])
            assert np.sort(np.linalg.eigvalsh(batch.U[i, eta])) == pytest.approx(np.sort(spectrum), **CLOSE)
            np.testing.assert_allclose(batch.U[i, eta] @ basis, basis * spectrum, rtol=1e-12, atol=1e-12)
        # control: the second head's block gives another basis
        assert np.max(np.abs(np.abs(np.linalg.qr(rawU[i, 1])[0]) - np.abs(basis))) > 0.1


def _head(v: np.ndarray, top: float) -> np.ndarray:
    """A symmetric U with the simple top eigenvalue ``top`` on the unit vector v, and 0.5, 0.25 beside it."""
    q = np.linalg.qr(np.column_stack([v, [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))[0]
    q[:, 0] = v
    u = q @ np.diag([top, 0.5, 0.25]) @ q.T
    return (u + u.T) / 2


def test_the_common_v_is_the_sums_top_vector_signed_as_the_distance_reads_it():
    """v = (2e-12, 1, 0) and (-2e-12, 1, 0): one eigenvector up to 1e-23 in |cos|, but the sign rule (first entry
    above 1e-12 positive) turns the first head's into (2e-12, -1, 0). The common v is the sum's, (~0, 1, 0): tokens
    around +e2 are in D^l(v), as the decoder reflects them and as distance_from_v measures; around -e2 they are not."""
    plus, minus = np.array([2e-12, 1.0, 0.0]), np.array([-2e-12, 1.0, 0.0])
    U = np.stack([_head(minus / np.linalg.norm(minus), 2.0), _head(plus / np.linalg.norm(plus), 1.5)])
    assert top_eigenpair(U[0])[2][1] == pytest.approx(-1.0) and top_eigenpair(U[1])[2][1] == pytest.approx(1.0)
    v = _common_top(U)
    np.testing.assert_array_equal(v, summed_top_vectors(U[None])[0])
    assert v[1] == pytest.approx(1.0)
    assert distance_from_v(None, U[None], v[None, None, :])[0] == pytest.approx(0.0, abs=1e-15)
    family = FAMILIES["conj.multihead-causal-common"]
    P = np.stack([np.eye(3)] * 2)
    tokens = np.array([[0.6, 0.8, 0.0], [-0.6, 0.8, 0.0]])
    assert family.hypotheses(P, U, tokens) == []
    assert family.hypotheses(P, U, -tokens) == ["y0 is not in D^l(v) (some v^T y_i <= 0)"]
    # control: heads with different top vectors have none in common
    assert _common_top(np.stack([U[0], _head(np.array([1.0, 0.0, 0.0]), 1.5)])) is None
