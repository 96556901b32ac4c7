"""The strategies generate what they promise: each theorem's hypotheses hold on every instance."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.properties import strategies as S
from tests.properties.control import budget

ON_MANIFOLD = 1e-12  # |y^T W y - 1| after pi_W: a few roundings of O(1) sums


def _on_ellipsoid(W, y):
    return np.abs(np.einsum("...i,ij,...j->...", y, np.eye(y.shape[-1]) if W is None else W, y) - 1)


@budget(0.5)
@given(S.full_attention_instances(max_dim=40))
def test_full_attention_tokens_lie_on_the_ellipsoid_inside_the_open_hemisphere(instance):
    assert np.max(_on_ellipsoid(instance.W, instance.y0)) <= ON_MANIFOLD
    assert _on_ellipsoid(instance.W, instance.v) <= ON_MANIFOLD
    assert np.min(instance.y0 @ instance.v) > 0


@budget(0.5)
@given(S.full_attention_instances(max_dim=40))
def test_trigonometric_p_stays_within_its_bound(instance):
    for P in instance.P:
        norms = [np.linalg.norm(P(t)) for t in np.linspace(0.0, 50.0, 101)]
        assert max(norms) <= P.bound * (1 + 1e-12)
        assert P.bound <= instance.p_bound * (1 + 1e-12)


@budget(0.5)
@given(S.symmetric_value_instances(max_dim=40))
def test_value_matrix_is_symmetric_with_a_simple_positive_top_eigenvalue_and_tokens_in_its_hemisphere(instance):
    eigenvalues, eigenvectors = np.linalg.eigh(instance.U)
    np.testing.assert_allclose(instance.U, instance.U.T, atol=0)
    assert eigenvalues[-1] > 0 and eigenvalues[-1] - eigenvalues[-2] >= instance.gap * (1 - 1e-9)
    np.testing.assert_allclose(abs(eigenvectors[:, -1] @ instance.v), 1.0, rtol=1e-12)
    assert np.min(instance.y0 @ instance.v) > 0


@budget(0.5)
@given(S.moving_eigenvector_instances(), st.floats(0.01, 1.0), st.floats(0.0, 20.0))
def test_moving_top_eigenvector_has_the_prescribed_speed(instance, speed, t):
    moving = instance.with_speed(speed)
    eigenvalues, eigenvectors = np.linalg.eigh(moving.value(t))
    np.testing.assert_allclose(eigenvalues, np.sort(instance.eigenvalues), atol=1e-12)
    np.testing.assert_allclose(abs(eigenvectors[:, -1] @ moving.top_eigenvector(t)), 1.0, rtol=1e-10)
    h = 1e-6  # central difference: error ~ h^2 speed^3
    velocity = (moving.top_eigenvector(t + h) - moving.top_eigenvector(t - h)) / (2 * h)
    np.testing.assert_allclose(np.linalg.norm(velocity), speed, rtol=1e-6)


@budget(0.5)
@given(S.causal_identity_instances(max_dim=40))
def test_causal_tokens_keep_away_from_the_antipode_of_the_first(instance):
    assert np.max(np.abs(np.linalg.norm(instance.y0, axis=-1) - 1)) <= ON_MANIFOLD
    assert np.min(instance.y0[1:] @ instance.y0[0]) >= np.cos(np.pi - instance.min_angle) - 1e-12


@budget(0.5)
@given(S.gradient_instances(max_dim=40))
def test_gradient_instances_have_w_equal_to_an_spd_p(instance):
    assert np.linalg.eigvalsh(instance.P)[0] >= instance.smallest * (1 - 1e-9)
    assert np.max(_on_ellipsoid(instance.P, instance.y0)) <= ON_MANIFOLD


@budget(0.5)
@given(S.antipodal_configurations(max_dim=40))
def test_antipodal_tokens_lie_on_one_line_in_no_open_hemisphere(instance):
    y = instance.y0
    assert np.max(np.abs(y[:, 1:])) == 0.0  # the first coordinate axis, exactly
    assert np.min(y[:, 0]) < 0 < np.max(y[:, 0])


@budget(0.5)
@given(S.consensus_perturbations(max_dim=40))
def test_consensus_perturbations_are_small_and_distinct(instance):
    offsets = np.linalg.norm(instance.y0 - instance.z, axis=-1)
    assert np.max(offsets) <= 2 * instance.radius
    assert np.min(np.linalg.norm(instance.y0[1:] - instance.y0[0], axis=-1)) > 0


# --- the controls: each test above rejects a strategy broken the way it guards against ------------------------------
class Broken:
    """An instance with some attributes replaced (``overrides``), the rest its own: a strategy broken on purpose."""

    def __init__(self, instance, **overrides):
        self._instance, self._overrides = instance, overrides

    def __getattr__(self, name):
        return self._overrides[name] if name in self._overrides else getattr(self._instance, name)


def _instance(strategy, condition=lambda instance: True):
    """One instance of ``strategy`` meeting ``condition`` (Hypothesis's shrinking search, no database: the same one
    on every run)."""
    from hypothesis import find, settings

    return find(strategy, condition, settings=settings(database=None, max_examples=500))


def _flipped_first(y):
    broken = np.array(y, copy=True)
    broken[0] = -broken[0]
    return broken


def _values_growing(instance):
    """The moving-eigenvector instance whose ``with_speed`` turns twice as fast as asked."""
    return Broken(instance, with_speed=lambda speed: instance.with_speed(2 * speed))


CONTROLS = {
    "token-outside-the-hemisphere": (
        test_full_attention_tokens_lie_on_the_ellipsoid_inside_the_open_hemisphere,
        lambda: _instance(S.full_attention_instances(max_dim=16)), lambda i: Broken(i, y0=_flipped_first(i.y0)), ()),
    "p-beyond-its-bound": (
        test_trigonometric_p_stays_within_its_bound,
        lambda: _instance(S.full_attention_instances(max_dim=16), lambda i: max(P.bound for P in i.P) > 0.1),
        lambda i: Broken(i, p_bound=0.5 * max(P.bound for P in i.P)), ()),
    "non-symmetric-value": (
        test_value_matrix_is_symmetric_with_a_simple_positive_top_eigenvalue_and_tokens_in_its_hemisphere,
        lambda: _instance(S.symmetric_value_instances(max_dim=16)),
        lambda i: Broken(i, U=i.U + np.triu(np.ones_like(i.U), 1)), ()),
    "eigenvector-twice-as-fast": (
        test_moving_top_eigenvector_has_the_prescribed_speed,
        lambda: _instance(S.moving_eigenvector_instances()), _values_growing, (0.5, 1.0)),
    "token-at-the-antipode-of-the-first": (
        test_causal_tokens_keep_away_from_the_antipode_of_the_first,
        lambda: _instance(S.causal_identity_instances(max_dim=16)),
        lambda i: Broken(i, y0=np.concatenate([i.y0[:1], -i.y0[:1], i.y0[2:]])), ()),
    "p-less-definite-than-promised": (
        test_gradient_instances_have_w_equal_to_an_spd_p,
        lambda: _instance(S.gradient_instances(max_dim=16)),
        lambda i: Broken(i, smallest=2 * np.linalg.eigvalsh(i.P)[0]), ()),
    "antipodal-tokens-all-on-one-side": (
        test_antipodal_tokens_lie_on_one_line_in_no_open_hemisphere,
        lambda: _instance(S.antipodal_configurations(max_dim=16)), lambda i: Broken(i, y0=np.abs(i.y0)), ()),
    "perturbation-beyond-its-radius": (
        test_consensus_perturbations_are_small_and_distinct,
        lambda: _instance(S.consensus_perturbations(max_dim=16)), lambda i: Broken(i, radius=0.0), ()),
}


def test_every_strategy_test_has_a_control():
    tested = {name for name, value in globals().items() if name.startswith("test_") and hasattr(value, "hypothesis")}
    assert tested == {test.__name__ for test, *_ in CONTROLS.values()}


@pytest.mark.parametrize("name", CONTROLS)
def test_a_broken_strategy_is_rejected(name):
    """The control of each strategy test: the same assertions on an instance broken the way the test guards against
    fail (the unbroken instance, its control in turn, passes)."""
    test, instance_of, break_, extra = CONTROLS[name]
    instance = instance_of()
    test.hypothesis.inner_test(instance, *extra)
    with pytest.raises(AssertionError):
        test.hypothesis.inner_test(break_(instance), *extra)
