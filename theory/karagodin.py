"""The results of Karagodin, Polyanskiy, Rigollet ("Clustering in causal attention masking", arXiv 2411.04990v2) that
the paper cites, reduced and checked symbolically (SymPy) with ball arithmetic (Arb) where a sign decides.

CSA dynamics: x_k on the unit sphere, alpha_kj = exp(beta <Q x_k, K x_j>) / sum_{i <= k} exp(beta <Q x_k, K x_i>)
for j <= k (rows summing to 1), dx_k/dt = P_{x_k}(sum_j alpha_kj V x_j), P_x = I - x x^T. With P = beta Q^T K and
U = V it is eq. 6 (h = 1, causal) times sqrt(d), eq. 6's rows summing to 1/sqrt(d): a constant change of time.

* causal.karagodin-thm1 (their Theorem 1, V = I): the identity CSA = sqrt(d) eq. 6 and the first token's fixity,
  then Theorem 5.1 (causal.identity: consensus asymptotically stable, domain containing the conull set
  {y_j != -y_1, j >= 2}, h >= 1, P bounded) gives it: every token converges to x_1(0) for almost any start.
* conj.karagodin-thm2-perp-projection (reading 2 of their thm2): the first token attends only to itself, so
  dx_1/dt = P_{x_1}(V x_1), solved by x_1(t) = e^{tV} x_1(0) / |e^{tV} x_1(0)| (identity below). Under thm2's
  hypotheses V = lambda on L and V maps L^perp to itself with <Vz, z> < lambda |z|^2, so
  |e^{tV} b| <= e^{mu t} |b| (d/dt |w|^2 = 2 <Vw, w> <= 2 mu |w|^2, mu < lambda the largest eigenvalue of the
  symmetric part on L^perp) while e^{tV} a = e^{lambda t} a for a in L: x_1(t) -> a / |a|, the normalised
  L-component (reading 1's limit for the first token), orthogonal to reading 2's b / |b|. For every start with
  a != 0 and b != 0 (an open set of full measure) token 1 ends at distance sqrt(2) from reading 2's limit: reading 2
  is false. (It is consistent with reading 1; the other tokens are what reading 1 is about.)
* conj.karagodin-thm1.5 at d = 2, l = 2: with x_1 at xi (its limit for almost every start: the projective flow of V
  with a simple top eigenvalue), token 2 at angle theta obeys a scalar ODE theta' = f(theta). The Jacobian at an
  equilibrium (xi, x_2*) is block triangular (causal): token 1's block is lambda_2 - lambda_1 < 0 (d = 2), token 2's
  is f'(theta*). The instance V = [[2, -1], [0, 1]] (eigenvalues 2, 1; eigenvectors e_1, (1, 1)/sqrt(2), not
  orthogonal), P = beta Q^T K = [[0, 0], [1, 2]] has, by Arb, f > 0 at theta_a, f < 0 at theta_b and f' < 0 on
  [theta_a, theta_b]: a unique zero there, asymptotically stable, with token 2 away from +-xi. Its basin is open, so
  a set of initialisations of positive measure does not end in {xi, -xi}: thm1.5 is false at d = 2, l = 2.
"""

from __future__ import annotations

import sympy as sp
from flint import arb, ctx

from foundation.registration import claim_result, holding, named_check
from foundation.records import CheckResult

from .results import is_zero, render

#: The d = 2 instance of the thm1.5 check: exact dyadic entries (stored exactly as floats, as in the witness).
THM15_V = ((2, -1), (0, 1))
THM15_P = ((0, 0), (1, 2))
#: The bracket [theta_a, theta_b] (radians, exact rationals) around the stable zero theta* ~ 1.966 of f.
THM15_BRACKET = (sp.Rational(195, 100), sp.Rational(198, 100))
#: Sub-balls of the bracket on which f' is enclosed (the union covers it: the radius is padded by 1e-6 relative).
PIECES = 32
#: Arb working precision (bits): twice float64.
PRECISION = 106


def _unit_vector(d: int, name: str) -> sp.Matrix:
    return sp.Matrix(d, 1, lambda i, _: sp.Symbol(f"{name}{i}", real=True))


def csa_field(xs: list[sp.Matrix], V: sp.Matrix, scores) -> list[sp.Matrix]:
    """CSA's field for tokens ``xs`` (assumed unit), ``scores(k, j)`` = beta <Q x_k, K x_j>: rows summing to 1."""
    fields = []
    for k, x in enumerate(xs):
        weights = [sp.exp(scores(k, j)) for j in range(k + 1)]
        total = sum(weights)
        drive = sum((w / total * (V * xs[j]) for j, w in enumerate(weights)), sp.zeros(len(x), 1))
        fields.append(drive - (x.T * drive)[0] * x)
    return fields


@named_check
def check_thm1_reduction(d: int = 3, tokens: int = 3, scale=None) -> CheckResult:
    """CSA with V = I equals sqrt(d) x eq. 6 with U = I, P = beta Q^T K (``scale`` replaces sqrt(d): a negative
    control passes 1), and the first token is fixed; Theorem 5.1 then gives their Theorem 1."""
    scale = sp.sqrt(d) if scale is None else scale
    xs = [_unit_vector(d, f"x{k}_") for k in range(tokens)]
    Q = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"q{i}{j}", real=True))
    K = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"k{i}{j}", real=True))
    beta = sp.Symbol("beta", nonnegative=True)
    P = beta * Q.T * K
    lines, failing = [], []
    # the scores: beta <Q x_k, K x_j> = x_k^T P x_j (polynomial identity)
    for k in range(tokens):
        for j in range(k + 1):
            if sp.expand(beta * ((Q * xs[k]).T * (K * xs[j]))[0] - (xs[k].T * P * xs[j])[0]) != 0:
                failing.append(f"score ({k + 1}, {j + 1})")
    lines.append(f"[{'FAILS' if failing else 'holds'}] beta <Q x_k, K x_j> = x_k^T (beta Q^T K) x_j")
    # the fields, with the (equal) exponentials of the scores as symbols w_kj
    w = {(k, j): sp.Symbol(f"w{k}{j}", positive=True) for k in range(tokens) for j in range(k + 1)}
    csa = csa_field(xs, sp.eye(d), lambda k, j: sp.log(w[k, j]))
    for k, x in enumerate(xs):
        weights = [w[k, j] for j in range(k + 1)]
        z = sum((wj / (sp.sqrt(d) * sum(weights)) * xs[j] for j, wj in enumerate(weights)), sp.zeros(d, 1))
        eq6 = z - (x.T * z)[0] * x                                   # eq. 6, U = I, W = I, causal, h = 1
        residual = (csa[k] - scale * eq6).applyfunc(sp.cancel)
        ok = all(is_zero(entry) for entry in residual)
        failing += [] if ok else [f"token {k + 1}"]
        lines.append(f"[{'holds' if ok else 'FAILS'}] token {k + 1}: CSA - sqrt(d) eq.6 = {render(residual.T)}")
    on_sphere = {xs[0][d - 1]: sp.sqrt(1 - sum(xs[0][i] ** 2 for i in range(d - 1)))}
    first = csa[0].subs(on_sphere).applyfunc(sp.cancel)
    fixed = all(is_zero(entry) for entry in first)
    lines.append(f"[{'holds' if fixed else 'FAILS'}] first token on the sphere: dx_1/dt = {render(first.T)}")
    detail = (f"CSA (rows summing to 1) = sqrt(d) x eq. 6 (rows summing to 1/sqrt(d)) with U = I, P = beta Q^T K "
              f"(d = {d}, l = {tokens}, symbolic Q, K, beta): a constant time change, same orbits. The first token is "
              "fixed, so consensus is (x_1(0), ..., x_1(0)); Theorem 5.1 (causal.identity, checked by the property "
              "test and figure 4: consensus asymptotically stable, domain containing the conull set {y_j != -y_1}) "
              "gives every token -> x_1(0) for almost every start, d >= 2: their Theorem 1 (a reduction to the "
              "paper's theorem, as checked by this suite).")
    if failing or not fixed:
        return claim_result("failed", detail=f"the reduction fails: {', '.join(failing) or 'first token moves'}",
                            expression="\n".join(lines))
    return claim_result(holding(), detail=detail + " The reduction is exact; Theorem 5.1 itself is supported by the "
                        "suite, not proved, so their Theorem 1 is supported.", expression="\n".join(lines))


@named_check
def check_thm2_perp_first_token(d: int = 3, flow=None) -> CheckResult:
    """x(t) = u / |u| with u' = V u solves x' = P_x(V x) (symbolic V, u; ``flow`` replaces u' = V u: a negative
    control passes u' = V^T u); with the module docstring's bound, token 1 -> normalised P_L x_1(0), not reading 2's
    normalised P_{L^perp} x_1(0)."""
    V = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"v{i}{j}", real=True))
    u = _unit_vector(d, "u")
    du = V * u if flow is None else flow(V, u)
    norm = sp.sqrt((u.T * u)[0])
    x = u / norm
    # d/dt (u / |u|) = u'/|u| - u (u^T u') / |u|^3
    dx = du / norm - u * (u.T * du)[0] / norm ** 3
    residual = sp.simplify(dx - (V * x - (x.T * V * x)[0] * x))
    ok = all(is_zero(entry) for entry in residual)
    expression = f"[{'holds' if ok else 'FAILS'}] d = {d}: d/dt(u/|u|) - P_x(V x) = {render(residual.T)}"
    if not ok:
        return claim_result("failed", detail="the first token's closed form does not solve its equation",
                            expression=expression)
    return claim_result(
        "refuted",
        detail="Refuted by proof (no stored witness: thm2's limit sets are continua, the unit sphere of L, so no "
               "isolated attractor exists to certify). Token 1 attends only to itself: x_1(t) = e^{tV} x_1(0) / "
               "|e^{tV} x_1(0)| (identity checked, symbolic V). Under thm2's hypotheses e^{tV} a = e^{lambda t} a on "
               "L and |e^{tV} b| <= e^{mu t}|b| on L^perp (mu < lambda: Gronwall with <Vz, z> < lambda |z|^2), so "
               "x_1(t) -> P_L x_1(0)/|P_L x_1(0)|, orthogonal to reading 2's P_{L^perp} x_1(0)/|...|: for every start "
               "with both components nonzero (open, full measure) token 1 ends sqrt(2) away from reading 2's limit. "
               "Reading 2 (the source's symbols) is false; reading 1 (its words) agrees with token 1.",
        expression=expression)


def thm15_scalar_field():
    """(theta, f(theta), lambda_2 - lambda_1) of the d = 2, l = 2 instance: token 2 at (cos theta, sin theta), token
    1 at xi = e_1, CSA's field of token 2 along the circle's tangent (-sin theta, cos theta)."""
    theta = sp.Symbol("theta", real=True)
    V, P = sp.Matrix(THM15_V), sp.Matrix(THM15_P)
    xi = sp.Matrix([1, 0])
    assert V * xi == 2 * xi and V * sp.Matrix([1, 1]) == sp.Matrix([1, 1])  # eigenpairs (2, e_1), (1, (1, 1))
    x = sp.Matrix([sp.cos(theta), sp.sin(theta)])
    tangent = sp.Matrix([-sp.sin(theta), sp.cos(theta)])
    field = csa_field([xi, x], V, lambda k, j: ([xi, x][k].T * P * [xi, x][j])[0])
    first = sp.simplify(field[0])
    assert all(entry == 0 for entry in first), first        # xi is an equilibrium of token 1
    return theta, (tangent.T * field[1])[0], sp.Integer(1) - 2


def _arb_function(theta: sp.Symbol, expression: sp.Expr):
    """``expression`` as a function of an Arb ball (exp, sin, cos of balls; rationals exact)."""
    def evaluate(node, value):
        if node == theta:
            return value
        if node == sp.pi:
            return arb.pi()
        if node.is_Rational:
            return arb(int(node.p)) / int(node.q)
        args = [evaluate(a, value) for a in node.args]
        if node.is_Add:
            return sum(args[1:], args[0])
        if node.is_Mul:
            out = args[0]
            for a in args[1:]:
                out = out * a
            return out
        if node.is_Pow:
            base, exponent = args
            if node.exp.is_Integer:
                out = arb(1)
                for _ in range(abs(int(node.exp))):
                    out = out * base
                return out if node.exp >= 0 else 1 / out
            return (exponent * base.log()).exp()
        name = type(node).__name__
        if name in ("exp", "sin", "cos"):
            return getattr(args[0], name)()
        raise ValueError(f"no ball evaluation for {node}")
    return lambda value: evaluate(expression, value)


@named_check
def check_thm15_two_tokens(bracket=THM15_BRACKET) -> CheckResult:
    """The d = 2, l = 2 argument of the module docstring; ``bracket`` may be moved (a negative control puts it
    around the unstable zero near theta = pi, or where f has no zero)."""
    old = ctx.prec
    ctx.prec = PRECISION
    try:
        theta, f, token1 = thm15_scalar_field()
        df = sp.diff(f, theta)
        F, dF = _arb_function(theta, f), _arb_function(theta, df)
        a, b = (arb(int(t.p)) / int(t.q) for t in bracket)
        # f' on [a, b] as the union of PIECES sub-balls (one ball over the whole bracket overestimates: each
        # occurrence of theta widens it independently); the largest upper bound is the certified sup of f'.
        pieces = [arb(a + (b - a) * (2 * i + 1) / (2 * PIECES), float(((b - a) / (2 * PIECES)).upper()) * 1.000001)
                  for i in range(PIECES)]
        slopes = [dF(piece) for piece in pieces]
        slope = max(slopes, key=lambda ball: float(ball.upper()))
        fa, fb = F(a), F(b)
        ok = fa > 0 and fb < 0 and all(ball < 0 for ball in slopes) and token1 < 0
        lines = [f"token 2's field along the circle (token 1 at xi = e_1): f(theta) = {render(f)}",
                 f"f({bracket[0]}) = {fa.str(6, radius=True)}; f({bracket[1]}) = {fb.str(6, radius=True)}; "
                 f"f' on [{bracket[0]}, {bracket[1]}] <= upper bound of {slope.str(6, radius=True)} ({PIECES} sub-balls); token 1's tangent eigenvalue "
                 f"lambda_2 - lambda_1 = {token1}"]
    finally:
        ctx.prec = old
    if not ok:
        return claim_result("failed", detail="the d = 2 instance's signs are not certified on this bracket",
                            expression="\n".join(lines))
    return claim_result(
        "refuted",
        detail=f"d = 2, l = 2, V = {THM15_V} (eigenvalues 2, 1, distinct positive real; eigenvectors e_1 and "
               f"(1, 1)/sqrt(2), not orthogonal), P = beta Q^T K = {THM15_P}: with token 1 at xi = e_1, token 2's "
               f"scalar field f has, certified by Arb, a unique zero theta* in [{bracket[0]}, {bracket[1]}] with "
               "f' < 0 there; the Jacobian at (xi, x_2(theta*)) is block triangular (causal) with eigenvalues "
               "lambda_2 - lambda_1 = -1 and f'(theta*) < 0: an attractor whose second token is at angle ~1.97 rad "
               "from xi (away from +-xi). Its basin is open: thm1.5 fails on a set of initialisations of positive "
               "measure. The d = 2 argument does not prove thm1.5; it refutes it (the search's witness agrees).",
        expression="\n".join(lines))
