"""The fused Numba kernels (sim.field.kernels) against the numpy formulas they replace, and the arrays the field and the
solver now reuse (per-thread buffers, the stepper's outputs) against the mix-ups that reuse invites."""

import threading
from types import SimpleNamespace

import numpy as np
import pytest

from sim import AttentionField, Dopri5, Ellipsoid
from sim.field.kernels import (exp_nonpositive_, linear_combination, normalised_rows, scaled_error_means, shift_rows_,
                               sphere_drift, sphere_retract, sphere_tangent_projection_, summed_normalised_rows)
from sim.figures.scenarios import full_attention_example

#: The kernels add in another order than numpy (vectorised sums): equal to rounding, a few ulps of values O(1).
RTOL = 1e-13
ATOL = 1e-15


def softmax_as_printed(scores: np.ndarray, causal: bool) -> np.ndarray:
    """alpha = exp(s) / (sqrt(d)-free row sum of exp(s)) row by row in numpy, layout [batch, l, h, l]."""
    tokens = scores.shape[-1]
    mask = np.tri(tokens, dtype=bool)[:, None, :] if causal else np.ones((tokens, 1, tokens), dtype=bool)
    shifted = np.where(mask, scores, -np.inf)
    numerators = np.exp(shifted - shifted.max(axis=-1, keepdims=True))
    return numerators / numerators.sum(axis=-1, keepdims=True)


def kernel_softmax(scores: np.ndarray, causal: bool, scale: float) -> np.ndarray:
    numerators = scores.copy()
    shift_rows_(numerators, causal)
    np.exp(numerators, out=numerators)
    weights = np.empty_like(numerators)
    normalised_rows(numerators, scale, weights)
    return weights


@pytest.mark.parametrize("causal", [False, True])
def test_softmax_rows_equal_the_row_by_row_formula(causal, rng):
    scores = rng.normal(0.0, 3.0, (4, 7, 2, 7))
    np.testing.assert_allclose(kernel_softmax(scores, causal, 2.0), softmax_as_printed(scores, causal) / 2.0,
                               rtol=RTOL, atol=ATOL)


#: The compiled exp (range reduction and a degree-13 polynomial) against numpy's: within 2 ulp (measured 1.0).
EXP_ULPS = 2.0


def _compiled_exp(x: np.ndarray, count: int | None = None, kernel=exp_nonpositive_) -> np.ndarray:
    row = x.copy()
    bits = np.empty(len(x), dtype=np.int64)
    kernel(row, len(x) if count is None else count, bits, bits.view(np.float64))
    return row


def _exp_ulps(kernel=exp_nonpositive_) -> float:
    x = -np.concatenate([np.linspace(0.0, 708.0, 100_001), np.random.default_rng(3).uniform(0.0, 40.0, 10_000)])
    return float(np.max(np.abs(_compiled_exp(x, kernel=kernel) - np.exp(x)) / (np.exp(x) * np.finfo(float).eps)))


def test_compiled_exp_is_numpys_exp_within_two_ulp():
    assert _exp_ulps() <= EXP_ULPS
    assert _compiled_exp(np.array([0.0]))[0] == 1.0  # a row's largest score gives exactly 1
    # clamped far below rounding, to exp(-708): 2^n stays a normal number (n >= -1022), never 0
    np.testing.assert_allclose(_compiled_exp(np.array([-708.0, -800.0, -1e300])), np.exp(-708.0),
                               rtol=EXP_ULPS * np.finfo(float).eps)
    np.testing.assert_array_equal(_compiled_exp(np.array([-1.0, -2.0, -3.0]), 2)[2], -3.0)  # count entries only


@pytest.mark.parametrize("old, new", [("r = (x - n * _LN2_HI) - n * _LN2_LO", "r = x - n * _LN2_HI"),  # ln 2's low part
                                      ("range(12, -1, -1)", "range(12, 1, -1)")])  # the terms 1 + r dropped
def test_control_a_broken_exp_fails_the_ulp_check(old, new):
    import inspect

    from numba import njit

    source = inspect.getsource(exp_nonpositive_.py_func)
    assert source.count(old) == 1
    namespace = dict(exp_nonpositive_.py_func.__globals__)
    exec("\n".join(line for line in source.replace(old, new).splitlines() if not line.startswith("@njit")), namespace)
    assert _exp_ulps(njit(namespace["exp_nonpositive_"])) > EXP_ULPS


def test_softmax_rows_survive_scores_whose_exponential_overflows(rng):
    """Scores of +-1e4 (exp overflows float64 from ~709): each row shifted by its own largest score stays finite."""
    scores = rng.normal(0.0, 1e4, (3, 5, 2, 5))
    weights = kernel_softmax(scores, True, 1.0)
    assert np.all(np.isfinite(weights))
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=RTOL)


def test_summed_rows_are_the_heads_sum_of_the_rows(rng):
    numerators = np.exp(rng.normal(size=(3, 6, 3, 6)))
    summed = np.empty((3, 6, 6))
    summed_normalised_rows(numerators, 1.5, summed)
    weights = np.empty_like(numerators)
    normalised_rows(numerators, 1.5, weights)
    np.testing.assert_allclose(summed, weights.sum(axis=2), rtol=RTOL, atol=ATOL)


def test_sphere_tangent_projection_is_the_formula(rng):
    points = Ellipsoid().random_point(rng, (40, 9))
    vectors = rng.normal(size=(40, 9))
    expected = vectors - np.sum(points * vectors, axis=-1, keepdims=True) * points
    sphere_tangent_projection_(points, vectors)
    np.testing.assert_allclose(vectors, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("count", [2, 4, 7])
def test_linear_combination_is_the_weighted_sum_of_the_rows(count, rng):
    rows = rng.normal(size=(count, 1000))
    coefficients = rng.normal(size=count)
    out = np.empty(1000)
    linear_combination(coefficients, tuple(rows), out)
    np.testing.assert_allclose(out, coefficients @ rows, rtol=RTOL, atol=ATOL)


def test_scaled_error_means_are_scipys_norm_before_the_root(rng):
    error, y, y_next = rng.normal(size=(3, 5, 300))
    rtol, atol = 1e-3, 1e-6
    expected = np.mean((error / (atol + rtol * np.maximum(np.abs(y), np.abs(y_next)))) ** 2, axis=1)
    out = np.empty(5)
    scaled_error_means(error, y, y_next, rtol, atol, out)
    np.testing.assert_allclose(out, expected, rtol=RTOL)


def test_sphere_retraction_normalises_rows_also_in_place(rng):
    points = rng.normal(size=(30, 8))
    expected = points / np.linalg.norm(points, axis=-1, keepdims=True)
    out = np.empty_like(points)
    sphere_retract(points, out)
    np.testing.assert_allclose(out, expected, rtol=RTOL, atol=ATOL)
    sphere_retract(points, points)
    np.testing.assert_allclose(points, expected, rtol=RTOL, atol=ATOL)


def test_sphere_drift_is_the_largest_submersion_and_keeps_nan(rng):
    points = Ellipsoid().random_point(rng, (20, 4))
    points[7] *= 1.0 + 3e-9
    assert sphere_drift(points) == pytest.approx(np.max(np.abs(np.sum(points**2, axis=-1) - 1.0)), rel=1e-6)
    points[3, 1] = np.nan
    assert np.isnan(sphere_drift(points))
    assert sphere_drift(np.empty((0, 4))) == 0.0  # no rows: nothing is off the sphere


def test_sphere_methods_agree_on_arrays_the_kernels_do_not_take(rng):
    """A non-contiguous point (a strided view) goes through the numpy formulas: the same results."""
    sphere = Ellipsoid()
    wide = rng.normal(size=(12, 2, 5))
    strided = wide[:, 0, :]  # rows 80 bytes apart: not C-contiguous
    contiguous = strided.copy()
    np.testing.assert_allclose(sphere.retract(strided), sphere.retract(contiguous), rtol=RTOL, atol=ATOL)
    assert sphere.drift(strided) == pytest.approx(sphere.drift(contiguous), rel=1e-12)
    point = sphere.retract(contiguous)
    vector = rng.normal(size=(12, 5))
    expected = sphere.tangent_projection_(point, vector.copy())
    np.testing.assert_allclose(sphere.tangent_projection_(point, np.asfortranarray(vector)), expected,
                               rtol=RTOL, atol=ATOL)


# --- the solver's outputs ------------------------------------------------------------------------
def test_dopri5_writes_into_the_arrays_it_is_given_and_returns_them(rng):
    field = full_attention_example()
    y0 = Ellipsoid().random_point(rng, (4, 10, 3))
    solver = Dopri5()
    k0 = solver.init(field, 0.0, y0)
    expected = [array.copy() for array in solver.step(field, 0.0, y0, 0.05, k0)]
    y_out, state_out = np.empty_like(y0), np.empty_like(y0)
    y_next, error, last = solver.step(field, 0.0, y0, 0.05, k0, y_out=y_out, state_out=state_out)
    assert y_next is y_out and last is state_out
    for got, want in zip((y_next, error, last), expected):
        np.testing.assert_array_equal(got, want)


def test_dopri5_refuses_an_output_that_overlaps_its_inputs(rng):
    field = full_attention_example()
    y0 = Ellipsoid().random_point(rng, (2, 10, 3))
    solver = Dopri5()
    k0 = solver.init(field, 0.0, y0)
    with pytest.raises(ValueError, match="must not overlap"):
        solver.step(field, 0.0, y0, 0.05, k0, state_out=k0)


# --- the field's per-thread buffers --------------------------------------------------------------
def test_a_result_of_the_field_is_not_changed_by_later_evaluations(rng):
    field = full_attention_example()
    y = Ellipsoid().random_point(rng, (3, 10, 3))
    first = field(0.1, y)
    kept = first.copy()
    field(0.7, Ellipsoid().random_point(rng, (3, 10, 3)))
    np.testing.assert_array_equal(first, kept)


def _interleaved_evaluations(field: AttentionField, y: np.ndarray, monkeypatch) -> list[np.ndarray]:
    """Two threads evaluate ``field`` at the two ``TIMES``, stopped right after their first product (y [P_1 | P_2]
    of their own time, written into the "projected" buffer) until both are there: each has then written its buffer
    and neither has read it yet."""
    import sim.field.dynamics

    meeting = threading.Barrier(2, timeout=30)
    products_so_far = threading.local()
    product = sim.field.dynamics.matmul

    def meeting_after_the_first_product(*args, **kwargs):
        result = product(*args, **kwargs)
        if not getattr(products_so_far, "count", 0):
            meeting.wait()
        products_so_far.count = getattr(products_so_far, "count", 0) + 1
        return result

    results = [None, None]
    errors = []

    def evaluate(index: int) -> None:
        try:
            results[index] = field(TIMES[index], y)
        except Exception as error:  # noqa: BLE001 -- reported by the caller
            errors.append(error)

    with monkeypatch.context() as patch:  # (only these two threads meet: the caller's checks run unpatched)
        patch.setattr(sim.field.dynamics, "matmul", meeting_after_the_first_product)
        threads = [threading.Thread(target=evaluate, args=(index,)) for index in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert not errors, errors
    return results


def _field_and_state(rng) -> tuple[AttentionField, np.ndarray, list[AttentionField]]:
    """A two-head field with P_eta(t) callables; a state; the field frozen at the two ``TIMES``."""
    base = rng.normal(size=(2, 4, 4))
    field = AttentionField(P=(lambda t: np.sin(t) * base[0], lambda t: np.cos(t) * base[1]), W=np.eye(4))
    frozen = [AttentionField(P=(np.sin(t) * base[0], np.cos(t) * base[1]), W=np.eye(4)) for t in TIMES]
    return field, Ellipsoid().random_point(rng, (5, 6, 4)), frozen


TIMES = (0.3, 1.1)


def test_threads_evaluating_the_field_at_once_get_their_own_buffers(rng, monkeypatch):
    field, y, frozen = _field_and_state(rng)
    for got, alone in zip(_interleaved_evaluations(field, y, monkeypatch), frozen):
        np.testing.assert_allclose(got, alone(0.0, y), rtol=1e-12, atol=1e-14)


def test_control_buffers_shared_between_threads_are_caught(rng, monkeypatch):
    """Negative control: with one store of buffers for both threads (the per-thread store replaced by a shared one),
    the thread that wrote its "projected" buffer first reads the other's (of the other time) after the meeting: the
    check above fails."""
    field, y, frozen = _field_and_state(rng)
    field.workspace.threads = SimpleNamespace()
    together = _interleaved_evaluations(field, y, monkeypatch)
    mismatches = [not np.allclose(got, alone(0.0, y), rtol=1e-12, atol=1e-14) for got, alone in zip(together, frozen)]
    assert any(mismatches)


@pytest.mark.parametrize("name", ["sphere-causal-U=I", "ellipsoid-full-U"])
def test_the_field_in_groups_of_instances_equals_the_field_on_the_whole_batch(name, rng, monkeypatch):
    """``AttentionField`` evaluates ``GROUP_BYTES`` of instances at a time: with groups of at most 3 of 7 instances
    (2, 3, 2: the shorter groups' buffers a leading part of the others') the field is the same as in one group."""
    import sim.field.dynamics

    d, tokens = 5, 6
    W = None if name.startswith("sphere") else np.diag(rng.uniform(0.5, 2.0, d))
    U = (rng.normal(size=(d, d)),) if name.endswith("-U") else None
    field = AttentionField(P=(lambda t: np.cos(t) * np.eye(d) + 0.3,), U=U, W=W, causal="causal" in name)
    y = field.manifold.random_point(rng, (7, tokens, d))
    whole = field(0.4, y)
    monkeypatch.setattr(sim.field.dynamics, "GROUP_BYTES", 3 * 8 * tokens * d)
    groups, update = [], AttentionField._update
    monkeypatch.setattr(AttentionField, "_update", lambda self, t, y, out=None: groups.append(y.shape) or update(
        self, t, y, out))
    fresh = AttentionField(P=field.P, U=U, W=W, causal=field.causal)
    np.testing.assert_allclose(fresh(0.4, y), whole, rtol=RTOL, atol=ATOL)
    # groups of whole instances within the bytes, never the batch as one array
    assert [shape[1:] for shape in groups] == [(tokens, d)] * 3 and sorted(shape[0] for shape in groups) == [2, 2, 3]
    np.testing.assert_allclose(fresh(0.4, y[::-1].copy())[::-1], whole, rtol=RTOL, atol=ATOL)  # buffers reused
