"""Symbolic (SymPy) checks of the paper's model, gradient structure, Lyapunov arguments and scalar
reductions, with float64 spot checks in high dimension. ``python -m theory check`` runs them all."""

from .checks import CHECKS, run_checks
from .ellipsoid import Ellipsoid
from .gram import Form, Vector, reduce, vector

__all__ = ["CHECKS", "Ellipsoid", "Form", "Vector", "reduce", "run_checks", "vector"]
