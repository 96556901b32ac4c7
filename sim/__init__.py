"""Numerical side of the suite: the ellipsoid, the attention dynamics (eq. 1, 6, 9) and batched
structure-preserving solvers; the paper's figures 1-6 and the solver benchmark (see docs/simulation.md)."""

import lazy_loader

#: Each public name by the module that defines it, imported on first use (PEP 562, scientific-python's
#: lazy_loader), so that ``python -m sim --help`` imports no Numba; ``dir(sim)`` lists them all.
__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={
    "field.dynamics": ["AttentionField", "hemisphere_lyapunov", "misalignment", "token_lyapunov", "top_eigenvector"],
    "field.manifold": ["Ellipsoid"],
    "solvers": ["AdaptiveStepSize", "ConstantStepSize", "DiscreteModel", "Dopri5", "Euler", "RK4", "SaveAt", "Solution",
                "SolveOptions", "Solver", "integrate_fixed", "solve"],
})
