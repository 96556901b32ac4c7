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
* grad.stable-consensus (sec. 3.3 text, P = I; the paper says "linearization ... shows" and gives no proof) is the
  case S = I of the same argument: no change of coordinates, (i) and (ii) as above, with the one machine-checked
  step that (i) needs, dPhi/dt = sum_i Z_i |F_i|^2 >= 0 for P = U = W = I. Scope: d >= 2 (on S^0 every configuration
  is isolated, so trivially asymptotically stable).
* conj.multihead-causal-common (reading B) has a module of its own: theory/multihead_cascade.py.
"""

from __future__ import annotations

import sympy as sp

from foundation.registration import claim_result, named_check
from foundation.records import CheckResult

from .gram import Form
from .gradient import check_potential_monotone
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


@named_check
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


@named_check
def check_stable_consensus_proof(W: Form | None = None, P: Form | None = None) -> CheckResult:
    """grad.stable-consensus, proof (module docstring): with P = U = W = I, Phi = 1/2 sum exp(y_i^T y_j) never decreases
    along (6) (the machine-checked identity dPhi/dt = sum_i Z_i |F_i|^2), so an asymptotically stable equilibrium is a
    local maximum of Phi, and the local maxima are consensus by the cited landscape theorems (exp(beta t), beta = 1).
    ``W`` and ``P`` replace the sphere's I in the identity (a negative control takes W != P: the step fails)."""
    identity = Form("I")
    monotone = check_potential_monotone(W=W or identity, P=P or identity)
    if monotone.verdict != "verified":
        return claim_result("failed", expression=monotone.expression,
                            detail="The step the proof needs, dPhi/dt = sum_i Z_i |F_i|^2 >= 0 along (6), does not hold "
                                   "for the forms given: " + monotone.detail)
    return claim_result(
        "verified", expression=monotone.expression,
        detail="P = U = W = I (h = 1), d >= 2, any l: dPhi/dt = sum_i Z_i |F_i|^2 >= 0 (machine-checked, l = 2 tokens "
               "explicitly, any l through grad.field's pair identities), so (i) an asymptotically stable equilibrium y* "
               "is a local maximum of Phi (a nearby y with Phi(y) > Phi(y*) would flow to y* with Phi non-decreasing); "
               "(ii) every local maximum of sum_{i,j} exp(y_i^T y_j) on (S^{d-1})^l is consensus by "
               f"{CITATIONS}. Conversely, (iii) the consensus set is Phi's set of global maxima (Phi <= l^2 e / 2, equal "
               "exactly when all tokens agree) and a Morse-Bott one (across the set Phi's Hessian is negative definite), "
               "so Phi is a Lyapunov function for it and, by LaSalle, the set is asymptotically stable; a point of it is "
               "not on its own, since rotations move it along the set: 'asymptotically stable' is read for the set, as "
               "the linearisation check reads it (d - 1 neutral directions). The paper's route (linearising at each "
               "equilibrium) is not the one taken; the conclusion is the same. The reduction rests on the cited "
               "theorems and (iii)'s textbook steps, which are not machine-checked here.")
