"""Validated certificates of attractors of eq. 6 (python-flint's Arb ball arithmetic), for conjecture witnesses.

Why Arb (python-flint) rather than mpmath's interval context: Arb's balls carry their radius through every
operation at any precision, and its ``acb_mat.eig`` encloses the eigenvalues of every matrix in a ball matrix
(Rump's or van der Hoeven-Mourrain's method); mpmath's ``iv`` has no eigenvalue enclosure.

The chain of a certificate, every step in ball arithmetic unless marked float64 (the bounds it reports as numbers
leave the balls rounded outward: :func:`up`, :func:`down`; eq. 6's normaliser takes sqrt(d) in float64, a constant
positive factor of the whole field, which moves neither its zeros nor the sign of any eigenvalue's real part):

1. a chart of (S^{d-1})^l at the float64 equilibrium c (float64 Newton refines it first; its basis B is any
   float64 tangent basis, used exactly): y_i(u) = (c_i + B_i u_i) / |c_i + B_i u_i|, and the field in the chart
   V(u) = s_i [ (M_i^{-1} f_i)_{1:} - u_i (M_i^{-1} f_i)_0 ], M_i = [c_i | B_i], s_i = |c_i + B_i u_i|, f = eq. 6;
2. with a continuous symmetry (a skew generator Omega commuting with every P_eta and U_eta, checked exactly), the
   slice u_k = 0 through the largest component k of the generator's field xi and the reduced field
   V - (V_k / xi_k) xi: its zeros are the configurations that rotate rigidly, y(t) = exp(mu t Omega) y*, and the
   symmetry direction is quotiented out (a zero eigenvalue is never accepted otherwise);
3. Krawczyk: K(X) = -C F(0) + (I - C J(X)) X inside the interior of the box X = [-r, r]^m proves exactly one
   zero of F in X (J(X) encloses the Jacobian on X, by forward-mode jets of balls);
4. stability and a ball of attraction (:func:`attraction`): Q from the float64 Lyapunov equation
   A^T Q + Q A = -I (A the midpoint of J(X)), then -(J^T Q + Q J) certified positive definite for every J in J(X):
   every eigenvalue of every matrix in J(X), the linearisation at the zero among them, has real part below a
   certified bound < 0, and (the mean-value form bounding the nonlinear remainder) every sublevel set
   {(u - u*)^T Q (u - u*) <= rho} inside X is attracted to u*; its inner Euclidean radius is reported (chart
   coordinates, in which the tokens move by at most as much, to first order); the ball is centred at the zero
   u*, not at the chart centre: a tight Krawczyk box (:func:`enclose_zero`, half-width ~1e-12) encloses u*, and a
   start counts as inside only when its distance from the centre plus the box's far corner sqrt(m) r is at most the
   radius (:func:`start_distance`, in balls; on the slice for rotating states);
5. the eigenvalues themselves as Arb balls where Arb isolates them (shown; a ball with a certified positive
   real part rejects the point as a saddle at once).

What stays float64 (named in the certificate): the Newton refinement (only a starting point), the midpoint
inverse C and Q (any matrices make the checks valid), and the hypothesis and outcome margins (the distance
from the claimed outcome and whether the state meets the claim's hypotheses), each reported with its margin
against the box radius.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from flint import acb_mat, arb, arb_mat, ctx
from scipy.linalg import null_space, solve_continuous_lyapunov

from sim.field.eq6 import eq6
from sim.conjectures.jets import independent_jets, values_and_jacobian

#: Working precision of the balls (bits): 2x float64, so rounding never decides a certificate.
PRECISION = 106
#: Box half-widths tried, largest first: the largest box that certifies gives the widest ball of attraction.
RADII = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-10)
#: Float64 Newton stops when |F| falls below this (near float64 rounding of eq. 6 at |P| <= 50).
NEWTON_TOL = 1e-14
#: Half-widths of the tight box around the zero u*, tightest first (up to the certified box's): 1e-12 is 1e4 x the
#: ~1e-16 by which the float64 Newton centre misses the zero, so Krawczyk maps it inside at 106 bits; wider ones
#: serve a centre that Newton did not refine (an equilibrium off the chart centre).
TIGHT_RADII = tuple(10.0**k for k in range(-12, -2))


@dataclass
class ValidatedCertificate:
    """What a validated certification established; ``numbers`` are JSON-ready."""

    certified: bool
    reason: str
    equilibrium: np.ndarray
    #: With a generator: the midpoint of the ball of the rigid rotation's speed mu (its radius is in ``numbers``).
    rotation_speed: float | None = None
    eigenvalues: list[str] = field(default_factory=list)
    numbers: dict = field(default_factory=dict)
    float64_parts: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"{'CERTIFIED' if self.certified else 'REJECTED'}: {self.reason}"]
        lines += [f"  {key}: {value}" for key, value in self.numbers.items()]
        if self.eigenvalues:
            lines.append("  eigenvalue enclosures (balls): " + "; ".join(self.eigenvalues))
        lines += [f"  float64, not validated: {part}" for part in self.float64_parts]
        return "\n".join(lines)


def exact_balls(array) -> np.ndarray:
    """Float entries as exact Arb balls (radius 0), same shape, object dtype."""
    array = np.asarray(array, dtype=float)
    return np.array([arb(float(x)) for x in array.ravel()], dtype=object).reshape(array.shape)


def tangent_bases(y: np.ndarray) -> np.ndarray:
    """Float64 orthonormal bases of the tangent spaces, shape=[l, d, d-1] for ``y : shape=[l, d]``."""
    return np.stack([null_space(token[None, :]) for token in y])


@dataclass(frozen=True)
class Chart:
    """The chart y_i(u) = (c_i + B_i u_i) / |c_i + B_i u_i| of (S^{d-1})^l at ``center : shape=[l, d]``."""

    center: np.ndarray
    basis: np.ndarray       # shape=[l, d, d-1]
    inverse: np.ndarray     # shape=[l, d, d], M_i^{-1} for M_i = [c_i | B_i] (balls, or floats)

    @classmethod
    def at(cls, center: np.ndarray, exact: bool) -> "Chart":
        center = center / np.linalg.norm(center, axis=-1, keepdims=True)
        basis = tangent_bases(center)
        frames = np.concatenate([center[:, :, None], basis], axis=2)
        if exact:
            inverse = np.stack([_arb_inverse(frame) for frame in frames])
        else:
            inverse = np.linalg.inv(frames)
        return cls(center, basis, inverse)

    @property
    def dimension(self) -> int:
        return self.basis.shape[0] * self.basis.shape[2]

    def _lift(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tokens, dim, free = self.basis.shape
        u = np.asarray(u).reshape(tokens, free)
        raw = self.center + np.einsum("idk,ik->id", self.basis, u)
        scale = np.sqrt(np.sum(raw * raw, axis=-1))
        return u, raw, scale

    def point(self, u: np.ndarray) -> np.ndarray:
        """y(u), shape=[l, d]."""
        _, raw, scale = self._lift(u)
        return raw / scale[:, None]

    def velocity(self, u: np.ndarray, ydot: np.ndarray) -> np.ndarray:
        """du/dt for a velocity ``ydot : shape=[l, d]`` tangent at y(u); flat, shape=[l (d-1)]."""
        u, _, scale = self._lift(u)
        w = np.einsum("ide,ie->id", self.inverse, ydot)
        return (scale[:, None] * (w[:, 1:] - u * w[:, :1])).reshape(-1)


def _arb_inverse(matrix: np.ndarray) -> np.ndarray:
    inverse = arb_mat(matrix.tolist()).inv()
    return np.array([[inverse[i, j] for j in range(inverse.ncols())] for i in range(inverse.nrows())],
                    dtype=object)


@dataclass(frozen=True)
class Problem:
    """One instance: heads ``P, U : shape=[h, d, d]``, causal or full, optional skew ``generator : [d, d]``."""

    P: np.ndarray
    U: np.ndarray
    causal: bool
    generator: np.ndarray | None = None

    def field(self, chart: Chart, exact: bool):
        """F(x) and, with a generator, the rotation speed mu(x): the chart field, reduced to the slice."""
        P, U = (exact_balls(self.P), exact_balls(self.U)) if exact else (self.P, self.U)
        omega = None if self.generator is None else (exact_balls(self.generator) if exact else self.generator)
        slot = None if omega is None else _slice_coordinate(chart, self.generator)

        def F(x: np.ndarray):
            u = x if slot is None else np.insert(np.asarray(x, dtype=object), slot, 0 * x[0])
            y = chart.point(u)
            V = chart.velocity(u, eq6(y, P, U, self.causal))
            if slot is None:
                return V, None
            xi = chart.velocity(u, y @ omega.T)
            mu = V[slot] / xi[slot]
            return np.delete(V - mu * xi, slot), mu

        return F

    def unknowns(self, chart: Chart) -> int:
        return chart.dimension - (0 if self.generator is None else 1)


def _slice_coordinate(chart: Chart, generator: np.ndarray) -> int:
    """The chart coordinate along which the symmetry moves the centre fastest (the slice fixes it at 0)."""
    xi = chart.velocity(np.zeros(chart.dimension), chart.center @ np.asarray(generator).T)
    return int(np.argmax(np.abs(xi)))


def commutes(problem: Problem) -> bool:
    """Whether ``problem.generator`` is a nonzero skew matrix commuting exactly with every P_eta and U_eta (ball
    arithmetic on the stored floats: the symmetry must hold exactly, not to a tolerance)."""
    if problem.generator is None:
        return True
    omega = exact_balls(problem.generator)
    if not np.any(problem.generator) or not all(x == 0 for x in (omega + omega.T).ravel()):
        return False
    return all(x == 0 for M in (*problem.P, *problem.U)
               for x in (exact_balls(M) @ omega - omega @ exact_balls(M)).ravel())


def refine(problem: Problem, y: np.ndarray, rounds: int = 4, steps: int = 20) -> np.ndarray:
    """Float64 Newton's method on the (reduced) chart field, re-centring the chart each round; shape=[l, d]."""
    y = np.asarray(y, dtype=float)
    for _ in range(rounds):
        chart = Chart.at(y, exact=False)
        F = problem.field(chart, exact=False)
        x = np.zeros(problem.unknowns(chart))
        for _ in range(steps):
            values, jacobian = _jacobian(F, x, exact=False)
            if np.max(np.abs(values)) < NEWTON_TOL:
                break
            x = x - np.linalg.lstsq(jacobian.astype(float), values.astype(float), rcond=None)[0]
        u = x if problem.generator is None else np.insert(x, _slice_coordinate(chart, problem.generator), 0.0)
        y = chart.point(u)
    return y


def up(x) -> float:
    """The least float64 at or above the real ``x`` (an exact arb, such as a ball's ``upper()``): float() rounds to
    nearest, which may fall below an upper bound."""
    value = float(x)
    return value if arb(value) >= x else math.nextafter(value, math.inf)


def down(x) -> float:
    """The greatest float64 at or below the real ``x`` (an exact arb, such as a ball's ``lower()``)."""
    value = float(x)
    return value if arb(value) <= x else math.nextafter(value, -math.inf)


def _jacobian(F, x: np.ndarray, exact: bool) -> tuple[np.ndarray, np.ndarray]:
    zero, one = (arb(0), arb(1)) if exact else (0.0, 1.0)
    values, _ = F(independent_jets(list(x), zero, one))
    return values_and_jacobian(values)


def krawczyk(F, m: int, radius: float) -> dict:
    """The Krawczyk test on X = [-radius, radius]^m: ``{"unique": bool, "K": abs upper bounds, "J": J(X)}``."""
    X = np.array([arb(0, radius)] * m, dtype=object)
    centre, _ = F(np.array([arb(0)] * m, dtype=object))
    _, J = _jacobian(F, X, exact=True)
    try:
        C = np.linalg.inv(np.array([[float(entry.mid()) for entry in row] for row in J]))
    except np.linalg.LinAlgError:  # a singular midpoint Jacobian: the equilibrium is not isolated in X
        return {"unique": False}
    K = -exact_balls(C) @ centre + (np.eye(m) - exact_balls(C) @ J) @ X
    bounds = [up(abs(k).upper()) for k in K]
    return {"unique": max(bounds) < radius, "K": bounds, "J": J, "residual": max(up(abs(c).upper()) for c in centre)}


def enclose_zero(F, m: int, radius: float) -> dict | None:
    """The tightest box [-r, r]^m (r in ``TIGHT_RADII``, r < ``radius``) that Krawczyk proves holds a zero of F:
    ``{"radius": r, "K": |u*_i| upper bounds}``, or None. With uniqueness in the box of ``radius`` this is the same
    zero u*; the ball of attraction is centred at u*, so a distance from the chart centre must add |u*| <=
    sqrt(m) r (the box's far corner)."""
    for tight in TIGHT_RADII:
        if not tight < radius:
            return None
        test = krawczyk(F, m, tight)
        if test["unique"]:
            return {"radius": tight, "K": test["K"]}
    return None


def spectrum(J: np.ndarray) -> list:
    """Balls holding the eigenvalues of every matrix in the ball matrix ``J``; [] when Arb cannot isolate them."""
    matrix = acb_mat(arb_mat(J.tolist()))
    for multiple in (False, True):
        try:
            return list(matrix.eig(multiple=multiple))
        except ValueError:
            continue
    return []


@dataclass(frozen=True)
class Attraction:
    """A Lyapunov certificate over the box: every matrix in J(X) has spectrum in Re <= ``real_part_bound`` < 0,
    and the Euclidean ball of radius ``basin_radius`` around the zero is attracted to it."""

    real_part_bound: float
    basin_radius: float


def attraction(J: np.ndarray, K: list[float], radius: float) -> Attraction | None:
    """The Lyapunov certificate of the zero in X = [-radius, radius]^m (|u*_i| <= ``K[i]``), or None.

    Q solves A^T Q + Q A = -I at the midpoint A of J (float64), so for every J in the ball matrix
    S = -(J^T Q + Q J) = I + E with |E|_F <= e: x^T S x >= (1 - e) |x|^2. With Q positive definite (Sylvester's
    criterion, leading minors in ball arithmetic) and e < 1: each eigenvalue of each J has
    Re(lambda) <= -(1 - e) / (2 lambda_max(Q)), and V = (u - u*)^T Q (u - u*) decreases strictly on X \\ {u*}
    (mean-value form: F(u) = J~ (u - u*), J~ in the convex ball matrix), so {V <= rho} inside X is attracted."""
    A = np.array([[float(entry.mid()) for entry in row] for row in J])
    Q = solve_continuous_lyapunov(A.T, -np.eye(len(A)))
    Q = 0.5 * (Q + Q.T)
    Qb = exact_balls(Q)
    E = -(J.T @ Qb + Qb @ J) - np.eye(len(A))
    e = _norm_bound(E.ravel())  # |E|_F, in balls, to its upper end
    exact_Q = arb_mat(Q.tolist())
    minors = (arb_mat([row[:k] for row in Q.tolist()[:k]]).det() for k in range(1, len(Q) + 1))
    if not e < 1 or not all(minor > 0 for minor in minors):
        return None
    trace = sum(arb(q) for q in np.diag(Q))  # >= lambda_max(Q), Q positive definite
    Q_inverse = exact_Q.inv()
    # each candidate's lower end (an exact number): the min of overlapping balls is not decided by comparing them
    rho = min(((arb(radius) - arb(k)) ** 2 / Q_inverse[i, i]).lower() for i, k in enumerate(K))
    real_part = -(1 - e) / (2 * trace)
    return Attraction(up(real_part.upper()), down((rho / trace).sqrt().lower()))


def ball_text(ball) -> str:
    """A complex ball as (re +- radius) + (im +- radius)i."""
    return (f"({float(ball.real.mid()):.6g} +- {float(ball.real.rad()):.2g}) + "
            f"({float(ball.imag.mid()):.6g} +- {float(ball.imag.rad()):.2g})i")


def certify(problem: Problem, y: np.ndarray, precision: int = PRECISION) -> ValidatedCertificate:
    """Certify an attracting equilibrium (or, with a generator, a rigidly rotating configuration) near ``y``, in
    balls of ``precision`` bits."""
    old = ctx.prec
    ctx.prec = precision
    try:
        if not commutes(problem):
            raise ValueError("generator must be a nonzero skew matrix commuting with every P_eta and U_eta")
        return _certify(problem, refine(problem, y))
    finally:
        ctx.prec = old


def _certify(problem: Problem, y_star: np.ndarray) -> ValidatedCertificate:
    chart = Chart.at(y_star, exact=True)
    F = problem.field(chart, exact=True)
    m = problem.unknowns(chart)
    float64 = ["Newton refinement of the chart centre (a starting point only)",
               "midpoint inverse C of the Krawczyk operator and Lyapunov matrix Q (any matrices keep the checks "
               "valid)"]
    common = dict(equilibrium=y_star, float64_parts=float64)
    last = "Krawczyk's operator did not map any box into its interior: no isolated equilibrium certified"
    for radius in RADII:
        test = krawczyk(F, m, radius)
        if not test["unique"]:
            continue
        eigenvalues = spectrum(test["J"])
        numbers = {"box_radius": radius, "krawczyk_max": max(test["K"]), "unknowns": m,
                   "residual_at_centre": test["residual"]}
        if problem.generator is not None:
            _, mu = F(np.array([arb(0)] * m, dtype=object))
            numbers["rotation_speed"] = f"{float(mu.mid()):.12g} +- {float(mu.rad()):.2g}"
            common["rotation_speed"] = float(mu.mid())
        shown = [ball_text(ball) for ball in eigenvalues]
        if any(float(ball.real.lower()) > 0 for ball in eigenvalues):
            return ValidatedCertificate(False, f"unstable: an eigenvalue has a certified positive real part "
                                               f"(box radius {radius:g}); a saddle, not an attractor",
                                        eigenvalues=shown, numbers=numbers, **common)
        tight = enclose_zero(F, m, radius)
        # The zero's own box: |u*_i| <= K_i there (tighter than the big box's image), and sqrt(m) r bounds |u*|.
        enclosure = (tight["K"], tight["radius"]) if tight else (test["K"], radius)
        numbers.update(zero_box_radius=enclosure[1],
                       zero_enclosure=up((arb(m).sqrt() * arb(enclosure[1])).upper()))
        certificate = attraction(test["J"], enclosure[0], radius)
        if certificate is None:
            last = (f"unique equilibrium in a box of radius {radius:g}, but no Lyapunov certificate of stability "
                    f"over the box")
            continue
        numbers.update(real_part_bound=certificate.real_part_bound, basin_radius=certificate.basin_radius)
        rotating = "" if problem.generator is None else " rotating rigidly (co-rotating frame, slice)"
        return ValidatedCertificate(True, f"unique equilibrium{rotating} in a box of radius {radius:g}; every "
                                          f"eigenvalue has real part <= {certificate.real_part_bound:.3g} < 0; "
                                          f"ball of attraction of radius {certificate.basin_radius:.3g}",
                                    eigenvalues=shown, numbers=numbers, **common)
    return ValidatedCertificate(False, last, **common)


def start_distance(problem: Problem, centre: np.ndarray, y: np.ndarray, precision: int = PRECISION) -> float:
    """An upper bound (balls) on |u(y)|, the chart coordinates at ``centre : shape=[l, d]`` of ``y : shape=[l, d]``
    (the coordinates of :meth:`Chart.point`: u_i = w_{i,1:} / w_{i,0}, w_i = M_i^{-1} y_i); inf when y leaves the
    chart (some w_{i,0} not certified positive).

    With a generator, the ball of attraction lives on the slice u_k = 0 of :func:`_slice_coordinate`; y is first
    moved along its orbit, y(theta) = y exp(theta Omega)^T (the dynamics is equivariant, so y and y(theta) have the
    same fate): a float64 root theta of u_k(y(theta)), then balls certify that u_k changes sign over
    [theta - delta, theta + delta] (so the slice point lies there) and bound |u| over that whole interval, the
    slice coordinate left out."""
    old = ctx.prec
    ctx.prec = precision
    try:
        chart = Chart.at(np.asarray(centre, float), exact=True)
        if problem.generator is None:
            return _coordinate_norm(chart, exact_balls(y))
        slot = _slice_coordinate(chart, problem.generator)
        theta = _slice_angle(problem.generator, np.asarray(centre, float), np.asarray(y, float), slot)
        if theta is None:
            return float("inf")
        delta = 1e-12 * (1.0 + abs(theta))  # 1e3 x brentq's float64 root error; adds ~1e-12 to |u|, << any basin
        ends = [_coordinates(chart, _rotated(y, problem.generator, arb(theta + side * delta)))
                for side in (-1.0, 1.0)]
        if ends[0] is None or ends[1] is None or not (ends[0][slot] * ends[1][slot] < 0):
            return float("inf")
        u = _coordinates(chart, _rotated(y, problem.generator, arb(theta, delta)))
        return float("inf") if u is None else _norm_upper(np.delete(u, slot))
    finally:
        ctx.prec = old


def starts_inside(certificate: ValidatedCertificate, problem: Problem, y: np.ndarray) -> tuple[bool, float]:
    """(inside, |u(y)| bound): whether ``y : shape=[l, d]`` lies in the certified ball of attraction for every
    possible position of its centre u* in u*'s tight box: |u(y)| + sqrt(m) r_tight <= basin radius (then
    |u(y) - u*| <= |u(y)| + |u*| <= basin radius). The chart is the certificate's (centre
    ``certificate.equilibrium``), on the slice for rotating states (:func:`start_distance`)."""
    numbers = certificate.numbers
    start = start_distance(problem, certificate.equilibrium, y)
    # the sum in balls: a float64 sum may round below it
    return bool(arb(start) + arb(numbers["zero_enclosure"]) <= arb(numbers["basin_radius"])), start


def _rotated(y: np.ndarray, generator: np.ndarray, theta) -> np.ndarray:
    """y exp(theta Omega)^T in balls (``theta`` an arb, possibly a whole interval)."""
    rotation = (arb_mat(np.asarray(generator, float).tolist()) * theta).exp()
    R = np.array([[rotation[i, j] for j in range(rotation.ncols())] for i in range(rotation.nrows())], dtype=object)
    return exact_balls(y) @ R.T


def _coordinates(chart: Chart, y: np.ndarray) -> np.ndarray | None:
    """u(y) flat, in balls; None when some w_{i,0} is not certified positive (y off the chart's half-space)."""
    w = np.einsum("ide,ie->id", chart.inverse, y)
    if not all(x > 0 for x in w[:, 0]):
        return None
    return (w[:, 1:] / w[:, :1]).reshape(-1)


def _norm_bound(u: np.ndarray):
    """An upper bound (an exact arb) on the Euclidean norm of every vector in the balls ``u`` (squares of the |x| upper
    bounds: a ball around 0 has no square root of its own lower end)."""
    return sum((abs(x).upper() ** 2 for x in u), arb(0)).sqrt().upper()


def _norm_upper(u: np.ndarray) -> float:
    """:func:`_norm_bound` as the least float64 at or above it."""
    return up(_norm_bound(u))


def _coordinate_norm(chart: Chart, y: np.ndarray) -> float:
    u = _coordinates(chart, y)
    return float("inf") if u is None else _norm_upper(u)


def _slice_angle(generator: np.ndarray, centre: np.ndarray, y: np.ndarray, slot: int) -> float | None:
    """Float64: the theta in [-pi, pi] of smallest |u(y(theta))| among the roots of u_k(y(theta)) (a grid of 2001
    angles, then brentq); None when the orbit never crosses the slice inside the chart."""
    from scipy.linalg import expm
    from scipy.optimize import brentq

    chart = Chart.at(centre, exact=False)

    def u(theta: float) -> np.ndarray:
        w = np.einsum("ide,ie->id", chart.inverse, y @ expm(theta * generator).T)
        return np.where(w[:, :1] > 0, w[:, 1:] / np.where(w[:, :1] > 0, w[:, :1], 1.0), np.inf).reshape(-1)

    grid = np.linspace(-np.pi, np.pi, 2001)
    values = [u(theta) for theta in grid]
    best, best_norm = None, np.inf
    for a, b, ua, ub in zip(grid[:-1], grid[1:], values[:-1], values[1:]):
        if not (np.all(np.isfinite(ua)) and np.all(np.isfinite(ub))) or ua[slot] * ub[slot] > 0:
            continue
        root = a if ua[slot] == 0 else brentq(lambda t: u(t)[slot], a, b, xtol=1e-15)
        norm = np.linalg.norm(u(root))
        if norm < best_norm:
            best, best_norm = float(root), norm
    return best
