"""The ellipsoid E_W (sphere when W = I): one fact per test, batched over leading axes."""

import numpy as np
import pytest

from sim import Ellipsoid
from sim.field.manifold import ZERO_NORM
from tests.sim.conftest import W3

ATOL = 1e-12  # rounding level for O(1) quantities in float64 after a handful of operations


def test_project_lands_on_the_manifold(manifold, rng):
    x = rng.standard_normal((7, 5, 3)) * 10.0
    assert manifold.belongs(manifold.project(x), atol=ATOL).all()


def test_project_is_idempotent(manifold, rng):
    y = manifold.project(rng.standard_normal((20, 3)))
    np.testing.assert_allclose(manifold.project(y), y, atol=ATOL)


def test_tangent_projection_is_idempotent(manifold, rng):
    y = manifold.random_point(rng, (20, 3))
    once = manifold.tangent_projection(y, rng.standard_normal((20, 3)))
    np.testing.assert_allclose(manifold.tangent_projection(y, once), once, atol=ATOL)


def test_tangent_projection_lands_in_the_tangent_space(manifold, rng):
    y = manifold.random_point(rng, (4, 20, 3))
    assert manifold.is_tangent(y, manifold.tangent_projection(y, rng.standard_normal(y.shape)), atol=ATOL).all()


def test_tangent_projection_kernel_is_the_point(manifold, rng):
    y = manifold.random_point(rng, (20, 3))
    np.testing.assert_allclose(manifold.tangent_projection(y, 3.0 * y), 0.0, atol=ATOL)


def test_tangent_projection_is_self_adjoint_for_the_W_inner_product(manifold, rng):
    y = manifold.random_point(rng, (20, 3))
    a, b = rng.standard_normal((2, 20, 3))
    np.testing.assert_allclose(manifold.inner_product(y, manifold.tangent_projection(y, a), b),
                               manifold.inner_product(y, a, manifold.tangent_projection(y, b)), atol=ATOL)


def test_projection_differential_matches_a_taylor_remainder_of_order_two(manifold, rng):
    """|pi(x + h X) - pi(x) - h T_x pi X| = O(h^2) over h in logspace (pymanopt's check_gradient habit)."""
    x = 1.7 * manifold.random_point(rng, (3,))
    X = rng.standard_normal(3)
    hs = np.logspace(-5, -1, 9)
    remainders = [np.linalg.norm(manifold.project(x + h * X) - manifold.project(x)
                                 - h * manifold.projection_differential(x, X)) for h in hs]
    slope = np.polyfit(np.log(hs), np.log(remainders), 1)[0]
    assert abs(slope - 2.0) <= 0.1


def test_projection_differential_at_a_unit_point_is_the_tangent_projection(manifold, rng):
    y = manifold.random_point(rng, (10, 3))
    X = rng.standard_normal((10, 3))
    np.testing.assert_allclose(manifold.projection_differential(y, X), manifold.tangent_projection(y, X), atol=ATOL)


def test_random_points_belong(manifold, rng):
    assert manifold.random_point(rng, (100, 10, 3)).shape == (100, 10, 3)
    assert manifold.belongs(manifold.random_point(rng, (100, 10, 3)), atol=ATOL).all()


def test_random_points_in_a_hemisphere_are_in_it_and_on_the_manifold(manifold, rng):
    v = np.array([0.3, -1.0, 0.5])
    y = manifold.random_point_in_hemisphere(v, rng, (500, 3))
    assert (y @ v > 0).all()
    assert manifold.belongs(y, atol=ATOL).all()


def test_random_sphere_points_are_uniform():
    """The mean of uniform points on S^2 is 0 and E[x x^T] = I/3 (standard errors ~ 1/sqrt(n))."""
    y = Ellipsoid().random_point(np.random.default_rng(7), (40000, 3))
    np.testing.assert_allclose(y.mean(axis=0), 0.0, atol=0.02)
    np.testing.assert_allclose(y.T @ y / len(y), np.eye(3) / 3, atol=0.01)


def test_random_hemisphere_points_are_uniform_on_the_half_sphere():
    """For uniform points on the hemisphere of e_1 on S^2, y_1 is uniform on (0, 1) (Archimedes)."""
    y = Ellipsoid().random_point_in_hemisphere(np.array([1.0, 0, 0]), np.random.default_rng(8), (40000, 3))
    np.testing.assert_allclose(np.quantile(y[:, 0], [0.25, 0.5, 0.75]), [0.25, 0.5, 0.75], atol=0.01)


def test_an_identity_W_is_the_sphere():
    assert Ellipsoid(np.eye(4)).is_sphere
    assert not Ellipsoid(W3).is_sphere


def test_belongs_rejects_points_off_the_manifold(manifold):
    assert not manifold.belongs(np.array([2.0, 0.0, 0.0]), atol=1e-6)


def test_is_tangent_rejects_the_normal_direction(manifold, rng):
    y = manifold.random_point(rng, (3,))
    assert not manifold.is_tangent(y, y, atol=1e-6)


def test_random_tangent_vectors_are_tangent_and_follow_the_seed(manifold, rng):
    y = manifold.random_point(rng, (5, 3))
    first = manifold.random_tangent_vector(y.tolist(), np.random.default_rng(7))  # a nested list is accepted
    assert first.shape == (5, 3) and manifold.is_tangent(y, first, atol=ATOL).all()
    np.testing.assert_array_equal(manifold.random_tangent_vector(y, np.random.default_rng(7)), first)
    np.testing.assert_allclose(np.linalg.norm(first, axis=-1) > 0.0, True)


def test_tangent_projection_computes_in_float64_from_float32_input(manifold, rng):
    y = manifold.random_point(rng, (6, 3))
    x = rng.standard_normal((6, 3))
    projected = manifold.tangent_projection(y.astype(np.float32), x.astype(np.float32))
    assert projected.dtype == np.float64
    np.testing.assert_allclose(projected, manifold.tangent_projection(y.astype(np.float32).astype(np.float64),
                                                                      x.astype(np.float32).astype(np.float64)),
                               rtol=0, atol=0)


def test_is_tangent_accepts_an_inner_product_equal_to_atol():
    # <y, X> = 0.5 exactly in float64: the test is |<y, X>| <= atol, inclusive
    assert Ellipsoid().is_tangent([1.0, 0.0, 0.0], [0.5, 1.0, 0.0], atol=0.5)
    assert not Ellipsoid().is_tangent([1.0, 0.0, 0.0], [0.5, 1.0, 0.0], atol=0.4999)


def test_repr_names_the_manifold():
    assert repr(Ellipsoid()) == "Ellipsoid(sphere)"
    assert repr(Ellipsoid(W3)) == "Ellipsoid(W of shape (3, 3))"


def test_inner_product_is_batched_and_computed_in_float64(manifold, rng):
    a, b = rng.standard_normal((2, 5, 3))
    W = np.eye(3) if manifold.is_sphere else W3
    products = manifold.inner_product(None, a.astype(np.float32), b.astype(np.float32))
    assert products.shape == (5,) and products.dtype == np.float64
    expected = np.einsum("ni,ij,nj->n", a.astype(np.float32).astype(np.float64), W, b.astype(np.float32))
    np.testing.assert_allclose(products, expected, rtol=1e-15, atol=1e-15)


class _ScriptedGenerator:
    """Stands in for np.random.Generator: returns the given draws in order (to reach the redraw branches)."""

    def __init__(self, *draws):
        self.draws = [np.array(d, dtype=np.float64) for d in draws]

    def standard_normal(self, shape):
        draw = self.draws.pop(0)
        assert draw.shape == tuple(np.atleast_1d(shape)), (draw.shape, shape)
        return draw


def test_a_zero_gaussian_draw_is_redrawn_as_its_row_alone():
    points = Ellipsoid().random_point(_ScriptedGenerator([[0.0, 0.0], [3.0, 4.0]], [[0.0, 2.0]]), (2, 2))
    np.testing.assert_array_equal(points, [[0.0, 1.0], [0.6, 0.8]])


def test_a_draw_on_the_hemispheres_boundary_is_redrawn():
    # v = e_1, one instance of 3 tokens in d = 2: the first token (0, 1) has v^T y = 0, not in the open
    # hemisphere; it is redrawn as one d-vector, (-0.6, 0.8), then reflected across v's hyperplane to (0.6, 0.8);
    # the second token (-1, 0) is reflected to (1, 0), the third is already inside
    rng = _ScriptedGenerator([[[0.0, 1.0], [-1.0, 0.0], [0.8, 0.6]]], [[-0.6, 0.8]])
    points = Ellipsoid().random_point_in_hemisphere([1.0, 0.0], rng, (1, 3, 2))
    np.testing.assert_allclose(points, [[[0.6, 0.8], [1.0, 0.0], [0.8, 0.6]]], atol=ATOL)


def test_random_points_in_a_hemisphere_take_any_batch_shape(manifold, rng):
    points = manifold.random_point_in_hemisphere(np.array([0.0, 0.0, 1.0]), rng, (2, 4, 3))
    assert points.shape == (2, 4, 3) and manifold.belongs(points, atol=ATOL).all()


def test_membership_tests_default_to_a_tolerance_of_rounding_size():
    off = np.array([1.0 + 1e-9, 0.0, 0.0])  # 2e-9 off the unit sphere: far above float64 rounding
    assert Ellipsoid().belongs([1.0, 0.0, 0.0]) and not Ellipsoid().belongs(off)
    assert Ellipsoid().is_tangent([1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    assert not Ellipsoid().is_tangent([1.0, 0.0, 0.0], [1e-9, 1.0, 0.0])


def test_norm_and_submersion_compute_in_float64_from_float32_input(manifold, rng):
    """float32 input is widened first: (0.6, 0.8, 0) in float32 is 4.8e-8 off the unit sphere in float64, a
    difference float32 arithmetic rounds away."""
    x = rng.standard_normal((6, 3)).astype(np.float32)
    for f in (manifold.norm, manifold.submersion):
        assert f(x).dtype == np.float64
        np.testing.assert_allclose(f(x), f(x.astype(np.float64)), rtol=0, atol=0)
    assert Ellipsoid().submersion(np.array([0.6, 0.8, 0.0], dtype=np.float32)) > 1e-8


def test_belongs_accepts_a_deviation_equal_to_atol():
    # an exact point deviates by 0.0: the test is |x^T W x - 1| <= atol, inclusive
    assert Ellipsoid().belongs([1.0, 0.0, 0.0], atol=0.0)


def test_drift_of_float32_points_is_measured_in_float64():
    """Only C-contiguous float64 rows take the sphere's kernels; float32 rows are widened like everywhere else."""
    point = np.array([[0.6, 0.8, 0.0]], dtype=np.float32)
    assert Ellipsoid().drift(point) == abs(Ellipsoid().submersion(point)[0]) > 1e-8


def test_retract_of_a_strided_view_is_the_projection(rng):
    points = rng.standard_normal((3, 8)).T  # (8, 3), not C-contiguous: the numpy formula serves it
    assert not points.flags.c_contiguous
    np.testing.assert_allclose(Ellipsoid().retract(points), Ellipsoid().project(points), rtol=0, atol=ATOL)


def test_a_one_by_one_w_is_an_ellipsoid_of_two_points():
    np.testing.assert_allclose(Ellipsoid(np.array([[4.0]])).project(np.array([[3.0], [-1.0]])), [[0.5], [-0.5]],
                               rtol=0, atol=ATOL)


def test_w_symmetry_tolerance_scales_with_its_largest_entry():
    # 1e-12 * max(1, max |W|): exactly at it is accepted; with max |W| = 4 an asymmetry of 2e-12 is within it
    Ellipsoid(np.array([[1.0, 1e-12], [0.0, 1.0]]))
    Ellipsoid(np.array([[4.0, 2e-12], [0.0, 1.0]]))


def test_finite_arrays_are_float64_whatever_they_came_as():
    from sim.field.manifold import as_finite_array

    for value in ([1, 2, 3], np.arange(3, dtype=np.float32), np.arange(3, dtype=np.int64)):
        assert as_finite_array("x", value).dtype == np.float64
    assert as_finite_array("x", 2.5).shape == ()  # a scalar is an array of 0 axes unless ndim_min says more


def test_a_tangent_projection_broadcasts_one_point_over_many_vectors():
    rng = np.random.default_rng(4)
    sphere = Ellipsoid()
    point = sphere.random_point(rng, (3,))
    vectors = rng.standard_normal((5, 3))
    projected = sphere.tangent_projection_(point, vectors.copy())
    for row, vector in zip(projected, vectors):
        np.testing.assert_allclose(row, vector - (point @ vector) * point, atol=1e-15)


def test_points_need_a_last_axis_of_one_coordinate_at_least():
    rng = np.random.default_rng(0)
    points = Ellipsoid().random_point(rng, (6, 1))  # d = 1: the 0-sphere {-1, +1}
    np.testing.assert_array_equal(np.abs(points), 1.0)
    for shape in ((), (4, 0)):
        with pytest.raises(ValueError, match=r"shape must be \[\.\.\., d\] with d >= 1"):
            Ellipsoid().random_point(rng, shape)


def test_a_zero_gaussian_draw_is_redrawn_row_by_row():
    """A Gaussian vector that is exactly zero (probability zero, forced here) is drawn again, row by row."""
    class ZerosFirst:
        def __init__(self):
            self.calls = []

        def standard_normal(self, shape):
            self.calls.append(shape)
            return np.zeros(shape) if len(self.calls) == 1 else np.ones(shape)

    rng = ZerosFirst()
    points = Ellipsoid().random_point(rng, (2, 4, 3))
    assert rng.calls == [(2, 4, 3), (8, 3)]
    np.testing.assert_allclose(points, 1 / np.sqrt(3))


def test_projection_scales_by_the_largest_entry_so_huge_points_do_not_overflow():
    """|x|^2 of [3e154, 4e154] is 2.5e309 (inf in float64): scaled by its largest entry first, the direction is
    exact; with W = diag(1, 4) too. A product instead of the quotient would overflow to nan."""
    np.testing.assert_allclose(Ellipsoid().project(np.array([[3e154, 4e154]])), [[0.6, 0.8]], rtol=1e-15)
    np.testing.assert_allclose(Ellipsoid(np.diag([1.0, 4.0])).project(np.array([3e154, 2e154])),
                               [0.6, 0.4], rtol=1e-15)  # |(0.6, 0.4)|_W = sqrt(0.36 + 0.64) = 1


def test_projection_refuses_each_zero_point_of_a_batch_and_points_at_the_zero_bound():
    with pytest.raises(ValueError, match=r"\(1 zero vectors\)"):
        Ellipsoid().project(np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))  # the other point is not zero
    with pytest.raises(ValueError, match="point must be nonzero"):
        Ellipsoid().project(np.array([ZERO_NORM, 0.0, 0.0]))  # the bound itself counts as zero
    above = np.nextafter(ZERO_NORM, 1.0)
    np.testing.assert_array_equal(Ellipsoid().project(np.array([above, 0.0, 0.0])), [1.0, 0.0, 0.0])
