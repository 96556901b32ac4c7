"""The geometry of a transformer's normalisation layers (Remark 2.3 / ICML Remark 2.2).

LayerNorm with gain ``gamma`` and bias ``beta`` maps ``x`` (shape ``[..., d]``, d = n + 1) to
``z = (x - mean(x)) / sqrt(var(x) + eps) * gamma + beta``. With ``u = (z - beta) / gamma``:

* ``sum_k u_k = 0`` (a hyperplane through ``beta``), and
* ``|u|^2 = d * var / (var + eps)``, i.e. ``d`` up to the relative error ``eps / var``.

So the outputs lie on the ellipsoid ``{z : |(z - beta) / gamma|^2 = d}`` intersected with the hyperplane:
an (n-1)-dimensional ellipsoid with semi-axes ``sqrt(d) |gamma_k|`` (a sphere of radius
``sqrt(d) |gamma0|`` when ``gamma = gamma0 1``). RMSNorm with gain ``g`` maps ``x`` to
``z = x / sqrt(mean(x^2) + eps) * g``, so ``z^T W z = ms / (ms + eps)`` with ``W = diag(1 / (d g^2))``:
the paper's ellipsoid ``E_W`` (eq. 2), although the map is ``diag(g) . pi_{I/d}`` rather than ``pi_W``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Gain geometry verdicts. A gain whose largest and smallest |entries| differ by at most this factor
#: minus one counts as a sphere ("holds"); the float32 storage of a constant gain is exact, so any
#: larger ratio comes from the parameters themselves.
SPHERE_RATIO_TOL = 1e-6
#: Up to this axis ratio minus one the ellipsoid is called "nearly" a sphere: semi-axes within 20% of
#: each other. A chosen cut-off (the theory has none), stated with every verdict; trained gains are far
#: from it (ratios of 10-1000), initial gains are exactly constant.
NEARLY_SPHERE_RATIO_TOL = 0.2


@dataclass(frozen=True)
class GainGeometry:
    """How far a normalisation gain is from a constant: sphere (holds), nearly, or ellipsoid (fails).

    ``axis_ratio`` is ``max |gamma_k| / min |gamma_k|`` (inf if some gain is zero: the outputs then
    lie on a degenerate, flattened ellipsoid); ``cv`` the coefficient of variation ``std / |mean|``.
    """

    axis_ratio: float
    cv: float
    min_abs: float
    max_abs: float
    negative: int
    verdict: str  # "holds" (sphere), "nearly", "fails" (ellipsoid)


def gain_geometry(gain: np.ndarray) -> GainGeometry:
    """Classify a normalisation gain vector (shape ``[d]``)."""
    g = np.asarray(gain, dtype=np.float64).reshape(-1)
    if g.size == 0 or not np.all(np.isfinite(g)):
        raise ValueError("gain must be a non-empty finite vector.")
    absolute = np.abs(g)
    min_abs, max_abs = float(absolute.min()), float(absolute.max())
    ratio = float("inf") if min_abs == 0.0 else max_abs / min_abs
    mean = float(np.mean(g))
    cv = float(np.std(g) / abs(mean)) if mean != 0.0 else float("inf")
    if ratio - 1.0 <= SPHERE_RATIO_TOL:
        verdict = "holds"
    elif ratio - 1.0 <= NEARLY_SPHERE_RATIO_TOL:
        verdict = "nearly"
    else:
        verdict = "fails"
    return GainGeometry(ratio, cv, min_abs, max_abs, int(np.count_nonzero(g < 0)), verdict)


@dataclass(frozen=True)
class SurfaceResiduals:
    """How far normalised states lie from the predicted surface (worst case over the states).

    ``hyperplane``: max ``|mean_k u_k|`` (LayerNorm only; 0 for RMSNorm); ``radial``: max
    ``| |u|^2 / d - 1 |``, i.e. ``|z^T W z - 1|`` with the ellipsoid's ``W``; ``radial_eps``: the
    same against the eps-corrected prediction ``s / (s + eps)`` (``s``: the input's variance or mean
    square), which holds to rounding.
    """

    hyperplane: float
    radial: float
    radial_eps: float
    count: int


def layernorm_residuals(inputs: np.ndarray, outputs: np.ndarray, gain: np.ndarray, bias: np.ndarray,
                        eps: float) -> SurfaceResiduals:
    """Residuals of LayerNorm outputs ``z`` (``[..., d]``) from the surface predicted from their inputs ``x``."""
    x, z = _pair(inputs, outputs)
    g = np.asarray(gain, dtype=np.float64)
    b = np.asarray(bias, dtype=np.float64)
    if np.any(g == 0.0):
        raise ValueError("gain must have no zero entry: u = (z - beta) / gamma is undefined there.")
    u = (z - b) / g
    d = u.shape[-1]
    variance = np.var(x, axis=-1)
    radial = np.sum(u * u, axis=-1) / d
    return SurfaceResiduals(
        hyperplane=float(np.max(np.abs(np.mean(u, axis=-1)))),
        radial=float(np.max(np.abs(radial - 1.0))),
        radial_eps=float(np.max(np.abs(radial - variance / (variance + eps)))),
        count=int(np.prod(u.shape[:-1])),
    )


def rmsnorm_ellipsoid(gain: np.ndarray) -> np.ndarray:
    """The diagonal of ``W = diag(1 / (d g^2))``, the ellipsoid ``E_W`` RMSNorm's outputs lie on (shape ``[d]``)."""
    g = np.asarray(gain, dtype=np.float64).reshape(-1)
    if np.any(g == 0.0):
        raise ValueError("gain must have no zero entry: with g_k = 0 the outputs lie on a degenerate ellipsoid.")
    return 1.0 / (g.size * g * g)


def rmsnorm_residuals(inputs: np.ndarray, outputs: np.ndarray, gain: np.ndarray, eps: float) -> SurfaceResiduals:
    """Residuals of RMSNorm outputs ``z`` (``[..., d]``) from ``E_W``, ``W = diag(1 / (d g^2))``."""
    x, z = _pair(inputs, outputs)
    w = rmsnorm_ellipsoid(gain)
    quadratic = np.sum(z * z * w, axis=-1)
    mean_square = np.mean(x * x, axis=-1)
    return SurfaceResiduals(
        hyperplane=0.0,
        radial=float(np.max(np.abs(quadratic - 1.0))),
        radial_eps=float(np.max(np.abs(quadratic - mean_square / (mean_square + eps)))),
        count=int(np.prod(z.shape[:-1])),
    )


def _pair(inputs: np.ndarray, outputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(inputs, dtype=np.float64)
    z = np.asarray(outputs, dtype=np.float64)
    if x.shape != z.shape or x.ndim < 1:
        raise ValueError(f"inputs and outputs must have the same shape [..., d]; got {x.shape} and {z.shape}.")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(z))):
        raise ValueError("inputs and outputs must be finite (no NaN or inf).")
    return x, z
