"""The adaptive step-size rule, written once: scipy's RK45 update and Hairer, Norsett & Wanner's starting step.

Plain scalar functions: :class:`sim.solvers.AdaptiveStepSize` calls them, and the compiled loop
(``sim.solvers.compiled``) calls the same functions compiled by Numba, so the two integrators cannot drift apart.
"""

from __future__ import annotations


def first_guess(d0: float, d1: float, span: float) -> float:
    """h0 of the starting step: 0.01 |y0| / |f0| in the scaled norm (1e-6 when either is below 1e-5), at most
    ``span``."""
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    return min(h0, span)


def starting_step(h0: float, d1: float, d2: float, span: float, order: int) -> float:
    """The starting step from h0, |f0| (``d1``) and the scaled second-derivative estimate ``d2`` = |f1 - f0| / h0,
    for an embedded pair of ``order``: min(100 h0, (0.01 / max(d1, d2))^(1 / (order + 1)), span)."""
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1.0 / (order + 1))
    return min(100 * h0, h1, span)


def next_step(norm: float, step: float, proposed: float, after_rejection: bool, safety: float, min_factor: float,
              max_factor: float, exponent: float) -> tuple[bool, float]:
    """(accepted, the next step to try) after an attempt of ``step`` with scaled error ``norm`` (accepted when
    <= 1); ``proposed`` is the step the rule proposed before (kept when ``step`` was shortened to land on a save
    time or t1 and would grow), ``exponent`` = -1 / (embedded order + 1)."""
    if norm > 1.0:
        return False, step * max(min_factor, safety * norm**exponent)
    factor = max_factor if norm == 0 else min(max_factor, safety * norm**exponent)
    if after_rejection:
        factor = min(1.0, factor)
    if step < proposed and factor >= 1.0:  # a step shortened to land says little about larger ones
        return True, proposed
    return True, step * factor
