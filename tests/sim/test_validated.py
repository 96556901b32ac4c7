"""The validated certifier (sim.conjectures.validated): eq. 6 for any number type, jets, Krawczyk, the Lyapunov
certificate, rotating configurations, and what it must reject (saddles, however slow; non-isolated equilibria)."""

import json
from pathlib import Path

import numpy as np
import pytest
from flint import arb

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
