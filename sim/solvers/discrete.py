"""The discrete model (eq. 1) as a solver of the flow (eq. 6)."""

from __future__ import annotations

from sim.solvers.base import Solver


class DiscreteModel(Solver):
    """The discrete model itself (eq. 1) with tau = dt: y_i <- pi_W(y_i + dt f_i(y)).

    As an approximation of the flow of eq. 6 it has order 1 (one step differs by O(dt^2), sec. 2.3).
    """

    order = 1

    def step(self, field, t, y, dt, state, y_out=None, state_out=None):
        return field.manifold.retract(y + dt * field.attention_update(t, y)), None, None
