"""The hypothesis measures on constructed inputs with known answers (and negative controls)."""

import itertools

import numpy as np
import pytest

from empirical.audit.hypotheses import (
                                        asymmetry,
                                        low_rank_asymmetry,
                                        low_rank_norms,
                                        low_rank_summary,
                                        spectrum_summary,
                                        )
from sim.field.hemisphere import GORDAN_RESIDUAL_TOL, in_open_hemisphere, open_hemisphere


# --- the open-hemisphere LP ---------------------------------------------------------------------
def test_the_quick_decision_agrees_with_the_certified_one():
    """in_open_hemisphere (Wendel's Monte Carlo, the conjecture families) is open_hemisphere's decision."""
    rng = np.random.default_rng(7)
    decisions = []
    for tokens, dim in [(3, 2), (4, 3), (6, 3), (10, 3), (5, 8)]:
        for _ in range(40):
            points = rng.normal(size=(tokens, dim))
            decisions.append(in_open_hemisphere(points))
            assert decisions[-1] == open_hemisphere(points).inside, points
    assert any(decisions) and not all(decisions)  # both answers met



def test_points_in_a_cap_are_inside_with_the_cap_margin():
    rng = np.random.default_rng(0)
    axis = np.array([0.0, 0.0, 1.0])
    # 40 points at polar angle <= 60 degrees: the best margin is at least cos(60) = 0.5.
    theta = rng.uniform(0, np.pi / 3, 40)
    phi = rng.uniform(0, 2 * np.pi, 40)
    points = np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], axis=1)
    result = open_hemisphere(3.0 * points)
    assert result.inside
    assert np.min(points @ result.direction) == pytest.approx(result.margin)
    assert result.margin > 0.3
    assert result.direction @ axis > 0.5


def test_antipodal_pair_is_not_inside_an_open_hemisphere():
    result = open_hemisphere(np.array([[1.0, 2.0, 0.5], [-2.0, -4.0, -1.0]]))
    assert not result.inside
    assert result.margin <= 0
    assert result.gordan_residual < GORDAN_RESIDUAL_TOL


def test_points_on_every_axis_both_ways_are_not_inside():
    d = 5
    points = np.vstack([np.eye(d), -np.eye(d)])
    result = open_hemisphere(points)
    assert not result.inside
    assert result.gordan_residual < GORDAN_RESIDUAL_TOL


def test_points_in_every_orthant_are_not_inside():
    points = np.array(list(itertools.product([-1.0, 1.0], repeat=4)))
    assert not open_hemisphere(points).inside


def test_points_on_a_closed_half_circle_boundary_are_not_in_an_open_hemisphere():
    # e1, e2, -e1 lie in the closed half-plane y2 >= 0 but in no open one.
    assert not open_hemisphere(np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])).inside


def test_a_single_point_is_inside():
    result = open_hemisphere(np.array([[0.0, -3.0, 0.0]]))
    assert result.inside
    # The LP maximises the margin in the box |v|_inf <= 1, so the cosine margin is a lower bound:
    # here v = (s1, -1, s3) with |s| <= 1, cos >= 1/sqrt(3).
    assert 1 / np.sqrt(3) - 1e-12 <= result.margin <= 1.0


def test_generic_points_no_more_than_dimension_are_inside():
    """Wendel: l <= d generic points always share an open hemisphere (here l = d = 30)."""
    rng = np.random.default_rng(1)
    assert open_hemisphere(rng.normal(size=(30, 30))).inside


def test_many_uniform_points_in_low_dimension_are_not_inside():
    """Wendel: 60 uniform points on S^2 share a hemisphere with probability 60 * 2**-59 * ... < 1e-14."""
    rng = np.random.default_rng(2)
    result = open_hemisphere(rng.normal(size=(60, 3)))
    assert not result.inside
    assert result.gordan_residual < GORDAN_RESIDUAL_TOL


def test_shifting_inside_points_across_the_boundary_is_detected():
    """Negative control: the same cloud, moved so that one point crosses to the other side."""
    rng = np.random.default_rng(3)
    points = rng.normal(size=(20, 6))
    points[:, 0] = np.abs(points[:, 0]) + 0.1
    assert open_hemisphere(points).inside
    points = np.vstack([points, -points[4]])
    assert not open_hemisphere(points).inside


@pytest.mark.parametrize(
    "points, message",
    [
        pytest.param(np.zeros((3, 2)) + [[1, 0], [0, 0], [0, 1]], "non-zero", id="zero-row"),
        pytest.param(np.array([1.0, 2.0]), "shape", id="one-dimensional"),
        pytest.param(np.array([[np.nan, 1.0]]), "finite", id="nan"),
    ],
)
def test_bad_points_are_rejected(points, message):
    with pytest.raises(ValueError, match=message):
        open_hemisphere(points)


# --- symmetry and spectrum ----------------------------------------------------------------------
def test_asymmetry_is_zero_for_symmetric_and_one_for_antisymmetric():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(7, 7))
    assert asymmetry(a + a.T) == pytest.approx(0.0, abs=1e-15)
    assert asymmetry(a - a.T) == pytest.approx(2.0)  # |2A| / |A| for A antisymmetric
    s, k = a + a.T, a - a.T
    # |U - U^T| = 2 |K|, |U|^2 = |S|^2 + |K|^2 for U = S + K (orthogonal parts).
    expected = 2 * np.linalg.norm(k) / np.sqrt(np.linalg.norm(s) ** 2 + np.linalg.norm(k) ** 2)
    assert asymmetry(s + k) == pytest.approx(expected)


def test_spectrum_of_a_diagonal_matrix_is_read_exactly():
    summary = spectrum_summary(np.diag([3.0, 1.0, -2.0, 0.5]))
    assert summary.top == pytest.approx(3.0)
    assert summary.top_is_real and summary.multiplicity == 1
    assert summary.gap == pytest.approx((3.0 - 1.0) / 3.0)
    assert summary.spread == pytest.approx(5.0 / 3.0)
    assert summary.positive_fraction == pytest.approx(0.75)
    assert summary.simple_positive_real


def test_a_double_top_eigenvalue_is_not_simple():
    rng = np.random.default_rng(5)
    q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    u = q @ np.diag([2.0, 2.0, 1.0, 0.0, -1.0, -3.0]) @ q.T
    summary = spectrum_summary((u + u.T) / 2)
    assert summary.multiplicity == 2
    assert not summary.simple_positive_real


def test_a_negative_top_eigenvalue_fails_the_hypothesis():
    summary = spectrum_summary(np.diag([-0.5, -1.0, -2.0]))
    assert summary.top == pytest.approx(-0.5)
    assert not summary.simple_positive_real


def test_a_rotation_has_a_complex_top_eigenvalue():
    c, s = np.cos(0.3), np.sin(0.3)
    summary = spectrum_summary(np.array([[c, -s, 0], [s, c, 0], [0, 0, 0.2]]))
    assert not summary.top_is_real
    assert summary.top.real == pytest.approx(c)
    assert not summary.simple_positive_real


def test_low_rank_spectrum_matches_the_full_one():
    rng = np.random.default_rng(6)
    d, r = 40, 5
    a, b = rng.normal(size=(d, r)), rng.normal(size=(r, d))
    full = np.sort_complex(np.linalg.eigvals(a @ b))
    low = low_rank_summary(a, b)
    top_full = full[np.argmax(full.real)]
    assert low.top == pytest.approx(top_full, rel=1e-9)
    assert low.size == d
    reference = spectrum_summary(a @ b)
    assert low.radius == pytest.approx(reference.radius, rel=1e-9)
    assert low.spread == pytest.approx(reference.spread, rel=1e-6)


def test_low_rank_product_with_negative_spectrum_has_top_zero_of_high_multiplicity():
    """d - r zero eigenvalues: if the r non-zero ones are negative, the top is 0 with multiplicity d - r."""
    d, r = 10, 3
    a = np.zeros((d, r))
    a[:r, :r] = -np.eye(r)
    b = np.zeros((r, d))
    b[:r, :r] = np.diag([1.0, 2.0, 3.0])
    summary = low_rank_summary(a, b)
    assert summary.top == pytest.approx(0.0)
    assert summary.multiplicity == d - r
    assert not summary.simple_positive_real
    assert summary.positive_fraction == 0.0


def test_low_rank_asymmetry_and_norms_match_dense_computation():
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=(30, 4)), rng.normal(size=(4, 30))
    u = a @ b
    assert low_rank_asymmetry(a, b) == pytest.approx(asymmetry(u), rel=1e-9)
    frobenius, spectral = low_rank_norms(a, b)
    assert frobenius == pytest.approx(np.linalg.norm(u), rel=1e-12)
    assert spectral == pytest.approx(np.linalg.norm(u, 2), rel=1e-12)
    sym = (a @ a.T)  # symmetric low-rank product A A^T
    assert low_rank_asymmetry(a, a.T) == pytest.approx(0.0, abs=1e-7)
    assert asymmetry(sym) == pytest.approx(0.0, abs=1e-15)


def test_non_square_matrix_is_rejected():
    with pytest.raises(ValueError, match="square"):
        spectrum_summary(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"\[d, r\]"):
        low_rank_summary(np.ones((4, 2)), np.ones((3, 4)))


def test_fewer_points_than_dimensions_are_decided_in_their_span():
    """l < d uses the Gram-matrix LP: the same answers (inside with a certificate, outside with Gordan's)."""
    rng = np.random.default_rng(8)
    points = rng.normal(size=(10, 50))
    points[:, 3] = np.abs(points[:, 3]) + 2.0
    inside = open_hemisphere(points)
    assert inside.inside
    assert np.min(points @ inside.direction / np.linalg.norm(points, axis=1)) == pytest.approx(inside.margin)
    points[9] = -2.5 * points[2]
    outside = open_hemisphere(points)
    assert not outside.inside
    assert outside.gordan_residual < GORDAN_RESIDUAL_TOL


def test_antisymmetric_over_symmetric_ratio_follows_from_the_asymmetry():
    from empirical.audit.report import _antisymmetric_over_symmetric

    rng = np.random.default_rng(9)
    a = rng.normal(size=(6, 6))
    s, k = (a + a.T) / 2, (a - a.T) / 2
    assert _antisymmetric_over_symmetric(asymmetry(a)) == pytest.approx(np.linalg.norm(k) / np.linalg.norm(s))
    assert _antisymmetric_over_symmetric(0.0) == 0.0
