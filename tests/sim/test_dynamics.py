"""The attention vector field (eq. 6), the discrete model (eq. 1), E (eq. 9) and V (eq. 7)."""

import numpy as np
import pytest

from sim import AttentionField, Ellipsoid, hemisphere_lyapunov, misalignment, token_lyapunov, top_eigenvector
from sim.figures.scenarios import FIG5_U, full_attention_example
from tests.sim.conftest import W3

ATOL = 1e-12  # rounding level: O(1) entries after sums of <= 10 terms


def eq6_by_loops(P, U, W, causal, y):
    """Eq. 6 written out term by term (no batching, no log-sum-exp): the reference for the vectorised field."""
    tokens, d = y.shape
    out = np.zeros_like(y)
    for i in range(tokens):
        total = np.zeros(d)
        for Peta, Ueta in zip(P, U):
            js = range(i + 1) if causal else range(tokens)
            Z = np.sqrt(d) * sum(np.exp(y[i] @ Peta @ y[j]) for j in js)
            total += sum(np.exp(y[i] @ Peta @ y[j]) / Z * (Ueta @ y[j]) for j in js)
        out[i] = (np.eye(d) - np.outer(y[i], y[i]) @ W) @ total
    return out


CASES = {
    "sphere-full-U=I": dict(W=None, causal=False, values=False),
    "sphere-causal-U": dict(W=None, causal=True, values=True),
    "ellipsoid-full-U": dict(W=W3, causal=False, values=True),
    "ellipsoid-causal-U=I": dict(W=W3, causal=True, values=False),
}


def build(case, rng, heads=2):
    P = tuple(rng.uniform(-1, 1, (3, 3)) for _ in range(heads))
    U = tuple(rng.uniform(-1, 1, (3, 3)) for _ in range(heads)) if case["values"] else None
    field = AttentionField(P=P, U=U, W=case["W"], causal=case["causal"])
    return field, P, (U if U is not None else (np.eye(3),) * heads)


@pytest.mark.parametrize("name", CASES)
def test_field_equals_eq6_written_term_by_term(name, rng):
    case = CASES[name]
    field, P, U = build(case, rng)
    y = Ellipsoid(case["W"]).random_point(rng, (6, 3))
    W = np.eye(3) if case["W"] is None else case["W"]
    np.testing.assert_allclose(field(0.0, y), eq6_by_loops(P, U, W, case["causal"], y), atol=ATOL)


@pytest.mark.parametrize("name", CASES)
def test_batched_field_equals_the_field_of_each_instance(name, rng):
    field, _, _ = build(CASES[name], rng)
    y = Ellipsoid(CASES[name]["W"]).random_point(rng, (4, 2, 6, 3))
    batched = field(0.3, y)
    for index in np.ndindex(4, 2):
        np.testing.assert_allclose(batched[index], field(0.3, y[index]), atol=ATOL)


@pytest.mark.parametrize("name", CASES)
def test_field_is_tangent_to_the_manifold(name, rng):
    field, _, _ = build(CASES[name], rng)
    y = field.manifold.random_point(rng, (50, 8, 3))
    assert field.manifold.is_tangent(y, field(0.0, y), atol=ATOL).all()


@pytest.mark.parametrize("name, dim, tokens", [(name, 3, 6) for name in CASES] + [("sphere-full-U=I", 20, 6)])
def test_field_writes_into_out(name, dim, tokens, rng):
    """``field(t, y, out=...)`` writes what ``field(t, y)`` returns; d = 20 > l takes the sphere's U = I route."""
    case = CASES[name]
    P = tuple(rng.uniform(-1, 1, (dim, dim)) for _ in range(2))
    U = tuple(rng.uniform(-1, 1, (dim, dim)) for _ in range(2)) if case["values"] else None
    field = AttentionField(P=P, U=U, W=None if case["W"] is None else W3, causal=case["causal"])
    y = field.manifold.random_point(rng, (4, tokens, dim))
    out = np.full_like(y, np.nan)
    assert field(0.0, y, out=out) is out
    np.testing.assert_array_equal(out, field(0.0, y))
    with pytest.raises(ValueError, match="overlap"):
        field(0.0, y, out=y)


def test_time_dependent_heads_are_evaluated_at_t():
    field = full_attention_example()
    y = Ellipsoid().random_point(np.random.default_rng(3), (10, 3))
    frozen = AttentionField(P=tuple(field.query_key(0.37)))
    np.testing.assert_allclose(field(0.37, y), frozen(0.0, y), atol=ATOL)


def test_time_dependent_heads_are_evaluated_once_per_time():
    """The field keeps P(t) of the last t (the workers of a solve evaluate it at the same times)."""
    calls = []

    def head(t):
        calls.append(t)
        return np.cos(t) * np.diag([1.0, 2.0, 3.0])

    field = AttentionField(P=(head,), W=np.eye(3))
    y = Ellipsoid().random_point(np.random.default_rng(4), (6, 3))
    first = field(0.2, y)
    np.testing.assert_array_equal(field(0.2, y), first)
    assert calls == [0.2]
    frozen = AttentionField(P=(head(0.5),))
    np.testing.assert_allclose(field(0.5, y), frozen(0.0, y), atol=ATOL)  # a new time: a new P(t)
    assert calls == [0.2, 0.5, 0.5]


def test_constant_matrices_are_stacked_once_and_identity_values_skip_their_product(monkeypatch):
    """Set once when the field is made: constant heads as [P_1 | ... | P_h] (no per-time workspace entry), constant
    value matrices as [U_1^T; ...; U_h^T] (not concatenated at each evaluation), and U_eta = I given as matrices
    the one-product path f = (sum_eta alpha^eta) y (the weights summed over the heads), as U = None."""
    import sim.field.dynamics as dynamics

    rng = np.random.default_rng(5)
    P = tuple(rng.uniform(-1, 1, (3, 3)) for _ in range(2))
    y = Ellipsoid().random_point(rng, (4, 6, 3))
    fields = [AttentionField(P=P, U=tuple(rng.uniform(-1, 1, (3, 3)) for _ in range(2))),
              AttentionField(P=P, U=(np.eye(3), np.eye(3)))]
    concatenations, summed_weights = [], []
    concatenate = np.concatenate
    monkeypatch.setattr(dynamics.np, "concatenate", lambda *a, **k: concatenations.append(1) or concatenate(*a, **k))
    for field in fields:
        monkeypatch.setattr(field.workspace, "at_time", lambda *a: pytest.fail("constant heads filled per time"))

        def weights(t, y, summed=False, original=field._weights):
            summed_weights.append(summed)
            return original(t, y, summed=summed)

        monkeypatch.setattr(field, "_weights", weights)
        field(0.3, y)
    assert concatenations == [] and summed_weights == [False, True]


@pytest.mark.parametrize("shape", [(2, 5, 5), (1, 5, 3, 4), (1, 5, 5, 5)])
def test_the_softmax_refuses_an_out_the_kernels_would_write_past(shape):
    """The softmax's compiled kernels do not check indices: an ``out`` of another shape than the scores' (each
    head) or [batch, l, l] (summed) is refused before they run, instead of written past its end."""
    field = AttentionField(P=(np.eye(3), np.eye(3), np.eye(3)))
    scores = np.zeros((1, 5, 3, 5))
    with pytest.raises(ValueError, match=r"out must have shape \(1, 5, 3, 5\) \(each head\) or \(1, 5, 5\)"):
        field._softmax(scores, 3, np.empty(shape))


def test_control_callable_heads_fill_the_workspace_and_drawn_values_take_the_stacked_product(monkeypatch):
    """The checks above see the other paths: callable heads are filled per time, U_eta != I sums no weights."""
    filled = []
    field = AttentionField(P=(lambda t: np.eye(3),), U=(2.0 * np.eye(3),), W=np.eye(3))
    at_time = field.workspace.at_time
    monkeypatch.setattr(field.workspace, "at_time", lambda *a: filled.append(a[0]) or at_time(*a))
    field(0.3, Ellipsoid().random_point(np.random.default_rng(5), (6, 3)))
    assert filled == [0.3] and not field._identity_values


@pytest.mark.parametrize("name", ["sphere-full-U=I", "sphere-causal-U", "ellipsoid-causal-U=I"])
def test_large_products_through_pytorch_give_eq6(name, monkeypatch):
    """At d = 400 with 40 tokens every product of the field is past TORCH_MIN_MULTIPLY_ADDS (PyTorch's MKL);
    the field still equals eq. 6 term by term, and numpy's products give the same to rounding."""
    import sim.field.products
    import torch

    rng = np.random.default_rng(9)
    d, tokens = 400, 40
    W = None if CASES[name]["W"] is None else np.diag(rng.uniform(0.5, 2.0, d))
    P = tuple(rng.uniform(-1, 1, (d, d)) / d for _ in range(2))
    U = tuple(rng.uniform(-1, 1, (d, d)) / np.sqrt(d) for _ in range(2)) if CASES[name]["values"] else None
    field = AttentionField(P=P, U=U, W=W, causal=CASES[name]["causal"])
    y = field.manifold.random_point(rng, (3, tokens, d))
    torch_calls = []
    original = torch.matmul
    monkeypatch.setattr(torch, "matmul", lambda *args, **kwargs: torch_calls.append(1) or original(*args, **kwargs))
    through_torch = field(0.0, y)
    assert len(torch_calls) >= 3  # the stacked product, the scores and the attention times the values
    U_or_I = U if U is not None else (np.eye(d),) * 2
    np.testing.assert_allclose(through_torch[1], eq6_by_loops(P, U_or_I, np.eye(d) if W is None else W,
                                                              CASES[name]["causal"], y[1]), atol=1e-12)
    monkeypatch.setattr(sim.field.products, "TORCH_MIN_MULTIPLY_ADDS", np.inf)
    torch_calls.clear()
    np.testing.assert_allclose(field(0.0, y), through_torch, atol=1e-13)
    assert not torch_calls


def test_attention_rows_sum_to_one_over_sqrt_d_as_printed(rng):
    field, _, _ = build(CASES["sphere-full-U=I"], rng)
    alpha = field.attention(0.0, Ellipsoid().random_point(rng, (5, 7, 3)))
    assert alpha.shape == (5, 2, 7, 7)
    np.testing.assert_allclose(alpha.sum(axis=-1), 1 / np.sqrt(3), atol=ATOL)


def test_causal_attention_vanishes_above_the_diagonal(rng):
    field, _, _ = build(CASES["sphere-causal-U"], rng)
    alpha = field.attention(0.0, Ellipsoid().random_point(rng, (5, 7, 3)))
    assert np.all(np.triu(np.ones((7, 7)), k=1) * alpha == 0)
    np.testing.assert_allclose(alpha.sum(axis=-1), 1 / np.sqrt(3), atol=ATOL)


def test_softmax_is_stable_for_huge_scores(rng):
    """Scores of size 1e4 overflow a naive exp; log-sum-exp gives the limit weights (the argmax row entries)."""
    field = AttentionField(P=(1e4 * np.eye(3),))
    y = Ellipsoid().random_point(rng, (6, 3))
    alpha = field.attention(0.0, y)
    assert np.all(np.isfinite(alpha))
    np.testing.assert_allclose(alpha[0].sum(axis=-1), 1 / np.sqrt(3), atol=ATOL)
    np.testing.assert_allclose(np.diag(alpha[0]), 1 / np.sqrt(3), atol=ATOL)  # y_i^T y_i = 1 is each row's max


def test_rows_far_below_the_batch_maximum_are_not_lost(rng):
    """One instance's scores ~1e3 above the other's: a shift shared by the batch would underflow the second
    instance's rows to 0; they must come out as when that instance is computed alone."""
    field = AttentionField(P=(np.eye(3),))
    y = Ellipsoid().random_point(rng, (2, 5, 3))
    y[0] *= 40.0  # the formula is evaluated at any y: scores y_i^T y_j up to 1600
    together = field.attention(0.0, y)
    assert np.all(np.isfinite(together))
    for k in range(2):
        np.testing.assert_allclose(together[k], field.attention(0.0, y[k]), atol=ATOL)


def test_first_token_is_fixed_under_causal_identity_values(rng):
    field = AttentionField(P=(rng.standard_normal((3, 3)),), causal=True)
    y = Ellipsoid().random_point(rng, (8, 3))
    np.testing.assert_allclose(field(0.0, y)[0], 0.0, atol=ATOL)


def test_discrete_step_is_eq1(rng):
    field, P, U = build(CASES["ellipsoid-full-U"], rng)
    y = field.manifold.random_point(rng, (6, 3))
    tau = 0.05
    update = np.zeros_like(y)
    for Peta, Ueta in zip(P, U):
        scores = np.exp(y @ Peta @ y.T)
        update += (scores / (np.sqrt(3) * scores.sum(axis=1, keepdims=True))) @ y @ Ueta.T
    expected = Ellipsoid(W3).project(y + tau * update)
    np.testing.assert_allclose(field.discrete_step(0.0, y, tau), expected, atol=ATOL)


def test_misalignment_is_zero_at_consensus_and_one_for_orthogonal_tokens():
    y = np.tile([0.0, 0.6, 0.8], (5, 1))
    assert misalignment(y) == pytest.approx(0.0, abs=ATOL)
    assert misalignment(np.eye(3)) == pytest.approx(1 - 1 / 3, abs=ATOL)
    assert misalignment(np.stack([np.eye(3), np.eye(3)])).shape == (2,)


def test_misalignment_takes_cosines_of_tokens_of_any_length():
    y = np.array([[2.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.5, 0.5, 0.0]])  # cosines with y_1: 1, 0, 1/sqrt(2)
    assert misalignment(y) == pytest.approx(1.0 - (1.0 + 0.0 + np.sqrt(0.5)) / 3.0, abs=ATOL)


def test_hemisphere_lyapunov_is_the_worst_token():
    y = np.array([[1.0, 0, 0], [0, 1.0, 0], [0.6, 0.8, 0]])
    v = np.array([1.0, 0, 0])
    np.testing.assert_allclose(token_lyapunov(y, v), [0.0, 1.0, 0.4], atol=ATOL)
    assert hemisphere_lyapunov(y, v) == pytest.approx(1.0)


def test_top_eigenvector_of_the_printed_U():
    lam, v = top_eigenvector(FIG5_U)
    np.testing.assert_allclose(FIG5_U @ v, lam * v, atol=ATOL)
    assert lam == pytest.approx(np.linalg.eigvalsh(FIG5_U)[-1])


def test_the_field_keeps_p_of_its_last_times_for_the_solvers_parts():
    """A solver steps its parts one after the other at the same stage times: P(t) of the last ``P_TIMES`` times is
    kept (evaluated once for all parts), the oldest given up for a new time."""
    from sim.field.workspace import P_TIMES

    calls = []

    def head(t):
        calls.append(t)
        return np.cos(t) * np.diag([1.0, 2.0, 3.0])

    field = AttentionField(P=(head,), W=np.eye(3))
    parts = [Ellipsoid().random_point(np.random.default_rng(seed), (2, 4, 3)) for seed in (1, 2)]
    times = [0.1 * k for k in range(P_TIMES)]
    for part in parts:
        results = [field(t, part) for t in times]
    assert calls == times
    frozen = [AttentionField(P=(np.cos(t) * np.diag([1.0, 2.0, 3.0]),))(0.0, parts[-1]) for t in times]
    np.testing.assert_allclose(results, frozen, atol=ATOL)
    field(5.0, parts[0])  # a new time gives up the oldest, times[0]
    field(times[1], parts[0])
    field(times[0], parts[0])
    assert calls == [*times, 5.0, times[0]]


def test_matrices_at_t_are_the_heads_evaluated_at_t():
    def head(k):
        return lambda t: (1.0 + k * t) * np.eye(3)

    field = AttentionField(P=(head(1), head(2)), U=(head(3), head(4)), W=np.eye(3))
    np.testing.assert_array_equal(field.query_key(0.5), [1.5 * np.eye(3), 2.0 * np.eye(3)])
    np.testing.assert_array_equal(field.values(0.5), [2.5 * np.eye(3), 3.0 * np.eye(3)])
    identities = AttentionField(P=(np.eye(3), 2 * np.eye(3))).values(0.0)
    np.testing.assert_array_equal(identities, [np.eye(3), np.eye(3)])  # U = None: identities, one per head
    with pytest.raises(ValueError, match=r"values\(t\) needs the dimension d"):
        AttentionField(P=(head(1),)).values(0.0)
    single = AttentionField(P=(lambda t: np.eye(3, dtype=np.float32),), U=(lambda t: np.eye(3, dtype=np.int64),))
    assert single.query_key(0.0).dtype == np.float64 and single.values(0.0).dtype == np.float64  # float64 numerics


@pytest.mark.parametrize("which", ["P", "U"])
def test_a_head_returning_the_wrong_shape_is_named_at_t(which):
    good, bad = (lambda t: np.eye(3)), (lambda t: np.eye(4))
    heads = {"P": (good, good), "U": (good, good), which: (good, bad)}
    field = AttentionField(P=heads["P"], U=heads["U"], W=np.eye(3))
    evaluate = field.query_key if which == "P" else field.values
    with pytest.raises(ValueError, match=rf"^{which}\[1\]\(t\) must return a \(3, 3\) matrix; at t=0.25 "):
        evaluate(0.25)


def test_attention_is_taken_at_t():
    field = full_attention_example()
    y = Ellipsoid().random_point(np.random.default_rng(5), (2, 6, 3))
    frozen = AttentionField(P=tuple(field.query_key(0.37)))
    np.testing.assert_allclose(field.attention(0.37, y), frozen.attention(0.0, y), atol=ATOL)


def test_lyapunov_functions_are_batched_over_instances():
    y = np.array([[[1.0, 0, 0], [0, 1.0, 0], [0.6, 0.8, 0], [0, 0, 1.0]],
                  [[1.0, 0, 0], [0.6, 0.8, 0], [0.8, 0.6, 0], [1.0, 0, 0]]])  # (2 instances, 4 tokens, d = 3)
    v = np.array([1.0, 0, 0])
    np.testing.assert_allclose(token_lyapunov(y, v), [[0.0, 1.0, 0.4, 1.0], [0.0, 0.4, 0.2, 0.0]], atol=ATOL)
    np.testing.assert_allclose(hemisphere_lyapunov(y, v), [1.0, 0.4], atol=ATOL)


@pytest.mark.parametrize("v, message", [
    pytest.param(np.array([np.nan, 0, 0]), "v must be finite", id="nan"),
    pytest.param(1.0, "v must have at least 1 axes", id="scalar"),
    pytest.param(np.ones(4), r"v must have shape \(3,\) like the tokens", id="tokens-not-d"),
])
def test_token_lyapunov_rejects_a_bad_v(v, message):
    y = np.ones((2, 4, 3))  # 4 tokens of d = 3: v must match d, not the tokens
    with pytest.raises(ValueError, match=message):
        token_lyapunov(y, v)


@pytest.mark.parametrize("U, message", [
    pytest.param(np.array([[np.nan, 0], [0, 1.0]]), "U must be finite", id="nan"),
    pytest.param(np.ones((2, 3)), r"U must be a square \(d, d\) matrix", id="not-square"),
    # max |U| = 1: the tolerance is 1e-12 and the asymmetry 1.5e-12 exceeds it
    pytest.param(np.array([[1.0, 1.5e-12], [0, 0.5]]), "U must be symmetric", id="asymmetry-above-tolerance"),
    # the gap is exactly the tolerance 1e-12 * max(1, |lambda_1|): not simple
    pytest.param(np.diag([0.0, 1e-12]), "largest eigenvalue must be simple", id="gap-at-tolerance"),
    # the tolerance scales with |lambda_1| = 4: 3e-12 <= 4e-12
    pytest.param(np.diag([4.0, 4.0 - 3e-12]), "largest eigenvalue must be simple", id="gap-relative"),
    pytest.param(np.diag([-10.0, 0.0, 4.0 - 3e-12, 4.0]), "largest eigenvalue must be simple", id="gap-relative-4d"),
])
def test_top_eigenvector_rejects(U, message):
    with pytest.raises(ValueError, match=message):
        top_eigenvector(U)


def test_top_eigenvector_at_the_edges_of_its_tolerances():
    # asymmetry 1e-12 with max |U| = 2: within the tolerance 2e-12 (eigh reads the lower triangle)
    lam, v = top_eigenvector(np.array([[2.0, 1e-12], [0.0, 1.0]]))
    assert lam == 2.0 and v.tolist() == [1.0, 0.0]
    lam, v = top_eigenvector(np.array([[1.0, 1e-12], [0.0, 0.5]]))  # asymmetry exactly the tolerance 1e-12
    assert lam == 1.0 and v.tolist() == [1.0, 0.0]
    lam, v = top_eigenvector(np.diag([0.0, 1.5e-12]))  # a gap of 1.5e-12 > 1e-12 * max(1, |lambda_1|)
    assert lam == 1.5e-12 and v.tolist() == [0.0, 1.0]
    lam, v = top_eigenvector([[3.0]])  # one dimension: no second eigenvalue to compare
    assert lam == 3.0 and v.tolist() == [1.0]


def test_top_eigenvector_sign_makes_its_first_nonzero_entry_positive():
    u = np.array([0.0, 1.0, -1.0]) / np.sqrt(2.0)
    for sign in (1.0, -1.0):
        lam, v = top_eigenvector(2.0 * np.outer(sign * u, sign * u))
        assert lam == pytest.approx(2.0)
        np.testing.assert_allclose(v, u, atol=ATOL)


@pytest.mark.parametrize("matrix", [np.ones((3, 4)), np.ones(3)], ids=["not-square", "not-a-matrix"])
def test_a_head_of_unknown_dimension_must_return_a_square_matrix(matrix):
    field = AttentionField(P=(lambda t: matrix,))  # no W, no constant matrix: d is not known in advance
    with pytest.raises(ValueError, match=r"^P\[0\]\(t\) must return a \(d, d\) matrix; at t=0.5 "):
        field.query_key(0.5)


@pytest.mark.parametrize("matrix, message", [
    pytest.param(np.ones((3, 4)), r"P\[0\] \(head 1\) must be a square \(d, d\) matrix; got shape \(3, 4\)",
                 id="not-square"),
    pytest.param(np.ones(3), r"P\[0\] \(head 1\) must be a square \(d, d\) matrix; got shape \(3,\)", id="vector"),
    pytest.param(np.ones((3, 3, 3)), r"P\[0\] \(head 1\) must be a square \(d, d\) matrix", id="three-axes"),
])
def test_a_constant_head_matrix_must_be_square(matrix, message):
    with pytest.raises(ValueError, match=message):
        AttentionField(P=(matrix,))


def test_time_varying_heads_equal_eq6_at_each_time(rng):
    """P_eta(t) and U_eta(t) callables of t: the field at t is eq. 6 with the matrices of t (the stacks are then
    built per call), at two times, batched."""
    P0, P1, U0, U1 = (rng.uniform(-1, 1, (3, 3)) for _ in range(4))
    field = AttentionField(P=(lambda t: P0 * np.cos(t), lambda t: P1 + t), U=(lambda t: U0 * t, lambda t: U1 - t),
                           causal=True)
    y = Ellipsoid().random_point(rng, (2, 5, 3))
    for t in (0.4, 1.3):
        expected = [eq6_by_loops((P0 * np.cos(t), P1 + t), (U0 * t, U1 - t), np.eye(3), True, y[b]) for b in range(2)]
        np.testing.assert_allclose(field(t, y), np.stack(expected), atol=ATOL)


def test_the_field_keeps_its_inputs_normalised():
    """Lists become tuples of float64 arrays, W a float64 array, causal a bool; a float32 state gives a float64
    derivative."""
    P = [[[1, 0, 0], [0, 2, 0], [0, 0, 3]]]
    field = AttentionField(P=P, U=[np.eye(3, dtype=np.float32) * 2], W=[[2, 0, 0], [0, 1, 0], [0, 0, 1]], causal=1)
    assert isinstance(field.P, tuple) and field.P[0].dtype == np.float64 and field.P[0].shape == (3, 3)
    assert isinstance(field.U, tuple) and field.U[0].dtype == np.float64
    assert isinstance(field.W, np.ndarray) and field.W.dtype == np.float64 and field.W[0, 0] == 2.0
    assert field.causal is True
    assert AttentionField(P=(np.eye(3),)).W is None  # the sphere stays None
    y = Ellipsoid(field.W).random_point(np.random.default_rng(0), (4, 3)).astype(np.float32)
    assert field(0.0, y).dtype == np.float64


@pytest.mark.parametrize("make, error, message", [
    (lambda: AttentionField(P=lambda t: np.eye(3)), TypeError, "P must be a sequence of h head matrices"),
    (lambda: AttentionField(P=(np.eye(3),), U=lambda t: np.eye(3)), TypeError, "U must be a sequence of h value"),
    (lambda: AttentionField(P=(np.eye(3),), U=np.eye(3)), TypeError, "U must be a sequence of h value"),
    (lambda: AttentionField(P=(np.eye(3),), U=(np.ones((3, 2)),)), ValueError, r"U\[0\] \(head 1\) must be a square"),
    (lambda: AttentionField(P=(np.ones((2, 3)),)), ValueError, r"P\[0\] \(head 1\) must be a square"),
])
def test_head_matrices_of_the_wrong_kind_are_refused_naming_them(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_the_field_names_its_heads_width_mask_and_metric():
    eye = np.eye(3)
    assert repr(AttentionField((eye, 2 * eye), causal=True)) == "AttentionField(heads=2, d=3, causal=True, W=I)"
    assert repr(AttentionField((eye,), W=W3)) == "AttentionField(heads=1, d=3, causal=False, W=given)"


def test_the_leading_eigenvector_is_a_real_unit_vector_even_for_a_complex_eigenvalue():
    """leading_eigenpair's v is the real part of the computed eigenvector, normalised: for a complex leading pair
    (a rotation plus a scaling) the real part alone has norm below 1."""
    from sim.field.dynamics import leading_eigenpair

    U = np.array([[1.0, -2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 0.5]])  # eigenvalues 1 +- 2i, 0.5
    lam, v, runner = leading_eigenpair(U)
    assert lam.real == pytest.approx(1.0) and abs(lam.imag) == pytest.approx(2.0) and runner == pytest.approx(1.0)
    assert np.linalg.norm(np.real(np.linalg.eig(U)[1][:, 0])) < 0.9  # what normalising corrects
    assert np.linalg.norm(v) == pytest.approx(1.0, abs=1e-15) and np.all(np.isreal(v))


def test_a_one_by_one_U_has_a_simple_top_eigenvalue():
    """d = 1: no runner-up (-inf), so the simplicity check passes; the eigenvector is +1."""
    lam, v = top_eigenvector(np.array([[-2.0]]))
    assert lam == -2.0 and v.tolist() == [1.0]
