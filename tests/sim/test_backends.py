"""Every backend of eq. 6 (sim.field.backends) against the oracle sim.field.eq6, with controls showing the comparison
fails on a transposed score matrix and on a non-causal mask."""

from __future__ import annotations

import numpy as np
import pytest

from sim.field.backends import BACKENDS, available, make_field
from sim.field.eq6 import eq6
from tests.sim.installed import skip_unless_installed

#: The backends and the oracle evaluate the same float64 formula in other orders of summation; on the sphere with
#: |P|, |U| <= ~3 every term is O(1) and at most ~l h d ~ 100 of them are summed: round-off ~1e-14, so 1e-11 leaves
#: a 1000x margin while a wrong formula is off by O(0.1) (the controls below).
TOLERANCE = 1e-11

CASES = [(tokens, dim, heads, causal, identity)
         for tokens, dim, heads in ((1, 2, 1), (3, 2, 2), (5, 3, 1), (6, 4, 3))
         for causal in (False, True) for identity in (False, True)]


def _instances(seed: int, tokens: int, dim: int, heads: int, identity: bool, batch: int = 9):
    """``batch`` seeded systems: P, U : [b, h, d, d] (U = I when ``identity``), y on the sphere : [b, l, d]."""
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(batch, heads, dim, dim))
    U = np.broadcast_to(np.eye(dim), P.shape).copy() if identity else rng.normal(size=P.shape)
    y = rng.normal(size=(batch, tokens, dim))
    return P, U, y / np.linalg.norm(y, axis=-1, keepdims=True)


def _deviation(field, P, U, y, causal) -> float:
    """max over instances of |field - eq6| / max(1, |eq6|)."""
    got = field(0.0, y)
    expected = np.stack([eq6(y[b], P[b], U[b], causal) for b in range(len(y))])
    return float(np.max(np.abs(got - expected)) / max(1.0, np.max(np.abs(expected))))


def _runnable(backend):
    skip_unless_installed(f"backend {backend}", available()[backend])


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("tokens, dim, heads, causal, identity", CASES)
def test_every_backend_agrees_with_the_oracle(backend, tokens, dim, heads, causal, identity):
    _runnable(backend)
    P, U, y = _instances(tokens * 100 + dim * 10 + heads, tokens, dim, heads, identity)
    field = make_field(backend, P, None if identity else U, causal)
    assert _deviation(field, P, U, y, causal) <= TOLERANCE


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_control_a_transposed_score_and_a_missing_mask_fail_the_comparison(backend):
    """The comparison catches a real fault: the backend handed P^T (scores y_j^T P y_i) or told full attention where
    the oracle is causal is off by far more than TOLERANCE."""
    _runnable(backend)
    P, U, y = _instances(7, 5, 3, 2, identity=False)
    transposed = make_field(backend, np.swapaxes(P, -1, -2), U, causal=False)
    assert _deviation(transposed, P, U, y, causal=False) > 1e3 * TOLERANCE
    unmasked = make_field(backend, P, U, causal=False)
    assert _deviation(unmasked, P, U, y, causal=True) > 1e3 * TOLERANCE


def test_bad_backend_names_and_shapes_are_refused_with_the_choices():
    P, U, _ = _instances(0, 2, 2, 1, identity=False)
    with pytest.raises(ValueError, match="must be one of"):
        make_field("cuda", P, U)
    with pytest.raises(ValueError, match=r"shape \[b, h, d, d\]"):
        make_field("numpy", P[0], U[0])
    with pytest.raises(ValueError, match="the shape of P"):
        make_field("numpy", P, U[:, :, :1])


def test_a_backend_that_cannot_run_here_says_what_to_install(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    assert "needs torch" in available()["torch"]
    P, U, _ = _instances(0, 2, 2, 1, identity=False)
    with pytest.raises(RuntimeError, match="needs torch"):
        make_field("torch", P, U)


def test_the_field_benchmark_times_agreeing_backends_and_reports_a_disagreeing_one(monkeypatch):
    """``python -m sim bench --part fields`` on small sizes: every runnable backend is compared and timed; a planted
    backend evaluating the non-causal field where causal is asked is reported as disagreeing, not timed."""
    import sim.bench.fields as bench
    import sim.field.backends as backends

    monkeypatch.setattr(bench, "SIZES", (("tiny", 3, 4, 2, 2, True),))
    monkeypatch.setattr(bench, "REPEATS", 1)
    planted = dict(backends.BACKENDS, unmasked=(lambda P, U, causal: backends.BACKENDS["numpy"][0](P, U, False), ()))
    monkeypatch.setattr(backends, "BACKENDS", planted)
    monkeypatch.setattr(bench, "BACKENDS", planted)
    results = bench.run_field_benchmark(seed=3)
    rows = {row["backend"]: row for row in results["rows"]}
    assert results["seed"] == 3
    for backend, reason in backends.available().items():
        if backend == "unmasked":
            continue
        assert ("skipped" in rows[backend]) == (reason is not None)
        assert reason is not None or rows[backend]["seconds"] > 0 and rows[backend]["deviation"] <= bench.TOLERANCE
    assert "seconds" not in rows["unmasked"] and rows["unmasked"]["deviation"] > 1e-3
    assert "DISAGREES" in bench.table(results)


def test_a_missing_backend_skips_visibly_and_fails_where_ci_requires_the_peers(monkeypatch):
    from tests.sim.installed import REQUIRE_PEERS

    monkeypatch.delenv(REQUIRE_PEERS, raising=False)
    skip_unless_installed("backend jax", None)  # installed: nothing happens
    with pytest.raises(pytest.skip.Exception, match="backend jax: needs jax"):
        skip_unless_installed("backend jax", "needs jax")
    monkeypatch.setenv(REQUIRE_PEERS, "1")
    with pytest.raises(pytest.fail.Exception, match="CONSENSUS_REQUIRE_PEERS is set but backend jax cannot run"):
        skip_unless_installed("backend jax", "needs jax")
