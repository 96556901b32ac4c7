"""full.bounds, full.invariance, full.equilibria, full.lyapunov (Lemma 4.1, Theorem 4.1)."""


from foundation.registration import check
from theory import full_attention
from theory.gram import Form, vector


def flipped_sign_projection(ellipsoid, point, X):
    return X + point * ellipsoid.metric(point, X)


def euclidean_projection(ellipsoid, point, X):
    return X - point * Form("I")(point, X)


@check(full_attention.check_attention_bounds)
def test_attention_weights_lie_between_the_corner_values(record):
    assert record(full_attention.check_attention_bounds()).verdict == "verified"


@check(full_attention.bounds_spot_check)
def test_score_and_weight_bounds_hold_in_dimension_500(record):
    assert record(full_attention.bounds_spot_check()).verdict == "supported"


@check(full_attention.bounds_spot_check, control=True)
def test_bounds_check_rejects_a_bound_without_lambda_min():
    assert full_attention.bounds_spot_check(use_lambda_min=False).verdict == "refuted"


@check(full_attention.check_invariance)
def test_field_points_into_the_hemisphere_at_its_boundary(record):
    assert record(full_attention.check_invariance()).verdict == "verified"


@check(full_attention.check_invariance, control=True)
def test_invariance_check_rejects_a_flipped_projection():
    assert full_attention.check_invariance(tangent_projection=flipped_sign_projection).verdict == "refuted"


@check(full_attention.check_equilibria)
def test_consensus_points_are_equilibria(record):
    assert record(full_attention.check_equilibria()).verdict == "verified"


@check(full_attention.check_equilibria, control=True)
def test_equilibria_check_rejects_a_value_matrix_other_than_identity():
    result = full_attention.check_equilibria(value=lambda eta, y: vector("U" + next(iter(y.terms))))
    assert result.verdict == "refuted"


@check(full_attention.check_lyapunov)
def test_dini_derivative_is_minus_a_sum_of_nonnegative_terms(record):
    assert record(full_attention.check_lyapunov()).verdict == "verified"


@check(full_attention.lyapunov_spot_check)
def test_lyapunov_function_decreases_in_dimension_500(record):
    result = record(full_attention.lyapunov_spot_check())
    assert result.verdict == "supported"
    assert result.numbers["largest dV/dt"] < 0


@check(full_attention.check_lyapunov, control=True)
def test_lyapunov_check_rejects_the_euclidean_projection_on_an_ellipsoid():
    assert full_attention.check_lyapunov(tangent_projection=euclidean_projection).verdict == "refuted"


@check(full_attention.lyapunov_spot_check, control=True)
def test_lyapunov_spot_check_rejects_the_sphere_projection_on_an_ellipsoid():
    assert full_attention.lyapunov_spot_check(samples=2, field_metric="I").verdict == "refuted"
