"""The validated certifier (sim.conjectures.validated): eq. 6 for any number type, jets, Krawczyk, the Lyapunov
certificate, rotating configurations, and what it must reject (saddles, however slow; non-isolated equilibria)."""

import json
from pathlib import Path

import numpy as np
import pytest
from flint import arb
from scipy.linalg import expm

from sim.conjectures.certify import attention_field, integrate
from sim.field.eq6 import eq6
from sim.conjectures.jets import independent_jets, values_and_jacobian
from sim.conjectures.validated import Chart, Problem, certify, krawczyk, refine

ROTATION = np.array([[0.0, -1.0], [1.0, 0.0]])
#: The rotating triangle: P = -2 I + J/2 (non-symmetric, commutes with rotations), U = I, full attention.
TRIANGLE_P = (-2.0 * np.eye(2) + 0.5 * ROTATION)[None]
IDENTITY = np.eye(2)[None]
ANGLES = 2 * np.pi * np.arange(3) / 3
TRIANGLE = np.stack([np.cos(ANGLES), np.sin(ANGLES)], axis=1)
#: The two float64 "trajectory" witnesses of conj.nonsymmetric-full that an outside replay showed to be slow saddles,
#: kept as the certifier's negative examples.
REJECTED = Path(__file__).parent / "data" / "rejected-witnesses"


def saddle_scale(eigenvalue: float) -> float:
    """c with P = c I, two antipodal tokens on S^1: the relative mode grows at sqrt(2) e^{-2c} / (1 + e^{-2c})."""
    return -0.5 * np.log(eigenvalue / (np.sqrt(2) - eigenvalue))


@pytest.mark.parametrize("causal", [False, True])
def test_eq6_equals_the_project_field(causal):
    rng = np.random.default_rng(0)
    P, U = rng.standard_normal((2, 3, 4, 4))
    y = rng.standard_normal((5, 4))
    y /= np.linalg.norm(y, axis=-1, keepdims=True)
    np.testing.assert_allclose(eq6(y, P, U, causal), attention_field(P, U, causal)(0.0, y), atol=1e-14)


def test_eq6_in_balls_encloses_the_float_value():
    rng = np.random.default_rng(1)
    P, U = rng.standard_normal((2, 2, 3, 3))
    y = rng.standard_normal((4, 3))
    y /= np.linalg.norm(y, axis=-1, keepdims=True)
    exact = eq6(np.vectorize(arb, otypes=[object])(y), np.vectorize(arb, otypes=[object])(P),
                np.vectorize(arb, otypes=[object])(U), True)
    value = eq6(y, P, U, True)
    assert all(ball.contains(arb(float(x), 1e-14)) or ball.overlaps(arb(float(x), 1e-14))
               for ball, x in zip(exact.ravel(), value.ravel()))


def test_jet_jacobian_matches_central_differences():
    rng = np.random.default_rng(2)
    P, U = rng.standard_normal((2, 1, 3, 3))
    y = rng.standard_normal((3, 3))
    chart = Chart.at(y, exact=False)
    F = Problem(P, U, causal=False).field(chart, exact=False)
    x = 0.01 * rng.standard_normal(chart.dimension)
    _, jacobian = values_and_jacobian(F(independent_jets(list(x), 0.0, 1.0))[0])
    step = 1e-6  # central differences: truncation ~1e-12, rounding ~1e-10
    columns = [(F(x + step * e)[0] - F(x - step * e)[0]) / (2 * step) for e in np.eye(len(x))]
    np.testing.assert_allclose(jacobian.astype(float), np.stack(columns, axis=1), atol=1e-8)


def test_krawczyk_proves_a_zero_and_refuses_a_box_without_one():
    problem = Problem(TRIANGLE_P, IDENTITY, causal=False, generator=ROTATION)
    centre = refine(problem, TRIANGLE)
    F = problem.field(Chart.at(centre, exact=True), exact=True)
    assert krawczyk(F, 2, 1e-6)["unique"]
    shifted = problem.field(Chart.at(centre + np.array([[0.0, 0.05]] + [[0.0, 0.0]] * 2), exact=True), exact=True)
    assert not krawczyk(shifted, 2, 1e-6)["unique"]  # the zero lies 0.05 away, outside the box


def test_a_rotating_triangle_is_certified_in_the_co_rotating_frame():
    certificate = certify(Problem(TRIANGLE_P, IDENTITY, causal=False, generator=ROTATION), TRIANGLE + 0.01)
    assert certificate.certified, certificate.summary()
    assert certificate.numbers["real_part_bound"] < 0 and certificate.numbers["basin_radius"] > 0
    speed = certificate.rotation_speed
    # the float64 flow moves the triangle rigidly at that speed: compare with the field's angular velocity
    y = certificate.equilibrium
    velocity = attention_field(TRIANGLE_P, IDENTITY, False)(0.0, y)
    np.testing.assert_allclose(velocity, speed * y @ ROTATION.T, atol=1e-12)
    # the certificate's numbers give the speed as its ball: midpoint +- radius
    middle, radius = certificate.numbers["rotation_speed"].split(" +- ")
    assert float(middle) == pytest.approx(speed, rel=1e-11) and 0 <= float(radius) < 1e-9


def test_the_same_triangle_without_its_symmetry_is_not_isolated():
    """Negative control: the rotation leaves a zero eigenvalue; it is never accepted."""
    certificate = certify(Problem(TRIANGLE_P, IDENTITY, causal=False), TRIANGLE)
    assert not certificate.certified and "isolated" in certificate.reason


@pytest.mark.parametrize("eigenvalue", [1e-9, 1e-3])
def test_a_slow_saddle_is_rejected(eigenvalue):
    P = (saddle_scale(eigenvalue) * np.eye(2))[None]
    antipodal = np.array([[1.0, 0.0], [-1.0, 0.0]])
    certificate = certify(Problem(P, IDENTITY, causal=False, generator=ROTATION), antipodal)
    assert not certificate.certified
    assert "certified positive real part" in certificate.reason, certificate.summary()


def test_a_stable_equilibrium_is_certified_where_its_saddle_twin_is_not():
    """Consensus of the pair (P = -I, U = I) attracts (Theorem 4.1); certified modulo the rotation."""
    consensus = np.array([[1.0, 0.0], [1.0, 0.0]])
    certificate = certify(Problem((-np.eye(2))[None], IDENTITY, causal=False, generator=ROTATION), consensus)
    assert certificate.certified, certificate.summary()


def test_a_generator_that_does_not_commute_is_refused():
    with pytest.raises(ValueError, match="commuting"):
        certify(Problem(np.diag([1.0, 2.0])[None], IDENTITY, causal=False, generator=ROTATION), TRIANGLE)


@pytest.mark.parametrize("path", sorted(REJECTED.glob("nonsymmetric-full-*.json")),
                         ids=lambda p: p.stem)
def test_the_old_finite_time_witnesses_are_rejected(path):
    """The two stored float64 'trajectory' witnesses of conj.nonsymmetric-full end near two coincident pairs of
    antipodal tokens: a slow saddle inside a continuum of equilibria, never a certified attractor."""
    witness = json.loads(path.read_text())
    P, U, y0 = (np.asarray(witness[key], float) for key in ("P", "U", "y0"))
    end = integrate(attention_field(P, U, witness["causal"]), y0, witness["t1"])[-1]
    assert not certify(Problem(P, U, witness["causal"]), end).certified


# --- boundary cases of the certifier's inequalities (issue 42 item 2), each with its control -------------------------
def _shifted_line(shift: float):
    """F(x) = x - shift on X = [-r, r]^1 (one unknown; ``F`` in the certifier's form: values and no rotation speed).
    Krawczyk's image is exactly {shift}: C = 1, I - C J = 0."""
    return lambda x: (np.array([x[0] - arb(shift)], dtype=object), None)


def test_a_krawczyk_image_touching_the_boundary_is_not_unique():
    """F(x) = x - r on [-r, r]: K(X) = {r} touches the box's boundary, so the interior test fails (the zero r lies on
    the boundary; a box that admits it proves nothing about a neighbourhood). Kills the mutant "<= instead of <" in
    krawczyk's containment test. Control: F(x) = x - r/2 maps into the interior and is unique."""
    r = 1e-3
    touching = krawczyk(_shifted_line(r), 1, r)
    assert touching["K"] == [r] and not touching["unique"]
    assert krawczyk(_shifted_line(r / 2), 1, r)["unique"]


@pytest.mark.parametrize("J, singular_or_unstable", [
    pytest.param([[arb(-1.0, 1.0)]], "0 in the ball (singular)", id="1x1 ball [-2, 0]: contains 0"),
    pytest.param([[arb(-1.0), arb(0)], [arb(0), arb(-0.4, 0.5)]], "+0.1 in the ball (unstable)",
                 id="2x2 ball: contains diag(-1, 0.1)"),
])
def test_a_jacobian_ball_containing_a_singular_or_unstable_matrix_gets_no_certificate(J, singular_or_unstable):
    """The Lyapunov certificate must hold for every matrix of J(X) (here J(X) contains a matrix with eigenvalue
    0 or +0.1): attraction() returns None. For the 1x1 ball [-1 +- 1], |E| = 1 exactly, so this kills the mutants
    "e <= 1 instead of e < 1" and "E taken at the midpoint A instead of over the ball J" (then e = 0)."""
    from sim.conjectures.validated import attraction

    J = np.array(J, dtype=object)
    assert attraction(J, [0.0] * len(J), 1e-3) is None, singular_or_unstable


def test_a_jacobian_ball_of_stable_matrices_is_certified():
    """Control of the previous test: [-1 +- 0.99] holds only stable matrices; the bound on the real part is
    -(1 - e) / (2 lambda_max(Q)) = -(1 - 0.99) / (2 * 0.5) = -0.01 (rel 1e-6: Arb stores a radius to ~30 bits,
    rounded up)."""
    from sim.conjectures.validated import attraction

    certificate = attraction(np.array([[arb(-1.0, 0.99)]], dtype=object), [0.0], 1e-3)
    assert certificate is not None and certificate.real_part_bound == pytest.approx(-0.01, rel=1e-6)
    assert certificate.real_part_bound < 0 < certificate.basin_radius <= 1e-3


def test_an_equilibrium_off_the_chart_centre_has_its_basin_measured_from_it():
    """The value-full witness certified in a chart whose centre misses the equilibrium by 1e-5 (no Newton step):
    the tight box must grow to hold the zero (zero_enclosure >= 1e-5), the ball of attraction around it stays inside
    the certified box, and a start on the far side (|u| = basin - enclosure/2: inside a ball drawn around the chart
    centre, not around every point of the zero's box) is not declared inside. Kills the mutants "distance from the
    chart centre" (enclosure dropped) and "basin radius leaving the box" (K of the big box replaced by 0). Control:
    a start at |u| = basin - 2 enclosure is inside."""
    from sim.conjectures.replay import _problem
    from sim.conjectures.validated import PRECISION, _certify, starts_inside
    from flint import ctx

    path = next(Path(__file__).parents[2].glob("sim/conjectures/witnesses/conj.value-full/chunk00000-*.json"))
    witness = json.loads(path.read_text())
    problem = _problem(witness)
    y_star = np.asarray(witness["equilibrium"])
    offset = 1e-5
    centre = Chart.at(y_star, exact=False).point(np.array([offset, 0.0]))  # the zero sits at u* = (-1e-5, 0) here
    old, ctx.prec = ctx.prec, PRECISION
    try:
        certificate = _certify(problem, centre)
    finally:
        ctx.prec = old
    numbers = certificate.numbers
    assert certificate.certified, certificate.summary()
    assert offset <= numbers["zero_enclosure"] and numbers["zero_box_radius"] > TIGHTEST
    assert numbers["basin_radius"] + numbers["zero_enclosure"] <= numbers["box_radius"]
    chart = Chart.at(centre, exact=False)
    direction = np.array([1.0, 0.0])  # away from u*: the far side
    far = chart.point((numbers["basin_radius"] - numbers["zero_enclosure"] / 2) * direction)
    near = chart.point((numbers["basin_radius"] - 2 * numbers["zero_enclosure"]) * direction)
    assert not starts_inside(certificate, problem, far)[0]
    assert starts_inside(certificate, problem, near)[0]


#: The tight box's first radius (sim.conjectures.validated.TIGHT_RADII[0]).
TIGHTEST = 1e-12


# --- what the mutation run of validated.py (issue 42 item 1) found untested, each with its control ---------------------
def test_a_certificates_summary_shows_verdict_numbers_eigenvalues_and_float64_parts_line_by_line():
    """The printed certificate (``python -m sim replay``): the verdict and reason, one line per number, the
    eigenvalue balls joined by '; ', one line per float64 part. Control: a rejection without eigenvalues has no
    eigenvalue line."""
    from sim.conjectures.validated import ValidatedCertificate

    certified = ValidatedCertificate(True, "why", np.zeros((1, 2)), eigenvalues=["e1", "e2"],
                                     numbers={"a": 1, "b": 2.5}, float64_parts=["p1", "p2"])
    assert certified.summary().split("\n") == [
        "CERTIFIED: why", "  a: 1", "  b: 2.5", "  eigenvalue enclosures (balls): e1; e2",
        "  float64, not validated: p1", "  float64, not validated: p2"]
    rejected = ValidatedCertificate(False, "no", np.zeros((1, 2)), numbers={"a": 1})
    assert rejected.summary().split("\n") == ["REJECTED: no", "  a: 1"]


def test_a_chart_is_centred_on_the_unit_tokens_of_any_scaled_centre():
    """Chart.at normalises its centre: the chart at 3 c is the chart at c (its point y(0) and its velocities du/dt,
    which a frame [3 c | B] would scale by 9). Control: the unit centre itself."""
    ydot = TRIANGLE @ ROTATION.T  # tangent at the centre
    unit = Chart.at(TRIANGLE, exact=False)
    for scale in (3.0, 1.0):
        chart = Chart.at(scale * TRIANGLE, exact=False)
        np.testing.assert_allclose(chart.point(np.zeros(3)), TRIANGLE, atol=1e-15)
        np.testing.assert_allclose(chart.velocity(np.zeros(3), ydot), unit.velocity(np.zeros(3), ydot), atol=1e-15)


@pytest.mark.parametrize("generator, commuting", [(ROTATION, True), (np.eye(2), False), (np.zeros((2, 2)), False)],
                         ids=["rotation (control)", "identity: commutes but is not skew", "zero"])
def test_only_a_nonzero_skew_generator_counts_as_a_symmetry(generator, commuting):
    """The identity commutes with every P and U but generates no rotation; the zero matrix generates nothing."""
    from sim.conjectures.validated import commutes

    assert commutes(Problem(TRIANGLE_P, IDENTITY, causal=False, generator=generator)) is commuting


def _value_full_witness():
    from sim.conjectures.replay import _problem

    path = next(Path(__file__).parents[2].glob("sim/conjectures/witnesses/conj.value-full/chunk00000-*.json"))
    witness = json.loads(path.read_text())
    return _problem(witness), np.asarray(witness["equilibrium"])


def test_newton_converges_quadratically_from_a_start_1e_3_off():
    """Three float64 Newton steps in one chart carry a start 1e-3 from the value-full witness's equilibrium to
    within 1e-12 of it (1e-3 -> 1e-6 -> 1e-12 -> rounding): the Jacobian is the field's own (a Jacobian off by a
    factor 2 leaves 1e-3 / 8). Control: after two steps the start is still ~3e-14 off."""
    problem, y_star = _value_full_witness()
    start = Chart.at(y_star, exact=False).point(np.array([1e-3, 0.0]))
    assert np.max(np.abs(refine(problem, start, rounds=1, steps=3) - y_star)) < 1e-12
    assert np.max(np.abs(refine(problem, start, rounds=1, steps=2) - y_star)) > 1e-15


def test_krawczyk_reads_the_upper_end_of_its_image():
    """F(x) = x + x^2 / 10 - 0.9 on [-1, 1]: J(X) = 1 +- 0.2, so K(X) = 0.9 +- 0.2 = [0.7, 1.1] leaves the box (its
    upper end 1.1 > 1): not proved, although the lower end 0.7 lies inside. Control: on [-2, 2], J(X) = 1 +- 0.4 and
    K(X) = 0.9 +- 0.8 = [0.1, 1.7] lies inside: proved."""
    quadratic = lambda x: (np.array([x[0] + arb(0.1) * x[0] * x[0] - arb(0.9)], dtype=object), None)  # noqa: E731
    wide = krawczyk(quadratic, 1, 1.0)
    assert not wide["unique"] and wide["K"][0] == pytest.approx(1.1, rel=1e-8)
    assert krawczyk(quadratic, 1, 2.0)["unique"]


def test_the_residual_at_the_centre_bounds_the_field_from_above():
    """F(0) known only as a ball of radius 1e-4 around 0: the residual reported is its upper bound, 1e-4 (rel 1e-8:
    Arb's radius is rounded up). Control: a point value 2e-4 is reported as itself."""
    for value, residual in ((arb(0, 1e-4), 1e-4), (arb(2e-4), 2e-4)):
        F = lambda x, value=value: (np.array([x[0] - value], dtype=object), None)  # noqa: E731
        assert krawczyk(F, 1, 1e-3)["residual"] == pytest.approx(residual, rel=1e-8)


def test_a_double_eigenvalue_is_enclosed_and_a_simple_spectrum_too():
    """diag(-1, -1): Arb cannot isolate a double eigenvalue, so the spectrum is enclosed as a cluster (two balls at
    -1), not given up ([]). Control: diag(-1, -2) is isolated at once."""
    from sim.conjectures.validated import spectrum

    for diagonal in ((-1.0, -1.0), (-1.0, -2.0)):
        J = np.array([[arb(diagonal[0]), arb(0)], [arb(0), arb(diagonal[1])]], dtype=object)
        eigenvalues = spectrum(J)
        assert sorted(float(ball.real.mid()) for ball in eigenvalues) == sorted(diagonal)


@pytest.mark.parametrize("J", [[[arb(1.0)]], [[arb(-1.0, 1.5)]]], ids=["unstable point +1", "ball [-2.5, 0.5]"])
def test_an_unstable_jacobian_gets_no_certificate(J):
    """J = +1 exactly: Q = -1/2 solves the Lyapunov equation with E = 0, so only the leading minor (Q itself < 0)
    refuses it; J = -1 +- 1.5: |E| reaches 1.5 at the ball's upper end (0 at its lower one). Control: J = -1."""
    from sim.conjectures.validated import attraction

    assert attraction(np.array(J, dtype=object), [0.0], 1e-3) is None
    assert attraction(np.array([[arb(-1.0)]], dtype=object), [0.0], 1e-3) is not None


def test_the_ball_of_attraction_shrinks_by_the_zeros_offset_in_the_box():
    """J = -1 on [-r, r] (Q = 1/2): with u* known within |u*| <= r/2, the ball {V <= rho} inside the box has radius
    r - r/2 = r/2 (rho = (r - K)^2 / Q^{-1}_{11}, radius sqrt(rho / trace Q)). Control: u* = 0 gives r."""
    from sim.conjectures.validated import attraction

    J = np.array([[arb(-1.0)]], dtype=object)
    assert attraction(J, [5e-4], 1e-3).basin_radius == pytest.approx(5e-4, rel=1e-12)
    assert attraction(J, [0.0], 1e-3).basin_radius == pytest.approx(1e-3, rel=1e-12)


def test_a_saddle_rejection_shows_its_eigenvalues_and_box():
    """The rejection of a saddle is a certificate too: certified is False, its numbers (box radius, Krawczyk bound)
    and the eigenvalue balls, one with a positive real part, are reported."""
    P = (saddle_scale(1e-3) * np.eye(2))[None]
    certificate = certify(Problem(P, IDENTITY, causal=False, generator=ROTATION), np.array([[1.0, 0.0], [-1.0, 0.0]]))
    assert certificate.certified is False and certificate.numbers["box_radius"] == 1e-3
    assert certificate.numbers["krawczyk_max"] < 1e-3 and certificate.numbers["unknowns"] == 1
    assert len(certificate.eigenvalues) == 1 and certificate.eigenvalues[0].startswith("(0.001 +- ")


def test_no_isolated_equilibrium_is_a_rejection_with_its_reason():
    certificate = certify(Problem(TRIANGLE_P, IDENTITY, causal=False), TRIANGLE)
    assert certificate.certified is False and certificate.reason == (
        "Krawczyk's operator did not map any box into its interior: no isolated equilibrium certified")


def test_a_zero_3e_4_off_the_chart_centre_is_enclosed_by_the_certified_box_itself():
    """No tight box (at most 1e-4 < 3e-4) holds the zero, so its enclosure is the certified box's own Krawczyk
    image (zero box radius = box radius) and the ball of attraction shrinks accordingly. Control: the chart at the
    equilibrium has its zero in the tightest box."""
    from flint import ctx

    from sim.conjectures.validated import PRECISION, _certify

    problem, y_star = _value_full_witness()
    old, ctx.prec = ctx.prec, PRECISION
    try:
        off = _certify(problem, Chart.at(y_star, exact=False).point(np.array([3e-4, 0.0])))
        on = _certify(problem, y_star)
    finally:
        ctx.prec = old
    assert off.certified and off.numbers["zero_box_radius"] == off.numbers["box_radius"] == 1e-3
    assert off.numbers["basin_radius"] < 1e-3 - 3e-4
    assert on.certified and on.numbers["zero_box_radius"] == 1e-12


def test_start_distances_invert_the_chart_and_refuse_points_off_it():
    """|u(y(u))| = |u| for a point of the chart; a token orthogonal to its centre token (w_0 = 0) or the antipodal
    configuration lies off the chart: inf, with or without the rotation."""
    from sim.conjectures.validated import start_distance

    rotating = Problem(TRIANGLE_P, IDENTITY, causal=False, generator=ROTATION)
    y_star = refine(rotating, TRIANGLE)
    fixed = Problem(TRIANGLE_P, IDENTITY, causal=False)
    u = np.array([0.3, -0.2, 0.1])
    assert start_distance(fixed, y_star, Chart.at(y_star, exact=False).point(u)) == pytest.approx(
        np.linalg.norm(u), rel=1e-12)
    orthogonal = y_star.copy()
    orthogonal[0] = y_star[0] @ ROTATION.T
    assert start_distance(fixed, y_star, orthogonal) == float("inf")
    assert start_distance(rotating, y_star, -y_star) == float("inf")
    assert start_distance(fixed, y_star, -y_star) == float("inf")


@pytest.mark.parametrize("angle", [0.3, 2.5, -3.0])
def test_a_start_on_the_orbit_is_bounded_over_the_whole_interval_of_angles(angle):
    """The rotating triangle turned by any angle (near +-pi too) is on the attractor's orbit; its slice distance is
    bounded over [theta - delta, theta + delta], delta = 1e-12 (1 + |theta|): the bound is not 0 (the interval
    turns the tokens by ~1e-12) and below 1e-10."""
    from sim.conjectures.validated import start_distance

    problem = Problem(TRIANGLE_P, IDENTITY, causal=False, generator=ROTATION)
    y_star = refine(problem, TRIANGLE)
    c, s = np.cos(angle), np.sin(angle)
    assert 1e-13 < start_distance(problem, y_star, y_star @ np.array([[c, -s], [s, c]]).T) < 1e-10


def test_the_norm_bound_holds_for_every_vector_in_the_balls():
    """Balls around 0 of radius 1: the largest vector has norm sqrt(2); the ball 1 +- 0.5 reaches 1.5 (its lower
    end 0.5 is no bound). Control: exact entries (3, 4) give 5."""
    from sim.conjectures.validated import _norm_upper

    assert _norm_upper(np.array([arb(1, 0.5)], dtype=object)) == pytest.approx(1.5, rel=1e-8)
    assert _norm_upper(np.array([arb(0, 1), arb(0, 1)], dtype=object)) == pytest.approx(np.sqrt(2), rel=1e-8)
    assert _norm_upper(np.array([arb(3), arb(4)], dtype=object)) == 5.0


# --- the second mutation run of validated.py: an isolated centre, and orbits that cross the slice twice --------------
def _focus(real_part: float) -> Problem:
    """One token on S^2 under U = [[a, -1, 0], [1, a, 0], [0, 0, 0]] (P plays no part for one token): e_3 is an
    isolated equilibrium whose linearisation turns the tangent plane at rate 1 and scales it at rate a - 0 = a."""
    U = np.array([[real_part, -1.0, 0.0], [1.0, real_part, 0.0], [0.0, 0.0, 0.0]])
    return Problem(np.zeros((1, 3, 3)), U[None], causal=False)


# the centre's Lyapunov equation A^T Q + Q A = -I is singular (eigenvalues +-i sum to 0); SciPy warns and perturbs it
@pytest.mark.filterwarnings("ignore:Input \"a\" has an eigenvalue pair")
def test_a_centre_is_isolated_but_neither_certified_stable_nor_unstable():
    """a = 0: eigenvalues +-i, real part 0. Krawczyk isolates the zero in every box, the eigenvalue balls straddle 0
    (real part 0 +- the box's spread: no certified positive real part, so it is no saddle), and no Lyapunov
    certificate exists: the rejection names the smallest isolated box. Kills the mutants "a ball's upper end above 0
    counts as unstable" and "that reason dropped". Controls: a = -1 is certified, a = +1 is a certified saddle."""
    e3 = np.array([[0.0, 0.0, 1.0]])
    centre = certify(_focus(0.0), e3)
    assert centre.certified is False and centre.reason == (
        "unique equilibrium in a box of radius 1e-10, but no Lyapunov certificate of stability over the box")
    assert certify(_focus(-1.0), e3).certified
    unstable = certify(_focus(1.0), e3)
    assert not unstable.certified and "certified positive real part" in unstable.reason


def _token(polar: float, azimuth: float, dimension: int = 3) -> np.ndarray:
    """The unit vector at angle ``polar`` from e_3 and ``azimuth`` around it, padded with zeros to ``dimension``."""
    token = [np.sin(polar) * np.cos(azimuth), np.sin(polar) * np.sin(azimuth), np.cos(polar)]
    return np.array(token + [0.0] * (dimension - 3))


def _two_tokens_around_e3(tilts, polars, azimuths, dimension: int = 3):
    """A rotation about e_3 (generator in the (e_1, e_2) plane of R^dimension), the chart centre's tokens tilted by
    ``tilts`` from e_3 towards e_1, and a start whose tokens sit at ``polars`` from e_3 and ``azimuths`` around it.
    Token 0 tilts furthest, so the slice is u_0 = 0: its token in the (e_1, e_3) half-planes, crossed twice per turn
    (azimuth 0 and pi, at angles |tilt - polar| and tilt + polar from its centre token)."""
    generator = np.zeros((dimension, dimension))
    generator[0, 1], generator[1, 0] = -1.0, 1.0
    centre = np.stack([_token(tilt, 0.0, dimension) for tilt in tilts])
    start = np.stack([_token(p, a, dimension) for p, a in zip(polars, azimuths)])
    heads = np.zeros((1, dimension, dimension))
    return Problem(heads, heads, causal=False, generator=generator), centre, start


@pytest.mark.parametrize("dimension", [3, 4])
@pytest.mark.parametrize("crossing", [np.pi / 2, 1.0, 0.0, np.pi - 1e-3],
                         ids=["pi/2", "1", "0 (on a grid angle, the start on the slice)", "pi - 1e-3 (last grid step)"])
def test_of_two_crossings_of_the_slice_the_nearer_one_is_measured(crossing, dimension):
    """The orbit crosses the slice inside the chart twice, pi apart: at ``crossing`` both tokens lie 0.75 from their
    centre tokens (|u| = sqrt(2) tan 0.75 = 1.317), at ``crossing - pi`` one lies 1.2 away and the other on its
    centre token (|u| = tan 1.2 = 2.572). The distance is the nearer crossing's, to the rounding of its angle:
    whichever grid step it falls in (the last one, ending at pi, included; on a grid angle, found there), and
    ranked by |u| itself (by |w_{1:}| = sin of the angles, or sin * cos, the far crossing would look nearer). In R^4
    (a dimension the rotation leaves alone) the same. Control: the far crossing lies inside the chart too (the
    start turned there is 2.572 from the centre), so a search that ranked the crossings wrongly would return it."""
    from sim.conjectures.validated import start_distance

    problem, centre, start = _two_tokens_around_e3((0.975, 0.375), (0.225, 0.375), (-crossing, np.pi - crossing),
                                                    dimension)
    assert start_distance(problem, centre, start) == pytest.approx(np.sqrt(2) * np.tan(0.75), rel=1e-10)
    far = start @ expm((crossing - np.pi) * problem.generator).T
    fixed = Problem(problem.P, problem.U, causal=False)  # no slice: |u| of the start itself, slice coordinate ~0
    assert start_distance(fixed, centre, far) == pytest.approx(np.tan(1.2), rel=1e-10)


#: The tilt and polar angle of a second token whose chart holds it only for |azimuth| < arccos(cot 2 / -cot 0.5)
#: (~0.58): it leaves the chart where cos(angle to its centre token) = cos 0.5 cos 2 + sin 0.5 sin 2 cos(azimuth) = 0.
EXIT_TILT, EXIT_POLAR = 0.5, 2.0
EXIT_AZIMUTH = np.arccos(-1.0 / (np.tan(EXIT_TILT) * np.tan(EXIT_POLAR)))


@pytest.mark.parametrize("crossing, exit, inside", [
    (-0.03, 0.03, True),    # 0.06 before the exit: ~19 grid steps of 2 pi / 2000
    (0.001, 0.002, False),  # both in the grid step [0, 2 pi / 2000]
], ids=["crossing 0.06 before the exit", "crossing and exit in one grid step"])
def test_a_crossing_next_to_a_tokens_exit_from_the_chart(crossing, exit, inside):
    """The orbit's only crossing of the slice inside the chart lies just before the second token leaves the chart.
    Grid steps of 2 pi / 2000 resolve it 0.06 before the exit: the distance is that crossing's (the first token 0.75
    from its centre token, the second at the angle of eq. cos g = cos 0.5 cos 2 + sin 0.5 sin 2 cos(azimuth) there);
    a grid of 50 angles would see the exit in the crossing's step and miss it. Within one grid step of the exit the
    search is conservative: a step whose end is off the chart is never bracketed (brentq needs finite values), so
    the crossing is not used and the start is not claimed inside any ball (inf)."""
    from sim.conjectures.validated import start_distance

    problem, centre, start = _two_tokens_around_e3((0.975, EXIT_TILT), (0.225, EXIT_POLAR),
                                                    (-crossing, EXIT_AZIMUTH - exit))
    second = np.arccos(np.cos(EXIT_TILT) * np.cos(EXIT_POLAR)
                       + np.sin(EXIT_TILT) * np.sin(EXIT_POLAR) * np.cos(EXIT_AZIMUTH - exit + crossing))
    expected = np.hypot(np.tan(0.75), np.tan(second)) if inside else float("inf")
    assert start_distance(problem, centre, start) == pytest.approx(expected, rel=1e-8)


def test_bounds_leave_the_balls_rounded_outward():
    """The referee's last-bit gap: float() of an Arb upper bound rounds to nearest, and the upper end of 2/3 (at 106
    bits) became 0.6666666666666666, below 2/3. ``up`` / ``down`` round outward; an exact float is kept (control)."""
    import math

    from flint import arb, ctx

    from sim.conjectures.validated import PRECISION, down, up

    old, ctx.prec = ctx.prec, PRECISION  # the certificates' precision, as certify sets it
    try:
        two_thirds = arb(2) / 3
        assert arb(float(two_thirds.upper())) < two_thirds.upper()  # the gap: to nearest falls below the bound
        assert arb(up(two_thirds.upper())) >= two_thirds.upper() and up(two_thirds.upper()) == math.nextafter(
            float(two_thirds.upper()), math.inf)
        assert arb(down(two_thirds.lower())) <= two_thirds.lower()
        assert up(arb(0.5)) == down(arb(0.5)) == 0.5
    finally:
        ctx.prec = old
