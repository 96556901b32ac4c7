"""Section 5 (long) / 4 (ICML): causal (auto-regressive) attention on the sphere (W = I).

Scalar reductions: b = y_1^T y_2 (Lemma 5.1, eq. 12-13), b = v^T y_1 for symmetric U (Lemma 5.2), the
time-varying case (Theorem 5.3; ICML Remark 4.7, eq. 8), and the change of coordinates of Remark 5.2.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp

import sim
from foundation.registration import claim_result, holding, named_check
from foundation.records import CheckResult, Table

from .attention import AttentionField, tokens
from .ellipsoid import Ellipsoid
from .gram import Form, Vector, sum_vectors, vector
from .results import Identity, evaluate_identities, identities_result, numeric_result

SPHERE = Ellipsoid(Form("I"))
I = SPHERE.metric


def _heads(count: int) -> tuple[Form, ...]:
    return tuple(Form(f"P{eta + 1}", symmetric=False) for eta in range(count))


@named_check
def check_first_token(l: int = 3, heads: int = 2, causal: bool = True, value=None) -> CheckResult:
    """causal.first-token: with U_eta = I and the causal mask, dy_1/dt = alpha_11 P_{y_1} y_1 = 0."""
    field = AttentionField(ellipsoid=SPHERE, scores=_heads(heads), causal=causal, value=value or (lambda eta, y: y))
    y = tokens(l)
    F = field(y)
    return identities_result(
        [Identity("dy_1/dt = 0", F[0], SPHERE.belongs(*y))],
        detail=f"Dimension-free, l = {l}, h = {heads}, time-varying non-symmetric P_eta: the first token attends only to "
               "itself, and P_{y_1} y_1 = 0. (The same holds on any ellipsoid E_W.)")


@named_check
def check_scalar(heads: int = 2, tangent_projection=None) -> CheckResult:
    """causal.scalar (Lemma 5.1): with y_1 fixed, b = y_1^T y_2 obeys db/dt = a(t)(1 - b^2),
    a = sum_eta alpha_21^eta > 0 (eq. 12); equilibria b = +-1; -1 unstable, +1 asymptotically stable with
    domain (-1, 1]; V(b) = 1 - b (eq. 13, reconstructed) has dV/dt = -a(1 - b)(1 + b); exact solution
    b(t) = tanh(A(t) + atanh b(0)), A' = a."""
    field = AttentionField(ellipsoid=SPHERE, scores=_heads(heads), causal=True, tangent_projection=tangent_projection)
    y = tokens(2)
    F = field(y)
    relations = SPHERE.belongs(*y)
    b = sp.Symbol("b", real=True)
    gram_b = I(y[0], y[1])
    a = sum(field.weight(eta, y, 1, 0) for eta in range(heads))
    rhs = lambda bb, aa: aa * (1 - bb ** 2)  # noqa: E731
    t, c = sp.Symbol("t", real=True), sp.Symbol("c", real=True)
    A = sp.Function("A")(t)
    a_sym = sp.Symbol("a", positive=True)
    V = 1 - b
    identities = [
        Identity("d/dt (y_1^T y_2) = y_1^T F_2 = a (1 - b^2), a = sum_eta alpha_21^eta", I(y[0], F[1]) - rhs(gram_b, a),
                 relations),
        Identity("equilibria: the roots of a(1 - b^2) are exactly b = -1, 1 (residual: size of the symmetric "
                 "difference of the two root sets)",
                 sp.Integer(len(set(sp.solve(rhs(b, a_sym), b)) ^ {sp.Integer(-1), sp.Integer(1)}))),
        Identity("linearisation at b = 1: d/db a(1 - b^2) = -2a < 0 (asymptotically stable)",
                 sp.diff(rhs(b, a_sym), b).subs(b, 1) + 2 * a_sym),
        Identity("linearisation at b = -1: d/db a(1 - b^2) = 2a > 0 (unstable)",
                 sp.diff(rhs(b, a_sym), b).subs(b, -1) - 2 * a_sym),
        Identity("V = 1 - b: dV/dt = -a (1 - b)(1 + b)  (<= 0 on [-1, 1], < 0 on (-1, 1))",
                 sp.diff(V, b) * rhs(b, a_sym) + a_sym * (1 - b) * (1 + b)),
        Identity("b(t) = tanh(A(t) + c) solves db/dt = A'(t)(1 - b^2)",
                 sp.diff(sp.tanh(A + c), t) - rhs(sp.tanh(A + c), sp.diff(A, t))),
        Identity("tanh(A + c) -> 1 as A -> oo (any finite c = atanh b(0), b(0) in (-1, 1])",
                 sp.limit(sp.tanh(sp.Symbol("A", positive=True) + c), sp.Symbol("A", positive=True), sp.oo) - 1),
    ]
    return identities_result(
        identities,
        detail=f"Dimension-free in d, h = {heads}. Since a(t) >= h a_min > 0 (Lemma 4.1), A(t) -> oo and b(t) -> 1 from "
               "every b(0) > -1 (domain of attraction (-1, 1]), while b = -1 (y_2 = -y_1) is an unstable equilibrium. "
               "Eq. (12)-(13) are lost in the long version's text: the ODE is derived here from the vector field and "
               "the Lyapunov function taken as V = 1 - b (>= 0, zero iff b = 1, strictly decreasing on (-1, 1)).")


@named_check
def numeric_scalar(seed: int = 20250109, d: int = 20, heads: int = 2, horizon: float = 60.0,
                   rate_factor: float = 1.0) -> CheckResult:
    """causal.scalar, numeric: two causal tokens in d = 20, time-varying P_eta(t) = D_eta(t) P'_eta; b(t)
    from the vector field matches tanh(A(t) + atanh b(0)), A' = a(t) integrated along the solution, and
    b(T) -> 1 from b(0) = -0.99. ``rate_factor`` scales A in the predicted formula (a negative control
    uses 2)."""
    rng = np.random.default_rng(seed)
    base = [rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(heads)]
    omega, phi = rng.uniform(0, 1, (heads, d)), rng.uniform(0, 2 * np.pi, (heads, d))
    field = sim.AttentionField(P=tuple((lambda t, e=e: np.abs(2 * np.sin(omega[e] * t + phi[e]))[:, None] * base[e])
                                       for e in range(heads)), causal=True)  # eq. 6 (sim's), U = I, W = I
    y1 = rng.standard_normal(d)
    y1 /= np.linalg.norm(y1)
    w = rng.standard_normal(d)
    w -= (w @ y1) * y1
    w /= np.linalg.norm(w)
    b0 = -0.99
    y2 = b0 * y1 + np.sqrt(1 - b0 ** 2) * w

    def rhs(t, state):
        y = np.stack([y1, state[:d]])
        a = field.attention(t, y)[:, 1, 0].sum()  # sum_eta alpha_21^eta
        return np.concatenate([field(t, y)[1], [a]])

    times = np.linspace(0, horizon, 81)
    sol = solve_ivp(rhs, (0, horizon), np.concatenate([y2, [0.0]]), t_eval=times, rtol=1e-9, atol=1e-11)
    b = sol.y[:d].T @ y1
    predicted = np.tanh(rate_factor * sol.y[d] + np.arctanh(b0))
    residuals = {"max |b(t) - tanh(A(t) + atanh b0)|": float(np.abs(b - predicted).max()), "1 - b(T)": float(1 - b[-1])}
    return numeric_result(
        residuals, tolerance=1e-6, limits=("1 - b(T)",),
        tolerance_reason="integration error at rtol 1e-9 is ~1e-7; 1 - b(T) decays like exp(-2 A(T)) with "
                         "A(T) >= T h a_min, far below 1e-6 at T = 60",
        detail=f"d = {d}, h = {heads}, P_eta(t) = D_eta(t) P'_eta with |2 sin(omega t + phi)| entries, b(0) = {b0}: "
               f"b(T) = {b[-1]:.12f}.", seeds={"numeric_scalar": seed})


@named_check
def check_first_token_symmetric(symmetric: bool = True) -> CheckResult:
    """causal.first-token-symmetric (Lemma 5.2): for dy/dt = a P_y(U y) on the sphere, U = U^T, U v = lambda v:
    b = v^T y obeys db/dt = a(lambda - y^T U y) b; with y = b v + w (w ⊥ v), lambda - y^T U y =
    lambda(1 - b^2) - w^T U w >= (lambda - lambda_2)(1 - b^2); equilibria are the unit eigenvectors.
    ``symmetric=False`` drops U = U^T, i.e. the relation v^T U y = lambda v^T y (a negative control)."""
    y, v, w = vector("y"), vector("v"), vector("w")
    Uy, Uv, Uw = vector("Uy"), vector("Uv"), vector("Uw")
    a, lam, b = sp.Symbol("a", positive=True), sp.Symbol("lambda", real=True), sp.Symbol("b", real=True)
    drive = SPHERE.tangent_projection(y, Uy) * a
    relations = {I(y, y): 1, I(v, v): 1}
    if symmetric:
        relations[I(v, Uy)] = lam * I(v, y)  # <v, U y> = <U v, y> = lambda <v, y>
    split_y = v * b + w
    split_Uy = Uv * b + Uw
    split = {I(v, v): 1, I(v, w): 0, I(w, w): 1 - b ** 2, I(v, Uv): lam, I(v, Uw): 0, I(w, Uv): 0}
    identities = [
        Identity("d/dt (v^T y) = a (lambda - y^T U y)(v^T y)", I(v, drive) - a * (lam - I(y, Uy)) * I(v, y), relations),
        Identity("y = b v + w: lambda - y^T U y = lambda (1 - b^2) - w^T U w",
                 lam - I(split_y, split_Uy) - (lam * (1 - b ** 2) - I(w, Uw)), split),
        Identity("P_y(U y) = U y - (y^T U y) y: zero iff U y is parallel to y (an eigenvector)",
                 SPHERE.tangent_projection(y, Uy) - (Uy - y * I(y, Uy)), relations),
        Identity("b = 0 is invariant: db/dt = 0 on v^T y = 0", I(v, drive), {**relations, I(v, y): 0}),
    ]
    return identities_result(
        identities,
        detail="Dimension-free. With w^T U w <= lambda_2 |w|^2 = lambda_2 (1 - b^2): db/dt >= a(lambda - lambda_2)(1 - b^2) b "
               "for b > 0, so V = 1 - b decreases strictly on (0, 1) and b -> 1 (y -> v) from every v^T y > 0 (resp. "
               "-v from v^T y < 0); the other unit eigenvectors (b = 0) are unstable: a perturbation with b > 0 grows.")


PRINTED_EMPTY_DOMAIN = ("Lemma 5.2 (2): every unit eigenvector other than +-v is unstable with empty domain of "
                        "attraction.")
CORRECTED_EMPTY_DOMAIN = ("The other unit eigenvectors are unstable, and the set of initial conditions converging to them "
                          "lies in the invariant hyperplane v^T y = 0 (no interior, measure zero) — but it is not empty: "
                          "it contains the equilibrium itself and, for the second eigenvector u_2 with simple lambda_2, "
                          "every y with v^T y = 0 and u_2^T y > 0.")


@named_check
def check_eigenvector_domains(symmetric: bool = True, eigenvector: bool = True) -> CheckResult:
    """causal.first-token-symmetric, Lemma 5.2 (2) as printed ("empty domain of attraction"), decided exactly. (a) A unit
    eigenvector u (U u = mu u) is an equilibrium: P_u(U u) = 0, so the constant solution starting at u converges to
    u and u lies in its own domain of attraction, which is not empty. (b) On the hyperplane v^T y = 0 (invariant:
    check_first_token_symmetric) U y = U' y with U' = (I - v v^T) U (I - v v^T): the flow there is the flow of (17)
    for U' on the unit sphere of v-perp, whose largest eigenvalue is lambda_2 with eigenvector u_2; when lambda_2 is
    simple, item (1) (check_first_token_symmetric) applied to U' makes u_2 attract every y with v^T y = 0,
    u_2^T y > 0. ``symmetric=False`` drops U = U^T (v^T U y = lambda v^T y), ``eigenvector=False`` drops U u = mu u:
    negative controls, the check then fails."""
    y, v, u = vector("y"), vector("v"), vector("u")
    Uy, Uu = vector("Uy"), vector("Uu")
    mu, lam = sp.Symbol("mu", real=True), sp.Symbol("lambda", real=True)
    eigen_u = u * mu if eigenvector else Uu
    hyperplane = {I(y, y): 1, I(v, v): 1, I(v, y): 0}
    if symmetric:
        hyperplane[I(v, Uy)] = lam * I(v, y)  # <v, U y> = <U v, y> = lambda <v, y>
    restricted = Uy - v * I(v, Uy)  # U' y = (I - v v^T) U (I - v v^T) y with (I - v v^T) y = y on the hyperplane
    identities = [
        Identity("U u = mu u, |u| = 1: P_u(U u) = 0 (u is an equilibrium, so it lies in its own domain of attraction)",
                 SPHERE.tangent_projection(u, eigen_u), {I(u, u): 1}),
        Identity("v^T y = 0: U y = (I - v v^T) U (I - v v^T) y (on the hyperplane (17) is the flow of U restricted "
                 "to v-perp)", Uy - restricted, hyperplane),
    ]
    expression, failing = evaluate_identities(identities)
    if failing:
        return claim_result("failed", expression=expression,
                            detail=f"The suite's correction of Lemma 5.2 (2) does not go through: {'; '.join(failing)}.")
    return claim_result(
        "discrepancy", expression=expression, printed=PRINTED_EMPTY_DOMAIN, corrected=CORRECTED_EMPTY_DOMAIN,
        detail="Dimension-free, exact. Every unit eigenvector is an equilibrium, so its domain of attraction contains "
               "it: 'empty' is false as printed, whatever the horizon of any run. On the invariant hyperplane v^T y = 0 "
               "the flow is (17) for U restricted to v-perp, so by item (1) of the same lemma u_2 (simple lambda_2) "
               "attracts {v^T y = 0, u_2^T y > 0}. Instability holds (a perturbation with v^T y > 0 grows: "
               "check_first_token_symmetric), and the set converging to u_2 has no interior.")


@named_check
def numeric_first_token_symmetric(seed: int = 20250110, d: int = 50, v_offset: float = 0.0,
                                  horizon: float = 500.0) -> CheckResult:
    """causal.first-token-symmetric, numeric (d = 50, U = Q diag(2, 1.5, eigenvalues <= 0) Q^T): from v^T y > 0
    the first token converges to v; on the invariant hyperplane v^T y = 0 (the flow of U restricted to v-perp,
    exactly the flow there: check_eigenvector_domains) it converges to u_2 from u_2^T y > 0. ``v_offset`` moves the
    second start off the hyperplane by that much along v and integrates the full U (a negative control: it then
    converges to v, not u_2). ``horizon`` is the integration time of both runs.

    Integrating the full U from a start that is only numerically in the hyperplane would not do: rounding along v
    grows like exp(0.07 t) and carries the token to v at a long enough horizon (|y - u_2| = 1.414 at t = 640)."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    eigenvalues = np.concatenate([[2.0, 1.5], rng.uniform(-1.0, 0.0, d - 2)])
    U = (Q * eigenvalues) @ Q.T
    v, u2 = Q[:, 0], Q[:, 1]
    off_v = np.eye(d) - np.outer(v, v)
    U_perp = off_v @ U @ off_v  # U restricted to v-perp: v is its eigenvector with eigenvalue 0 < lambda_2

    def run(matrix, y0):
        rhs = lambda t, y: (matrix @ y - (y @ matrix @ y) * y) / np.sqrt(d)  # noqa: E731  (alpha_11 = 1/sqrt(n+1))
        return solve_ivp(rhs, (0, horizon), y0 / np.linalg.norm(y0), rtol=1e-11, atol=1e-13).y[:, -1]

    y0 = rng.standard_normal(d)
    y0 *= np.sign(y0 @ v)
    # rates: (lambda - lambda_2)/sqrt(n+1) ~ 0.07 towards v; (lambda_2 - lambda_3)/sqrt(n+1) >= 0.21 towards u_2
    to_v = run(U, y0)
    z0 = rng.standard_normal(d)
    z0 -= (z0 @ v) * v
    z0 *= np.sign(z0 @ u2)
    to_u2 = run(U_perp, z0) if v_offset == 0 else run(U, z0 + v_offset * v)
    residuals = {"|y(T) - v| from v^T y(0) > 0": float(np.linalg.norm(to_v - v)),
                 "|y(T) - u_2| from v^T y(0) = 0, u_2^T y(0) > 0": float(np.linalg.norm(to_u2 - u2))}
    # a miss is a run to a horizon going against a limit: never a refutation
    return numeric_result(
        residuals, tolerance=1e-4, limits=tuple(residuals),
        tolerance_reason="convergence is exponential with rate >= (lambda - lambda_2)/sqrt(n+1) ~ 0.07: at T = 500 "
                         "|y - limit| ~ exp(-35) is far below 1e-4, as is the integration error (~1e-9); a start "
                         "converging elsewhere is O(1) away",
        detail=f"d = {d}, U = Q diag(2, 1.5, U(-1, 0)...) Q^T (simple lambda = 2, lambda_2 = 1.5), horizon {horizon:g}; "
               "the u_2 run integrates the flow on the hyperplane v^T y = 0 (U restricted to v-perp)"
               + ("" if v_offset == 0 else f", here replaced by the full U from {v_offset:g} v off the hyperplane")
               + ". The printed 'empty domain of attraction' is decided exactly by check_eigenvector_domains.",
        seeds={"numeric_first_token_symmetric": seed}, numbers={"horizon": horizon})


@named_check
def check_time_varying(perturbation_sign: int = 1) -> CheckResult:
    """causal.time-varying (Theorem 5.3; ICML Remark 4.7, eq. 8): for U(t) symmetric, U v = lambda v, |v| = 1,
    b = v(t)^T y_1 obeys db/dt = alpha(lambda - y^T U y) b + e, e = dv/dt^T y (as printed); e = dv/dt^T w
    (dv/dt ⊥ v) so |e| <= |dv/dt| sqrt(1 - b^2). ``perturbation_sign = -1`` tests a wrong sign of e
    (a negative control)."""
    y, v, vdot, w = vector("y"), vector("v"), vector("vdot"), vector("w")
    Uy = vector("Uy")
    alpha, lam, b = sp.Symbol("alpha", positive=True), sp.Symbol("lambda", real=True), sp.Symbol("b", real=True)
    ydot = SPHERE.tangent_projection(y, Uy) * alpha
    relations = {I(y, y): 1, I(v, v): 1, I(v, Uy): lam * I(v, y)}
    bdot = I(vdot, y) + I(v, ydot)  # product rule for b = v(t)^T y(t)
    identities = [
        Identity("db/dt = alpha (lambda - y^T U y) b + dv/dt^T y  (printed eq. 8)",
                 bdot - (alpha * (lam - I(y, Uy)) * I(v, y) + perturbation_sign * I(vdot, y)), relations),
        Identity("y = b v + w: e = dv/dt^T y = dv/dt^T w", I(vdot, v * b + w) - I(vdot, w), {I(v, vdot): 0}),
    ]
    return identities_result(
        identities,
        detail="Dimension-free, for the first token (v^T dv/dt = 0 taken from |v(t)| = 1). A reduction, not a proof of "
               "Theorem 5.3: with V = 1 - b and the spectral bound of Lemma 5.2, dV/dt <= -alpha (lambda - lambda_2)"
               "(1 - b^2) b + |dv/dt| sqrt(1 - b^2), so V decreases while b sqrt(1 - b^2) > sup|dv/dt| / (alpha "
               "(lambda - lambda_2)): an ISS estimate whose ultimate ball shrinks to b = 1 as sup|dv/dt| -> 0; that "
               "estimate and the induction over the later tokens are argued in words here, not machine-checked "
               "(supported).")


#: Slack of the lag against the ISS bound in :func:`numeric_time_varying`. The bound is attained (the token settles in
#: the rotation plane, where the estimate holds with equality), so the measured lag sits at the bound up to the
#: integration error: on the attracting co-rotating equilibrium the global error of RK45 stays of the order of its
#: local tolerance (rtol 1e-9; the lag is measured on the sphere, y / |y|, so the solver's drift off the sphere does
#: not enter it): 10 rtol.
LAG_SLACK = 1e-8


@named_check
def numeric_time_varying(speeds: tuple[float, ...] = (0.0, 0.02, 0.05, 0.1), bound_factor: float = 1.0,
                         rtol: float = 1e-9, horizon: float = 200.0) -> CheckResult:
    """causal.time-varying, numeric (first token, d = 3, deterministic: no random draw): U(t) = R(t) diag(1, 0, -1)
    R(t)^T rotating about e_3 with angular speed omega = |dv/dt|; the final lag 1 - v(t)^T y stays within the ISS
    bound 1 - b_*, b_* the largest root of b sqrt(1 - b^2) = omega / (alpha (lambda - lambda_2)), and grows with
    omega. ``bound_factor`` scales the bound (a negative control uses 0.5: a bound too small is rejected); ``rtol``
    (atol = rtol / 100) and ``horizon`` are the integration's.

    The lag is measured on the sphere (y / |y|): the solver drifts off it by ~rtol (|y| < 1), which inflated
    1 - v^T y by exactly that drift and put the unnormalised lag 2.9e-10 above the (attained) bound. A miss is a run to
    a horizon going against a limsup: ``unsupported``, never a refutation."""
    d, alpha, gap = 3, 1 / np.sqrt(3), 1.0
    rows, ok = [], True
    lags = []
    for omega in speeds:
        def U(t):
            c, s = np.cos(omega * t), np.sin(omega * t)
            R = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
            return R @ np.diag([1.0, 0.0, -1.0]) @ R.T

        rhs = lambda t, y: alpha * (U(t) @ y - (y @ U(t) @ y) * y)  # noqa: E731
        y0 = np.array([0.6, 0.3, 0.74])
        sol = solve_ivp(rhs, (0, horizon), y0 / np.linalg.norm(y0), rtol=rtol, atol=rtol / 100)
        vT = np.array([np.cos(omega * horizon), np.sin(omega * horizon), 0.0])
        yT = sol.y[:, -1] / np.linalg.norm(sol.y[:, -1])
        lag = float(1 - vT @ yT)
        ratio = omega / (alpha * gap)
        if ratio == 0:
            bound = 0.0
        else:
            # largest root of b^2 (1 - b^2) = ratio^2: b^2 = (1 + sqrt(1 - 4 ratio^2)) / 2
            bound = bound_factor * float(1 - np.sqrt((1 + np.sqrt(1 - 4 * ratio ** 2)) / 2))
        ok &= lag <= bound + LAG_SLACK
        rows.append((omega, lag, bound, lag - bound))
        lags.append(lag)
    monotone = bool(np.all(np.diff(lags) > 0))
    verdict = holding() if ok and monotone else "unsupported"
    return claim_result(verdict,
        detail="Final lag 1 - v(T)^T y(T) of the first token under a rotating U(t) (d = 3, alpha = 1/sqrt(3), "
               f"lambda - lambda_2 = 1, T = {horizon:g}, RK45 at rtol {rtol:g}): within the ISS bound for every speed, "
               "zero for omega = 0, increasing with omega. Here the token settles in the rotation plane, where "
               "|e| = |dv/dt| sqrt(1 - b^2) and w^T U w = lambda_2 |w|^2 hold with equality, so the lag attains the "
               "bound: the estimate is sharp"
               + ("" if verdict != "unsupported" else " — NOT within the bound or not increasing at this horizon") + ".",
        numbers={"within bound": ok, "increasing with speed": monotone, "rtol": rtol, "horizon": horizon,
                 "largest lag - bound": max(row[3] for row in rows)},
        tolerance=LAG_SLACK,
        tolerance_reason="the bound is attained, so the lag sits at it up to the integration error, of the order of "
                         "rtol = 1e-9 on this attracting co-rotating equilibrium (measured on the sphere); 10 rtol",
        tables=(Table("lag vs speed", ("omega = |dv/dt|", "1 - v^T y at T (y on the sphere)", "ISS bound 1 - b_*",
                                       "lag - bound"), tuple(rows)),))


@named_check
def check_reparam(d: int = 2, metric: str = "U^T U") -> list[CheckResult]:
    """causal.reparam (Remark 5.2, reconstructed): U invertible, W = U^T U (SPD by construction), new
    projection pi~(x) = U^-1 x / |x| onto E_W, system (16): dy_i/dt = T_{U y_i} pi~ (sum_j alpha_ij U y_j)
    = U^-1 P_{U y_i}(sum_j alpha_ij U y_j). The change of coordinates z_i = U y_i gives dz_i/dt =
    P_{z_i}(sum_j alpha~_ij z_j) on the sphere, alpha~ built from P~ = U^-T P U^-1: the U = I model.
    ``metric = "U U^T"`` tries the other SPD matrix built from U (a negative control: it fails)."""
    U = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"u{i + 1}{j + 1}", real=True))
    Ui = U.inv()
    P = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"p{i + 1}{j + 1}", real=True))
    x = sp.Matrix(sp.symbols(f"x1:{d + 1}", real=True))
    ys = [sp.Matrix(sp.symbols(f"y{k}_1:{d + 1}", real=True)) for k in (1, 2)]
    if metric not in ("U^T U", "U U^T"):
        raise ValueError(f"metric={metric!r} must be 'U^T U' or 'U U^T'.")
    W = U.T * U if metric == "U^T U" else U * U.T
    norm = sp.sqrt((x.T * x)[0, 0])
    pi_tilde = Ui * x / norm
    P_sphere = lambda z: sp.eye(d) - z * z.T  # noqa: E731  (at a point z of the sphere)
    alphas = sp.symbols("alpha1:3", positive=True)
    drive_y = sum((alphas[k] * U * ys[k] for k in range(2)), sp.zeros(d, 1))
    field_16 = Ui * P_sphere(U * ys[0]) * drive_y  # token 1 of (16)
    zs = [U * yk for yk in ys]
    field_z = P_sphere(zs[0]) * sum((alphas[k] * zs[k] for k in range(2)), sp.zeros(d, 1))
    P_tilde = Ui.T * P * Ui
    w = sp.Matrix(sp.symbols(f"w1:{d + 1}", real=True))
    identities = [
        Identity(f"d = {d}: pi~(x)^T W pi~(x) = 1 with W = {metric} (pi~ maps onto E_W)",
                 ((pi_tilde.T * W * pi_tilde)[0, 0] - 1)),
        Identity(f"d = {d}: Jacobian of pi~ at x equals U^-1 (I - x x^T/|x|^2)/|x|",
                 (pi_tilde.jacobian(x) - Ui * (sp.eye(d) - x * x.T / norm ** 2) / norm)),
        Identity(f"d = {d}: U * (16)_i = P_{{z_i}}(sum_j alpha_ij z_j), z = U y (the U = I field in z)",
                 (U * field_16 - field_z)),
        Identity(f"d = {d}: y_i^T P y_j = z_i^T P~ z_j with P~ = U^-T P U^-1 (same attention weights)",
                 ((ys[0].T * P * ys[1])[0, 0] - (zs[0].T * P_tilde * zs[1])[0, 0])),
        Identity(f"d = {d}: U^-1 P_{{U y}} U w = (I - y y^T W) w  ((16) is the U = I model on E_W: U cancels)",
                 (Ui * P_sphere(U * ys[0]) * U * w - (sp.eye(d) - ys[0] * ys[0].T * W) * w)),
    ]
    reduction = identities_result(
        identities,
        detail="Reconstruction (the remark's formulas are lost): W = U^T U, pi~(x) = U^-1 x/|x|, z = U y, P~ = U^-T P U^-1 "
               "(bounded when P is, so Lemma 4.1 holds). Verified in explicit coordinates with a generic invertible U "
               f"(d = {d}); every step is linear algebra valid in any d. Note what the remark really does: the new "
               "projection's tangent map U^-1 P_{Uy} cancels the value matrix, so (16) is exactly the U = I model on "
               "E_{U^T U} (last identity) — it is not the model (6) with value matrix U.")
    # the obstruction: with the standard radial projection the first token of (6) moves when U != c I
    Uc = sp.diag(1, 2, 3)
    y1 = sp.Matrix([1, 1, 1]) / sp.sqrt(3)
    moved = Uc * y1 - y1 * (y1.T * Uc * y1)[0, 0]
    obstruction = claim_result("verified" if moved != sp.zeros(3, 1) else "refuted",
        detail="Why a new projection is needed: with the radial projection pi_W (any W) and U != c I, the first "
               "token of (6) moves (dy_1/dt = alpha_11 P_{y_1} U y_1 != 0), while in the U = I model it is fixed for "
               "every P(t); a change of coordinates maps rest points to rest points, so no change of coordinates reduces "
               "(6) with the standard projection to the U = I case. Example: W = I, U = diag(1, 2, 3), "
               f"y_1 = (1,1,1)/sqrt(3): P_{{y_1}} U y_1 = {sp.sstr(list(moved))}.",
        expression=f"P_y U y = U y - (y^T U y) y = {sp.sstr(list(moved))} != 0")
    return [reduction, obstruction]


@named_check
def check_identity_iss(heads: int = 2, tangent_projection=None) -> CheckResult:
    """causal.identity-iss (proof of Theorem 5.1, eq. 14-15): with errors e_j = y_j - y_1 of the earlier
    tokens, b = y_1^T y_i obeys db/dt = sum_{j<i} alpha_ij [(1 - b^2) + (y_1 - b y_i)^T e_j], and
    |y_1 - b y_i|^2 = 1 - b^2, so V = 1 - b satisfies dV/dt <= -a (1 - b^2) + b_max sqrt(1 - b^2) sum_j |e_j|:
    an ISS-Lyapunov function with input e. Shown for token i = 3 (e_1 = 0)."""
    y1, e2, y3 = vector("y1"), vector("e2"), vector("y3")
    y = [y1, y1 + e2, y3]
    field = AttentionField(ellipsoid=SPHERE, scores=_heads(heads), causal=True, tangent_projection=tangent_projection)
    F = field(y)
    relations = {I(y1, y1): 1, I(y3, y3): 1, I(e2, e2): -2 * I(y1, e2)}  # |y_1 + e_2| = 1
    b = I(y1, y3)
    errors = [Vector(), e2]
    drive = sum(field.weight(eta, y, 2, j) * ((1 - b ** 2) + I(y1 - y3 * b, errors[j]))
                for eta in range(heads) for j in range(2))
    identities = [
        Identity("d/dt (y_1^T y_3) = sum_{j<3} alpha_3j [(1 - b^2) + (y_1 - b y_3)^T e_j]  (y_1 fixed)",
                 I(y1, F[2]) - drive, relations),
        Identity("|y_1 - b y_3|^2 = 1 - b^2 (so the input term is at most sqrt(1 - b^2) |e_j|)",
                 I(y1 - y3 * b, y1 - y3 * b) - (1 - b ** 2), relations),
    ]
    return identities_result(
        identities,
        detail=f"Dimension-free, h = {heads}, time-varying P_eta; the formulas of eq. (14)-(15) are lost in the long "
               "version's text, so the scalar ODE is derived here from the vector field. The same computation holds for "
               "every i (each earlier token contributes one such term).")


@named_check
def check_symmetric_iss(symmetric: bool = True) -> CheckResult:
    """causal.symmetric-iss (proof of Theorem 5.2, eq. 18-19): U = U^T, U v = lambda v, earlier tokens
    y_j = v + e_j; b = v^T y_i obeys db/dt = alpha_ii (lambda - y_i^T U y_i) b + sum_{j<i} alpha_ij
    [lambda (1 - b^2) + (lambda v - b U y_i)^T e_j]: the unperturbed part of Lemma 5.2 plus an input term
    linear in the errors. Shown for token i = 3, h = 1. ``symmetric=False`` drops U = U^T (a control)."""
    v, e1, e2, y3 = vector("v"), vector("e1"), vector("e2"), vector("y3")
    lam = sp.Symbol("lambda", real=True)

    def value(eta, vec):  # U applied to a combination of v, e_j, y_3 (U v = lambda v)
        return sum_vectors([(v * lam if name == "v" else vector(f"U{name}")) * c for name, c in vec.terms.items()])

    y = [v + e1, v + e2, y3]
    field = AttentionField(ellipsoid=SPHERE, scores=(Form("P", symmetric=False),), causal=True, value=value)
    F = field(y)
    relations = {I(v, v): 1, I(y3, y3): 1, I(e1, e1): -2 * I(v, e1), I(e2, e2): -2 * I(v, e2)}
    if symmetric:  # v^T U x = (U v)^T x = lambda v^T x
        relations.update({I(v, vector(f"U{name}")): lam * I(v, vector(name)) for name in ("e1", "e2", "y3")})
    b = I(v, y3)
    Uy3 = vector("Uy3")
    expected = (field.weight(0, y, 2, 2) * (lam - I(y3, Uy3)) * b
                + sum(field.weight(0, y, 2, j) * (lam * (1 - b ** 2) + I(v * lam - Uy3 * b, e))
                      for j, e in enumerate((e1, e2))))
    # <y3, U e_j> and <U y3, e_j> are the same number for symmetric U
    swap = {I(y3, vector(f"U{name}")): I(Uy3, vector(name)) for name in ("e1", "e2")} if symmetric else {}
    return identities_result([Identity(
            "d/dt (v^T y_3) = alpha_33 (lambda - y_3^T U y_3) b + sum_{j<3} alpha_3j [lambda(1 - b^2) + (lambda v - b U y_3)^T e_j]",
            I(v, F[2]) - expected, {**relations, **swap})],
        detail="Dimension-free, h = 1, time-varying P. The input term is bounded by (|lambda| + |U|) |e_j| "
               "(|v| = |y_3| = 1), which with Lemma 5.2's bound on the first part gives the ISS-Lyapunov inequality for "
               "V = 1 - b. Eq. (18)-(19) are lost in the long version's text: derived here from the vector field.")


@named_check
def numeric_reparam(seed: int = 20250114, d: int = 500, l: int = 6, metric: str = "U^T U") -> CheckResult:
    """causal.reparam in d = 500: random invertible U and P, tokens y_i on E_W (W = U^T U); U times the
    field of (16) equals the causal U = I sphere field of z = U y with P~ = U^-T P U^-1, and (16) equals the
    U = I field on E_W. ``metric = "U U^T"`` builds W the other way (a negative control)."""
    rng = np.random.default_rng(seed)
    U = np.eye(d) + 0.3 * rng.standard_normal((d, d)) / np.sqrt(d)
    P = rng.standard_normal((d, d)) / np.sqrt(d)
    W = U.T @ U if metric == "U^T U" else U @ U.T
    sphere, ellipsoid = sim.Ellipsoid(), sim.Ellipsoid(W)
    z = sphere.project(rng.standard_normal((l, d)))
    y = ellipsoid.project(np.linalg.solve(U, z.T).T)  # y_i = U^-1 z_i (|U y_i| = 1), on E_W (a no-op if W = U^T U)
    Uy = y @ U.T
    alpha = sim.AttentionField(P=(P,), causal=True).attention(0.0, y)[0]  # eq. 6's causal weights
    drive = alpha @ Uy  # sum_j alpha_ij U y_j
    field_16 = np.linalg.solve(U, sphere.tangent_projection(Uy, drive).T).T  # U^-1 P_{U y_i}(...)
    P_tilde = np.linalg.solve(U.T, np.linalg.solve(U.T, P.T).T)  # U^-T (P U^-1) = U^-T P U^-1
    z_field = sim.AttentionField(P=(P_tilde,), causal=True)(0.0, Uy)
    identity_field = sim.AttentionField(P=(P,), W=W, causal=True)(0.0, y)
    residuals = {"max ||U y_i| - 1| (z = U y on the sphere)": float(np.abs(np.linalg.norm(Uy, axis=1) - 1).max()),
                 "max |U (16) - sphere field of z = U y with P~|": float(np.abs(field_16 @ U.T - z_field).max()),
                 "max |(16) - U = I field on E_W|": float(np.abs(field_16 - identity_field).max())}
    return numeric_result(
        residuals, tolerance=1e-10,
        tolerance_reason="float64 solves with cond(U) ~ 3 in d = 500: rounding ~1e-13",
        detail=f"d = {d}, l = {l} causal tokens, U = I + 0.3 G/sqrt(d), W = {metric}.", seeds={"numeric_reparam": seed})
