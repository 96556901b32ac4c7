"""Proofs where they exist: the open questions (``conj.*``) that reduce to identities and cited theorems.

* conj.gradient-equilibria (Hypothesis 3.1 with the reconstructed W = P): z = S y with S = P^{1/2} maps E_P onto
  the sphere, the field (6) onto the field of P = U = W = I and the potential (8) onto
  Phi(z) = 1/2 sum_ij exp(z_i^T z_j) (the identities below, for a symbolic symmetric S). Then:
  (i) an asymptotically stable equilibrium z* of a flow along which Phi never decreases (grad.convergence) is a
  local maximum of Phi: a point z near z* with Phi(z) > Phi(z*) would flow to z* with Phi(z(t)) >= Phi(z) > Phi(z*),
  a contradiction; (ii) every local maximum of sum_{i<j} phi(z_i^T z_j) on (S^{d-1})^l, phi = exp (increasing,
  convex, complete interaction graph) is consensus: for d >= 3 by Markdahl, Thunberg, Goncalves, "Almost global
  consensus on the n-sphere", IEEE TAC 63(6), 2018; for d = 2 (the circle) by Criscitiello, Rebjock, McRae, Boumal,
  "Synchronization on circles and spheres with nonlinear interactions" (arXiv 2405.18273), whose abstract states
  synchronisation "for exponential phi with beta in (0, 1]" (here beta = 1). "Synchronises" is a landscape
  statement there (every second-order critical point is synchronised), and a local maximum is one. The metric (7)
  plays no part: local maxima do not depend on it.
* conj.multihead-causal-common (reading B): with U_eta v = lambda_eta v for every head, the paper's scalar argument
  carries over token by token: the first token obeys dy_1/dt = d^{-1/2} P_{y_1} (sum_eta U_eta) y_1 (Lemma 5.2 with
  U = sum_eta U_eta, whose top eigenvector is v), and a later token i, the earlier ones at v, has
  z = v^T y_i obeying dz/dt = sum_eta [a_eta lambda_eta (1 - z^2) + alpha_ii^eta z (lambda_eta - y_i^T U_eta y_i)]
  with a_eta = sum_{j<i} alpha_ij^eta > 0 (Lemma 4.1): both terms are >= 0 for z in (0, 1], so V_i = 1 - z
  decreases strictly on D(v) minus v. The cascade from "earlier tokens at v" to "earlier tokens converging to v" is
  the paper's own step in Theorem 5.2's proof and is not machine-checked here: a partial proof, not a proof.
"""

from __future__ import annotations

import sympy as sp

from foundation.registration import check, claim_result
from foundation.records import CheckResult

from .results import is_zero, render

CITATIONS = ("Markdahl, Thunberg, Goncalves, Almost global consensus on the n-sphere, IEEE TAC 63(6) 2018 (d >= 3); "
             "Criscitiello, Rebjock, McRae, Boumal, Synchronization on circles and spheres with nonlinear "
             "interactions, arXiv 2405.18273, exponential phi with beta in (0, 1] (d = 2)")


def _symmetric(d: int, name: str) -> sp.Matrix:
    return sp.Matrix(d, d, lambda i, j: sp.Symbol(f"{name}{min(i, j)}{max(i, j)}", real=True))


def _vector(d: int, name: str) -> sp.Matrix:
    return sp.Matrix(d, 1, lambda i, _: sp.Symbol(f"{name}{i}", real=True))


def conjugacy_residuals(d: int, root=None) -> dict[str, sp.Matrix]:
    """Residuals (lhs - rhs, 0 when the identity holds) of z = S y conjugating Hypothesis 3.1 (U = I, W = P = S^2)
    to P = U = W = I, for a symbolic symmetric ``root`` S (d x d)."""
    S = _symmetric(d, "s") if root is None else root
    P = S * S
    y, x = _vector(d, "y"), _vector(d, "x")
    projection_y = sp.eye(d) - y * y.T * P                      # P_y = I - y y^T W with W = P
    projection_z = sp.eye(d) - (S * y) * (S * y).T              # the sphere's P_z
    return {"S P_y = P_{Sy} S (the tangent projections)": S * projection_y - projection_z * S,
            "y^T P x = (S y)^T (S x) (scores, potential, E_P -> sphere)": (y.T * P * x) - (S * y).T * (S * x)}


@check("conj.gradient-equilibria", method="proof")
def check_gradient_equilibria_proof(root=None, dims: tuple[int, ...] = (2, 3)) -> CheckResult:
    """The reduction of conj.gradient-equilibria to cited theorems (module docstring); ``root`` replaces the
    symbolic S (a negative control passes a non-symmetric one)."""
    lines, failing = [], []
    for d in dims:
        for name, residual in conjugacy_residuals(d, root if root is None or root.shape[0] == d else None).items():
            reduced = sp.simplify(sp.expand(residual))
            ok = is_zero(reduced)
            failing += [] if ok else [f"d = {d}: {name}"]
            lines.append(f"[{'holds' if ok else 'FAILS'}] d = {d}: {name}; residual {render(reduced)}")
    detail = ("z = P^{1/2} y conjugates Hypothesis 3.1 (W = P) to P = U = W = I on the sphere (identities for a "
              "symbolic symmetric P^{1/2}, d = 2, 3); an asymptotically stable equilibrium of a flow along which Phi "
              "never decreases is a local maximum of Phi; local maxima of sum exp(z_i^T z_j) are consensus by "
              f"{CITATIONS}; here beta = 1. Scope: the reconstructed W = P (with another W the conjugacy fails, "
              "grad.field's W = P necessity check).")
    if failing:
        return claim_result("failed", detail=f"the conjugacy identities fail: {'; '.join(failing)}",
                            expression="\n".join(lines))
    return claim_result("verified", detail=detail, expression="\n".join(lines))


def multihead_common_residual(heads: int = 2, d: int = 3, mixing: sp.Expr = sp.Integer(0)) -> sp.Expr:
    """dz/dt - (the claimed form) for z = v^T y_i, earlier tokens at v, U_eta v = lambda_eta v, U_eta symmetric:
    lhs from eq. 6 with the weights a_eta (earlier tokens, summed) and w_eta (token i itself) as symbols.
    ``mixing`` couples v to the next coordinate in every U_eta (v then no eigenvector: reading A's situation)."""
    y = _vector(d, "y")
    lhs = sp.Integer(0)
    rhs = sp.Integer(0)
    for eta in range(heads):
        # U_eta = lambda v v^T + R with R v = 0, R symmetric: v = e_0, R on the other coordinates
        lam = sp.Symbol(f"lambda{eta}", positive=True)
        rest = _symmetric(d - 1, f"r{eta}_")
        U = sp.diag(lam, rest)
        U[0, 1] = U[1, 0] = mixing
        a, w = sp.Symbol(f"a{eta}", positive=True), sp.Symbol(f"w{eta}", positive=True)
        v = sp.Matrix([1] + [0] * (d - 1))
        pull = a * U * v + w * U * y                              # sum_j alpha_ij U y_j, earlier tokens at v
        velocity = pull - y * (y.T * pull)[0]                      # P_{y_i} with |y_i| = 1
        lhs += (v.T * velocity)[0]
        z = y[0]
        rhs += a * lam * (1 - z**2) + w * z * (lam - (y.T * U * y)[0])
    sphere = {y[0] ** 2: 1 - sum(c**2 for c in y[1:])}
    return sp.expand(sp.expand(lhs - rhs).subs(sphere))


@check("conj.multihead-causal-common", method="symbolic")
def check_multihead_common_scalar(heads: int = 2, d: int = 3, mixing: sp.Expr = sp.Integer(0)) -> CheckResult:
    """The per-token scalar equation of reading B (module docstring): a partial proof, so ``supported``."""
    residual = multihead_common_residual(heads, d, mixing)
    if not is_zero(sp.simplify(residual)):
        return claim_result("failed", detail="the per-token scalar equation of reading B does not hold",
                            expression=render(residual))
    return claim_result(
        "supported",
        detail=("Partial proof, symbolic (h = 2, d = 3): with earlier tokens at v, z = v^T y_i obeys "
                "dz/dt = sum_eta [a_eta lambda_eta (1 - z^2) + alpha_ii^eta z (lambda_eta - y_i^T U_eta y_i)], both "
                "terms >= 0 on (0, 1], so 1 - z is a strict Lyapunov function on D(v) - {v}; the first token is "
                "Lemma 5.2 with U = sum_eta U_eta. Not checked: the cascade to earlier tokens that only converge to v "
                "(Theorem 5.2's own step). Reading A (v of the sum) breaks at v^T U_eta y_i = lambda_eta z and is "
                "refuted by witnesses."),
        expression=f"residual of the scalar equation: {render(residual)}")
