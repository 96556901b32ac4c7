"""Numerical side of the suite: the ellipsoid, the attention dynamics (eq. 1, 6, 9) and batched
structure-preserving solvers; the paper's figures 1-6 and the solver benchmark (see docs/simulation.md)."""

from sim.field.dynamics import AttentionField, hemisphere_lyapunov, misalignment, token_lyapunov, top_eigenvector
from sim.field.manifold import Ellipsoid
from sim.solvers import (AdaptiveStepSize, ConstantStepSize, DiscreteModel, Dopri5, Euler, RK4, SaveAt, Solution,
                         SolveOptions, Solver, integrate_fixed, solve)

__all__ = [
    "AdaptiveStepSize", "AttentionField", "ConstantStepSize", "DiscreteModel", "Dopri5", "Ellipsoid", "Euler",
    "RK4", "SaveAt", "Solution", "SolveOptions", "Solver", "hemisphere_lyapunov", "integrate_fixed", "misalignment",
    "solve", "token_lyapunov", "top_eigenvector",
]
