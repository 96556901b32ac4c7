"""Numerical side of the suite: the ellipsoid, the attention dynamics (eq. 1, 6, 9) and batched
structure-preserving solvers; the paper's figures 1-6 and the solver benchmark (see docs/simulation.md)."""

import importlib

_EXPORTS = {
    "AttentionField": "sim.field.dynamics",
    "hemisphere_lyapunov": "sim.field.dynamics",
    "misalignment": "sim.field.dynamics",
    "token_lyapunov": "sim.field.dynamics",
    "top_eigenvector": "sim.field.dynamics",
    "Ellipsoid": "sim.field.manifold",
    "AdaptiveStepSize": "sim.solvers",
    "ConstantStepSize": "sim.solvers",
    "DiscreteModel": "sim.solvers",
    "Dopri5": "sim.solvers",
    "Euler": "sim.solvers",
    "RK4": "sim.solvers",
    "SaveAt": "sim.solvers",
    "Solution": "sim.solvers",
    "SolveOptions": "sim.solvers",
    "Solver": "sim.solvers",
    "integrate_fixed": "sim.solvers",
    "solve": "sim.solvers",
}

__all__ = [
    "AdaptiveStepSize", "AttentionField", "ConstantStepSize", "DiscreteModel", "Dopri5", "Ellipsoid", "Euler",
    "RK4", "SaveAt", "Solution", "SolveOptions", "Solver", "hemisphere_lyapunov", "integrate_fixed", "misalignment",
    "solve", "token_lyapunov", "top_eigenvector",
]


def __getattr__(name: str):
    """Import a public name's module on first use (PEP 562), so that ``python -m sim --help`` imports no Numba."""
    if name not in _EXPORTS:  # a submodule, as `import PACKAGE; PACKAGE.module` found it when all were imported
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
