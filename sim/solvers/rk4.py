"""The classical Runge-Kutta method."""

from __future__ import annotations

from sim.solvers.base import Solver


class RK4(Solver):
    """The classical fourth-order Runge-Kutta method, order 4, followed by the retraction pi_W."""

    order = 4

    def step(self, field, t, y, dt, state, y_out=None, state_out=None):
        half = 0.5 * dt
        k1 = field(t, y)
        k2 = field(t + half, y + half * k1)
        k3 = field(t + half, y + half * k2)
        k4 = field(t + dt, y + dt * k3)
        return y + (dt / 6.0) * (k1 + 2.0 * (k2 + k3) + k4), None, None
