"""Measures of the theorems' hypotheses on concrete matrices and token states (numpy, float64).

The paper's theorems assume things about the attention matrices ``P_eta = Q_eta^T K_eta``, the value
matrices ``U_eta`` and the initial tokens. These functions measure them on any given matrices (whether tokens lie in one
open hemisphere is :func:`sim.field.hemisphere.open_hemisphere`, shared with the rest of the suite):

* :func:`asymmetry` is ``|U - U^T|_F / |U|_F`` (0 for symmetric, 1 for antisymmetric U);
* :func:`spectrum_summary` gives the largest eigenvalue (by real part), whether it is real,
  positive and simple, the gap to the next one and the spread of the spectrum: the hypotheses of
  Theorem 5.2 / ICML 4.5 (``U`` symmetric, largest eigenvalue simple and positive);
* :func:`low_rank_summary` does the same for a head's ``U = A B`` (``A``: d x r, ``B``: r x d,
  r << d) from r x r products only: ``A B`` and ``B A`` share their non-zero spectrum, and the
  remaining ``d - r`` eigenvalues of ``A B`` are zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Two eigenvalues count as one (multiplicity) when closer than this fraction of the spectral radius.
#: Reason: float64 eigenvalues of a matrix of norm 1 carry errors ~1e-13 (simple) to ~1e-8 (defective
#: double eigenvalue, error ~ sqrt(eps)); 1e-6 separates those from real gaps.
EIGEN_REL_TOL = 1e-6


def asymmetry(matrix: np.ndarray) -> float:
    """``|U - U^T|_F / |U|_F`` for a square ``U`` (0: symmetric, 1: antisymmetric; 0 for U = 0)."""
    u = _square(matrix, "matrix")
    total = np.linalg.norm(u)
    return 0.0 if total == 0.0 else float(np.linalg.norm(u - u.T) / total)


@dataclass(frozen=True)
class SpectrumSummary:
    """The top of a spectrum, as Theorem 5.2's hypotheses need it.

    ``top`` is the eigenvalue of largest real part (complex in general); ``top_is_real`` whether its
    imaginary part vanishes (relative to the spectral radius); ``multiplicity`` how many eigenvalues
    lie within ``EIGEN_REL_TOL * radius`` of it; ``gap`` is ``(Re top - Re next) / radius`` for the next
    eigenvalue outside that cluster (0 when none); ``spread`` is ``(Re max - Re min) / radius``;
    ``positive_fraction`` the share of eigenvalues with positive real part (of the non-zero ones
    when ``zeros`` eigenvalues were added analytically).
    """

    top: complex
    top_is_real: bool
    multiplicity: int
    gap: float
    spread: float
    radius: float
    positive_fraction: float
    size: int

    @property
    def simple_positive_real(self) -> bool:
        """The hypothesis of Thm 5.2 on the spectrum: the largest eigenvalue is real, positive and simple."""
        return self.top_is_real and self.top.real > 0 and self.multiplicity == 1


def spectrum_summary(matrix: np.ndarray) -> SpectrumSummary:
    """Summarise the spectrum of a square matrix (shape ``[d, d]``)."""
    u = _square(matrix, "matrix")
    values = np.linalg.eigvalsh(u) if np.array_equal(u, u.T) else np.linalg.eigvals(u)
    return _summarise(np.asarray(values, dtype=np.complex128), zeros=0)


def low_rank_summary(left: np.ndarray, right: np.ndarray) -> SpectrumSummary:
    """Spectrum of ``left @ right`` (``[d, r] @ [r, d]``, r <= d) from the r x r product ``right @ left``.

    The non-zero eigenvalues of ``A B`` and ``B A`` coincide with multiplicities; ``A B`` has
    ``d - r`` further zero eigenvalues, added analytically.
    """
    a = np.asarray(left, dtype=np.float64)
    b = np.asarray(right, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or a.shape[0] != b.shape[1]:
        raise ValueError(f"left must be [d, r] and right [r, d]; got {a.shape} and {b.shape}.")
    if a.shape[1] > a.shape[0]:
        raise ValueError(f"the inner rank r={a.shape[1]} must not exceed d={a.shape[0]}.")
    values = np.linalg.eigvals(b @ a).astype(np.complex128)
    return _summarise(values, zeros=a.shape[0] - a.shape[1])


def low_rank_asymmetry(left: np.ndarray, right: np.ndarray) -> float:
    """``|U - U^T|_F / |U|_F`` for ``U = A B`` from r x r products only.

    ``|U|_F^2 = tr((A^T A)(B B^T))`` and ``tr(U U) = tr((B A)^2)``, so
    ``|U - U^T|_F^2 = 2 |U|_F^2 - 2 tr((B A)^2)``.
    """
    a = np.asarray(left, dtype=np.float64)
    b = np.asarray(right, dtype=np.float64)
    frob2 = float(np.trace((a.T @ a) @ (b @ b.T)))
    if frob2 <= 0.0:
        return 0.0
    inner = b @ a
    anti2 = max(2.0 * frob2 - 2.0 * float(np.trace(inner @ inner)), 0.0)
    return float(np.sqrt(anti2 / frob2))


def low_rank_norms(left: np.ndarray, right: np.ndarray) -> tuple[float, float]:
    """Frobenius and spectral norm of ``A B`` (``[d, r] @ [r, d]``) via thin QR factors (r x r work)."""
    a = np.asarray(left, dtype=np.float64)
    b = np.asarray(right, dtype=np.float64)
    r_left = np.linalg.qr(a, mode="r")
    r_right = np.linalg.qr(b.T, mode="r")
    core = r_left @ r_right.T
    return float(np.linalg.norm(core)), float(np.linalg.norm(core, 2))


def _summarise(values: np.ndarray, zeros: int) -> SpectrumSummary:
    size = values.size + zeros
    radius = float(np.max(np.abs(values))) if values.size else 0.0
    if zeros:
        all_values = np.concatenate([values, np.zeros(zeros, dtype=np.complex128)])
    else:
        all_values = values
    if radius == 0.0:
        return SpectrumSummary(0j, True, size, 0.0, 0.0, 0.0, 0.0, size)
    order = np.lexsort((-all_values.imag, -all_values.real))  # largest real part first; of a pair, +imag first
    ranked = all_values[order]
    top = complex(ranked[0])
    scale = EIGEN_REL_TOL * radius
    close = np.abs(ranked - top) <= scale
    multiplicity = int(np.count_nonzero(close))
    rest = ranked[~close]
    gap = float((top.real - rest[0].real) / radius) if rest.size else 0.0
    spread = float((ranked[0].real - ranked[-1].real) / radius)
    nonzero = values[np.abs(values) > scale] if zeros else all_values
    positive_fraction = float(np.mean(nonzero.real > 0))  # never empty: it holds the eigenvalue of modulus radius
    return SpectrumSummary(top, abs(top.imag) <= scale, multiplicity, gap, spread, radius, positive_fraction, size)


def _square(matrix: np.ndarray, name: str) -> np.ndarray:
    u = np.asarray(matrix, dtype=np.float64)
    if u.ndim != 2 or u.shape[0] != u.shape[1]:
        raise ValueError(f"{name} must be a square 2-d array; got shape {u.shape}.")
    if not np.all(np.isfinite(u)):
        raise ValueError(f"{name} must be finite (no NaN or inf).")
    return u
