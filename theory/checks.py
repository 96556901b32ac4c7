"""The registry of symbolic checks by claim id: what ``python -m theory check`` runs.

Each entry is a zero-argument check function returning one :class:`reports.records.CheckResult` or a
list of them. The default arguments are the paper's model; the tests under ``tests/theory`` call the same
functions, and their negative controls call them with a deliberately broken model.
"""

from __future__ import annotations

from typing import Callable, Iterable

from reports.records import CheckResult
from reports.registry import get_claim

from . import causal, full_attention, gradient, layernorm, model, wendel

CHECKS: dict[str, tuple[Callable[[], CheckResult | list[CheckResult]], ...]] = {
    "model.projection": (model.check_projection, model.check_projection_jacobian_coordinates,
                         model.spot_check_projection),
    "model.continuum": (model.check_continuum, model.numeric_continuum_order),
    "model.layernorm": (layernorm.check_layernorm_radius, layernorm.check_layernorm_arbitrary_gamma,
                        layernorm.check_rmsnorm, layernorm.torch_normalisations),
    "grad.projection": (gradient.check_orthogonal_projection,),
    "grad.field": (gradient.check_gradient_field, gradient.check_gradient_general_condition,
                   gradient.numeric_gradient, gradient.counterexamples),
    "grad.convergence": (gradient.check_potential_monotone, gradient.numeric_convergence),
    "full.bounds": (full_attention.check_attention_bounds, full_attention.bounds_spot_check),
    "full.invariance": (full_attention.check_invariance,),
    "full.equilibria": (full_attention.check_equilibria,),
    "full.lyapunov": (full_attention.check_lyapunov, full_attention.lyapunov_spot_check),
    "full.wendel": (wendel.check_closed_forms, wendel.monte_carlo),
    "causal.first-token": (causal.check_first_token,),
    "causal.scalar": (causal.check_scalar, causal.numeric_scalar),
    "causal.identity-iss": (causal.check_identity_iss,),
    "causal.reparam": (causal.check_reparam, causal.numeric_reparam),
    "causal.first-token-symmetric": (causal.check_first_token_symmetric, causal.numeric_first_token_symmetric),
    "causal.symmetric-iss": (causal.check_symmetric_iss,),
    "causal.time-varying": (causal.check_time_varying, causal.numeric_time_varying),
}


def run_checks(claims: Iterable[str] | None = None) -> list[CheckResult]:
    """Run the checks of ``claims`` (all when None), in registry order; unknown ids raise KeyError."""
    selected = list(CHECKS) if not claims else list(dict.fromkeys(claims))
    for claim in selected:
        get_claim(claim)  # a clear error for an id outside the registry
        if claim not in CHECKS:
            raise KeyError(f"claim {claim!r} has no symbolic check in theory; claims with one: {', '.join(CHECKS)}")
    results: list[CheckResult] = []
    for claim in selected:
        for check in CHECKS[claim]:
            outcome = check()
            results.extend(outcome if isinstance(outcome, list) else [outcome])
    return results
