"""The audit's normalisation-surface helpers against torch.nn.LayerNorm / torch.nn.RMSNorm (Remark 2.3). The claim
model.layernorm itself is checked against torch once, by theory.layernorm.torch_normalisations."""

import numpy as np
import pytest
import torch

from empirical.audit.geometry import (
    NEARLY_SPHERE_RATIO_TOL,
    SPHERE_RATIO_TOL,
    GainGeometry,
    SurfaceResiduals,
    gain_geometry,
    layernorm_residuals,
    rmsnorm_ellipsoid,
    rmsnorm_residuals,
)

#: float64 torch normalisation: the eps-corrected surface equations hold to rounding (relative 1e-15 per entry,
#: summed over d <= 4096 entries).
SURFACE_TOL = 1e-10


def _layernorm(x, gamma, beta):
    layer = torch.nn.LayerNorm(x.shape[-1], dtype=torch.float64)
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(gamma))
        layer.bias.copy_(torch.as_tensor(beta))
        return layer(torch.as_tensor(x)).numpy(), layer.eps


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


# --- the measures at their edges, on states built by hand ----------------------------------------------------------
#: u = (z - beta) / gamma for four states of width 2, as [2 prompts, 2 tokens, 2]: their means are 0.5, -0.25, 0.5 and 0
#: (the hyperplane residual is 0.5, not the 0.1875 of all entries together), |u|^2 / d is 0.5, 0.125, 0.25 and 1.
U_ROWS = np.array([[[1.0, 0.0], [0.0, -0.5]], [[0.5, 0.5], [-1.0, 1.0]]])
#: inputs of variances 1, 1, 1, 4 and mean squares 1, 5, 2, 4
X_ROWS = np.array([[[1.0, -1.0], [3.0, 1.0]], [[2.0, 0.0], [2.0, -2.0]]])
GAIN = np.array([1.0, 4.0])  # a gain of exactly 1 is a gain like any other


def test_layernorm_residuals_are_the_worst_state_s_of_each_kind():
    bias = np.array([0.5, -1.0])
    residuals = layernorm_residuals(X_ROWS, U_ROWS * GAIN + bias, GAIN, bias, eps=1.0)
    # radial: |0.125 - 1|; against the eps-corrected s/(s+1) = 1/2, 1/2, 1/2, 4/5: |0.125 - 0.5|
    assert residuals == SurfaceResiduals(hyperplane=0.5, radial=0.875, radial_eps=0.375, count=4)
    # control: the same states read with a gain of 2 in place of 1 lie off the surface
    assert layernorm_residuals(X_ROWS, U_ROWS * GAIN + bias, np.array([2.0, 4.0]), bias, eps=1.0) != residuals


def test_rmsnorm_residuals_are_the_worst_state_s_of_each_kind():
    residuals = rmsnorm_residuals(X_ROWS, U_ROWS * GAIN, GAIN, eps=1.0)
    # z^T W z = |u|^2 / d; against ms/(ms+1) = 1/2, 5/6, 2/3, 4/5: the worst is |0.125 - 5/6|
    assert residuals == SurfaceResiduals(hyperplane=0.0, radial=0.875, radial_eps=pytest.approx(17 / 24, rel=1e-15),
                                         count=4)
    assert rmsnorm_residuals(X_ROWS[0, 0], U_ROWS[0, 0] * GAIN, GAIN, eps=1.0) == SurfaceResiduals(0.0, 0.5, 0.0, 1)
    np.testing.assert_array_equal(rmsnorm_ellipsoid(GAIN.reshape(1, 2)), [0.5, 1 / 32])  # read flat: [d]


def test_float32_states_and_gains_are_measured_in_float64():
    """float32 states (as the audit's models give them) are converted before any product: the residuals equal those
    of the float64 copies exactly; the same arithmetic in float32 differs (the control)."""
    rng = np.random.default_rng(5)
    x = (rng.normal(size=(6, 8)) * 3.0).astype(np.float32)
    gain, bias = rng.uniform(0.5, 2.0, 8).astype(np.float32), rng.normal(size=8).astype(np.float32)
    z = ((x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * gain + bias).astype(np.float32)
    x64, z64, gain64, bias64 = (a.astype(np.float64) for a in (x, z, gain, bias))
    assert layernorm_residuals(x, z, gain, bias, 1e-5) == layernorm_residuals(x64, z64, gain64, bias64, 1e-5)
    assert rmsnorm_residuals(x, z, gain, 1e-5) == rmsnorm_residuals(x64, z64, gain64, 1e-5)
    assert not np.array_equal(np.var(x, axis=-1), np.var(x64, axis=-1))
    assert not np.array_equal(np.mean(x * x, axis=-1), np.mean(x64 * x64, axis=-1))
    assert not np.array_equal(np.sum(z * z * rmsnorm_ellipsoid(gain), axis=-1),
                              np.sum(z64 * z64 * rmsnorm_ellipsoid(gain), axis=-1))
    w = rmsnorm_ellipsoid(gain)
    assert w.dtype == np.float64 and np.array_equal(w, 1.0 / (8 * gain64 * gain64))
    assert not np.array_equal(1.0 / (8 * gain * gain), w)
    assert gain_geometry(gain) == gain_geometry(gain64)
    assert float(np.std(gain) / abs(float(np.mean(gain)))) != gain_geometry(gain64).cv


@pytest.mark.parametrize("inputs, outputs", [
    pytest.param(np.array([np.nan, 1.0]), np.array([1.0, 1.0]), id="input"),
    pytest.param(np.array([1.0, 1.0]), np.array([1.0, np.inf]), id="output"),
])
def test_a_non_finite_input_or_output_alone_is_refused(inputs, outputs):
    with pytest.raises(ValueError, match=r"^inputs and outputs must be finite \(no NaN or inf\)\.$"):
        rmsnorm_residuals(inputs, outputs, np.ones(2), 1e-6)


def test_a_single_state_is_read_and_a_scalar_refused():
    assert layernorm_residuals(np.array([1.0, -1.0]), np.array([1.0, -1.0]), np.ones(2), np.zeros(2), 0.0) == (
        SurfaceResiduals(0.0, 0.0, 0.0, 1))
    with pytest.raises(ValueError, match=r"^inputs and outputs must have the same shape \[\.\.\., d\]; got \(\) and "
                                         r"\(\)\.$"):
        layernorm_residuals(np.array(1.0), np.array(1.0), np.ones(1), np.zeros(1), 0.0)


def test_gain_geometry_reads_every_number_of_the_gain():
    assert gain_geometry(np.array([0.5, 1.5])) == GainGeometry(3.0, 0.5, 0.5, 1.5, 0, "fails")  # mean exactly 1
    assert gain_geometry(np.array([-1.0, 1.0])) == GainGeometry(1.0, float("inf"), 1.0, 1.0, 1, "holds")  # mean 0
    zero = gain_geometry(np.array([0.0, 1.0, -2.0]))  # a zero gain is not negative
    assert (zero.axis_ratio, zero.min_abs, zero.max_abs, zero.negative, zero.verdict) == (float("inf"), 0.0, 2.0, 1,
                                                                                           "fails")
    assert zero.cv == pytest.approx(np.std([0.0, 1.0, -2.0]) * 3, rel=1e-15)
    assert gain_geometry(np.array([2.0])) == GainGeometry(1.0, 0.0, 2.0, 2.0, 0, "holds")  # one entry
    assert gain_geometry(np.zeros(3)) == GainGeometry(float("inf"), float("inf"), 0.0, 0.0, 0, "fails")  # not 0/0
    assert gain_geometry(np.array([[1.0, 3.0], [1.0, 1.0]])).axis_ratio == 3.0  # read flat
    with pytest.raises(ValueError, match=r"^gain must be a non-empty finite vector\.$"):
        gain_geometry(np.array([]))


def test_the_gain_verdicts_at_their_bounds():
    """ratio - 1 is a multiple of 2**-52 in [1, 2): 1e-6 and 0.2 fall between two of them; the last ratio at or below
    each bound keeps the verdict, the next float above takes the next one."""
    below_sphere = 1.0 + np.floor(SPHERE_RATIO_TOL / 2.0 ** -52) * 2.0 ** -52
    below_nearly = 1.0 + np.floor(NEARLY_SPHERE_RATIO_TOL / 2.0 ** -52) * 2.0 ** -52
    assert gain_geometry(np.array([1.0, below_sphere])).verdict == "holds"
    assert gain_geometry(np.array([1.0, np.nextafter(below_sphere, 2.0)])).verdict == "nearly"
    assert gain_geometry(np.array([1.0, below_nearly])).verdict == "nearly"
    assert gain_geometry(np.array([1.0, np.nextafter(below_nearly, 2.0)])).verdict == "fails"
    assert gain_geometry(np.array([1.0, 1.5])).verdict == "fails"
