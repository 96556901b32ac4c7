"""The model of section 2: the projection pi_W (eq. 2), its tangent map (eq. 3), and the continuous-time
limit (6) of the discrete model (1)."""

from __future__ import annotations

from typing import Callable

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp

import sim
from foundation.registration import named_check
from foundation.records import CheckResult, Table

from .ellipsoid import Ellipsoid, random_spd
from .gram import Vector, vector
from .results import Identity, identities_result, numeric_result

TangentProjection = Callable[[Ellipsoid, Vector, Vector], Vector]

#: float64 residuals of O(1) quantities in d = 500 with cond(W) <= 9: rounding is ~1e-13.
SPOT_TOLERANCE = 1e-10
SPOT_REASON = "float64 rounding of O(1) sums of 500 terms with cond(W) <= 9 stays below 1e-12; 1e-10 leaves margin"
SPOT_DIMENSION = 500


def _paper_tangent_projection(ellipsoid: Ellipsoid, point: Vector, X: Vector) -> Vector:
    return ellipsoid.tangent_projection(point, X)


@named_check
def check_projection(tangent_projection: TangentProjection = _paper_tangent_projection) -> CheckResult:
    """model.projection, dimension-free: pi_W lands on E_W; its directional derivative is eq. 3; at y in
    E_W, P_y = I - y y^T W is idempotent, maps into {X : y^T W X = 0}, has kernel span{y} and is
    W-self-adjoint. ``tangent_projection`` replaces P_y (negative controls pass a broken one)."""
    E = Ellipsoid()
    W = E.metric
    x, y, X, Z = vector("x"), vector("y"), vector("X"), vector("Z")
    s = sp.Symbol("s", real=True)
    on_E = E.belongs(y)
    P = lambda v: tangent_projection(E, y, v)  # noqa: E731

    image = E.project(x)
    # d/ds pi_W(x + s X) at s = 0, coefficient by coefficient: the Jacobian applied to an arbitrary X.
    moved = E.project(x + s * X)
    derivative = Vector({name: sp.diff(c, s).subs(s, 0) for name, c in moved.terms.items()})
    identities = [
        Identity("pi_W(x)^T W pi_W(x) = 1 (pi_W lands on E_W)", W(image, image) - 1),
        Identity("d/ds pi_W(x + s X)|_{s=0} = |x|_W^{-1} (I - x x^T W |x|_W^{-2}) X  (eq. 3)",
                 derivative - E.projection_differential(x, X)),
        Identity("eq. 3 at y in E_W equals P_y X = (I - y y^T W) X", E.projection_differential(y, X) - P(X), on_E),
        Identity("P_y P_y X = P_y X (idempotent)", P(P(X)) - P(X), on_E),
        Identity("y^T W P_y X = 0 (image in T_y E_W)", W(y, P(X)), on_E),
        Identity("P_y X = X for X in T_y E_W (image is all of T_y E_W)", P(X) - X, {**on_E, **E.is_tangent(y, X)}),
        Identity("P_y y = 0 (kernel contains y)", P(y), on_E),
        Identity("X - P_y X = (y^T W X) y (kernel is span{y})", X - P(X) - y * W(y, X), on_E),
        Identity("<P_y X, Z>_W = <X, P_y Z>_W (W-self-adjoint)", W(P(X), Z) - W(X, P(Z)), on_E),
    ]
    return identities_result(
        identities,
        detail="Dimension-free: vectors are symbols, the only facts used are bilinearity, W = W^T and the "
               "substituted constraints, so the identities hold for every n.")


@named_check
def check_projection_jacobian_coordinates(dimensions: tuple[int, ...] = (2, 3), radial_power: int = 2) -> CheckResult:
    """model.projection in explicit coordinates: the Jacobian matrix of x / sqrt(x^T W x) with a generic
    symmetric W equals eq. 3 entry by entry. ``radial_power`` is the power of |x|_W in eq. 3's
    x x^T W |x|_W^{-2} (2 as printed; a negative control changes it)."""
    identities = []
    for d in dimensions:
        xs = sp.Matrix(sp.symbols(f"x1:{d + 1}", real=True))
        W = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"w{min(i, j) + 1}{max(i, j) + 1}", real=True))
        q = (xs.T * W * xs)[0, 0]
        jacobian = (xs / sp.sqrt(q)).jacobian(xs)
        eq3 = (sp.eye(d) - xs * xs.T * W / sp.sqrt(q) ** radial_power) / sp.sqrt(q)
        identities.append(Identity(f"d = {d}: Jacobian of pi_W minus eq. 3 (all {d * d} entries)", jacobian - eq3))
    return identities_result(identities,
                             detail="Explicit coordinates with a generic symmetric W: every entry of the difference "
                                    "of the two Jacobian matrices simplifies to 0.")


@named_check
def spot_check_projection(seed: int = 20250101, d: int = SPOT_DIMENSION, use_W: bool = True) -> CheckResult:
    """model.projection in d = 500 (float64): the identities above, and eq. 3 against central differences.
    ``use_W=False`` builds P_y = I - y y^T, without W (a negative control)."""
    rng = np.random.default_rng(seed)
    W = random_spd(rng, d)
    E = sim.Ellipsoid(W)
    y = E.project(rng.standard_normal(d))
    X, Z, x = rng.standard_normal((3, d))
    # P_y = I - y y^T W; the control takes the sphere's I - y y^T at the same point of E_W
    P = (lambda v: E.tangent_projection(y, v)) if use_W else (lambda v: sim.Ellipsoid().tangent_projection(y, v))
    eq3 = E.projection_differential(x, X)
    h = 1e-5
    finite_difference = (E.project(x + h * X) - E.project(x - h * X)) / (2 * h)
    W_ = lambda u, v: float(E.inner_product(y, u, v))  # noqa: E731
    residuals = {
        "|pi_W(x)|_W - 1": abs(float(E.norm(E.project(x))) - 1),
        "|P P X - P X|": float(np.linalg.norm(P(P(X)) - P(X))),
        "|y^T W P X|": abs(W_(y, P(X))),
        "|P y|": float(np.linalg.norm(P(y))),
        "|<P X, Z>_W - <X, P Z>_W|": abs(W_(P(X), Z) - W_(X, P(Z))),
        "|eq. 3 - central difference| / |eq. 3| / 1e3": float(np.linalg.norm(eq3 - finite_difference)
                                                            / np.linalg.norm(eq3)) / 1e3,
    }
    return numeric_result(
        residuals, tolerance=SPOT_TOLERANCE,
        tolerance_reason=SPOT_REASON + "; the central difference (h = 1e-5) has error ~h^2 = 1e-10 relative, "
                         "so its residual is scaled by 1e-3 against the same tolerance",
        detail=f"Random W (SPD, cond <= 9), y in E_W, X, Z in d = {d}.", seeds={"spot_check_projection": seed})


@named_check
def check_continuum(tangent_projection: TangentProjection = _paper_tangent_projection) -> CheckResult:
    """model.continuum, dimension-free: d/dtau pi_W(y + tau f)|_0 = P_y f, and the second-order remainder
    pi_W(y + tau f) = y + tau P_y f + tau^2 [((3 a^2 - c)/2) y - a f] + O(tau^3), a = y^T W f, c = f^T W f.
    ``tangent_projection`` replaces P_y in the claimed derivative (negative controls)."""
    E = Ellipsoid()
    W = E.metric
    y, f = vector("y"), vector("f")
    tau = sp.Symbol("tau", real=True)
    on_E = E.belongs(y)
    a, c = W(y, f), W(f, f)
    step = E.project(y + tau * f)
    taylor = lambda k: Vector({n: sp.diff(v, tau, k).subs(tau, 0) / sp.factorial(k)  # noqa: E731
                               for n, v in step.terms.items()})
    remainder = y * ((3 * a ** 2 - c) / 2) - f * a
    identities = [
        Identity("pi_W(y + tau f) at tau = 0 equals y", taylor(0) - y, on_E),
        Identity("d/dtau pi_W(y + tau f)|_{tau=0} = P_y f", taylor(1) - tangent_projection(E, y, f), on_E),
        Identity("(1/2) d^2/dtau^2 pi_W(y + tau f)|_{tau=0} = ((3 a^2 - c)/2) y - a f, a = y^T W f, c = f^T W f",
                 taylor(2) - remainder, on_E),
    ]
    return identities_result(
        identities,
        detail="One discrete step y -> pi_W(y + tau f) agrees with the flow of dy/dt = P_y f to first order; the "
               "tau^2 coefficient of the step is ((3a^2 - c)/2) y - a f, so step and flow differ by O(tau^2) "
               "(and not less in general: the flow's own tau^2 term is (1/2) D(P f)[P f]).")


@named_check
def numeric_continuum_order(seed: int = 20250102, tokens: int = 4, d: int = 100, project_flow: bool = True) -> CheckResult:
    """model.continuum, numeric order: the distance between one discrete step (1) and the time-tau flow of
    (6) (full attention, h = 1, random P, U, W) scales like tau^2 (log-log slope fitted over 8 values).
    ``project_flow=False`` compares with the unprojected flow dy/dt = f(y) instead (a negative control)."""
    rng = np.random.default_rng(seed)
    W = random_spd(rng, d, spread=0.25)
    P = rng.standard_normal((d, d)) / np.sqrt(d)
    U = rng.standard_normal((d, d)) / np.sqrt(d)
    field = sim.AttentionField(P=(P,), U=(U,), W=W)  # eq. 6 (sim's): f_i = sum_j alpha_ij U y_j, then P_y
    y0 = field.manifold.project(rng.standard_normal((tokens, d)))
    flat_field = field if project_flow else field.attention_update  # the control: dy/dt = f(y), unprojected
    rhs = lambda t, flat: flat_field(t, flat.reshape(tokens, d)).ravel()  # noqa: E731

    taus = np.logspace(-3, -1, 8)
    flow = solve_ivp(rhs, (0, taus[-1]), y0.ravel(), t_eval=taus, rtol=1e-12, atol=1e-14, method="DOP853")
    errors = np.array([np.linalg.norm(field.discrete_step(0.0, y0, t) - flow.y[:, k].reshape(tokens, d))
                       for k, t in enumerate(taus)])  # one step of eq. 1 against the flow
    slope = float(np.polyfit(np.log(taus), np.log(errors), 1)[0])
    table = Table("one discrete step vs the flow of (6)", ("tau", "|step - flow|"),
                  tuple((float(t), float(e)) for t, e in zip(taus, errors)))
    return numeric_result(
        {"|slope - 2|": abs(slope - 2.0)}, tolerance=0.1, limits=("|slope - 2|",),  # O(tau^2) is about tau -> 0
        tolerance_reason="a fitted log-log slope over tau in [1e-3, 1e-1] carries O(tau) curvature from the "
                         "tau^3 terms; 0.1 separates order 2 from orders 1 and 3",
        detail=f"{tokens} tokens in d = {d}, random W (cond <= 3), P, U; flow by DOP853 (rtol 1e-12). Fitted "
               f"slope {slope:.3f}: the step is a first-order approximation of the flow (error O(tau^2)).",
        seeds={"numeric_continuum_order": seed}, numbers={"slope": slope}, tables=(table,))
