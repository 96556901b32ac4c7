"""First-order jets (value and gradient) for forward-mode differentiation of :func:`sim.field.eq6.eq6`.

A :class:`Jet` carries a value and its gradient with respect to the seeded variables. Its entries may be floats
(an exact Jacobian for Newton's method) or python-flint ``arb`` balls: seeded with balls covering a box X, the
gradients enclose the Jacobian at every point of X, the interval Jacobian that the Krawczyk operator and the
spectrum enclosure of :mod:`sim.conjectures.validated` need. Only the operations eq. 6 and the chart use are defined.
"""

from __future__ import annotations

import numpy as np


class Jet:
    """A number with a gradient: ``value`` a scalar, ``grad : shape=[m]`` (object or float array)."""

    __slots__ = ("value", "grad")

    def __init__(self, value, grad: np.ndarray):
        self.value = value
        self.grad = grad

    @staticmethod
    def _parts(other):
        return (other.value, other.grad) if isinstance(other, Jet) else (other, None)

    def __add__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented  # numpy then applies the operation element by element
        value, grad = self._parts(other)
        return Jet(self.value + value, self.grad if grad is None else self.grad + grad)

    __radd__ = __add__

    def __neg__(self):
        return Jet(-self.value, -self.grad)

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented  # numpy then applies the operation element by element
        value, grad = self._parts(other)
        if grad is None:
            return Jet(self.value * value, self.grad * value)
        return Jet(self.value * value, self.grad * value + grad * self.value)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented  # numpy then applies the operation element by element
        value, grad = self._parts(other)
        if grad is None:
            return Jet(self.value / value, self.grad / value)
        return Jet(self.value / value, (self.grad * value - grad * self.value) / (value * value))

    def __rtruediv__(self, other):
        return Jet(other / self.value, self.grad * (-other / (self.value * self.value)))

    def exp(self):
        value = _exp(self.value)
        return Jet(value, self.grad * value)

    def sqrt(self):
        value = _sqrt(self.value)
        return Jet(value, self.grad / (2 * value))


def _exp(x):
    return np.exp(x) if isinstance(x, float) else x.exp()


def _sqrt(x):
    return np.sqrt(x) if isinstance(x, float) else x.sqrt()


def independent_jets(values, zero, one) -> np.ndarray:
    """Independent variables: jet k has value ``values[k]`` and gradient e_k (built from ``zero``, ``one``)."""
    m = len(values)
    jets = np.empty(m, dtype=object)
    for k, value in enumerate(values):
        grad = np.array([zero] * m, dtype=object)
        grad[k] = one
        jets[k] = Jet(value, grad)
    return jets


def values_and_jacobian(jets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values : shape=[n], Jacobian : shape=[n, m]) of a vector of jets (object arrays)."""
    flat = list(np.ravel(jets))
    return np.array([j.value for j in flat], dtype=object), np.array([list(j.grad) for j in flat], dtype=object)
