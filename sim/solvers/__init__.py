"""Batched solvers that stay on the manifold, and one entry point, ``solve`` (diffrax's layout).

Three ideas kept apart: the *term* (a vector field ``field(t, y)`` such as ``AttentionField``), a *solver*
(one step of a method, with its ``order``; one per module: ``euler``, ``rk4``, ``discrete``, ``dopri5``), and
``solve(field, solver, t0, t1, y0, *, ...)`` (``solve``) with keyword-only option objects (``SaveAt``,
``SolveOptions``, and the step-size controllers of ``controllers``, each owning its rule, the fixed step or the
first one among them). The threaded stepper is ``stepper``.

States have shape ``[..., tokens, d]``: the leading axes are independent instances integrated at once
with a common time grid. After every step the state is retracted to the manifold by pi_W (eq. 2),
which keeps a one-step method's order and its drift off E_W at rounding level.
"""

from sim.solvers.base import Solver
from sim.solvers.controllers import AdaptiveStepSize, ConstantStepSize
from sim.solvers.discrete import DiscreteModel
from sim.solvers.dopri5 import Dopri5
from sim.solvers.euler import Euler
from sim.solvers.rk4 import RK4
from sim.solvers.solve import MAX_STEPS, MaxStepsReached, SaveAt, Solution, SolveOptions, integrate_fixed, solve
from sim.solvers.stepper import step_parts

__all__ = [
    "AdaptiveStepSize", "ConstantStepSize", "DiscreteModel", "Dopri5", "Euler", "MAX_STEPS", "MaxStepsReached",
    "RK4", "SaveAt", "Solution", "SolveOptions", "Solver", "integrate_fixed", "solve", "step_parts",
]
