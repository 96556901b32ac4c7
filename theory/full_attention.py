"""Section 4 (long) / 3 (ICML): full attention with U_eta = I (Hypothesis 4.1): the attention bounds
(Lemma 4.1), forward invariance of H+(v)^l, the consensus equilibria, and the Lyapunov function
V(y) = max_i (1 - v^T y_i) (eq. 10) with its upper Dini derivative (Danskin, eq. 9)."""

from __future__ import annotations

import numpy as np
import sympy as sp

import sim
from foundation.registration import named_check
from foundation.records import CheckResult

from .attention import ROOT_D, AttentionField, tokens
from .ellipsoid import Ellipsoid, random_spd
from .gram import Form, vector
from .results import Identity, identities_result, numeric_result

TOKENS, HEADS = 3, 2
EUCLID = Form("I")


def _full_field(heads: int = HEADS, **kwargs) -> AttentionField:
    return AttentionField(ellipsoid=Ellipsoid(), scores=tuple(Form(f"P{eta + 1}", symmetric=False)
                                                            for eta in range(heads)), **kwargs)


def _decomposition(field: AttentionField, y, i, v):
    """sum_eta sum_j alpha_ij^eta [(v^T y_j - v^T y_i) + (v^T y_i) |y_i - y_j|_W^2 / 2]."""
    W = field.ellipsoid.metric
    return sum(field.weight(eta, y, i, j) * ((EUCLID(v, y[j]) - EUCLID(v, y[i]))
                                             + EUCLID(v, y[i]) * W(y[i] - y[j], y[i] - y[j]) / 2)
               for eta in range(len(field.scores)) for j in field.keys(i, len(y)))


@named_check
def check_invariance(l: int = TOKENS, heads: int = HEADS, **field_kwargs) -> CheckResult:
    """full.invariance: at a boundary point of H+(v)^l where v^T y_1 = 0, d/dt (v^T y_1) =
    sum_eta sum_{j >= 2} alpha_1j^eta v^T y_j > 0 (alpha > 0, v^T y_j > 0): the field points inward."""
    field = _full_field(heads, **field_kwargs)
    y, v = tokens(l), vector("v")
    relations = {k: val for a in y for k, val in field.ellipsoid.belongs(a).items()}
    F = field(y)
    boundary = {**relations, EUCLID(v, y[0]): 0}
    inward = sum(field.weight(eta, y, 0, j) * EUCLID(v, y[j]) for eta in range(heads) for j in range(1, l))
    identities = [
        Identity("v^T F_1 = sum_eta sum_{j>=2} alpha_1j^eta v^T y_j  when v^T y_1 = 0", EUCLID(v, F[0]) - inward, boundary),
        Identity("v^T F_i = sum_eta sum_j alpha_ij^eta [(v^T y_j - v^T y_i) + (v^T y_i)|y_i - y_j|_W^2/2]  (any point)",
                 EUCLID(v, F[0]) - _decomposition(field, y, 0, v), relations),
    ]
    return identities_result(
        identities,
        detail=f"Dimension-free in d, l = {l}, h = {heads}, general W and non-symmetric P_eta. At the boundary every "
               "term alpha_1j v^T y_j is > 0 (alpha > 0 by Lemma 4.1, v^T y_j > 0 for tokens inside), so the field "
               "points into H+(v). When several tokens reach the boundary together the sharper form (second identity) "
               "applies: at a token minimising v^T y_i >= 0 every term is >= 0, so min_i v^T y_i never decreases "
               "(this is the Lyapunov argument of full.lyapunov) and H+(v)^l is forward invariant.")


@named_check
def check_equilibria(l: int = TOKENS, heads: int = HEADS, **field_kwargs) -> CheckResult:
    """full.equilibria: at a consensus point y_1 = ... = y_l = y in E_W, every F_i = 0 (any P_eta(t))."""
    field = _full_field(heads, **field_kwargs)
    y = vector("y")
    F = field([y] * l)
    relations = field.ellipsoid.belongs(y)
    return identities_result(
        [Identity(f"F_{i + 1}(y, ..., y) = 0", f, relations) for i, f in enumerate(F)],
        detail=f"Dimension-free, l = {l}, h = {heads}, general W, non-symmetric P_eta: at consensus the drive is "
               "(sum_eta sum_j alpha_ij^eta) y and P_y y = 0.")


@named_check
def check_lyapunov(l: int = TOKENS, heads: int = HEADS, tangent_projection=None) -> CheckResult:
    """full.lyapunov: at an index i maximising V_i = 1 - v^T y_i, dV_i/dt = -sum_eta sum_j alpha_ij^eta
    [(v^T y_j - v^T y_i) + (v^T y_i)|y_i - y_j|_W^2/2]; every bracket term is >= 0 on H+(v)^l, so by Danskin
    D+V = max over maximising i of dV_i/dt <= 0, with equality iff consensus. ``tangent_projection``
    replaces P_y in the field (negative controls)."""
    field = _full_field(heads, tangent_projection=tangent_projection)
    W = field.ellipsoid.metric
    y, v = tokens(l), vector("v")
    relations = {k: val for a in y for k, val in field.ellipsoid.belongs(a).items()}
    F = field(y)
    alpha, yi, yj = sp.Symbol("alpha", positive=True), vector("yi"), vector("yj")
    pair = {**field.ellipsoid.belongs(yi), **field.ellipsoid.belongs(yj)}
    one_term = EUCLID(v, field.project(yi, yj * alpha))
    identities = [
        Identity("one term, any l, h: v^T P_{y_i}(alpha y_j) = alpha[(v^T y_j - v^T y_i) + (v^T y_i)|y_i - y_j|_W^2/2]",
                 one_term - alpha * ((EUCLID(v, yj) - EUCLID(v, yi)) + EUCLID(v, yi) * W(yi - yj, yi - yj) / 2), pair),
        Identity("1 - y_i^T W y_j = |y_i - y_j|_W^2 / 2 on E_W (Cauchy-Schwarz term is a square)",
                 1 - W(yi, yj) - W(yi - yj, yi - yj) / 2, pair),
        *[Identity(f"dV_{i + 1}/dt = -v^T F_{i + 1} = -(sum of the terms above), l = {l}, h = {heads}",
                   -EUCLID(v, F[i]) + _decomposition(field, y, i, v), relations) for i in range(l)],
        Identity("at consensus the sum vanishes (D+V = 0)", _decomposition(field, [y[0]] * l, 0, v),
                 field.ellipsoid.belongs(y[0])),
    ]
    return identities_result(
        identities,
        detail="Danskin (eq. 9): D+V(y) = max over maximising indices i of dV_i/dt. At such i, v^T y_j - v^T y_i >= 0 "
               "(i minimises v^T y), v^T y_i > 0 (H+(v)), |y_i - y_j|_W^2 >= 0 and alpha_ij^eta > 0 (Lemma 4.1): every "
               "term is >= 0, so D+V <= 0. Equality forces |y_i - y_j|_W = 0 for all j (W SPD), i.e. consensus; "
               "conversely the sum vanishes at consensus. Dimension-free in d, general W, non-symmetric P_eta(t).")


@named_check
def lyapunov_spot_check(seed: int = 20250107, d: int = 500, l: int = 12, heads: int = 2, samples: int = 5,
                        W=None, field_metric: str = "W") -> CheckResult:
    """full.lyapunov / full.invariance in d = 500: random configurations in H+(v)^l (random W, P_eta):
    dV_i/dt at the maximising index is < 0 and equals minus the sum of nonnegative terms; at consensus it is 0.
    ``field_metric = "I"`` integrates the field with the sphere's projection on E_W (a negative control)."""
    rng = np.random.default_rng(seed)
    W = random_spd(rng, d, 0.5) if W is None else W
    E = sim.Ellipsoid(W)
    v = E.project(rng.standard_normal(d))
    worst_identity, largest_rate, consensus_rate = 0.0, -np.inf, 0.0
    for _ in range(samples):
        Ps = [rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(heads)]
        y = E.project(rng.standard_normal((l, d)))
        y *= np.sign(y @ v)[:, None]  # reflect into H+(v)
        field = sim.AttentionField(P=Ps, W=W)  # eq. 6 (sim's, the one implementation)
        integrated = field if field_metric == "W" else sim.AttentionField(P=Ps)  # the control: the sphere's P_y
        i = int(np.argmin(y @ v))
        rate = -(v @ integrated(0.0, y)[i])
        alpha = field.attention(0.0, y)[:, i]  # alpha_ij^eta, shape [h, l]
        gaps = y @ v - y[i] @ v
        squares = 0.5 * E.inner_product(y[i], y[i] - y, y[i] - y)
        terms = float(np.sum(alpha @ (gaps + (y[i] @ v) * squares)))
        worst_identity = max(worst_identity, abs(rate + terms))
        largest_rate = max(largest_rate, rate)
        consensus_rate = max(consensus_rate, abs(v @ field(0.0, np.repeat(y[:1], l, 0))[0]))
    return numeric_result(
        {"max |dV_i/dt + sum of terms|": worst_identity, "max |dV/dt| at consensus": consensus_rate,
                          "max(0, largest dV/dt off consensus)": max(0.0, largest_rate)},
        tolerance=1e-12, tolerance_reason="float64 rounding of O(1) sums over 500 coordinates and 12 tokens",
        detail=f"{samples} random configurations of l = {l} tokens in H+(v) (d = {d}, h = {heads}, random W, P_eta): "
               f"largest dV/dt at a maximising index = {largest_rate:.3e} (< 0: strict decrease off consensus).",
        seeds={"lyapunov_spot_check": seed}, numbers={"largest dV/dt": largest_rate})


@named_check
def check_attention_bounds(l: int = 4) -> CheckResult:
    """full.bounds (Lemma 4.1): alpha_ij = exp(s_j)/(r sum_k exp(s_k)) (r = sqrt(n+1), s_k = y_i^T P y_k) is
    increasing in s_j and decreasing in s_k (k != j); with |s_k| <= c it lies in [a, b],
    a = 1/(r (1 + (l-1) e^{2c})), b = 1/(r (1 + (l-1) e^{-2c})), and c = |P|_F / lambda_min(W) bounds |s_k|."""
    s = sp.symbols(f"s1:{l + 1}", real=True)
    c = sp.Symbol("c", positive=True)
    r = ROOT_D
    total = sum(sp.exp(sk) for sk in s)
    alpha = sp.exp(s[0]) / (r * total)
    others = sp.exp(s[1]) / (r * total)
    lower = alpha.subs({s[0]: -c, **{sk: c for sk in s[1:]}})
    upper = alpha.subs({s[0]: c, **{sk: -c for sk in s[1:]}})
    identities = [
        Identity("d alpha_i1 / d s_1 = alpha_i1 (1 - r alpha_i1)  (>= 0 since r alpha <= 1)",
                 sp.diff(alpha, s[0]) - alpha * (1 - r * alpha)),
        Identity("d alpha_i1 / d s_2 = -r alpha_i1 alpha_i2  (<= 0)", sp.diff(alpha, s[1]) + r * alpha * others),
        Identity(f"minimum over |s_k| <= c (s_1 = -c, others c) = 1/(r(1 + (l-1)e^(2c))), l = {l}",
                 lower - 1 / (r * (1 + (l - 1) * sp.exp(2 * c)))),
        Identity(f"maximum over |s_k| <= c (s_1 = c, others -c) = 1/(r(1 + (l-1)e^(-2c))), l = {l}",
                 upper - 1 / (r * (1 + (l - 1) * sp.exp(-2 * c)))),
    ]
    return identities_result(
        identities,
        detail="By the monotonicity (first two identities) the extremes over the box |s_k| <= c are at its corners, "
               "giving 0 < a <= alpha_ij <= b. The score bound: |y_i^T P y_j| <= |P|_2 |y_i| |y_j| <= |P|_F / "
               "lambda_min(W), since |y|^2 <= y^T W y / lambda_min(W) = 1/lambda_min(W) on E_W (checked numerically). "
               "In the causal case the sums run over j <= i <= l, and the same a, b hold.")


@named_check
def bounds_spot_check(seed: int = 20250108, d: int = 500, l: int = 20, samples: int = 10,
                      use_lambda_min: bool = True) -> CheckResult:
    """full.bounds in d = 500: scores |y_i^T P y_j| <= c = |P|_F / lambda_min(W) and all alpha_ij in [a, b],
    on random instances and on the extremal one (P = p e e^T, y_i = e / sqrt(lambda_min), e the eigenvector
    of lambda_min(W)), where |s| = c exactly. ``use_lambda_min=False`` drops the 1/lambda_min(W) factor
    (a negative control)."""
    rng = np.random.default_rng(seed)
    worst_score, worst_alpha = -np.inf, -np.inf
    for k in range(samples + 1):
        # W diagonal with known spectrum (P below is rotation invariant in law, so this loses no generality)
        eigenvalues = rng.uniform(0.01, 1.0, d)
        W = np.diag(eigenvalues)
        lam, e = float(eigenvalues.min()), np.eye(d)[int(np.argmin(eigenvalues))]
        if k < samples:
            P = rng.standard_normal((d, d)) * rng.uniform(0.01, 0.1) / np.sqrt(d)
            y = sim.Ellipsoid(W).project(rng.standard_normal((l, d)))
        else:  # the extremal instance
            P = 0.05 * np.outer(e, e)
            y = np.repeat((e / np.sqrt(lam))[None], l, 0)
        scores = y @ P @ y.T
        c = np.linalg.norm(P) / (lam if use_lambda_min else 1.0)
        alpha = sim.AttentionField(P=(P,)).attention(0.0, y)  # eq. 6's weights, shape [1, l, l]
        a = 1 / (np.sqrt(d) * (1 + (l - 1) * np.exp(2 * c)))
        b = 1 / (np.sqrt(d) * (1 + (l - 1) * np.exp(-2 * c)))
        worst_score = max(worst_score, float(np.abs(scores).max() - c))
        worst_alpha = max(worst_alpha, float(max(a - alpha.min(), alpha.max() - b)))
    return numeric_result(
        {"max(0, |s| - c)": max(worst_score, 0.0), "max(0, violation of a <= alpha <= b)": max(worst_alpha, 0.0)},
        tolerance=1e-10, tolerance_reason="float64 rounding of scores of size up to c ~ 5 (the extremal instance "
                                          "attains |s| = c up to rounding); a violation of a wrong bound is O(c)",
        detail=f"{samples} random (W, P) with lambda_min(W) in [0.01, 1] and {l} tokens on E_W in d = {d}, plus the "
               "extremal instance attaining |s| = c (the bound is sharp)"
               + ("" if use_lambda_min else "; bound WITHOUT the 1/lambda_min(W) factor") + ".",
        seeds={"bounds_spot_check": seed},
        numbers={"max(|s| - c), signed": worst_score, "max alpha violation, signed": worst_alpha})
