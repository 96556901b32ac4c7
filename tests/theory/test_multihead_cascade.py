"""The proof of conj.multihead-causal-common (reading B, theory/multihead_cascade.py): its identities and the
sharpness instance, each beside a broken model it must reject, and its comparison inequality in float64 at sampled
states, where a negative-definite P must not matter and a head whose top eigenvector is not v must."""

import numpy as np
import pytest
import sympy as sp
from scipy.linalg import null_space

from foundation.registration import check
from theory.multihead_cascade import check_multihead_common_proof, comparison_margins

#: Float64 rounding of the margins: O(1) sums of l h = 8 products of unit-size terms, so 1e-12 is ~ 5000 ulps.
ROUNDING = 1e-12


def flipped_sign_projection(ellipsoid, point, X):
    return X + point * ellipsoid.metric(point, X)


@check(check_multihead_common_proof)
@pytest.mark.parametrize("heads", [1, 2, 3])
def test_reading_b_proof_holds(record, heads):
    result = check_multihead_common_proof(heads=heads)
    record(result)
    assert result.verdict == "verified" and "FAILS" not in result.expression
    assert result.numbers["antipodal eigenvalues"] == pytest.approx([-11 / np.sqrt(2), -2 * np.sqrt(2)])


@check(check_multihead_common_proof, control=True)
@pytest.mark.parametrize("broken", [
    {"tangent_projection": flipped_sign_projection},  # P_y = I + y y^T: not the tangent projection
    {"symmetric": False},                             # U_eta not symmetric: v^T U x != lambda v^T x
    {"eigenvector": False, "heads": 1},               # v no eigenvector of U_eta (reading A's heads)
    {"comparison_sign": -1},                          # a wrong comparison function
    {"antipodal_heads": (sp.eye(2), sp.eye(2))},      # U = I (Theorem 5.1): -v repels, (v, -v) is not stable
], ids=["projection-sign", "non-symmetric-U", "v-no-eigenvector", "comparison", "identity-values"])
def test_reading_b_proof_rejects_a_broken_model(broken):
    result = check_multihead_common_proof(**broken)
    assert result.verdict == "failed" and "FAILS" in result.expression


def _heads(rng, d, h, v_on_top=True):
    """h random value matrices sharing the unit top eigenvector v (eigenvalue in [0.5, 2], the others at least
    0.1 below), and h scores with a negative-definite symmetric part plus a skew part. ``v_on_top=False`` gives the
    second head an eigenvalue 2 above its v-eigenvalue (H1 broken)."""
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    basis = null_space(v[None])
    U, P = [], []
    for eta in range(h):
        lam = rng.uniform(0.5, 2.0)
        rest = rng.uniform(-3.0, lam - 0.1, d - 1)
        if not v_on_top and eta == 1:
            rest[0] = lam + 2.0
        U.append(lam * np.outer(v, v) + basis @ np.diag(rest) @ basis.T)
        A, S = rng.standard_normal((d, d)), rng.standard_normal((d, d))
        P.append(-(A @ A.T + 0.1 * np.eye(d)) + (S - S.T))
    return P, U, v


def _worst_margin(seed, v_on_top, d=3, l=4, h=2, instances=20, states=10):
    rng = np.random.default_rng(seed)
    worst = np.inf
    for _ in range(instances):
        P, U, v = _heads(rng, d, h, v_on_top)
        for _ in range(states):
            y = rng.standard_normal((l, d))
            y /= np.linalg.norm(y, axis=1, keepdims=True)
            y *= np.sign(y @ v)[:, None]  # into D^l(v)
            worst = min(worst, comparison_margins(P, U, v, y).min())
    return worst


def test_the_comparison_inequality_holds_with_negative_definite_scores():
    """P enters only through the weights' bounds: a negative-definite P changes nothing."""
    assert _worst_margin(seed=36, v_on_top=True) >= -ROUNDING


def test_the_comparison_inequality_fails_when_v_is_not_a_heads_top_eigenvector():
    """Negative control: with y_k^T U_eta y_k > lambda_eta possible, B < 0 and the bound breaks."""
    assert _worst_margin(seed=36, v_on_top=False) < -0.1
