"""model.layernorm: Remark 2.3 as printed, the conjecture for arbitrary gamma, and RMSNorm."""

import numpy as np
import pytest
import sympy as sp

from foundation.registration import check
from theory import layernorm


@check(layernorm.check_layernorm_radius)
def test_printed_radius_is_a_discrepancy_and_the_corrected_one_holds(record):
    result = record(layernorm.check_layernorm_radius())
    assert result.verdict == "discrepancy"
    assert result.numbers["corrected_holds"] is True
    assert "sqrt(n+1) |gamma0|" in result.corrected


@check(layernorm.check_layernorm_radius, control=True)
def test_radius_check_accepts_the_true_radius_and_rejects_another():
    assert layernorm.check_layernorm_radius(radius=lambda d, g: sp.sqrt(d) * sp.Abs(g)).verdict == "verified"
    assert layernorm.check_layernorm_radius(radius=lambda d, g: d * sp.Abs(g)).verdict == "discrepancy"


@check(layernorm.check_layernorm_arbitrary_gamma)
def test_arbitrary_gamma_outputs_fill_a_section_of_an_ellipsoid(record):
    assert record(layernorm.check_layernorm_arbitrary_gamma()).verdict == "verified"


@check(layernorm.check_layernorm_arbitrary_gamma, control=True)
def test_arbitrary_gamma_check_rejects_the_sample_standard_deviation():
    assert layernorm.check_layernorm_arbitrary_gamma(ddof=1).verdict == "refuted"


@check(layernorm.check_rmsnorm)
def test_rmsnorm_is_the_projection_onto_an_ellipsoid(record):
    assert record(layernorm.check_rmsnorm()).verdict == "verified"


@check(layernorm.torch_normalisations)
def test_torch_layernorm_is_off_the_printed_radius_and_obeys_the_corrected_invariants(record):
    result = record(layernorm.torch_normalisations())
    assert result.verdict == "discrepancy"
    assert result.numbers["measured_radius"] == pytest.approx(result.numbers["sqrt(n+1)|gamma0|"], rel=1e-5)
    assert result.numbers["measured_radius"] < result.numbers["printed_radius"] / 10
    assert "sqrt(n+1) |gamma0|" in result.corrected


@check(layernorm.torch_normalisations, control=True)
def test_torch_check_accepts_the_true_radius_and_rejects_another():
    assert layernorm.torch_normalisations(radius=lambda d, g: np.sqrt(d) * abs(g)).verdict == "supported"
    assert layernorm.torch_normalisations(radius=lambda d, g: 1.01 * np.sqrt(d) * abs(g)).verdict == "discrepancy"


@check(layernorm.check_rmsnorm, control=True)
def test_rmsnorm_check_rejects_a_wrong_ellipsoid():
    assert layernorm.check_rmsnorm(scale=sp.Integer(1)).verdict == "refuted"


@check(layernorm.torch_normalisations, control=True)
def test_torch_check_detects_the_eps_regulariser_when_it_is_ignored():
    assert layernorm.torch_normalisations(eps_correction=False).verdict == "refuted"
