"""Bad inputs raise clear errors naming the argument and what must hold (SPEC section 8)."""

import numpy as np
import pytest

from sim import (AdaptiveStepSize, AttentionField, ConstantStepSize, Dopri5, Ellipsoid, Euler, RK4, SaveAt,
                 SolveOptions, integrate_fixed, misalignment, solve, top_eigenvector)
from sim.figures.plots import make_figure
from sim.solvers import MaxStepsReached

I3 = np.eye(3)
Y = Ellipsoid().project(np.arange(1.0, 19.0).reshape(6, 3))
FIELD = AttentionField(P=(I3,))


def _fast_rotation(t, y):
    """A broken field: every token spins about e_3 at a rate of 1e6 (tangent to the sphere, so only the step size
    tells): an adaptive solver's steps shrink to ~1e-6 and its budget runs out early in [0, 1]."""
    return 1e6 * np.cross([0.0, 0.0, 1.0], y)


def _solve(**overrides):
    kwargs = dict(field=FIELD, solver=RK4(), t0=0.0, t1=1.0, y0=Y, controller=ConstantStepSize(0.1))
    kwargs.update(overrides)
    field, solver, t0, t1, y0 = (kwargs.pop(k) for k in ("field", "solver", "t0", "t1", "y0"))
    return solve(field, solver, t0, t1, y0, **kwargs)


BAD_INPUTS = [
    pytest.param(lambda: Ellipsoid().project(np.zeros((2, 3))), ValueError, "point must be nonzero", id="project-zero"),
    pytest.param(lambda: Ellipsoid().project([[np.nan, 1.0, 0.0]]), ValueError, "point must be finite",
                 id="project-nan"),
    pytest.param(lambda: Ellipsoid().project([1.0, np.inf, 0.0]), ValueError, "point must be finite", id="project-inf"),
    pytest.param(lambda: Ellipsoid(np.diag([1.0, -0.5, 2.0])), ValueError,
                 "W must be symmetric positive definite; its smallest eigenvalue is -0.5", id="W-not-positive"),
    pytest.param(lambda: Ellipsoid(np.array([[1.0, 0.5], [0.0, 1.0]])), ValueError,
                 r"W must be symmetric positive definite; max \|W - W\^T\|", id="W-not-symmetric"),
    pytest.param(lambda: Ellipsoid(np.ones((2, 3))), ValueError, r"W must be a square \(d, d\) matrix",
                 id="W-not-square"),
    pytest.param(lambda: Ellipsoid(np.array([[np.nan, 0.0], [0.0, 1.0]])), ValueError, "W must be finite",
                 id="W-nan"),
    # max |W| = 1: the tolerance is 1e-12 and the asymmetry 1.5e-12 exceeds it
    pytest.param(lambda: Ellipsoid(np.array([[1.0, 1.5e-12], [0.0, 1.0]])), ValueError,
                 "W must be symmetric positive definite; max", id="W-asymmetry-above-tolerance"),
    pytest.param(lambda: Ellipsoid(np.diag([1.0, 0.0])), ValueError, "smallest eigenvalue is 0", id="W-singular"),
    pytest.param(lambda: Ellipsoid(I3).project(np.ones(4)), ValueError, "point must have last axis d = 3",
                 id="project-dimension"),
    pytest.param(lambda: Ellipsoid().project(2.0), ValueError, "point must have at least 1 axes", id="project-scalar"),
    pytest.param(lambda: Ellipsoid().projection_differential(np.zeros(3), np.ones(3)), ValueError,
                 "point must be nonzero", id="differential-zero"),
    pytest.param(lambda: Ellipsoid().projection_differential([np.nan, 1.0, 0.0], np.ones(3)), ValueError,
                 "point must be finite", id="differential-nan"),
    pytest.param(lambda: Ellipsoid().projection_differential(1.0, 1.0), ValueError, "point must have at least 1 axes",
                 id="differential-scalar"),
    pytest.param(lambda: Ellipsoid(I3).projection_differential(np.ones(4), np.ones(4)), ValueError,
                 "point must have last axis d = 3", id="differential-dimension"),
    pytest.param(lambda: Ellipsoid(I3).is_tangent(np.ones(3), np.ones(4)), ValueError,
                 "vector must have last axis d = 3", id="is-tangent-dimension"),
    pytest.param(lambda: Ellipsoid(I3).belongs(np.ones(4)), ValueError, "point must have last axis d = 3",
                 id="belongs-dimension"),
    pytest.param(lambda: Ellipsoid().random_point_in_hemisphere(1.0, np.random.default_rng(0), (4, 3)),
                 ValueError, "v must have at least 1 axes", id="hemisphere-scalar-v"),
    pytest.param(lambda: Ellipsoid().random_point_in_hemisphere([np.nan, 1.0, 0.0], np.random.default_rng(0), (4, 3)),
                 ValueError, "v must be finite", id="hemisphere-nan-v"),
    pytest.param(lambda: Ellipsoid().random_point_in_hemisphere(np.zeros(3), np.random.default_rng(0), (4, 3)),
                 ValueError, "v must be nonzero", id="hemisphere-zero-v"),
    pytest.param(lambda: Ellipsoid().random_point_in_hemisphere(np.ones(2), np.random.default_rng(0), (4, 3)),
                 ValueError, r"v must have shape \(3,\)", id="hemisphere-v-shape"),
    pytest.param(lambda: AttentionField(P=I3), TypeError, "P must be a sequence of h head matrices",
                 id="P-single-matrix"),
    pytest.param(lambda: AttentionField(P=()), ValueError, r"P must hold at least one head", id="P-no-heads"),
    pytest.param(lambda: AttentionField(P=(I3, np.eye(4))), ValueError, r"P\[1\] \(head 2\) must have shape \(3, 3\)",
                 id="P-shape-mismatch"),
    pytest.param(lambda: AttentionField(P=(I3,), U=(I3, I3)), ValueError, "U must have one matrix per head",
                 id="U-count"),
    pytest.param(lambda: AttentionField(P=(I3,), W=np.eye(4)), ValueError, r"must have shape \(4, 4\)",
                 id="P-W-mismatch"),
    pytest.param(lambda: AttentionField(P=(np.full((3, 3), np.nan),)), ValueError, r"P\[0\] \(head 1\) must be finite",
                 id="P-nan"),
    pytest.param(lambda: AttentionField(P=(lambda t: np.eye(4),), W=I3)(0.0, Y), ValueError,
                 r"P\[0\]\(t\) must return a \(3, 3\) matrix", id="P-callable-shape"),
    pytest.param(lambda: AttentionField(P=(lambda t: np.full((3, 3), np.inf),))(0.0, Y), ValueError,
                 r"P\[0\]\(t\) must be finite", id="P-callable-inf"),
    pytest.param(lambda: FIELD(0.0, np.ones((6, 4))), ValueError, "y must have last axis d = 3", id="y-dimension"),
    pytest.param(lambda: FIELD(0.0, np.ones(3)), ValueError, r"y must have shape \[..., tokens, d\]", id="y-one-token"),
    pytest.param(lambda: FIELD.discrete_step(0.0, Y, np.nan), ValueError, "tau must be finite", id="tau-nan"),
    pytest.param(lambda: misalignment(np.zeros((3, 3))), ValueError, "y must have nonzero tokens", id="E-zero-token"),
    pytest.param(lambda: misalignment(np.full((3, 3), np.nan)), ValueError, "y must be finite", id="E-nan"),
    pytest.param(lambda: misalignment(np.ones(3)), ValueError, "y must have at least 2 axes", id="E-one-token"),
    pytest.param(lambda: top_eigenvector(np.array([[1.0, 2.0], [0.0, 1.0]])), ValueError, "U must be symmetric",
                 id="U-not-symmetric"),
    pytest.param(lambda: top_eigenvector(np.eye(2)), ValueError, "largest eigenvalue must be simple",
                 id="U-top-eigenvalue-repeated"),
    pytest.param(lambda: _solve(y0=np.where(Y > 0.5, np.nan, Y)), ValueError, "y0 must be finite", id="y0-nan"),
    pytest.param(lambda: _solve(y0=2.0 * Y), ValueError, "y0 must lie on the manifold", id="y0-off-manifold"),
    pytest.param(lambda: _solve(t1=0.0), ValueError, "t1 > t0", id="t1-before-t0"),
    pytest.param(lambda: ConstantStepSize(None), ValueError, "dt0 must be given", id="fixed-step-without-dt0"),
    pytest.param(lambda: ConstantStepSize(-0.1), ValueError, "dt0=-0.1 must be finite and positive", id="negative-dt0"),
    pytest.param(lambda: AdaptiveStepSize(dt0=-0.1), ValueError, "dt0=-0.1 must be finite and positive",
                 id="adaptive-negative-dt0"),
    pytest.param(lambda: AdaptiveStepSize(dt0=np.nan), ValueError, "dt0=nan must be finite and positive",
                 id="adaptive-nan-dt0"),
    pytest.param(lambda: _solve(controller=AdaptiveStepSize()), ValueError, "has no embedded error estimate",
                 id="adaptive-without-estimate"),
    pytest.param(lambda: _solve(solver=Dopri5(), controller="adaptive"), TypeError, "controller must be",
                 id="controller-type"),
    pytest.param(lambda: AdaptiveStepSize(rtol=-1.0), ValueError, "rtol=-1.0 must be finite and not negative",
                 id="negative-rtol"),
    pytest.param(lambda: AdaptiveStepSize(rtol=0.0, atol=0.0), ValueError, "rtol and atol must not both be zero",
                 id="zero-tolerances"),
    pytest.param(lambda: _solve(saveat=SaveAt(ts=[0.5, 0.2])), ValueError, "SaveAt.ts must increase",
                 id="save-times-decreasing"),
    pytest.param(lambda: _solve(solver="rk4"), TypeError, "solver must be a Solver instance", id="solver-type"),
    pytest.param(lambda: solve(lambda t, y: np.full_like(y, np.nan), RK4(), 0.0, 1.0, Y,
                               controller=ConstantStepSize(0.1), options=SolveOptions(manifold=Ellipsoid())),
                 FloatingPointError, "the solution became non-finite at t=0", id="field-returns-nan"),
    pytest.param(lambda: SolveOptions(max_steps=0), ValueError, "max_steps=0 must be a positive integer",
                 id="max-steps-zero"),
    pytest.param(lambda: _solve(options=SolveOptions(max_steps=5)), MaxStepsReached,
                 r"max_steps=5 \(5 accepted, 0 rejected\) were spent at t=0.5 of \[t0, t1\] = \[0, 1\].*about 10 steps"
                 r".*solve\(..., options=SolveOptions\(max_steps=N\)\)", id="max-steps-spent"),
    pytest.param(lambda: integrate_fixed(FIELD, Euler(), 0.0, 1.0, Y, steps=5000), MaxStepsReached,
                 r"max_steps=4096 \(4096 accepted, 0 rejected\) were spent at t=0.8192 .* about 5,000 steps",
                 id="default-budget-fixed-steps"),
    pytest.param(lambda: solve(_fast_rotation, Dopri5(), 0.0, 1.0, Y, controller=AdaptiveStepSize(),
                               options=SolveOptions(manifold=Ellipsoid())),
                 MaxStepsReached, r"max_steps=4096 \(\d+ accepted, \d+ rejected\) were spent at t=0\.0\d+ of",
                 id="default-budget-broken-field"),
    pytest.param(lambda: make_figure(7, "unused"), ValueError, "number=7 must be one of 1..6", id="figure-number"),
]


@pytest.mark.parametrize("call, error, message", BAD_INPUTS)
def test_bad_input_raises_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()
