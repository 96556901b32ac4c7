"""Explicit Euler."""

from __future__ import annotations

from sim.solvers.base import Solver


class Euler(Solver):
    """Explicit Euler, order 1: y + dt f(t, y), then pi_W."""

    order = 1

    def step(self, field, t, y, dt, state, y_out=None, state_out=None):
        return y + dt * field(t, y), None, None
