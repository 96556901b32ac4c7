"""grad.projection, grad.field, grad.convergence: the gradient structure of section 3 (long version)."""

import sympy as sp
import pytest

from foundation.registration import check
from theory import gradient
from theory.ellipsoid import random_spd
from theory.gram import Form


def euclidean_projection(ellipsoid, point, X):
    """I - y y^T (the sphere's projection) used on an ellipsoid with W != I."""
    return X - point * Form("I")(point, X)


@check(gradient.check_orthogonal_projection)
def test_tangent_map_is_the_g_orthogonal_projection(record):
    assert record(gradient.check_orthogonal_projection()).verdict == "verified"


@check(gradient.check_orthogonal_projection, control=True)
def test_projection_check_rejects_the_euclidean_projection_on_an_ellipsoid():
    assert gradient.check_orthogonal_projection(tangent_projection=euclidean_projection).verdict == "refuted"


@check(gradient.check_gradient_field)
def test_field_is_the_gradient_of_the_potential_under_hypothesis_3_1(record):
    assert record(gradient.check_gradient_field()).verdict == "verified"


@check(gradient.check_gradient_general_condition)
def test_field_is_a_gradient_whenever_p_is_symmetric_and_w_u_equals_p(record):
    assert record(gradient.check_gradient_general_condition()).verdict == "verified"


@check(gradient.numeric_gradient)
def test_gradient_identity_holds_in_dimension_500(record):
    assert record(gradient.numeric_gradient()).verdict == "supported"


@check("grad.field", method="numeric")
@check("grad.convergence", method="numeric")
def test_dropping_w_equals_p_or_symmetry_breaks_the_gradient_structure(record):
    field_record, convergence_record = gradient.counterexamples()
    assert record(field_record).verdict == "supported"
    assert record(convergence_record).verdict == "supported"
    rows = {row[0]: row for row in field_record.tables[0].rows}
    assert rows["W != P (both SPD), U = I"][2] < -gradient.RATE_TOL  # Phi decreases somewhere: no Lyapunov function


@check("grad.convergence", method="numeric", control=True)
def test_without_a_decreasing_instance_the_necessity_finding_fails_and_refutes_nothing():
    """One trial (seed 0) draws an instance where Phi grows (rate 2.5 > 0): the suite's finding does not reproduce,
    a regression of the suite (``failed``), never a refutation of grad.convergence, which assumes W = P."""
    _, convergence_record = gradient.counterexamples(seed=0, trials=1)
    assert convergence_record.verdict == "failed"
    assert convergence_record.numbers["min normalised dPhi/dt, W != P (both SPD), U = I"] > 0


def _hypothesis_kept(rng, d):
    W = random_spd(rng, d, 2.0)
    return W, W


@check("grad.field", method="numeric", control=True)
@check("grad.convergence", method="numeric", control=True)
def test_a_model_keeping_w_equals_p_fails_both_necessity_findings():
    """The negative control: 'dropping' no hypothesis, the identity holds and Phi never decreases, so neither of the
    suite's findings reproduces: both records fail (a regression), neither refutes."""
    field_record, convergence_record = gradient.counterexamples(trials=20, models={"W = P kept": _hypothesis_kept})
    assert (field_record.verdict, convergence_record.verdict) == ("failed", "failed")
    assert field_record.numbers["W = P kept: max relative gap"] < 1e-6  # central-difference noise: the identity holds
    assert convergence_record.numbers["min normalised dPhi/dt, W = P kept"] > 0


@check(gradient.check_gradient_field, control=True)
@pytest.mark.parametrize("change", ["W != P", "P not symmetric", "potential without 1/2"])
def test_gradient_check_rejects_a_wrong_model(change):
    if change == "W != P":
        result = gradient.check_gradient_field(W=Form("W"), P=Form("P"))
    elif change == "P not symmetric":
        result = gradient.check_gradient_field(W=Form("W"), P=Form("W", symmetric=False))
    else:
        result = gradient.check_gradient_field(half=sp.Integer(1))
    assert result.verdict == "refuted"


@check(gradient.check_potential_monotone)
def test_potential_derivative_is_the_squared_gradient_norm(record):
    assert record(gradient.check_potential_monotone()).verdict == "verified"


@check(gradient.check_potential_monotone, control=True)
def test_monotonicity_check_rejects_w_different_from_p():
    assert gradient.check_potential_monotone(W=Form("W"), P=Form("P")).verdict == "refuted"


@check(gradient.numeric_convergence)
def test_potential_grows_and_the_solution_settles(record):
    assert record(gradient.numeric_convergence()).verdict == "supported"


@check(gradient.numeric_gradient, control=True)
def test_numeric_gradient_check_rejects_w_different_from_p():
    import numpy as np
    from theory.ellipsoid import random_spd
    rng = np.random.default_rng(7)
    W, P = random_spd(rng, 50, 0.4), random_spd(rng, 50, 0.4)
    assert gradient.numeric_gradient(d=50, W=W, P=P, U=np.eye(50)).verdict == "refuted"


def test_numeric_convergence_verdict_keeps_at_a_doubled_horizon_and_a_short_run_is_only_unsupported():
    """|F| -> 0 is a limit: at t = 2 the flow is still moving (|F| = 0.38) while Phi never decreased: unsupported,
    never refuted; at the shipped 60 and at 120 verified."""
    short = gradient.numeric_convergence(horizon=2.0)
    assert short.verdict == "unsupported" and short.numbers["largest decrease of Phi between samples"] == 0.0
    assert gradient.numeric_convergence().verdict == gradient.numeric_convergence(horizon=120.0).verdict == "supported"
