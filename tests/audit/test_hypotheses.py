"""The hypothesis measures on constructed inputs with known answers (and negative controls)."""

import itertools

import numpy as np
import pytest

from empirical.audit.hypotheses import (
                                        EIGEN_REL_TOL,
                                        SpectrumSummary,
                                        _summarise,
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


# --- the measures at their edges ---------------------------------------------------------------------------------------
def test_a_bad_matrix_is_refused_in_its_own_words():
    with pytest.raises(ValueError, match=r"^matrix must be a square 2-d array; got shape \(2, 3\)\.$"):
        asymmetry(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"^matrix must be a square 2-d array; got shape \(3,\)\.$"):
        spectrum_summary(np.ones(3))
    with pytest.raises(ValueError, match=r"^matrix must be finite \(no NaN or inf\)\.$"):
        spectrum_summary(np.array([[1.0, np.inf], [0.0, 1.0]]))
    # control: a square finite matrix is read
    assert spectrum_summary(np.eye(2)).size == 2


def test_bad_low_rank_factors_are_refused_in_their_own_words():
    with pytest.raises(ValueError, match=r"^left must be \[d, r\] and right \[r, d\]; got \(4,\) and \(1, 4\)\.$"):
        low_rank_summary(np.ones(4), np.ones((1, 4)))
    with pytest.raises(ValueError, match=r"^left must be \[d, r\] and right \[r, d\]; got \(4, 1\) and \(1, 3\)\.$"):
        low_rank_summary(np.ones((4, 1)), np.ones((1, 3)))
    with pytest.raises(ValueError, match=r"^the inner rank r=4 must not exceed d=3\.$"):
        low_rank_summary(np.ones((3, 4)), np.ones((4, 3)))
    # control: r = d is allowed, and reads as the dense product does
    rng = np.random.default_rng(12)
    a, b = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    assert low_rank_summary(a, b).top == pytest.approx(spectrum_summary(a @ b).top, rel=1e-12)


def test_the_zero_matrix_and_rank_zero_have_the_empty_summary():
    """No non-zero eigenvalue: top 0 (real), every eigenvalue in its cluster, no gap, spread, radius or share."""
    empty = SpectrumSummary(0j, True, 3, 0.0, 0.0, 0.0, 0.0, 3)
    assert spectrum_summary(np.zeros((3, 3))) == empty
    assert low_rank_summary(np.zeros((3, 0)), np.zeros((0, 3))) == empty
    assert low_rank_summary(np.zeros((3, 1)), np.zeros((1, 3))) == empty
    # control: a non-zero matrix is summarised
    assert spectrum_summary(np.diag([0.0, 0.0, 0.5])) == SpectrumSummary(0.5, True, 1, 1.0, 1.0, 0.5, 1 / 3, 3)


def test_zero_or_a_unit_norm_matrix_has_the_asymmetry_of_its_definition():
    assert asymmetry(np.zeros((3, 3))) == 0.0
    assert asymmetry(np.array([[0.0, 1.0], [0.0, 0.0]])) == np.sqrt(2.0)  # |U|_F = 1, |U - U^T|_F = sqrt 2
    assert low_rank_asymmetry(np.zeros((3, 1)), np.zeros((1, 3))) == 0.0
    # U = [[0, 1/4], [0, 0]]: |U|_F^2 = 1/16 (below 1), |U - U^T|_F / |U|_F = sqrt 2
    assert low_rank_asymmetry(np.array([[0.5], [0.0]]), np.array([[0.0, 0.5]])) == pytest.approx(np.sqrt(2.0),
                                                                                               rel=1e-15)


def test_float32_input_is_measured_in_float64():
    """float32 weights (as stored) are converted before any product: the measures equal those of the float64 copy
    exactly, and differ from the same arithmetic done in float32 (the control)."""
    rng = np.random.default_rng(11)
    u = rng.normal(size=(7, 7)).astype(np.float32)
    left, right = rng.normal(size=(9, 3)).astype(np.float32), rng.normal(size=(3, 9)).astype(np.float32)
    u64, left64, right64 = u.astype(np.float64), left.astype(np.float64), right.astype(np.float64)
    assert asymmetry(u) == asymmetry(u64) != float(np.linalg.norm(u - u.T) / np.linalg.norm(u))
    assert spectrum_summary(u) == spectrum_summary(u64)
    assert spectrum_summary(u).top.real != float(np.max(np.linalg.eigvals(u).real))
    assert low_rank_summary(left, right) == low_rank_summary(left64, right64)
    assert low_rank_summary(left, right).top.real != float(np.max(np.linalg.eigvals(right @ left).real))
    assert low_rank_asymmetry(left, right) == low_rank_asymmetry(left64, right64)
    assert low_rank_norms(left, right) == low_rank_norms(left64, right64)
    assert low_rank_norms(left, right)[0] != float(np.linalg.norm(np.linalg.qr(left, mode="r")
                                                                  @ np.linalg.qr(right.T, mode="r").T))
    inner = right64 @ left64
    frob2 = float(np.trace((left64.T @ left64) @ (right64 @ right64.T)))
    assert low_rank_asymmetry(left, right) == pytest.approx(
        np.sqrt((2 * frob2 - 2 * np.trace(inner @ inner)) / frob2), rel=1e-12)


def test_a_symmetric_matrix_is_read_with_the_symmetric_solver():
    """Symmetric U: eigvalsh's real eigenvalues, not the general solver's (which differ in the last bits here)."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 6))
    s = a + a.T
    summary = spectrum_summary(s)
    assert summary.top == np.linalg.eigvalsh(s)[-1]
    assert summary.top != np.max(np.linalg.eigvals(s).real)  # control: the general solver's top differs here
    assert spectrum_summary(a).top == complex(np.linalg.eigvals(a)[np.argmax(np.linalg.eigvals(a).real)])


def test_a_low_rank_complex_top_stays_complex():
    """B A = rotation by 0.3 (scaled): the top eigenvalue of A B is the complex pair, with +imag reported."""
    c, s = 2 * np.cos(0.3), 2 * np.sin(0.3)
    left = np.zeros((5, 2))
    left[:2] = np.eye(2)
    right = np.zeros((2, 5))
    right[:, :2] = [[c, -s], [s, c]]
    summary = low_rank_summary(left, right)
    assert not summary.top_is_real and summary.top == pytest.approx(complex(c, s), rel=1e-14)
    assert summary.top.imag > 0 and summary.multiplicity == 1 and summary.gap == 0.0  # its conjugate: same real part


def test_of_a_top_conjugate_pair_the_positive_imaginary_part_is_reported_wherever_the_solver_lists_it():
    n = 20
    values = np.linspace(-1.0, 1.0, n).astype(np.complex128)
    values[5], values[6] = 3 - 1j, 3 + 1j  # the pair, -imag first, among others
    assert _summarise(values, zeros=0).top == 3 + 1j
    values[5], values[6] = 3 + 1j, 3 - 1j
    assert _summarise(values, zeros=0).top == 3 + 1j


def test_a_cluster_is_within_a_millionth_of_the_radius_inclusive():
    """top 0, radius 8: an eigenvalue exactly 8e-6 below 0 is in top's cluster, the next float further is not; the
    cut scales with the radius (at radius 1 the same pair is two eigenvalues)."""
    radius = 8.0
    edge = EIGEN_REL_TOL * radius
    at_edge = spectrum_summary(np.diag([0.0, -edge, -radius]))
    assert at_edge.multiplicity == 2 and at_edge.gap == 1.0
    beyond = spectrum_summary(np.diag([0.0, np.nextafter(-edge, -1.0), -radius]))
    assert beyond.multiplicity == 1 and beyond.gap == -np.nextafter(-edge, -1.0) / radius
    assert spectrum_summary(np.diag([0.0, -edge, -1.0])).multiplicity == 1


def test_a_spectrum_in_one_cluster_has_no_gap():
    summary = spectrum_summary(np.eye(3))
    assert (summary.multiplicity, summary.gap, summary.spread, summary.radius) == (3, 0.0, 0.0, 1.0)
    assert summary.top == 1.0 and summary.positive_fraction == 1.0  # radius exactly 1 is read, not taken for 0


def test_the_top_is_real_when_its_imaginary_part_is_within_a_millionth_of_the_radius_inclusive():
    """A pair +-b i with b = 2**-20 exactly a millionth of the radius (eigvals computes both exactly)."""
    b = 2.0 ** -20
    radius = 0.95367431640625  # the float whose millionth is 2**-20 exactly
    assert EIGEN_REL_TOL * radius == b
    at_edge = spectrum_summary(np.array([[0.0, -b, 0.0], [b, 0.0, 0.0], [0.0, 0.0, -radius]]))
    assert at_edge.top == complex(0.0, b) and at_edge.top_is_real
    wider = b + 2.0 ** -40  # a millionth of a millionth wider (the next float would round back to b in eigvals)
    beyond = spectrum_summary(np.array([[0.0, -wider, 0.0], [wider, 0.0, 0.0], [0.0, 0.0, -radius]]))
    assert not beyond.top_is_real


def test_the_positive_share_counts_strictly_positive_and_for_low_rank_only_the_non_zero_eigenvalues():
    assert spectrum_summary(np.diag([1.0, 0.0, -1.0])).positive_fraction == pytest.approx(1 / 3)  # 0 is not positive
    # a full spectrum counts its tiny eigenvalues too (only the low-rank zeros added analytically are left out)
    assert spectrum_summary(np.diag([1.0, 1e-9, -1.0])).positive_fraction == pytest.approx(2 / 3)
    # low rank, d = 10, r = 3, B A = diag(1, 2, 3): 3 of the 3 non-zero eigenvalues are positive (not 3 of 10)
    left = np.zeros((10, 3))
    left[:3] = np.eye(3)
    right = np.zeros((3, 10))
    right[:, :3] = np.diag([1.0, 2.0, 3.0])
    assert low_rank_summary(left, right).positive_fraction == 1.0
    # B A = diag(-R, s) with s exactly a millionth of R: s counts as zero, so none of the non-zero ones is positive
    radius = 8.0
    right[:, :3] = np.diag([-radius, EIGEN_REL_TOL * radius, 0.0])
    assert low_rank_summary(left, right).positive_fraction == 0.0
    right[:, :3] = np.diag([-radius, np.nextafter(EIGEN_REL_TOL * radius, 1.0), 0.0])  # control: one float above
    assert low_rank_summary(left, right).positive_fraction == 0.5
