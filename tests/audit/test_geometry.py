"""Normalisation geometry against torch.nn.LayerNorm / torch.nn.RMSNorm (Remark 2.3, claim model.layernorm)."""

import numpy as np
import pytest
import torch

from reports.checks import check
from empirical.geometry import (
    SURFACE_TOL,
    check_layernorm_remark,
    gain_geometry,
    layernorm_residuals,
    rmsnorm_ellipsoid,
    rmsnorm_residuals,
)


def _layernorm(x, gamma, beta):
    layer = torch.nn.LayerNorm(x.shape[-1], dtype=torch.float64)
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(gamma))
        layer.bias.copy_(torch.as_tensor(beta))
        return layer(torch.as_tensor(x)).numpy(), layer.eps


@check("model.layernorm", method="numeric")
def test_layernorm_remark_as_printed_is_a_discrepancy_and_the_corrected_surface_holds(record):
    result = record(check_layernorm_remark(dim=8, samples=200, gamma0=0.7, seed=0))
    assert result.verdict == "discrepancy"
    assert result.numbers["measured_radius_max"] < result.numbers["printed_radius"] / 1.5
    assert result.numbers["radius_residual_eps_corrected"] <= SURFACE_TOL
    assert result.numbers["ellipsoid_residual_random_gain_eps_corrected"] <= SURFACE_TOL
    assert result.numbers["rmsnorm_ellipsoid_residual_eps_corrected"] <= SURFACE_TOL


def test_layernorm_outputs_lie_on_the_hyperplane_and_ellipsoid():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 16)) * 2 + 0.3
    gamma, beta = rng.uniform(0.1, 3.0, 16), rng.normal(size=16)
    z, eps = _layernorm(x, gamma, beta)
    residuals = layernorm_residuals(x, z, gamma, beta, eps)
    assert residuals.hyperplane <= SURFACE_TOL
    assert residuals.radial_eps <= SURFACE_TOL
    assert residuals.radial < 1e-4  # eps / var with var ~ 4
    assert residuals.count == 50


def test_layernorm_residual_detects_the_wrong_gain():
    """Negative control: outputs of one gain checked against another gain's ellipsoid."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(50, 16))
    gamma, beta = rng.uniform(0.5, 2.0, 16), rng.normal(size=16)
    z, eps = _layernorm(x, gamma, beta)
    wrong = gamma.copy()
    wrong[0] *= 1.5
    assert layernorm_residuals(x, z, wrong, beta, eps).radial_eps > 1e-3


def test_rmsnorm_outputs_lie_on_the_ellipsoid_e_w():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 12)) * 0.5
    g = rng.uniform(-2.0, 2.0, 12)
    layer = torch.nn.RMSNorm(12, eps=1e-6, dtype=torch.float64)
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(g))
        z = layer(torch.as_tensor(x)).numpy()
    w = rmsnorm_ellipsoid(g)
    np.testing.assert_allclose(w, 1 / (12 * g**2))
    residuals = rmsnorm_residuals(x, z, g, 1e-6)
    assert residuals.radial_eps <= SURFACE_TOL
    # Negative control: the sphere's W (constant gain) does not fit a non-constant gain.
    assert rmsnorm_residuals(x, z, np.full(12, np.sqrt(np.mean(g**2))), 1e-6).radial_eps > 1e-2


def test_gain_geometry_classifies_sphere_nearly_and_ellipsoid():
    assert gain_geometry(np.full(10, 0.7)).verdict == "holds"
    nearly = gain_geometry(np.linspace(1.0, 1.1, 10))
    assert nearly.verdict == "nearly"
    assert nearly.axis_ratio == pytest.approx(1.1)
    ellipsoid = gain_geometry(np.array([0.05, 1.0, 2.0, -3.0]))
    assert ellipsoid.verdict == "fails"
    assert ellipsoid.axis_ratio == pytest.approx(60.0)
    assert ellipsoid.negative == 1
    assert gain_geometry(np.array([0.0, 1.0])).axis_ratio == float("inf")


@pytest.mark.parametrize(
    "call, message",
    [
        pytest.param(lambda: layernorm_residuals(np.ones((2, 3)), np.ones((2, 4)), np.ones(3), np.zeros(3), 1e-5),
                     "same shape", id="shape"),
        pytest.param(lambda: layernorm_residuals(np.ones((2, 3)), np.ones((2, 3)), np.array([1.0, 0.0, 1.0]),
                                                 np.zeros(3), 1e-5), "no zero", id="zero-gain"),
        pytest.param(lambda: rmsnorm_ellipsoid(np.array([1.0, 0.0])), "no zero", id="rms-zero-gain"),
        pytest.param(lambda: gain_geometry(np.array([np.nan])), "finite", id="nan-gain"),
    ],
)
def test_bad_inputs_are_rejected(call, message):
    with pytest.raises(ValueError, match=message):
        call()
