"""The conjectures the paper cites (Remark 4.6 / long Remark 5.3): Karagodin, Polyanskiy, Rigollet, "Clustering in
causal attention masking", arXiv 2411.04990v2, sec. 4; their hypotheses checked exactly, and their search families.

Their dynamics (CSA): causal attention on the unit sphere, alpha_kj proportional to exp(beta <Q x_k, K x_j>) over
j <= k with rows summing to 1, dx_k/dt = P_{x_k}(sum_j alpha_kj V x_j). It is eq. 6 with h = 1, causal attention,
P = beta Q^T K and U = V, up to the constant time scale sqrt(d) (eq. 6's rows sum to 1/sqrt(d)): the same orbits,
equilibria and stability, so the suite's integrators, Newton solver and validated certifier apply unchanged.

Hypotheses, decided exactly (never by a float64 tolerance) on the stored float64 entries of V:

* thm1.5 (:func:`certified_spectrum`): d distinct positive real eigenvalues. Arb's ``acb_mat.eig`` (simple
  eigenvalues) returns d balls, each holding exactly one eigenvalue, or fails. We check the balls pairwise disjoint
  (distinct), each ball's complex conjugate meeting no other ball (V is real, so the conjugate of an eigenvalue is
  an eigenvalue; it lies in the conjugate ball, which meets only its own ball, which holds one eigenvalue: the
  eigenvalue equals its conjugate, it is real), and each real part's lower bound > 0 (positive). d distinct
  eigenvalues make V diagonalisable.
* thm2 (:func:`eigenspace_structure`): in exact rational arithmetic (a float64 is a dyadic rational; FLINT's
  ``fmpq_mat``): L = ker(V - lambda I) with dim L >= 2 for a lambda > 0, V L^perp in L^perp (L^T V W = 0 for a
  rational basis W of L^perp), and <Vz, z> < lambda |z|^2 on L^perp minus 0 (the matrix
  W^T (lambda I - (V + V^T)/2) W positive definite: every leading principal minor > 0, Sylvester).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import numpy as np
from flint import acb_mat, arb_mat, ctx, fmpq, fmpq_mat

from sim.conjectures.family import Batch, Family, Shape, bounded_scale, onto_sphere, top_eigenpair, unit_spectral_norm

SOURCE = ("Karagodin, Polyanskiy, Rigollet, 'Clustering in causal attention masking', arXiv 2411.04990v2, sec. 4 "
          "(statements as transcribed in a public Lean formalisation of that paper)")
#: Working precision of the eigenvalue balls (bits): twice float64, so rounding never decides a hypothesis.
PRECISION = 106
#: Largest |P|_2 = beta |Q^T K|_2 drawn ("large beta": scores up to 2 x 50 between tokens, almost hard attention).
P_MAX = 50.0
#: Smallest eigenvalue gap before normalising the spectrum to lambda_max = 1 (d <= 8: relative gaps >= 3e-3, above
#: sim.conjectures.families.EIGEN_GAP = 1e-3, so the float64 top-eigenpair test accepts every draw).
MIN_GAP = 0.05
#: Eigenvector matrices S with cond(S) above this are redrawn (marked invalid): the float64 V = S diag S^{-1} then
#: loses about log10(cond) digits, and Arb must still isolate the d eigenvalues of the stored V.
MAX_CONDITION = 1e3


# --- exact hypotheses ------------------------------------------------------------------------------------------
@dataclass
class Spectrum:
    """A ball-arithmetic verdict on "d distinct positive real eigenvalues"; ``balls`` as text, ``lower`` the
    certified lower bounds of the real parts."""

    ok: bool
    problems: list[str]
    balls: list[str] = field(default_factory=list)
    lower: list[float] = field(default_factory=list)


def certified_spectrum(V: np.ndarray, precision: int = PRECISION) -> Spectrum:
    """Whether ``V : shape=[d, d]`` has d distinct positive real eigenvalues, certified (module docstring)."""
    V = np.asarray(V, dtype=float)
    if V.ndim != 2 or V.shape[0] != V.shape[1] or not np.all(np.isfinite(V)):
        return Spectrum(False, [f"V must be a finite square matrix; got shape {V.shape}"])
    old = ctx.prec
    ctx.prec = precision
    try:
        try:
            E = list(acb_mat(arb_mat(V.tolist())).eig())
        except ValueError:
            return Spectrum(False, ["Arb could not isolate d simple eigenvalues of V (a multiple or nearly multiple "
                                    "eigenvalue): distinct eigenvalues not certified"])
        shown = [b.str(12, radius=True) for b in E]
        problems = []
        d = len(E)
        if any(E[i].overlaps(E[j]) for i in range(d) for j in range(i + 1, d)):
            problems.append("two eigenvalue balls overlap: distinct eigenvalues not certified")
        if any(E[i].conjugate().overlaps(E[j]) for i in range(d) for j in range(d) if i != j):
            problems.append("an eigenvalue ball's conjugate meets another ball: a real eigenvalue not certified "
                            "(a complex pair?)")
        lower = [float(b.real.lower()) for b in E]
        if not all(b.real.lower() > 0 for b in E):
            problems.append(f"an eigenvalue's real part is not certified positive (lower bounds "
                            f"{', '.join(f'{x:.3g}' for x in sorted(lower))})")
        return Spectrum(not problems, problems, shown, lower)
    finally:
        ctx.prec = old


def _rational(matrix: np.ndarray) -> fmpq_mat:
    rows, cols = matrix.shape
    return fmpq_mat(rows, cols, [fmpq(*Fraction(float(x)).as_integer_ratio()) for x in matrix.ravel()])


def _null_space(A: fmpq_mat) -> list[list[fmpq]]:
    """An exact basis of ker A (columns as lists), from the reduced row echelon form."""
    R, rank = A.rref()
    n = A.ncols()
    pivots, row = [], 0
    for col in range(n):
        if row < rank and R[row, col] != 0:
            pivots.append(col)
            row += 1
    basis = []
    for free in (c for c in range(n) if c not in pivots):
        v = [fmpq(0)] * n
        v[free] = fmpq(1)
        for r, p in enumerate(pivots):
            v[p] = -R[r, free]
        basis.append(v)
    return basis


def _columns(vectors: list[list[fmpq]], n: int) -> fmpq_mat:
    return fmpq_mat(n, len(vectors), [vectors[j][i] for i in range(n) for j in range(len(vectors))])


@dataclass
class Eigenspace:
    """The exact verdict on thm2's hypotheses: ``lam`` (float, exact as stored), an orthonormal float64 basis of L
    (for the distances; the decisions were exact), dim L."""

    ok: bool
    problems: list[str]
    lam: float | None = None
    L: np.ndarray | None = None
    dim: int = 0


def _candidates(V: np.ndarray) -> list[float]:
    """Values of lambda worth an exact test: real positive eigenvalues of V repeated in float64 (to 1e-6
    relative), snapped to the diagonal entries near them (the exact lambda of a block-diagonal V is one)."""
    eigenvalues = np.linalg.eigvals(V)
    values = []
    for e in eigenvalues:
        close = np.abs(eigenvalues - e) <= 1e-6 * max(1.0, abs(e))
        if abs(e.imag) < 1e-9 and e.real > 0 and np.sum(close) >= 2:
            values += [float(x) for x in np.diag(V) if abs(x - e.real) <= 1e-6 * max(1.0, abs(e))] + [float(e.real)]
    return list(dict.fromkeys(values))


def eigenspace_structure(V: np.ndarray, lam: float | None = None) -> Eigenspace:
    """Whether ``V`` meets thm2's hypotheses for ``lam`` (default: every candidate of :func:`_candidates`), decided
    in exact rational arithmetic (module docstring); cached by the matrix's bytes (the distances ask once per state
    of the same instance)."""
    V = np.ascontiguousarray(V, dtype=float)
    return _cached_structure(V.tobytes(), V.shape, lam)


@lru_cache(maxsize=4096)
def _cached_structure(data: bytes, shape: tuple, lam: float | None) -> Eigenspace:
    return _eigenspace_structure(np.frombuffer(data).reshape(shape), lam)


def _eigenspace_structure(V: np.ndarray, lam: float | None = None) -> Eigenspace:
    V = np.asarray(V, dtype=float)
    if V.ndim != 2 or V.shape[0] != V.shape[1] or not np.all(np.isfinite(V)):
        return Eigenspace(False, [f"V must be a finite square matrix; got shape {V.shape}"])
    candidates = [lam] if lam is not None else _candidates(V)
    if not candidates:
        return Eigenspace(False, ["V has no positive real eigenvalue of multiplicity >= 2 (float64 screen): no "
                                  "eigenspace L with dim L >= 2"])
    problems = []
    for value in candidates:
        verdict = _eigenspace_for(V, float(value))
        if verdict.ok:
            return verdict
        problems += verdict.problems
    return Eigenspace(False, problems)


def _eigenspace_for(V: np.ndarray, lam: float) -> Eigenspace:
    d = len(V)
    exact = _rational(V)
    lam_q = fmpq(*Fraction(lam).as_integer_ratio())
    if not lam > 0:
        return Eigenspace(False, [f"lambda = {lam!r} is not > 0"])
    identity = fmpq_mat(d, d, [fmpq(int(i == j)) for i in range(d) for j in range(d)])
    kernel = _null_space(exact - lam_q * identity)
    m = len(kernel)
    if m < 2:
        return Eigenspace(False, [f"lambda = {lam!r}: exact dim ker(V - lambda I) = {m} < 2"])
    L = _columns(kernel, d)
    perp = _null_space(L.transpose())
    problems = []
    if perp:
        W = _columns(perp, d)
        leak = L.transpose() * exact * W
        if any(leak[i, j] != 0 for i in range(leak.nrows()) for j in range(leak.ncols())):
            problems.append(f"lambda = {lam!r}: V does not map L^perp into L^perp (exact)")
        sym = (exact + exact.transpose()) * fmpq(1, 2)
        M = W.transpose() * (lam_q * identity - sym) * W
        k = M.nrows()
        minors = [fmpq_mat(j, j, [M[a, b] for a in range(j) for b in range(j)]).det() for j in range(1, k + 1)]
        if not all(minor > 0 for minor in minors):
            problems.append(f"lambda = {lam!r}: <Vz, z> < lambda |z|^2 fails on L^perp (a leading minor of "
                            f"W^T (lambda I - sym V) W is <= 0, exact)")
    basis = np.linalg.qr(np.array([[float(x) for x in v] for v in kernel]).T)[0]
    return Eigenspace(not problems, problems, lam, basis, m)


# --- families -------------------------------------------------------------------------------------------------
class KaragodinFamily(Family):
    """A family whose parameter vector has its own layout (``layout(shape)``: part sizes)."""

    def parameters(self, shape: Shape) -> int:
        return sum(_layout(self.claim, shape))


def _layout(claim: str, shape: Shape) -> list[int]:
    l, d = shape.tokens, shape.dim
    if claim == THM15:
        return [d * d, d * d, l * d, 1, d]            # P, S (eigenvectors), y0, scale of P, eigenvalue gaps
    return [d * d, 2 * d * d, l * d, 1, 2]             # P, D's parts (B, K), y0, scale of P, (dim L, lambda)


def _parts(claim: str, theta: np.ndarray, shape: Shape) -> list[np.ndarray]:
    return np.split(np.asarray(theta, float), np.cumsum(_layout(claim, shape))[:-1], axis=1)


def spectrum_matrix(raw_vectors: np.ndarray, raw_gaps: np.ndarray) -> tuple[np.ndarray, float]:
    """V = S diag(lambda) S^{-1} for one instance: S = the raw d x d matrix with unit columns (non-orthogonal
    eigenvectors; its condition number is whatever a Gaussian matrix gives, returned), lambda the cumulative sums of
    gaps MIN_GAP + (1 + tanh z) scaled so that lambda_max = 1 (V's scale only rescales time: h = 1)."""
    d = len(raw_gaps)
    S = np.asarray(raw_vectors, float).reshape(d, d)
    S = S / np.linalg.norm(S, axis=0, keepdims=True)
    spectrum = np.cumsum(MIN_GAP + 1.0 + np.tanh(raw_gaps))
    spectrum = spectrum / spectrum[-1]
    return S @ np.diag(spectrum) @ np.linalg.inv(S), float(np.linalg.cond(S))


def float_spectrum_ok(V: np.ndarray) -> bool:
    """Float64 pre-screen of thm1.5's hypothesis (the exact check is :func:`certified_spectrum`): real positive
    eigenvalues, pairwise 1e-3 apart relative to the largest, top eigenpair accepted by ``top_eigenpair``."""
    e = np.linalg.eigvals(V)
    if np.max(np.abs(e.imag)) > 1e-9 or np.min(e.real) <= 0:
        return False
    r = np.sort(e.real)
    return bool(np.min(np.diff(r)) > 1e-3 * r[-1]) and top_eigenpair(V)[0]


def _decode_thm15(theta: np.ndarray, shape: Shape) -> Batch:
    rawP, rawS, rawy, zP, gaps = _parts(THM15, theta, shape)
    n, d = len(theta), shape.dim
    P = unit_spectral_norm(rawP.reshape(n, 1, d, d)) * bounded_scale(zP, P_MAX)[..., None, None]
    pairs = [spectrum_matrix(rawS[k], gaps[k]) for k in range(n)]
    U = np.stack([V for V, _ in pairs])[:, None]
    valid = np.array([cond <= MAX_CONDITION and float_spectrum_ok(V) for V, cond in pairs])
    return Batch(P, U, onto_sphere(rawy.reshape(n, shape.tokens, d)), valid)


def block_matrix(lam: float, m: int, raw: np.ndarray) -> np.ndarray:
    """V = blockdiag(lam I_m, D) (coordinates with L = span(e_1..e_m): the dynamics is equivariant under rotations
    x -> O x, V -> O V O^T, P -> O P O^T, so this is no loss), D = lam (I - c (B B^T/|B|^2 + 0.05 I)) + k K with
    B, K (skew) from ``raw``: sym(D) - lam I = -lam c (B B^T / |B|^2 + 0.05 I) is negative definite, D is
    non-normal (non-orthogonal eigenvectors) when k != 0."""
    d = int(round(np.sqrt(len(raw) / 2)))
    B = raw[:d * d].reshape(d, d)[m:, m:]
    skew = raw[d * d:].reshape(d, d)[m:, m:]
    k = d - m
    V = np.zeros((d, d))
    V[:m, :m] = lam * np.eye(m)
    if k:
        c = 0.1 + 1.9 * 0.5 * (1 + np.tanh(B[0, 0]))                  # decay strength in (0.1, 2)
        BBt = B @ B.T / max(np.sum(B * B), 1e-300)
        V[m:, m:] = lam * (np.eye(k) - c * (BBt + 0.05 * np.eye(k))) + lam * (skew - skew.T)
    return V


def _decode_thm2(claim: str):
    def decode(theta: np.ndarray, shape: Shape) -> Batch:
        rawP, rawD, rawy, zP, zL = _parts(claim, theta, shape)
        n, d = len(theta), shape.dim
        P = unit_spectral_norm(rawP.reshape(n, 1, d, d)) * bounded_scale(zP, P_MAX)[..., None, None]
        dims = 2 + np.floor((d - 1) * 0.5 * (1 + np.tanh(zL[:, 0])) - 1e-12).astype(int)  # dim L in 2..d
        dims = np.minimum(dims, d)
        lams = np.round(0.5 + 0.5 * (1 + np.tanh(zL[:, 1])), 3)          # lambda in [0.5, 1.5], a round float
        if claim == THM2_PERP:  # L^perp = 0 leaves the reading's limit undefined: dim L in 2..d-1
            dims = np.minimum(dims, d - 1)
        U = np.stack([block_matrix(lams[k], dims[k], rawD[k]) for k in range(n)])[:, None]
        y0 = onto_sphere(rawy.reshape(n, shape.tokens, d))
        first = y0[:, 0]
        # The reading's limit must exist at the start: P_L x_1(0) (or P_{L^perp} x_1(0)) nonzero, L = span(e_1..e_m).
        parts = [first[k, :dims[k]] if claim == THM2_L else first[k, dims[k]:] for k in range(n)]
        valid = np.array([np.linalg.norm(part) > 1e-12 for part in parts]) & (dims >= 2)
        return Batch(P, U, y0, valid)
    return decode


def _hypotheses_thm15(P, U, y0) -> list[str]:
    problems = [] if len(U) == 1 else [f"h = {len(U)}; the conjecture is about one head (CSA)"]
    problems += certified_spectrum(U[0]).problems
    return problems


def _component(U: np.ndarray, y1: np.ndarray, reading: str) -> np.ndarray | None:
    """The claimed limit of reading ``reading`` ("L": normalised P_L x_1; "perp": normalised P_{L^perp} x_1);
    None when V has no such L or the projection vanishes (to 1e-12: float64 rounding of a unit vector)."""
    structure = eigenspace_structure(U)
    if structure.L is None:
        return None
    along = structure.L @ (structure.L.T @ y1)
    target = along if reading == "L" else y1 - along
    norm = np.linalg.norm(target)
    return target / norm if norm > 1e-12 else None


def _start_distance_thm2(reading: str):
    """thm2's conclusion for the starts ``y0``: every token at the reading's normalised component of x_1(0) = y0[:, 0].
    Per instance max_k |x_k - target|, 2 (the sphere's diameter) where the target is undefined; ``U : [n, 1, d, d]``,
    ``y, y0 : [n, l, d]``. The target is taken from the start, not from the state's own token 1: along token 1's
    flow x_1(t) = e^{tV} x_1(0) / |e^{tV} x_1(0)| the direction of P_L x_1(t) is constant (V commutes with P_L), but
    that of P_{L^perp} x_1(t) turns whenever V's block on L^perp is not a multiple of the identity."""
    def distance(P, U, y, y0) -> np.ndarray:
        out = []
        for k in range(len(y)):
            target = _component(U[k][0], y0[k][0], reading)
            out.append(2.0 if target is None else float(np.max(np.linalg.norm(y[k] - target, axis=-1))))
        return np.array(out)
    return distance


def _distance_thm2(reading: str):
    """The distance of states that are their own starts (the seeking search's equilibria):
    :func:`_start_distance_thm2` with y0 = y."""
    start_distance = _start_distance_thm2(reading)

    def distance(P, U, y) -> np.ndarray:
        return start_distance(P, U, y, y)
    return distance


def _hypotheses_thm2(reading: str):
    def hypotheses(P, U, y0) -> list[str]:
        problems = [] if len(U) == 1 else [f"h = {len(U)}; the conjecture is about one head (CSA)"]
        structure = eigenspace_structure(U[0])
        problems += structure.problems
        if structure.ok and _component(U[0], np.asarray(y0)[0], reading) is None:
            problems.append("the claimed limit is undefined at this start (the projection of x_1(0) vanishes)")
        return problems
    return hypotheses


THM15 = "conj.karagodin-thm1.5"
THM2_L = "conj.karagodin-thm2-normalized-component"
THM2_PERP = "conj.karagodin-thm2-perp-projection"
#: Why thm2's searches can certify no witness (``Family.no_witness``): their records are not-run, never supported.
THM2_NO_WITNESS = (
    "no witness of thm2 can be certified by this search: token 1 attends only to itself, so at any equilibrium it is a "
    "unit eigenvector of V; those in L form the unit sphere of L, a continuum (dim L >= 2) along which the Jacobian "
    "is singular, so Krawczyk's test never isolates such a zero (the search declares no symmetry to quotient it out); "
    "those in L^perp are unstable (the tangent eigenvalue along L is lambda - mu > 0, mu < lambda by <Vz, z> < "
    "lambda |z|^2); the Jacobian is block triangular (causal), so no configuration is a certified attractor. What "
    "would settle it: a proof (reading 2 has one, theory.karagodin), or a certifier of the reduced system with token "
    "1 on the sphere of L")


def _distance_thm15(P: np.ndarray, U: np.ndarray, y: np.ndarray) -> np.ndarray:
    """thm1.5's conclusion, every token at +xi or -xi (xi the unit top eigenvector of V = U_1): per instance
    max_k min(|x_k - xi|, |x_k + xi|), 0 at it. ``U : [n, 1, d, d]``, ``y : [n, l, d]``."""
    xi = np.stack([top_eigenpair(u[0])[2] for u in U])[:, None, :]
    return np.max(np.minimum(np.linalg.norm(y - xi, axis=-1), np.linalg.norm(y + xi, axis=-1)), axis=1)

KARAGODIN_FAMILIES: dict[str, Family] = {
    THM15: KaragodinFamily(
        THM15, True, (1,), (2, 3, 4, 6, 8, 12, 16), (2, 3, 4, 6, 8), 200.0,
        "CSA (causal, h = 1; eq. 6 up to the time scale sqrt(d)), l in {2..16}, d in {2..8}; P = beta Q^T K = c G/|G|_2 "
        "(G normal, c in (0, 50)); V = S diag(lambda) S^{-1}, S normal with unit columns (non-orthogonal eigenvectors, "
        "cond(S) <= 1e3), lambda the normalised cumulative sums of gaps 0.05 + (1 + tanh z) (lambda_max = 1); y0 "
        "uniform; hypothesis certified by Arb eigenvalue balls",
        _decode_thm15, _distance_thm15, _hypotheses_thm15),
    THM2_L: KaragodinFamily(
        THM2_L, True, (1,), (2, 3, 4, 6, 8, 12, 16), (3, 4, 6, 8), 200.0,
        "CSA (causal, h = 1), l in {2..16}, d in {3..8}; P = c G/|G|_2 (c in (0, 50)); V = blockdiag(lambda I_m, D), "
        "m = dim L in {2..d}, lambda in [0.5, 1.5], D = lambda (I - c' (B B^T/|B|^2 + 0.05 I)) + lambda (K - K^T) "
        "(non-normal, sym(D) < lambda); y0 uniform; hypotheses decided in exact rational arithmetic",
        _decode_thm2(THM2_L), _distance_thm2("L"), _hypotheses_thm2("L"), start_distance=_start_distance_thm2("L"),
        no_witness=THM2_NO_WITNESS),
    THM2_PERP: KaragodinFamily(
        THM2_PERP, True, (1,), (2, 3, 4, 6, 8), (3, 4, 6, 8), 200.0,
        "as conj.karagodin-thm2-normalized-component; the claimed limit is the normalised P_{L^perp} x_1(0)",
        _decode_thm2(THM2_PERP), _distance_thm2("perp"), _hypotheses_thm2("perp"),
        start_distance=_start_distance_thm2("perp"), no_witness=THM2_NO_WITNESS),
}
