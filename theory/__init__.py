"""Symbolic (SymPy) checks of the paper's model, gradient structure, Lyapunov arguments and scalar
reductions, with float64 spot checks in high dimension. ``python -m theory check`` runs them all."""

import importlib

_EXPORTS = {
    "CHECKS": ".claim_checks",
    "run_checks": ".claim_checks",
    "Ellipsoid": ".ellipsoid",
    "Form": ".gram",
    "Vector": ".gram",
    "reduce": ".gram",
    "vector": ".gram",
}

__all__ = ["CHECKS", "Ellipsoid", "Form", "Vector", "reduce", "run_checks", "vector"]


def __getattr__(name: str):
    """Import a public name's module on first use (PEP 562), so that ``python -m theory --help`` imports no SymPy."""
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
