"""The ellipsoid E_W = {x : x^T W x = 1} (the sphere when W = I), batched over leading dimensions.

The ellipsoid is the level set of the submersion ``x^T W x - 1`` (geomstats' habit): membership and
tangency tests derive from it. Method names follow pymanopt and the symbolic ellipsoid of ``theory``
(``project``, ``tangent_projection``, ``inner_product``); the point always comes first.

Shapes: ``point : array, shape=[..., d]``; every method broadcasts over the leading dimensions.
"""

from __future__ import annotations

import numpy as np

from sim.field.kernels import sphere_drift, sphere_retract, sphere_tangent_projection_

#: A point whose W-norm is below this is treated as the zero vector, where pi_W is undefined.
ZERO_NORM = 1e-300


def as_finite_array(name: str, value, *, ndim_min: int = 0) -> np.ndarray:
    """``value`` as a float64 array; raise ValueError naming ``name`` if it has NaN/inf or too few axes."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be a real array of numbers; got {type(value).__name__}.") from error
    if array.ndim < ndim_min:
        raise ValueError(f"{name} must have at least {ndim_min} axes; got shape {array.shape}.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite; it contains {np.count_nonzero(~np.isfinite(array))} NaN/inf entries.")
    return array


def check_spd(name: str, matrix) -> np.ndarray:
    """``matrix`` as a float64 (d, d) array; raise ValueError unless it is symmetric positive definite."""
    matrix = as_finite_array(name, matrix)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise ValueError(f"{name} must be a square (d, d) matrix with d >= 1; got shape {matrix.shape}.")
    asymmetry = float(np.max(np.abs(matrix - matrix.T)))
    if asymmetry > 1e-12 * max(1.0, float(np.max(np.abs(matrix)))):
        raise ValueError(f"{name} must be symmetric positive definite; max |{name} - {name}^T| is {asymmetry:.3g}.")
    smallest = float(np.linalg.eigvalsh(matrix)[0])
    if smallest <= 0.0:
        raise ValueError(f"{name} must be symmetric positive definite; its smallest eigenvalue is {smallest:.6g}.")
    return matrix


def _rows(array) -> np.ndarray | None:
    """A C-contiguous float64 array of shape [..., d] as the 2-d view [rows, d] that the kernels take; None for
    any other array (the numpy formulas serve those)."""
    if not (isinstance(array, np.ndarray) and array.dtype == np.float64 and array.ndim >= 1
            and array.flags.c_contiguous):
        return None
    return array.reshape(-1, array.shape[-1])


class Ellipsoid:
    """The ellipsoid E_W = {x in R^d : x^T W x = 1}; the unit sphere S^{d-1} when ``W`` is None.

    Parameters
    ----------
    W : array-like, shape=[d, d], or None
        Symmetric positive definite. None (or the identity) gives the sphere; a sphere built from
        None has no fixed dimension and serves points of any d.
    """

    def __init__(self, W=None):
        if W is None:
            self.W = None
            self.dim = None
            self._inverse_sqrt = None
        else:
            W = check_spd("W", W)
            if np.array_equal(W, np.eye(W.shape[0])):
                self.W, self._inverse_sqrt = None, None
            else:
                self.W = W
                eigenvalues, eigenvectors = np.linalg.eigh(W)
                self._inverse_sqrt = (eigenvectors / np.sqrt(eigenvalues)) @ eigenvectors.T
            self.dim = W.shape[0]

    @property
    def is_sphere(self) -> bool:
        return self.W is None

    def __repr__(self) -> str:
        return "Ellipsoid(sphere)" if self.W is None else f"Ellipsoid(W of shape {self.W.shape})"

    # --- linear algebra with W -------------------------------------------------------------------
    def _check_dim(self, name: str, array: np.ndarray) -> None:
        if array.ndim == 0:
            raise ValueError(f"{name} must have shape [..., d]; got a scalar.")
        if self.dim is not None and array.shape[-1] != self.dim:
            raise ValueError(f"{name} must have last axis d = {self.dim} (the size of W); got shape {array.shape}.")

    def apply_W(self, vector: np.ndarray) -> np.ndarray:
        """``W x`` for ``vector : shape=[..., d]`` (a copy-free identity on the sphere)."""
        return vector if self.W is None else vector @ self.W  # W symmetric: (W x)^T = x^T W

    def inner_product(self, point, tangent_vec_a, tangent_vec_b) -> np.ndarray:
        """<u, v>_W = u^T W v, shape=[...]. ``point`` is unused (the metric is constant); kept for the API."""
        del point
        return np.sum(self.apply_W(np.asarray(tangent_vec_a, dtype=np.float64)) * tangent_vec_b, axis=-1)

    def norm(self, vector) -> np.ndarray:
        """|x|_W = sqrt(x^T W x), shape=[...]."""
        vector = np.asarray(vector, dtype=np.float64)
        return np.sqrt(np.einsum("...i,...i->...", self.apply_W(vector), vector))

    def submersion(self, point) -> np.ndarray:
        """x^T W x - 1, shape=[...]: zero exactly on E_W."""
        point = np.asarray(point, dtype=np.float64)
        return np.einsum("...i,...i->...", self.apply_W(point), point) - 1.0

    # --- projection (eq. 2) and its tangent map (eq. 3) -----------------------------------------
    def project(self, point) -> np.ndarray:
        """pi_W(x) = x / |x|_W (eq. 2), shape=[..., d]. Raises ValueError for zero or non-finite x."""
        point = as_finite_array("point", point, ndim_min=1)
        self._check_dim("point", point)
        # Scaled by its largest entry before the norm: |x|_W of [3e154, 4e154] overflows (its square is 2.5e309),
        # which gave [0, 0]; the direction x/|x|_W does not depend on the scale.
        scale = np.max(np.abs(point), axis=-1)
        if np.any(scale <= ZERO_NORM):
            raise ValueError(f"point must be nonzero: pi_W(x) = x/|x|_W is undefined at x = 0 "
                             f"({np.count_nonzero(scale <= ZERO_NORM)} zero vectors).")
        scaled = point / scale[..., None]
        return scaled / self.norm(scaled)[..., None]

    def retract(self, point, out: np.ndarray | None = None) -> np.ndarray:
        """pi_W without input validation, for solver inner loops (``point`` finite and nonzero); written into
        ``out`` (shaped like ``point``; may be ``point`` itself) when given."""
        if self.W is None and _rows(point) is not None and (out is None or _rows(out) is not None):
            out = np.empty_like(point) if out is None else out
            sphere_retract(_rows(point), _rows(out))  # one pass over memory
            return out
        return np.divide(point, self.norm(point)[..., None], out=out)

    def drift(self, point: np.ndarray) -> float:
        """max |x^T W x - 1| over the points of ``point : shape=[..., d]``: how far a solver's state is off E_W."""
        if self.W is None and _rows(point) is not None:
            return float(sphere_drift(_rows(point)))  # one pass, no temporaries
        return float(np.max(np.abs(self.submersion(point))))

    def tangent_projection(self, point, vector) -> np.ndarray:
        """P_y X = (I - y y^T W) X for y in E_W (eq. 3 at |y|_W = 1), shape=[..., d].

        The W-orthogonal projection onto T_y E_W = {X : y^T W X = 0}: ``vector - <point, vector>_W point``.
        """
        point = np.asarray(point, dtype=np.float64)
        return vector - np.einsum("...i,...i->...", self.apply_W(point), vector)[..., None] * point

    def tangent_projection_(self, point: np.ndarray, vector: np.ndarray) -> np.ndarray:
        """``tangent_projection`` overwriting ``vector`` (a float64 array the caller owns), for inner loops."""
        if self.W is None and point.shape == vector.shape and _rows(point) is not None and _rows(vector) is not None:
            sphere_tangent_projection_(_rows(point), _rows(vector))  # one pass over memory
            return vector
        vector -= np.einsum("...i,...i->...", self.apply_W(point), vector)[..., None] * point
        return vector

    def projection_differential(self, point, vector) -> np.ndarray:
        """T_x pi_W . X = |x|_W^{-1} (I - x x^T W |x|_W^{-2}) X for any nonzero x (eq. 3), shape=[..., d]."""
        point = as_finite_array("point", point, ndim_min=1)
        self._check_dim("point", point)
        norms = self.norm(point)
        if np.any(norms <= ZERO_NORM):
            raise ValueError("point must be nonzero: the tangent map of pi_W is undefined at x = 0.")
        n = norms[..., None]
        return (vector - np.sum(self.apply_W(point) * vector, axis=-1, keepdims=True) * point / n**2) / n

    # --- tests with tolerances ------------------------------------------------------------------
    def belongs(self, point, atol: float = 1e-12) -> np.ndarray:
        """|x^T W x - 1| <= atol, boolean of shape=[...]."""
        point = np.asarray(point, dtype=np.float64)
        self._check_dim("point", point)
        return np.abs(self.submersion(point)) <= atol

    def is_tangent(self, point, vector, atol: float = 1e-12) -> np.ndarray:
        """|y^T W X| <= atol (X in T_y E_W, the kernel of the submersion's differential), shape=[...]."""
        vector = np.asarray(vector, dtype=np.float64)
        self._check_dim("vector", vector)
        return np.abs(self.inner_product(point, point, vector)) <= atol

    # --- random points --------------------------------------------------------------------------
    def _dimension_of(self, shape) -> tuple[int, ...]:
        shape = tuple(int(s) for s in np.atleast_1d(shape))
        if not shape or shape[-1] < 1:
            raise ValueError(f"shape must be [..., d] with d >= 1; got {shape}.")
        if self.dim is not None and shape[-1] != self.dim:
            raise ValueError(f"shape must end with d = {self.dim} (the size of W); got {shape}.")
        return shape

    def _from_sphere(self, unit: np.ndarray) -> np.ndarray:
        return unit if self._inverse_sqrt is None else unit @ self._inverse_sqrt

    def random_point(self, rng: np.random.Generator, shape) -> np.ndarray:
        """Random points of shape ``shape`` = [..., d]: uniform on S^{d-1}, mapped to E_W by x = W^{-1/2} s."""
        shape = self._dimension_of(shape)
        gaussian = rng.standard_normal(shape)
        while True:  # a zero Gaussian vector has probability zero; redraw it if it happens
            norms = np.linalg.norm(gaussian, axis=-1, keepdims=True)
            zero = norms[..., 0] == 0
            if not np.any(zero):
                break
            gaussian[zero] = rng.standard_normal((int(np.count_nonzero(zero)), shape[-1]))
        return self._from_sphere(gaussian / norms)

    def random_point_in_hemisphere(self, v, rng: np.random.Generator, shape) -> np.ndarray:
        """Random points of H+(v) = {y in E_W : v^T y > 0}, shape ``shape`` = [..., d].

        Uniform on the sphere's open hemisphere (reflecting the points with v^T y < 0 across v's
        hyperplane preserves the uniform law), then mapped to E_W by W^{-1/2} as in ``random_point``.
        ``v : shape=[d]`` must be nonzero.
        """
        shape = self._dimension_of(shape)
        v = as_finite_array("v", v, ndim_min=1)
        if v.shape != (shape[-1],):
            raise ValueError(f"v must have shape ({shape[-1]},) to match shape={shape}; got {v.shape}.")
        direction = self._from_sphere(v)  # v^T W^{-1/2} s = (W^{-1/2} v)^T s
        length = float(np.linalg.norm(direction))
        if length == 0.0:
            raise ValueError("v must be nonzero: the hemisphere v^T y > 0 is undefined for v = 0.")
        direction = direction / length
        unit = Ellipsoid().random_point(rng, shape)
        while True:
            side = unit @ direction
            on_boundary = side == 0
            if not np.any(on_boundary):
                break
            unit[on_boundary] = Ellipsoid().random_point(rng, (int(np.count_nonzero(on_boundary)), shape[-1]))
        unit = np.where((side < 0)[..., None], unit - 2.0 * side[..., None] * direction, unit)
        return self._from_sphere(unit)

    def random_tangent_vector(self, point, rng: np.random.Generator) -> np.ndarray:
        """A Gaussian vector projected onto T_y E_W, shape=[..., d] like ``point``."""
        point = np.asarray(point, dtype=np.float64)
        return self.tangent_projection(point, rng.standard_normal(point.shape))
