"""model.projection and model.continuum: pi_W, its tangent map (eq. 3), and the continuous-time limit."""

import pytest

from foundation.registration import check
from theory import model
from theory.gram import Form


def euclidean_projection(ellipsoid, point, X):
    """I - y y^T (the sphere's projection) used on an ellipsoid with W != I."""
    return X - point * Form("I")(point, X)


def flipped_sign_projection(ellipsoid, point, X):
    return X + point * ellipsoid.metric(point, X)


@check(model.check_projection)
def test_projection_identities_hold_in_every_dimension(record):
    assert record(model.check_projection()).verdict == "verified"


@check(model.check_projection_jacobian_coordinates)
def test_jacobian_of_pi_w_equals_eq3_in_coordinates(record):
    assert record(model.check_projection_jacobian_coordinates()).verdict == "verified"


@check(model.spot_check_projection)
def test_projection_identities_hold_in_dimension_500(record):
    assert record(model.spot_check_projection()).verdict == "supported"


@check(model.check_projection, control=True)
@pytest.mark.parametrize("broken", [euclidean_projection, flipped_sign_projection], ids=["W-is-not-I", "flipped-sign"])
def test_projection_check_rejects_a_wrong_tangent_projection(broken):
    result = model.check_projection(tangent_projection=broken)
    assert result.verdict == "refuted"
    assert result.numbers["failing"] >= 1


@check("model.continuum", method="symbolic")
def test_discrete_step_is_first_order_approximation_of_the_flow(record):
    assert record(model.check_continuum()).verdict == "verified"


@check(model.numeric_continuum_order)
def test_step_minus_flow_scales_like_tau_squared(record):
    result = record(model.numeric_continuum_order())
    assert result.verdict == "supported"
    assert result.numbers["slope"] == pytest.approx(2.0, abs=0.1)


@check("model.continuum", method="symbolic", control=True)
def test_continuum_check_rejects_a_flipped_projection():
    assert model.check_continuum(tangent_projection=flipped_sign_projection).verdict == "refuted"


@check(model.numeric_continuum_order, control=True)
def test_order_check_rejects_the_unprojected_flow():
    result = model.numeric_continuum_order(project_flow=False)
    assert result.verdict == "unsupported"  # a fitted slope goes against O(tau^2), a statement about tau -> 0
    assert result.numbers["slope"] == pytest.approx(1.0, abs=0.2)


@check(model.check_projection_jacobian_coordinates, control=True)
def test_jacobian_check_rejects_a_wrong_power_of_the_norm():
    assert model.check_projection_jacobian_coordinates(dimensions=(2,), radial_power=1).verdict == "refuted"


@check(model.spot_check_projection, control=True)
def test_spot_check_rejects_the_projection_without_w():
    assert model.spot_check_projection(use_W=False).verdict == "refuted"
