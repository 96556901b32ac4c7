"""The instance families of the conjecture searches: one per ``conj.*`` claim, drawn from its hypotheses.

A family turns a vector of standard normal numbers into instances (P, U, y0) that meet the conjecture's
hypotheses by construction (symmetrised U, tokens reflected into D^l(v), ...) or are marked invalid (a top
eigenvalue that is not simple and positive, tokens inside a hemisphere where the conjecture is about tokens
outside). The random stage draws the vectors, the adversarial stage optimises them (``sim.conjectures.search``). Every
instance of a chunk has the same shape (heads h, tokens l, dimension d), drawn from the chunk's generator, so the
chunk integrates as one batch.

``distance(P, U, y)`` measures how far a state is from the conclusion the conjecture claims (0 at it): the
diameter max_ij |y_i - y_j| for "consensus", max_i |y_i - v| for "(v, ..., v)". ``state_margin(U, ys)`` measures
how far inside the claim's hypotheses on the state each state lies (> 0 inside): the one definition that the seeking
search scores equilibria by and the replay of a witness holds its start to.
"""

from __future__ import annotations

import numpy as np

from sim.field.hemisphere import hull_inradius, in_open_hemisphere

# What a family is and the geometry its rules share (re-exported: this module is the searches' public face).
from sim.conjectures.family import (  # noqa: F401
    EIGEN_GAP, P_MAX, Batch, Family, Shape, bounded_scale, certified_top, chunk_seed, exactly_symmetric,
    no_state_hypothesis, onto_sphere, split_theta, symmetric_part, symmetrised, top_eigenpair, unit_spectral_norm)


# --- the distances to the claimed conclusions ----------------------------------------------------------------
def diameter(P: np.ndarray, U: np.ndarray, y: np.ndarray) -> np.ndarray:
    """max_ij |y_i - y_j| per instance, ``y : shape=[n, l, d]`` -> shape=[n] (0 iff consensus)."""
    differences = y[:, :, None, :] - y[:, None, :, :]
    return np.sqrt(np.max(np.sum(differences**2, axis=-1), axis=(1, 2)))


def summed_top_vectors(U: np.ndarray) -> np.ndarray:
    """v of sum_eta U_eta per instance, ``U : shape=[n, h, d, d]`` -> shape=[n, d]."""
    return np.stack([top_eigenpair(u.sum(axis=0))[2] for u in U])


def distance_from_v(P: np.ndarray, U: np.ndarray, y: np.ndarray) -> np.ndarray:
    """max_i |y_i - v| per instance, v the top eigenvector of sum_eta U_eta (0 iff y = (v, ..., v))."""
    v = summed_top_vectors(U)
    return np.max(np.linalg.norm(y - v[:, None, :], axis=-1), axis=1)


def distance_from_plus_minus_v(P: np.ndarray, U: np.ndarray, y: np.ndarray) -> np.ndarray:
    """max_i min(|y_i - v|, |y_i + v|) per instance, v the top eigenvector of sum_eta U_eta (U_1 for the one-head
    value claims): 0 iff every y_i = +v or -v."""
    v = summed_top_vectors(U)[:, None, :]
    return np.max(np.minimum(np.linalg.norm(y - v, axis=-1), np.linalg.norm(y + v, axis=-1)), axis=1)


# --- the families ----------------------------------------------------------------------------------------------
def _decode_multihead(theta: np.ndarray, shape: Shape) -> Batch:
    rawP, rawU, rawy, zP, zU = split_theta(theta, shape)
    P = unit_spectral_norm(rawP) * bounded_scale(zP, P_MAX)[..., None, None]
    U = unit_spectral_norm(symmetric_part(rawU)) * bounded_scale(zU, 2.0)[..., None, None]
    valid = np.array([top_eigenpair(u.sum(axis=0))[0] for u in U])
    y0, inside = _reflected(onto_sphere(rawy), summed_top_vectors(U))
    return Batch(P, U, y0, valid & inside)


def _reflected(y0: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each token of ``y0 : shape=[n, l, d]`` reflected into D^l(v) (uniform on it when y0 is uniform), ``v :
    shape=[n, d]``; and whether each instance lies strictly inside, shape=[n]."""
    signs = np.sign(np.einsum("nld,nd->nl", y0, v))
    y0 = y0 * np.where(signs == 0, 1.0, signs)[..., None]
    return y0, np.all(np.einsum("nld,nd->nl", y0, v) > 0, axis=1)


def _multihead_problems(P, U) -> list[str]:
    """What the multi-head readings ask of the heads before their eigenvectors: h >= 2, every U_eta symmetric."""
    problems = []
    if len(P) < 2:
        problems.append(f"h = {len(P)} heads; the conjecture is about h >= 2")
    if not all(exactly_symmetric(u) for u in U):
        problems.append("some U_eta is not symmetric (entry by entry, exactly)")
    return problems


def _hypotheses_multihead(P, U, y0) -> list[str]:
    problems = _multihead_problems(P, U)
    ok, lam, v = top_eigenpair(np.sum(U, axis=0))
    exact = certified_top(U)
    if not ok or exact:
        problems.append(f"the top eigenvalue of sum_eta U_eta ({lam:.3g}) is not simple and positive"
                        + (f" ({exact})" if exact else ""))
    elif np.any(y0 @ v <= 0):
        problems.append("y0 is not in D^l(v) (some v^T y_i <= 0)")
    return problems


#: Tolerance of the float64 test of a common top eigenvector (:func:`_common_top`). The decoder's heads Q diag Q^T
#: share v exactly before rounding; after it, | |w_eta^T v| - 1 | is the dot product's rounding (~1e-16) plus the
#: square of the eigenvectors' angle error (~(1e-16 |U| / gap)^2, gap > ``EIGEN_GAP``): 1e-9 is far above both. No
#: exact test is made (a float64 matrix rarely has a float64 eigenvector exactly).
COMMON_TOP = 1e-9


def _decode_multihead_common(theta: np.ndarray, shape: Shape) -> Batch:
    rawP, rawU, rawy, zP, zU = split_theta(theta, shape)
    P = unit_spectral_norm(rawP) * bounded_scale(zP, P_MAX)[..., None, None]
    basis = np.linalg.qr(rawU[:, 0])[0]                                  # [n, d, d]; v = first column
    tops = bounded_scale(zU, 2.0)                                                # [n, h], the top eigenvalues
    others = tops[..., None] * np.tanh(rawU[:, :, 0, 1:])                # [n, h, d-1], each below its top
    spectra = np.concatenate([tops[..., None], others], axis=-1)
    U = symmetrised(np.einsum("nde,nhe,nfe->nhdf", basis, spectra, basis))  # Q diag Q^T per head
    valid = np.array([_common_top(u) is not None for u in U])
    y0, inside = _reflected(onto_sphere(rawy), summed_top_vectors(U))  # the sum's v is the common v, signed alike
    return Batch(P, U, y0, valid & inside)


def _common_top(U: np.ndarray) -> np.ndarray | None:
    """v when every U_eta's top eigenvalue is simple and positive with the same eigenvector +-v, else None; v is
    the top eigenvector of sum_eta U_eta, signed as the decoder's reflection and ``distance_from_v`` sign it (two
    heads' own vectors can be signed oppositely when v's first entry is near 0).

    Decided in float64, not exactly: every head's top eigenvector w_eta has | |w_eta^T v| - 1 | < ``COMMON_TOP``,
    so heads whose top eigenvectors are up to sqrt(2e-9) ~ 4.5e-5 rad apart pass (the family's heads share v
    exactly before the float64 products Q diag Q^T round it)."""
    v = summed_top_vectors(U[None])[0]
    heads = [top_eigenpair(u) for u in U]
    if all(ok and abs(abs(w @ v) - 1) < COMMON_TOP for ok, _, w in heads):
        return v
    return None


def _hypotheses_multihead_common(P, U, y0) -> list[str]:
    problems = _multihead_problems(P, U)
    if problems:  # the common eigenvector is only defined for symmetric heads
        return problems
    v = _common_top(U)
    exact = [f"head {eta + 1}: {problem}" for eta, u in enumerate(U) if (problem := certified_top(u))]
    if v is None or exact:
        # the common eigenvector itself is compared in float64 (COMMON_TOP, _common_top); each head's top
        # eigenvalue being simple and positive is certified in balls
        problems.append("the heads' top eigenvectors are not one common v (float64: | |w_eta^T v| - 1 | < "
                        f"{COMMON_TOP:g}) with simple positive eigenvalues (certified in balls)"
                        + (f" ({'; '.join(exact)})" if exact else ""))
    elif np.any(y0 @ v <= 0):
        problems.append("y0 is not in D^l(v) (some v^T y_i <= 0)")
    return problems


def _decode_value(theta: np.ndarray, shape: Shape) -> Batch:
    rawP, rawU, rawy, zP, _ = split_theta(theta, shape)
    P = unit_spectral_norm(rawP) * bounded_scale(zP, P_MAX)[..., None, None]
    U = unit_spectral_norm(rawU)  # the scale of U only rescales time (h = 1)
    valid = np.array([top_eigenpair(u[0])[0] for u in U])
    return Batch(P, U, onto_sphere(rawy), valid)


def _hypotheses_value(P, U, y0) -> list[str]:
    problems = []
    if len(P) != 1:
        problems.append(f"h = {len(P)}; the conjecture is about one head")
    ok, lam, _ = top_eigenpair(U[0])
    exact = certified_top(U[0])
    if not ok or exact:
        problems.append(f"U's eigenvalue of largest real part ({lam:.3g}) is not real, simple and positive"
                        + (f" ({exact})" if exact else ""))
    if np.array_equal(U[0], np.eye(len(U[0]))):
        problems.append("U = I (Theorems 5.1 and 4.1's case; the conjecture is about U != I)")
    return problems


def _decode_gradient(theta: np.ndarray, shape: Shape) -> Batch:
    # Hypothesis 3.1 with W = P: z = P^{1/2} y maps E_P to the sphere, metric (7) and potential (8) to those of
    # P = U = W = I (the check is `gradient_isometry` in tests), so every instance is P = U = I on the sphere.
    _, _, rawy, _, _ = split_theta(theta, shape)
    n, d = len(theta), shape.dim
    eye = np.broadcast_to(np.eye(d), (n, 1, d, d)).copy()
    return Batch(eye, eye.copy(), onto_sphere(rawy), np.ones(n, dtype=bool))


def _hypotheses_gradient(P, U, y0) -> list[str]:
    d = P.shape[-1]
    if len(P) != 1 or not np.array_equal(P[0], np.eye(d)) or not np.array_equal(U[0], np.eye(d)):
        return ["the instance is not P = U = I (the image of Hypothesis 3.1 under z = P^{1/2} y)"]
    return []


def _decode_gradient_value(theta: np.ndarray, shape: Shape) -> Batch:
    rawP, _, rawy, zP, _ = split_theta(theta, shape)
    P = unit_spectral_norm(symmetric_part(rawP)) * bounded_scale(zP, P_MAX)[..., None, None]
    return Batch(P, P.copy(), onto_sphere(rawy), np.ones(len(theta), dtype=bool))


def _hypotheses_gradient_value(P, U, y0) -> list[str]:
    problems = []
    if len(P) != 1:
        problems.append(f"h = {len(P)}; the gradient case has one head")
    if not exactly_symmetric(P[0]):
        problems.append("P is not symmetric (entry by entry, exactly)")
    if not np.array_equal(U[0], P[0]):
        problems.append("U != P (the gradient condition W U = P with W = I)")
    return problems


def _decode_nonsymmetric(theta: np.ndarray, shape: Shape) -> Batch:
    rawP, _, rawy, zP, _ = split_theta(theta, shape)
    n, d = len(theta), shape.dim
    P = unit_spectral_norm(rawP) * bounded_scale(zP, P_MAX)[..., None, None]
    U = np.broadcast_to(np.eye(d), P.shape).copy()
    y0 = onto_sphere(rawy)
    # The last token opposite the others' sum (plus noise), so that most draws lie in no open hemisphere (with
    # l <= d uniform tokens always do, Wendel); the float64 LP of sim.field.hemisphere then decides (margin 1e-10).
    y0[:, -1] = onto_sphere(-y0[:, :-1].sum(axis=1) + 0.5 * rawy[:, -1])
    valid = np.array([not in_open_hemisphere(y) for y in y0])
    return Batch(P, U, y0, valid)


def _hypotheses_nonsymmetric(P, U, y0) -> list[str]:
    problems = []
    if any(not np.array_equal(u, np.eye(len(u))) for u in U):
        problems.append("U != I")
    if all(exactly_symmetric(p) for p in P):
        problems.append("every P_eta is symmetric (the claim is about non-symmetric P, outside the gradient case)")
    if in_open_hemisphere(y0):
        problems.append("y0 lies in an open hemisphere (Theorem 4.1's case, not the conjecture's)")
    return problems


#: The attractive family: sym(P_eta) = c_eta (M M^T / |M M^T|_2 + FLOOR I) / (1 + FLOOR), so its least eigenvalue is
#: at least c_eta FLOOR / (1 + FLOOR) (positive definite with a margin far above float64 rounding), c in (0, 20); the
#: skew part k_eta K_eta / |K_eta|_2 with k in (0, SKEW_MAX): up to twice the symmetric scale, so rotation can dominate.
FLOOR = 0.05
SKEW_MAX = 40.0


def _decode_attractive(theta: np.ndarray, shape: Shape) -> Batch:
    rawP, rawK, rawy, zP, zK = split_theta(theta, shape)
    d = shape.dim
    gram = np.einsum("nhij,nhkj->nhik", rawP, rawP)
    S = (unit_spectral_norm(gram) + FLOOR * np.eye(d)) / (1.0 + FLOOR) * bounded_scale(zP, P_MAX)[..., None, None]
    K = unit_spectral_norm(rawK - np.swapaxes(rawK, -1, -2)) * bounded_scale(zK, SKEW_MAX)[..., None, None]
    batch = _decode_nonsymmetric(theta, shape)  # U = I and y0 in no open hemisphere, as conj.nonsymmetric-full
    P = symmetrised(S) + K
    valid = batch.valid & np.array([not attractive_problems(p) for p in P])
    return Batch(P, batch.U, batch.y0, valid)


def certified_positive_definite(S: np.ndarray) -> bool:
    """Whether the symmetric part (S + S^T) / 2 of ``S : shape=[d, d]`` (float64 entries, taken exactly) is positive
    definite, decided in exact rational arithmetic (python-flint fmpq_mat): every leading principal minor > 0
    (Sylvester's criterion; no rounding, no tolerance)."""
    from fractions import Fraction

    from flint import fmpq, fmpq_mat

    S = np.asarray(S, float)
    d = len(S)

    def exact(x: float) -> fmpq:
        f = Fraction(float(x))
        return fmpq(f.numerator, f.denominator)

    sym = [[(exact(S[i, j]) + exact(S[j, i])) / 2 for j in range(d)] for i in range(d)]
    return all(fmpq_mat(k, k, [sym[i][j] for i in range(k) for j in range(k)]).det() > 0 for k in range(1, d + 1))


def attractive_problems(P: np.ndarray) -> list[str]:
    """What keeps the heads ``P : shape=[h, d, d]`` (or one head [d, d]) from "sym(P_eta) positive definite for
    every eta (certified, exact rationals), skew(P_eta) != 0 for some eta (exact)"."""
    P = np.asarray(P, float)
    P = P[None] if P.ndim == 2 else P
    problems = [f"sym(P_{eta + 1}) is not certified positive definite (exact leading minors)"
                for eta, p in enumerate(P) if not certified_positive_definite(p)]
    if all(exactly_symmetric(p) for p in P):
        problems.append("skew(P_eta) = 0 for every head: P is symmetric (the gradient case of Hypothesis 3.1, "
                        "conj.gradient-equilibria), not the question")
    return problems


def _hypotheses_attractive(P, U, y0) -> list[str]:
    problems = [p for p in _hypotheses_nonsymmetric(P, U, y0) if not p.startswith("every P_eta is symmetric")]
    return problems + attractive_problems(P)


def margin_in_cone(U: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """min_i v^T y_i for each state of ``ys : shape=[N, l, d]`` (> 0 exactly in D^l(v)), shape=[N], v the top
    eigenvector of sum_eta U_eta (``U : shape=[h, d, d]``); -inf for every state when that eigenvalue is not simple
    and positive (there is no D^l(v) to lie in)."""
    ok, _, v = top_eigenpair(np.sum(U, axis=0))
    return np.min(ys @ v, axis=-1) if ok else np.full(len(ys), -np.inf)


def margin_in_no_hemisphere(U: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """The inradius around 0 of each state's convex hull (``sim.field.hemisphere.hull_inradius``), shape=[N] for
    ``ys : shape=[N, l, d]``: > 0 when the tokens lie in no closed hemisphere, with that much room to move them."""
    return np.array([hull_inradius(y) for y in ys])


#: Each searched conjecture's family, by its claim (``Family.claim``).
FAMILIES: dict[str, Family] = {family.claim: family for family in (
    Family(
        "conj.multihead-causal", True, (2, 3), (2, 3, 4, 5), (2, 3, 4), 200.0,
        "causal, h in {2, 3} heads, l in {2..5} tokens on S^{d-1}, d in {2, 3, 4}; P_eta = c_eta G_eta/|G_eta|_2 "
        "(G normal, c in (0, 20)); U_eta = s_eta S_eta/|S_eta|_2 (S symmetrised normal, s in (0, 2)), kept when the "
        "top eigenvalue of sum_eta U_eta is simple and positive; y0 uniform on D^l(v)",
        _decode_multihead, distance_from_v, _hypotheses_multihead, margin_in_cone, value_rule="symmetric"),
    Family(
        "conj.multihead-causal-common", True, (2, 3), (2, 3, 4, 5), (2, 3, 4), 200.0,
        "causal, h in {2, 3}, l in {2..5}, d in {2, 3, 4}; P_eta as conj.multihead-causal; U_eta = Q diag(s_eta, "
        "s_eta tanh(g)) Q^T with one orthogonal Q for all heads (v = Q e_1 the common top eigenvector, s in (0, 2); "
        "that the heads share it is checked in float64 to 1e-9, not exactly); y0 uniform on D^l(v)",
        _decode_multihead_common, distance_from_v, _hypotheses_multihead_common, margin_in_cone),
    Family(
        "conj.value-causal", True, (1,), (2, 3, 4, 5), (2, 3, 4), 200.0,
        "causal, h = 1, l in {2..5} tokens on S^{d-1}, d in {2, 3, 4}; P = c G/|G|_2 (G normal, c in (0, 20)); "
        "U = G'/|G'|_2 (normal, not symmetrised), kept when its eigenvalue of largest real part is real, simple "
        "and positive; y0 uniform on (S^{d-1})^l",
        _decode_value, diameter, _hypotheses_value, value_rule="top-real"),
    Family(
        "conj.value-full", False, (1,), (2, 3, 4, 5), (2, 3, 4), 200.0,
        "full attention, otherwise as conj.value-causal", _decode_value, diameter, _hypotheses_value,
        value_rule="top-real"),
    Family(
        "conj.value-causal-antipodal", True, (1,), (2, 3, 4, 5), (2, 3, 4), 200.0,
        "as conj.value-causal; the claimed outcome is every token at +v or -v", _decode_value,
        distance_from_plus_minus_v, _hypotheses_value),
    Family(
        "conj.value-full-antipodal", False, (1,), (2, 3, 4, 5), (2, 3, 4), 200.0,
        "as conj.value-full; the claimed outcome is every token at +v or -v", _decode_value,
        distance_from_plus_minus_v, _hypotheses_value),
    Family(
        "conj.gradient-equilibria", False, (1,), (2, 3, 4, 5, 6, 7, 8), (2, 3, 4), 200.0,
        "Hypothesis 3.1 with W = P (h = 1, U = I, P SPD): mapped by z = P^{1/2} y onto P = U = W = I on the "
        "sphere (an isometry of the metric (7) and the potential (8)), l in {2..8}, d in {2, 3, 4}, z0 uniform",
        _decode_gradient, diameter, _hypotheses_gradient),
    Family(
        "conj.gradient-value", False, (1,), (2, 3, 4, 5), (2, 3, 4), 200.0,
        "W = I, U = P = c S/|S|_2 (S symmetrised normal, indefinite allowed, c in (0, 20)), h = 1, full attention, "
        "l in {2..5}, d in {2, 3, 4}, y0 uniform",
        _decode_gradient_value, diameter, _hypotheses_gradient_value, value_rule="equal-P"),
    Family(
        "conj.nonsymmetric-full", False, (1, 2), (4, 5, 6, 7, 8), (2, 3), 200.0,
        "full attention, U = I, h in {1, 2}, P_eta = c_eta G_eta/|G_eta|_2 (G normal: non-symmetric, with "
        "rotation parts; c in (0, 20)), l in {4..8} tokens (l > d: fewer lie in a hemisphere), d in {2, 3}; y0 on (S^{d-1})^l, kept when "
        "the tokens lie in no open hemisphere (float64 LP: no direction with margin > 1e-10; not exact); the last "
        "token is drawn opposite the others' sum (plus "
        "noise 0.5 N(0, I), normalised) so that most draws qualify",
        _decode_nonsymmetric, diameter, _hypotheses_nonsymmetric, margin_in_no_hemisphere, value_rule="identity"),
    Family(
        "conj.nonsymmetric-attractive", False, (1, 2), (4, 5, 6, 7, 8), (2, 3), 200.0,
        "full attention, U = I, h in {1, 2}, P_eta = S_eta + K_eta: S_eta = c_eta (M M^T/|M M^T|_2 + 0.05 I)/1.05 "
        "(M normal; symmetric positive definite, attractive, c in (0, 20)), K_eta = k_eta (G - G^T)/|G - G^T|_2 "
        "(G normal; skew, k in (0, 40)); kept when sym(P_eta) is positive definite in exact rational arithmetic "
        "(leading minors) and some skew(P_eta) != 0; l in {4..8}, d in {2, 3}; y0 as conj.nonsymmetric-full "
        "(in no open hemisphere, the same float64 LP)",
        _decode_attractive, diameter, _hypotheses_attractive, margin_in_no_hemisphere),
)}


def get_family(claim: str) -> Family:
    """The family of ``claim``; a clear error naming the known conjecture ids otherwise."""
    try:
        return FAMILIES[claim]
    except KeyError:
        raise KeyError(f"claim {claim!r} has no search; conjecture claims with a search: "
                       f"{', '.join(FAMILIES)}") from None


# The conjectures the paper cites (Karagodin et al.): their families, with their own parameter layouts and exact
# hypotheses (sim.conjectures.karagodin, built on sim.conjectures.family).
from sim.conjectures.karagodin import KARAGODIN_FAMILIES  # noqa: E402

FAMILIES.update(KARAGODIN_FAMILIES)
