"""The dimension-free algebra of theory.gram: the facts every symbolic proof relies on."""

import pytest
import sympy as sp

from theory.gram import SIMPLIFY_LIMIT, Form, Vector, reduce, sum_vectors, vector


def test_form_is_bilinear():
    W = Form("W")
    x, y, z = vector("x"), vector("y"), vector("z")
    a = sp.Symbol("a")
    assert reduce(W(x * a + y, z) - (a * W(x, z) + W(y, z))) == 0


def test_symmetric_form_sorts_its_arguments_and_a_general_one_does_not():
    x, y = vector("x"), vector("y")
    assert Form("W")(x, y) == Form("W")(y, x)
    assert Form("P", symmetric=False)(x, y) != Form("P", symmetric=False)(y, x)


def test_reduce_substitutes_relations_repeatedly():
    W = Form("W")
    y = vector("y")
    assert reduce(W(y, y) ** 2 - 1, {W(y, y): 1}) == 0


def test_reduce_identifies_exp_of_a_multiple_with_a_power():
    a = Form("P")(vector("x"), vector("y"))
    assert reduce(sp.exp(2 * a) - sp.exp(a) ** 2) == 0
    assert reduce(sp.exp(2) - sp.E * sp.exp(1)) == 0


def test_reduce_keeps_a_nonzero_residual():
    W = Form("W")
    y = vector("y")
    assert reduce(W(y, y) - 1) != 0


def test_vector_coefficients_and_zero_test():
    x, y = vector("x"), vector("y")
    v = x * 2 - y + x
    assert v.coefficient("x") == 3 and v.coefficient("z") == 0
    assert (v - x * 3 + y).is_zero()


def test_product_of_two_vectors_is_rejected():
    with pytest.raises(TypeError, match="bilinear form"):
        vector("x") * vector("y")


def test_vector_is_immutable_value():
    x = vector("x")
    assert isinstance(x + x, Vector) and x.coefficient("x") == 1


def test_vector_arithmetic_combines_coefficients_by_name():
    x, y = vector("x"), vector("y")
    a = sp.Symbol("a")
    v = sum_vectors([x, y * 2, x * a]) / 2 - (-y)
    assert v.terms == {"x": (1 + a) / 2, "y": 2}
    assert (3 * x).terms == {"x": 3}  # a scalar on the left
    assert sum_vectors([]).terms == {}
    with pytest.raises(TypeError):
        x + 1


def test_zero_test_and_simplify_use_the_relations():
    W = Form("W")
    y, z = vector("y"), vector("z")
    v = y * (W(y, y) - 1) + z * 2
    assert not v.is_zero() and not (y * (W(y, y) - 1)).is_zero()
    assert (y * (W(y, y) - 1)).is_zero({W(y, y): 1})
    assert v.simplify({W(y, y): 1}).terms == {"z": 2}  # the vanished coefficient is dropped, the others kept
    assert v.simplify().terms == {"y": W(y, y) - 1, "z": 2}


def test_vector_repr_reads_as_a_sum():
    x, y = vector("x"), vector("y")
    assert repr(Vector()) == "0"
    assert repr(x * 2 - y * sp.Symbol("a")) == "(2)*x + (-a)*y"


def test_reduce_simplifies_small_residuals_only():
    a = sp.Symbol("a", positive=True)
    assert reduce(sp.sin(a) ** 2 + sp.cos(a) ** 2 - 1) == 0  # expansion alone does not cancel it: simplify does
    terms = SIMPLIFY_LIMIT // 4
    big = sum(sp.sin(sp.Symbol(f"b{k}")) ** 2 + sp.cos(sp.Symbol(f"b{k}")) ** 2 for k in range(terms)) - terms
    assert sp.count_ops(big) > SIMPLIFY_LIMIT
    assert reduce(big) != 0  # too large for simplify: the expanded residual is returned, not a false zero


def test_gram_entries_are_real_symbols():
    """A Gram entry is a real number, which sympy may use: |<x,x>| squared is <x,x>^2, conj(<x,y>) is <x,y>."""
    entry = Form("W").entry("x", "y")
    assert entry.is_real is True
    assert sp.conjugate(entry) == entry and sp.Abs(entry) ** 2 == entry ** 2


def test_reduce_never_proves_a_nonzero_residual_zero():
    """1/<x,x> has numerator 1, and exp(<x,x>) - exp(<y,y>) two different exponentials: neither is 0; the
    residuals exp(2<x,x>) + <x,x> and exp(<x,x>) + <x,x> come back with their exponentials intact."""
    xx, yy = Form("W").entry("x", "x"), Form("W").entry("y", "y")
    assert reduce(1 / xx) != 0
    assert reduce(sp.exp(xx) - sp.exp(yy)) != 0
    assert sp.simplify(reduce(sp.exp(2 * xx) + xx) - (sp.exp(2 * xx) + xx)) == 0
    assert sp.simplify(reduce(sp.exp(xx) + xx) - (sp.exp(xx) + xx)) == 0  # exp(<x,x>) itself, not a power of it


def test_reduce_substitutes_relations_for_at_most_rounds_rounds():
    """Each round substitutes every relation once (a relation may produce another's key); four rounds by default."""
    x = sp.symbols("x1:7")
    chain = {x[i]: x[i + 1] for i in range(5)}  # x1 -> x2 -> ... -> x6
    assert reduce(x[0], chain) == x[4]
    assert reduce(x[0], chain, rounds=5) == x[5]
