"""Symbolic (SymPy) checks of the paper's model, gradient structure, Lyapunov arguments and scalar
reductions, with float64 spot checks in high dimension. ``python -m theory check`` runs them all."""

import lazy_loader

#: Each public name by the module that defines it, imported on first use (PEP 562, scientific-python's
#: lazy_loader), so that ``python -m theory --help`` imports no SymPy; ``dir(theory)`` lists them all.
__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={
    "claim_checks": ["CHECKS", "run_checks"],
    "ellipsoid": ["Ellipsoid"],
    "gram": ["Form", "Vector", "reduce", "vector"],
})
