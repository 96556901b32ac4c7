"""The dimension-free algebra of theory.gram: the facts every symbolic proof relies on."""

import pytest
import sympy as sp

from theory.gram import Form, Vector, reduce, vector


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
