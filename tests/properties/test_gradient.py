"""The gradient case (Hyp. 3.1, Thm 3.1, sec. 3.3): the potential along solutions, with negative controls: one
table, a row per property and per control (tests/properties/control.py: ``EveryInstance``, ``FirstViolation``)."""

import pytest

from tests.properties import strategies as S
from sim.properties.conclusions import check_potential_monotone
from tests.properties.control import EveryInstance, FirstViolation, budget, row
from tests.properties.models import ReversedProjection

TABLE = [
    row("grad.convergence", EveryInstance(
        "potential never decreases and the solution comes to rest", check_potential_monotone,
        S.gradient_instances(), budget(0.5))),
    # Reversed, dPhi/dt = -|grad Phi|_g^2 < 0 off equilibria.
    row("grad.convergence-reversed-projection-every-instance", EveryInstance(
        "potential check rejects the reversed projection on every instance", check_potential_monotone,
        S.gradient_instances(max_dim=16), budget(0.25), {"model": ReversedProjection}, holds=False)),
    # W = I != P: the field is no longer the gradient of Phi for g, and Phi can decrease.
    row("grad.convergence-metric-other-than-p", FirstViolation(
        "potential check rejects a metric other than P", check_potential_monotone, S.gradient_instances(max_dim=16),
        {"metric_is_P": False}, "W = I != P (outside Hyp. 3.1)", counterpart="The same instance passes with W = P.")),
]


@pytest.mark.parametrize("case", TABLE)
def test_gradient(case, request, record):
    case.run(request.node, record)
