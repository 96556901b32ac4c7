"""The conjecture searches' batched eq. 6 (``sim.field.instances.InstanceField``, through the compiled ``lanes_field_``)
equals the project's field instance by instance, and keeps its inputs well-formed.

Kept light (no search or SciPy imports): `make mutants` runs these tests on each mutant of sim/field/instances.py
(tests/mutation/compiled.toml), where a test process's start is a large part of the cost.
"""

import numpy as np
import pytest

from sim import AttentionField
from sim.field.instances import InstanceField


@pytest.mark.parametrize("values", ["drawn", "identity"])
@pytest.mark.parametrize("causal", [False, True])
def test_instance_field_matches_the_project_field(causal, values):
    """11 instances: a full group of LANES = 8 and a part-filled one; U_eta = I takes the kernel's shortcut."""
    rng = np.random.default_rng(1)
    P, U = rng.standard_normal((2, 11, 2, 3, 3))
    if values == "identity":
        U = np.broadcast_to(np.eye(3), U.shape).copy()
    y = rng.standard_normal((11, 4, 3))
    y /= np.linalg.norm(y, axis=-1, keepdims=True)
    field = InstanceField(P, U, causal)
    assert field.identity == (values == "identity")
    batched = field(0.0, y)
    for b in range(11):
        single = AttentionField(P=tuple(P[b]), U=tuple(U[b]), causal=causal)(0.0, y[b])
        np.testing.assert_allclose(batched[b], single, rtol=1e-12, atol=1e-14)
    # control: the other mask gives another field
    assert np.max(np.abs(InstanceField(P, U, not causal)(0.0, y) - batched)) > 1e-3


def test_instance_field_survives_scores_whose_exponential_overflows():
    """Scores of order 1e4 (exp overflows float64 from ~709): each row is shifted by its own largest score, so the
    field stays finite and equal to the project field's."""
    rng = np.random.default_rng(2)
    P = 3e3 * rng.standard_normal((3, 1, 3, 3))
    U = np.broadcast_to(np.eye(3), P.shape).copy()
    y = rng.standard_normal((3, 5, 3))
    y /= np.linalg.norm(y, axis=-1, keepdims=True)
    batched = InstanceField(P, U)(0.0, y)
    assert np.all(np.isfinite(batched))
    for b in range(3):
        np.testing.assert_allclose(batched[b], AttentionField(P=tuple(P[b]))(0.0, y[b]), rtol=1e-12, atol=1e-14)


def test_instance_field_keeps_its_inputs_as_float64_arrays():
    P = [[[[2, 0], [0, 1]]]]  # one instance, one head, d = 2, as nested lists of ints
    field = InstanceField(P, np.eye(2, dtype=np.float32)[None, None], causal=1)
    assert field.P.dtype == field.U.dtype == np.float64 and field.P.shape == field.U.shape == (1, 1, 2, 2)
    assert field.causal is True and field.identity and field.batch == 1
    y = np.array([[[1.0, 0.0], [0.6, 0.8]]], dtype=np.float32)
    assert field(0.0, y).dtype == np.float64


@pytest.mark.parametrize("P, U, message", [
    (np.zeros((2, 2, 2)), np.zeros((2, 2, 2)), r"P must have shape \[batch, h, d, d\]"),
    (np.zeros((2, 1, 3, 2)), np.zeros((2, 1, 3, 2)), r"P must have shape \[batch, h, d, d\]"),
    (np.zeros((2, 1, 2, 2)), np.zeros((2, 1, 3, 3)), "U must have the shape of P"),
    (np.zeros((2, 1, 2, 2)), np.full((2, 1, 2, 2), np.nan), "P and U must be finite"),
    (np.full((2, 1, 2, 2), np.inf), np.zeros((2, 1, 2, 2)), "P and U must be finite"),
])
def test_instance_field_refuses_matrices_of_the_wrong_shape_or_not_finite(P, U, message):
    with pytest.raises(ValueError, match=message):
        InstanceField(P, U)


def test_instance_field_is_immutable():
    from dataclasses import FrozenInstanceError

    field = InstanceField(np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 2, 2)))
    with pytest.raises(FrozenInstanceError):
        field.causal = True


def test_instance_field_rejects_a_batch_of_another_size():
    field = InstanceField(np.zeros((3, 1, 2, 2)), np.zeros((3, 1, 2, 2)))
    with pytest.raises(ValueError, match=r"y must have shape \[batch=3"):
        field(0.0, np.ones((2, 2, 2)) / np.sqrt(2))


def test_instance_field_is_equal_and_hashed_by_identity():
    """Its matrices are arrays (no truth value, not hashable): two fields are equal only when they are the same
    object, and a field can key a cache."""
    P = np.zeros((1, 1, 2, 2))
    field = InstanceField(P, P)
    assert field == field and field != InstanceField(P, P)
    assert {field: 1}[field] == 1
