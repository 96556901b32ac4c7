"""The symbolic field of eq. 6 (theory.attention, dimension-free) and the numeric one (sim.AttentionField, the
one float64 implementation, which theory's spot checks call) are the same function: the symbolic F_i, with its
Gram symbols <a, b>_M evaluated at random vectors and matrices, equals sim's field there."""

import numpy as np
import pytest
import sympy as sp

import sim
from theory.attention import ROOT_D, AttentionField, tokens
from theory.ellipsoid import Ellipsoid, random_spd
from theory.gram import Form

#: float64 evaluation of the same sums in another order, O(1) terms with cond(W) <= 5 in d = 6
TOLERANCE = 1e-12
TOKENS, HEADS, DIM = 3, 2, 6


def _evaluate(expression: sp.Expr, vectors: dict, matrices: dict) -> float:
    """``expression`` with every Gram symbol <a, b>_M replaced by vectors[a]^T matrices[M] vectors[b] and r by
    sqrt(d)."""
    values = {ROOT_D: np.sqrt(DIM)}
    for symbol in expression.free_symbols - {ROOT_D}:
        pair, name = symbol.name[1:].split(">_")
        a, b = pair.split(",")
        values[symbol] = float(vectors[a] @ matrices[name] @ vectors[b])
    return float(expression.xreplace(values))


def _symbolic_at(field: AttentionField, vectors: dict, matrices: dict) -> np.ndarray:
    """The symbolic field's F_i at the given vectors, shape [l, d]."""
    return np.stack([sum(_evaluate(c, vectors, matrices) * vectors[name] for name, c in F.terms.items())
                     for F in field(tokens(TOKENS))])


def _instance(seed: int):
    rng = np.random.default_rng(seed)
    W = random_spd(rng, DIM, 0.5)
    P = [rng.standard_normal((DIM, DIM)) / np.sqrt(DIM) for _ in range(HEADS)]
    y = sim.Ellipsoid(W).project(rng.standard_normal((TOKENS, DIM)))
    vectors = {f"y{i + 1}": y[i] for i in range(TOKENS)}
    matrices = {"W": W, **{f"P{eta + 1}": P[eta] for eta in range(HEADS)}}
    return W, P, y, vectors, matrices


def _symbolic_field(causal: bool, tangent_projection=None) -> AttentionField:
    return AttentionField(ellipsoid=Ellipsoid(Form("W")), scores=tuple(Form(f"P{eta + 1}", symmetric=False)
                                                                      for eta in range(HEADS)),
                          causal=causal, tangent_projection=tangent_projection)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_the_symbolic_field_equals_sims_field(causal):
    W, P, y, vectors, matrices = _instance(20261123)
    np.testing.assert_allclose(_symbolic_at(_symbolic_field(causal), vectors, matrices),
                               sim.AttentionField(P=P, W=W, causal=causal)(0.0, y), rtol=0, atol=TOLERANCE)


def test_control_a_symbolic_field_with_the_sign_of_the_normal_part_flipped_differs_from_sims():
    """Negative control: (I + y y^T W) f instead of (I - y y^T W) f in the symbolic field is caught."""
    W, P, y, vectors, matrices = _instance(20261123)
    flipped = _symbolic_field(False, lambda E, point, v: v + point * E.metric(point, v))
    difference = _symbolic_at(flipped, vectors, matrices) - sim.AttentionField(P=P, W=W)(0.0, y)
    assert np.max(np.abs(difference)) > 1e3 * TOLERANCE
