"""The claim registry: every claim of the paper the suite checks, as data.

IDs are stable (SPEC section 2). ``source_long`` numbers follow the long arXiv version
(2412.02682), ``source_icml`` the ICML 2025 paper. ``statement`` is the claim as the paper prints
it (formulas lost in the long version's text are restated from SPEC section 1, marked
"reconstructed"). A check never edits a statement: when the printed claim is wrong its verdict is
``discrepancy`` and the corrected statement lives in the check's result record.
"""

from __future__ import annotations

from dataclasses import dataclass

#: "search": a counterexample search (claims ``conj.*``: verdict ``supported`` or ``refuted``); "proof": a symbolic
#: reduction to a cited theorem (the only way a conjecture is ``verified``); "reduction": symbolic identities of some
#: steps of an argument whose remainder the suite does not prove (another claim it only supports, an estimate argued
#: in words): not rigorous, so its agreement supports the claim.
EVIDENCE_KINDS = ("symbolic", "numeric", "property", "exact", "monte-carlo", "figure", "empirical", "search", "proof",
                  "reduction")
#: The evidence kinds that prove: a symbolic identity, an exact computation, a reduction to cited theorems. Only
#: these verify a mathematical claim; the others (runs, samples, generated instances) can only support it.
RIGOROUS_KINDS = ("symbolic", "exact", "proof")
#: The areas whose claims state what a finite run shows (the paper's simulated figures, its experiments with looped
#: models): a run that shows it verifies it. Every other claim is a mathematical statement (or a conjecture).
OBSERVATION_AREAS = ("sim", "emp")
#: Where a claim comes from: printed in the paper, a conjecture of another paper that the paper cites, or a question
#: this suite asks on its own (labelled apart in the report).
ORIGINS = ("paper", "cited", "suite")
#: How the report names each origin.
ORIGIN_LABELS = {"paper": "the paper's", "cited": "cited by the paper", "suite": "this suite's own reading"}


@dataclass(frozen=True)
class Claim:
    """One checkable statement of the paper."""

    id: str
    source_long: str
    source_icml: str
    statement: str
    evidence: tuple[str, ...]
    origin: str = "paper"
    #: The claim's checks, each as ("module:qualname", method): the function and the evidence kind it gives. This
    #: entry is the one place a product check is tied to its claim: the function carries a bare ``@named_check``,
    #: which finds its claims and methods here by its own name at import (``foundation.registration``); the tests
    #: that call a check name it in their own ``@check``: registry -> check module -> test. The names are checked,
    #: never trusted (``reports.named_checks.naming_problems``).
    checks: tuple[tuple[str, str], ...] = ()
    #: The LaTeX of the formula the statement states ("as printed" where it says so), typeset in the HTML report
    #: (display only: ``verdicts.json`` and the statement keep the ASCII form); empty when it states none.
    formula: str = ""
    #: A statement about a limit (t -> oo, depth -> oo) that the suite can only run to a horizon: a run that agrees
    #: supports it, never verifies it, even where the claim is an observation (an experiment's "mean E -> 0").
    limit: bool = False

    def __post_init__(self) -> None:
        unknown = set(self.evidence) - set(EVIDENCE_KINDS)
        if unknown:
            raise ValueError(f"Claim {self.id!r}: evidence kinds {sorted(unknown)} must be among {EVIDENCE_KINDS}.")
        if self.origin not in ORIGINS:
            raise ValueError(f"Claim {self.id!r}: origin={self.origin!r} must be one of {ORIGINS}.")
        for name, method in self.checks:
            if ":" not in name or method not in EVIDENCE_KINDS:
                raise ValueError(f"Claim {self.id!r}: the check ({name!r}, {method!r}) must be named "
                                 f"'module:qualname' with a method among {EVIDENCE_KINDS}.")

    @property
    def check_names(self) -> tuple[str, ...]:
        """The "module:qualname" of each of the claim's checks, in the entry's order."""
        return tuple(name for name, _ in self.checks)

    @property
    def area(self) -> str:
        """The part of the paper the claim belongs to: the ID's prefix (``model``, ``full``, ...)."""
        return self.id.split(".", 1)[0]

    @property
    def conjecture(self) -> bool:
        """An open conjecture (``conj.*``): settled by a search, ``supported`` or ``refuted``."""
        return self.area == "conj"

    @property
    def observation(self) -> bool:
        """A statement of what a finite run shows (:data:`OBSERVATION_AREAS`): a figure, an experiment."""
        return self.area in OBSERVATION_AREAS

    def can_verify(self, method: str) -> bool:
        """Whether a check by ``method`` that finds nothing against this claim verifies it: only a proof for a
        conjecture; a rigorous method (:data:`RIGOROUS_KINDS`) for any other claim; the run itself for an
        observation that is no statement about a limit. Otherwise its agreement is ``supported``."""
        if self.conjecture:
            return method == "proof"
        return method in RIGOROUS_KINDS or (self.observation and not self.limit)


#: The two checks of every searched conjecture: a stored witness's replay and a search's summary.
SEARCH_CHECKS = (("sim.conjectures.replay:record_of", "search"),
                 ("sim.conjectures.distributed:check_result", "search"))

CLAIMS: tuple[Claim, ...] = (
    # --- Section 2: the model -------------------------------------------------------------------
    Claim(
        "model.projection", "eq. 2-3, Remark 2.1", "eq. 2-3",
        "pi_W(x) = x |x|_W^{-1} maps R^{n+1} - {0} onto E_W; its tangent map is "
        "T_x pi_W . X = |x|_W^{-1} (I - x x^T W |x|_W^{-2}) X, and for y in E_W, T_y pi_W . X = (I - y y^T W) X "
        "(a projection onto T_y E_W = {X : y^T W X = 0} with kernel span{y}, self-adjoint for <.,.>_W).",
        ("symbolic",),
        checks=(("theory.model:check_projection", "symbolic"),
                ("theory.model:check_projection_jacobian_coordinates", "symbolic"),
                ("theory.model:spot_check_projection", "numeric")),
        formula=r"\begin{aligned}&\pi_W(x) = x\,\|x\|_W^{-1},\\&"
                r" T_x\pi_W\cdot X = \|x\|_W^{-1}\bigl(I - x x^\top W\,\|x\|_W^{-2}\bigr)X,\\&"
                r" T_y\pi_W\cdot X = (I - y y^\top W)X\ \ (y \in E_W)\end{aligned}",
    ),
    Claim(
        "model.continuum", "sec. 2.3, eq. 5-6", "sec. 2.3, eq. 5-6",
        "The continuous-time model (6), dy_i/dt = T_{y_i} pi_W (sum_eta sum_j alpha_ij^eta U_eta y_j), is the best "
        "first-order approximation of the discrete model (1)/(4): d/dtau pi_W(y + tau f)|_{tau=0} = P_y f, so one "
        "discrete step differs from the flow by O(tau^2).",
        ("symbolic", "numeric"),
        checks=(("theory.model:check_continuum", "symbolic"),
                ("theory.model:numeric_continuum_order", "numeric"),
                ("sim.solvers.checks:check_continuum", "numeric")),
        formula=r"\dot y_i = T_{y_i}\pi_W\Bigl(\sum_\eta\sum_j \alpha_{ij}^\eta U_\eta y_j\Bigr),\qquad"
                r"\frac{d}{d\tau}\pi_W(y + \tau f)\Big|_{\tau=0} = P_y f",
    ),
    Claim(
        "model.layernorm", "Remark 2.3", "Remark 2.2",
        "Under standard layer normalisation N(x) = (x - mu(x) 1) * gamma / sigma(x) + beta, if gamma = gamma0 1 "
        "then the tokens lie on the n-sphere of center beta and radius (n+1) gamma0^2 (as printed). Conjecture: for "
        "arbitrary scale parameters gamma the tokens lie on a hypersurface diffeomorphic to the n-sphere.",
        ("symbolic", "numeric"),
        checks=(("theory.layernorm:check_layernorm_radius", "symbolic"),
                ("theory.layernorm:check_layernorm_arbitrary_gamma", "symbolic"),
                ("theory.layernorm:check_rmsnorm", "symbolic"),
                ("theory.layernorm:torch_normalisations", "numeric"),
                ("empirical.audit.report:layernorm_records", "numeric")),
        formula=r"\begin{aligned}&N(x) = \frac{x - \mu(x)\mathbf{1}}{\sigma(x)}\,\gamma + \beta,\\&"
                r"\gamma = \gamma_0\mathbf{1} \;\Rightarrow\; \|N(x) - \beta\| = (n+1)\,\gamma_0^2"
                r"\ \ \text{(as printed)}\end{aligned}",
    ),
    # --- Section 3 (long version): the gradient case ------------------------------------------
    Claim(
        "grad.projection", "Lemma 3.1", "-",
        "Under Hypothesis 3.1 (h = 1, U = I, P time-independent SPD; reconstructed: W = P) the orthogonal projection "
        "onto the tangent bundle of (E_W)^l for the metric (7) g_y(X, Y) = sum_i Z_i(y) X_i^T W Y_i is T pi_W.",
        ("symbolic",),
        checks=(("theory.gradient:check_orthogonal_projection", "symbolic"),),
        formula=r"g_y(X, Y) = \sum_i Z_i(y)\,X_i^\top W Y_i,\qquad "
                r"\operatorname{proj}^{g}_{T_y (E_W)^l} = T\pi_W \ \ (W = P)",
    ),
    Claim(
        "grad.field", "Lemma 3.2, Theorem 3.1", "-",
        "Under Hypothesis 3.1 the vector field of (6) is the Riemannian gradient, for the metric (7), of the "
        "potential (8) Phi(y) = 1/2 sum_{i,j} exp(y_i^T P y_j) (reconstructed constants).",
        ("symbolic",),
        checks=(("theory.gradient:check_gradient_field", "symbolic"),
                ("theory.gradient:check_gradient_general_condition", "symbolic"),
                ("theory.gradient:numeric_gradient", "numeric"),
                ("theory.gradient:counterexamples", "numeric")),
        formula=r"\Phi(y) = \tfrac12 \sum_{i,j} e^{y_i^\top P y_j},\qquad \dot y = \operatorname{grad}_g \Phi(y)",
    ),
    Claim(
        "grad.convergence", "sec. 3.3 (Propositions)", "-",
        "Along solutions of (6) under Hypothesis 3.1 the potential is non-decreasing, dPhi/dt = |grad Phi|_g^2 >= 0 "
        "with equality only at equilibria (LaSalle), and every solution converges to a single equilibrium "
        "(Lojasiewicz inequality; Phi and g are real analytic).",
        ("symbolic", "numeric", "property"),
        checks=(("theory.gradient:counterexamples", "numeric"),
                ("theory.gradient:check_potential_monotone", "symbolic"),
                ("theory.gradient:numeric_convergence", "numeric"),
                ("sim.properties.conclusions:check_potential_monotone", "property")),
        formula=r"\frac{d\Phi}{dt} = \|\operatorname{grad}_g \Phi\|_g^2 \ge 0",
    ),
    Claim(
        "grad.stable-consensus", "sec. 3.3 text", "-",
        "If P is the identity, linearisation around each equilibrium shows that the only asymptotically stable "
        "equilibria are the consensus equilibria.",
        ("proof", "numeric"),
        checks=(("theory.conjectures:check_stable_consensus_proof", "proof"),
                ("sim.conjectures.linearisation:check_stable_consensus", "numeric")),
        formula=r"P = I:\ \text{asymptotically stable equilibria} = \text{consensus equilibria}",
    ),
    # --- Section 4 (long) / 3 (ICML): full attention -----------------------------------------
    Claim(
        "full.bounds", "Lemma 4.1", "Lemma 3.1",
        "If there exists p > 0 with |P_eta(t)| <= p for all t, then there exist 0 < a <= b such that the attention "
        "weights satisfy a <= alpha_ij^eta(t, y) <= b for all t, y in (E_W)^l, i, j.",
        ("symbolic", "numeric", "property"),
        checks=(("theory.full_attention:check_attention_bounds", "symbolic"),
                ("theory.full_attention:bounds_spot_check", "numeric"),
                ("sim.properties.conclusions:check_attention_bounds", "property")),
        formula=r"\|P_\eta(t)\| \le p\ \ \forall t \;\Rightarrow\; 0 < a \le \alpha_{ij}^\eta(t, y) \le b",
    ),
    Claim(
        "full.invariance", "Theorem 4.1 (proof)", "Theorem 3.2",
        "Under Hypothesis 4.1 (U_eta = I, h >= 1, P_eta(t) bounded and uniformly continuous) the set H+(v)^l, "
        "H+(v) = {y in E_W : v^T y > 0}, is forward invariant: the vector field points into its interior.",
        ("symbolic", "property"),
        checks=(("theory.full_attention:check_invariance", "symbolic"),
                ("sim.properties.conclusions:check_full_invariance", "property")),
        formula=r"H^+(v) = \{y \in E_W : v^\top y > 0\},\qquad H^+(v)^l\ \text{forward invariant}",
    ),
    Claim(
        "full.equilibria", "Theorem 4.1 (proof)", "Theorem 3.2",
        "Every consensus point (y, ..., y), y in E_W, is an equilibrium of (6) under Hypothesis 4.1.",
        ("symbolic",),
        checks=(("theory.full_attention:check_equilibria", "symbolic"),),
        formula=r"(y, \dots, y),\ y \in E_W:\ \dot y_i = 0\ \ \forall i",
    ),
    Claim(
        "full.lyapunov", "Theorem 4.1, eq. 9-10", "Theorem 3.2, eq. 7",
        "V(y) = max_i (1 - v^T y_i) (eq. 10) has upper Dini derivative (Danskin, eq. 9) D+V <= 0 on H+(v)^l, with "
        "equality if and only if y is a consensus point.",
        ("symbolic", "property"),
        checks=(("theory.full_attention:check_lyapunov", "symbolic"),
                ("theory.full_attention:lyapunov_spot_check", "numeric"),
                ("sim.properties.conclusions:check_full_lyapunov", "property")),
        formula=r"\begin{aligned}&V(y) = \max_i\,(1 - v^\top y_i),\\& D^+V \le 0\ \text{on}\ H^+(v)^l,"
                r"\quad D^+V = 0 \iff y\ \text{consensus}\end{aligned}",
    ),
    Claim(
        "full.convergence", "Theorem 4.1", "Theorem 3.2",
        "Under Hypothesis 4.1, the consensus set is attractive from H+(v)^l: every solution starting with all tokens "
        "in an open hemisphere converges to consensus.",
        ("property", "figure"),
        checks=(("sim.figures.theorems:check_full_convergence_figure", "figure"),
                ("sim.properties.conclusions:check_full_convergence", "property")),
        formula=r"y(0) \in H^+(v)^l \;\Rightarrow\; y(t) \to \text{consensus}",
    ),
    Claim(
        "full.autonomous", "Remark 4.1", "-",
        "For time-independent P_eta, attractivity of the consensus set upgrades to asymptotic stability (LaSalle).",
        ("numeric",),
        checks=(("sim.figures.stability:check_asymptotic_stability", "numeric"),
                ("sim.properties.conclusions:check_consensus_returns", "property")),
        formula=r"\dot P_\eta = 0 \;\Rightarrow\; \text{consensus set asymptotically stable}",
    ),
    Claim(
        "full.wendel", "Remark 4.3", "Remark 3.4",
        "For l tokens drawn uniformly on S^n, the probability that they lie in a common hemisphere is "
        "2^{-(l-1)} sum_{mu=0}^{n-1} C(l-1, mu) (as printed); in particular it equals 1 whenever n >= l.",
        ("exact", "monte-carlo"),
        checks=(("theory.wendel:check_closed_forms", "exact"),
                ("theory.wendel:check_monte_carlo", "monte-carlo")),
        formula=r"P_{l,n} = 2^{-(l-1)} \sum_{\mu=0}^{n-1} \binom{l-1}{\mu}\ \ \text{(as printed)},"
                r"\qquad P_{l,n} = 1 \ \text{if}\ n \ge l",
    ),
    # --- Section 5 (long) / 4 (ICML): causal attention ---------------------------------------
    Claim(
        "causal.first-token", "sec. 5.1", "sec. 4.1",
        "In the auto-regressive model with U_eta = I the first token is fixed: dy_1/dt = 0.",
        ("symbolic", "property"),
        checks=(("theory.causal:check_first_token", "symbolic"),
                ("sim.properties.conclusions:check_first_token_fixed", "property")),
        formula=r"\dot y_1 = 0",
    ),
    Claim(
        "causal.scalar", "Lemma 5.1, eq. 12-13", "Lemma 4.1",
        "For the scalar reduction b = y_1^T y_2 (eq. 12) the only equilibria are b = -1 and b = 1; -1 is unstable and "
        "1 is asymptotically stable with domain of attraction b in (-1, 1]; (13) is a Lyapunov function.",
        ("symbolic", "numeric"),
        checks=(("theory.causal:check_scalar", "symbolic"),
                ("theory.causal:numeric_scalar", "numeric")),
        formula=r"\begin{aligned}&b = y_1^\top y_2:\ \ \text{equilibria}\ b = \pm 1,\\&"
                r"\text{domain of attraction of}\ b = 1:\ (-1, 1]\end{aligned}",
    ),
    Claim(
        "causal.identity", "Theorem 5.1", "Theorem 4.2",
        "Under Hypothesis 5.1 (causal, U_eta = I, h >= 1, P_eta(t) bounded) the consensus (y_1, ..., y_1) is "
        "asymptotically stable and its domain of attraction contains {y : y_j != -y_1 for j >= 2} (a conull set).",
        ("property", "figure"),
        checks=(("sim.figures.theorems:check_causal_identity_figure", "figure"),
                ("sim.properties.conclusions:check_causal_consensus", "property")),
        formula=r"\{y : y_j \ne -y_1,\ j \ge 2\} \subset \text{domain of attraction of}\ (y_1, \dots, y_1)",
    ),
    Claim(
        "causal.karagodin-thm1", "Remark 5.3 (citing [26])", "Remark 4.6 (citing Karagodin et al.)",
        "Cited (Karagodin, Polyanskiy, Rigollet, 'Clustering in causal attention masking', arXiv 2411.04990v2, "
        "their Theorem 1, as transcribed in a public Lean formalisation): 'V = I, arbitrary Q, K, beta >= 0: for "
        "almost any start every token converges to x_1(0)' (d >= 2; false at d = 1). Their CSA dynamics: causal "
        "attention on the unit sphere, alpha_kj proportional to exp(beta <Q x_k, K x_j>) over j <= k, rows summing "
        "to 1, dx_k/dt = P_{x_k}(sum_j alpha_kj V x_j). It is Theorem 5.1's setting (causal.identity, h = 1, "
        "P = beta Q^T K constant, U = I) up to a time scale: the paper's rows sum to 1/sqrt(d), CSA's to 1, so "
        "CSA's field is sqrt(d) times eq. 6's; the first token is fixed, so consensus is (x_1(0), ..., x_1(0)).",
        ("reduction",), "cited",
        checks=(("theory.karagodin:check_thm1_reduction", "reduction"),),
    ),
    Claim(
        "causal.identity-iss", "Theorem 5.1 (proof, eq. 14-15)", "Theorem 4.2 (proof sketch)",
        "With errors e_j = y_j - y_1 of the earlier tokens, the scalar b = y_1^T y_i obeys a perturbed version of (12) "
        "(eq. 15) for which the function (13) is an ISS-Lyapunov function with input e (reconstructed: the formulas "
        "are lost in the long version's text).",
        ("symbolic",),
        checks=(("theory.causal:check_identity_iss", "symbolic"),),
        formula=r"e_j = y_j - y_1,\qquad b = y_1^\top y_i",
    ),
    Claim(
        "causal.reparam", "Remark 5.2", "Remark 4.3",
        "If U is invertible, choosing the projection onto the ellipsoid defined from U, a change of coordinates "
        "reduces the model (16) to the case U = I.",
        ("symbolic",),
        checks=(("theory.causal:check_reparam", "symbolic"),
                ("theory.causal:numeric_reparam", "numeric")),
    ),
    Claim(
        "causal.first-token-symmetric", "Lemma 5.2", "Lemma 4.4",
        "For U symmetric with simple largest eigenvalue lambda and unit eigenvector v, the equilibria of the first "
        "token are the unit eigenvectors of U; +-v are asymptotically stable with domains {+-v^T y > 0}; all other "
        "equilibria are unstable.",
        ("symbolic", "numeric", "property"),
        checks=(("theory.causal:check_first_token_symmetric", "symbolic"),
                ("theory.causal:check_eigenvector_domains", "symbolic"),
                ("theory.causal:numeric_first_token_symmetric", "numeric"),
                ("sim.properties.conclusions:check_token_lyapunov_monotone", "property")),
        formula=r"U = U^\top,\ U v = \lambda v:\ \ \pm v\ \text{asymptotically stable on}"
                r"\ \{\pm v^\top y > 0\}",
    ),
    Claim(
        "causal.symmetric", "Theorem 5.2", "Theorem 4.5",
        "Under Hypothesis 5.2 (causal, h = 1, U symmetric, time-invariant, simple largest eigenvalue lambda > 0, "
        "P(t) bounded) the consensus (v, ..., v) is asymptotically stable with domain of attraction containing "
        "D^l(v) = {y : v^T y_i > 0 for all i}.",
        ("property", "figure"),
        checks=(("sim.figures.theorems:check_causal_symmetric_figure", "figure"),
                ("sim.properties.conclusions:check_symmetric_consensus", "property")),
        formula=r"D^l(v) = \{y : v^\top y_i > 0\ \ \forall i\} \subset \text{domain of attraction of}\ (v, \dots, v)",
    ),
    Claim(
        "causal.symmetric-iss", "Theorem 5.2 (proof, eq. 18-19)", "-",
        "With U symmetric and the earlier tokens y_j = v + e_j, b = v^T y_i obeys (18): the first-token dynamics of "
        "Lemma 5.2 plus an input term bounded by a constant times |e| (19), so V = 1 - b is a strict ISS-Lyapunov "
        "function for b = 1 (reconstructed: the formulas are lost in the long version's text).",
        ("symbolic",),
        checks=(("theory.causal:check_symmetric_iss", "symbolic"),),
        formula=r"y_j = v + e_j,\qquad b = v^\top y_i,\qquad V = 1 - b",
    ),
    Claim(
        "causal.time-varying", "Theorem 5.3", "-",
        "For time-varying symmetric U(t) whose top eigenvector v(t) moves with bounded speed, tokens starting in the "
        "hemisphere of v(t0) converge to a ball around (v(t), ..., v(t)) whose radius grows with sup |dv/dt|; the "
        "consensus is exact when v is constant.",
        ("reduction", "property"),
        checks=(("theory.causal:check_time_varying", "reduction"),
                ("theory.causal:numeric_time_varying", "numeric"),
                ("sim.properties.conclusions:check_tracking_radius", "property")),
        formula=r"\limsup_{t\to\infty} \|y_i(t) - v(t)\| \le r\bigl(\sup_t \|\dot v(t)\|\bigr),\quad r(0) = 0",
    ),
    # --- Simulations: figures 1-6 -------------------------------------------------------------
    Claim("sim.fig1", "sec. 6.1, Fig. 1", "sec. 5.1, Fig. 1",
          "Frobenius norms of the time-varying P_1(t), P_2(t) of the full-attention example.", ("figure",),
          checks=(("sim.figures.plots:check_figure1", "figure"),),
          formula=r"\|P_1(t)\|_F,\ \ \|P_2(t)\|_F"),
    Claim("sim.fig2", "sec. 6.1, Fig. 2", "sec. 5.1, Fig. 2",
          "Convergence to a consensus equilibrium on S^2: all the tokens start and remain in a hemisphere.",
          ("figure", "numeric"),
          checks=(("sim.figures.plots:check_figure2", "figure"),
                  ("sim.figures.numbers:measure_figure2", "numeric")), limit=True),
    Claim("sim.fig3", "sec. 6.1, Fig. 3", "sec. 5.1, Fig. 3",
          "The Lyapunov function (7)/(10) with v = (1, 0, 0) decreases along the figure-2 solution.",
          ("figure", "numeric"),
          checks=(("sim.figures.plots:check_figure3", "figure"),
                  ("sim.figures.numbers:measure_figure3", "numeric")),
          formula=r"V(y) = \max_i\,(1 - v^\top y_i),\qquad v = (1, 0, 0)"),
    Claim("sim.fig4", "sec. 6.1, Fig. 4", "sec. 5.1, Fig. 4",
          "Causal attention, 50 tokens on S^499, h = 2, U = I: E (eq. 9) converges to zero along all 100 trajectories.",
          ("figure", "numeric"),
          checks=(("sim.figures.plots:check_figure4", "figure"),
                  ("sim.figures.numbers:measure_figure4", "numeric")),
          formula=r"E(y) = 1 - \frac1l \sum_i \cos(y_1, y_i) \to 0\qquad (l = 50,\ S^{499},\ h = 2,\ U = I)", limit=True),
    Claim("sim.fig5", "sec. 6.1, Fig. 5", "sec. 5.1, Fig. 5",
          "Causal attention, 10 tokens on S^2, symmetric U: convergence to a consensus equilibrium; all the tokens "
          "start and remain in the hemisphere defined by v.", ("figure", "numeric"),
          checks=(("sim.figures.plots:check_figure5", "figure"),
                  ("sim.figures.numbers:measure_figure5", "numeric")), limit=True),
    Claim("sim.fig6", "sec. 6.1, Fig. 6", "sec. 5.1, Fig. 6",
          "V_1 = 1 - y_1^T v is a Lyapunov function (monotone); V_2 = 1 - y_2^T v is not and may increase, but "
          "eventually converges to zero.", ("figure", "numeric"),
          checks=(("sim.figures.plots:check_figure6", "figure"),
                  ("sim.figures.numbers:measure_figure6", "numeric")),
          formula=r"V_1 = 1 - y_1^\top v,\qquad V_2 = 1 - y_2^\top v", limit=True),
    # --- Experiments: figures 7-10 ------------------------------------------------------------
    Claim("emp.prompts", "sec. 6.2", "sec. 5.2",
          "100 random prompts of 200 tokens sampled uniformly from the GPT-2 tokenizer's vocabulary (authors' code: "
          "random.seed(42), randint(0, V-1)); the first 10 tokens of the first prompt decode to "
          "'divest anxYou coasts Oz Vi Happy appreciate tcp.'", ("empirical",),
          checks=(("empirical.checks:check_prompts", "empirical"),)),
    Claim("emp.no-ffn", "sec. 6.2, Fig. 7", "sec. 5.2, Fig. 7",
          "Looped GPT-2 XL and GPT-Neo 2.7B with the feed-forward layers removed: the mean of E over the prompts "
          "converges asymptotically to 0.", ("empirical",),
          checks=(("empirical.checks:check_trained", "empirical"),),
          formula=r"\overline{E}(k) = \operatorname{mean}_{\text{prompts}} E\bigl(y(k)\bigr) \to 0", limit=True),
    Claim("emp.full", "sec. 6.2, Fig. 8", "sec. 5.2, Fig. 8",
          "With the full models the mean E still converges to 0; the feed-forward layers increase the convergence "
          "rate in GPT-2 and decrease it in GPT-Neo.", ("empirical",),
          checks=(("empirical.audit.report:ffn_record", "empirical"),
                  ("empirical.checks:check_trained", "empirical")), limit=True),
    Claim("emp.random-fixed", "sec. 6.2, Fig. 9", "sec. 5.2, Fig. 9",
          "With random weight matrices drawn once, with and without feed-forward layers, convergence towards "
          "consensus still occurs; the feed-forward layer may decrease the convergence rate.", ("empirical",),
          checks=(("empirical.checks:check_random_weights", "empirical"),), limit=True),
    Claim("emp.random-redrawn", "sec. 6.2, Fig. 10", "sec. 5.2, Fig. 10",
          "With random weight matrices re-drawn before each model pass, convergence towards consensus still occurs.",
          ("empirical",),
          checks=(("empirical.checks:check_random_weights", "empirical"),), limit=True),
    Claim("emp.rate", "sec. 6.2 (end)", "sec. 5.2 (end)",
          "The choice of weight matrices affects the rate of convergence, faster convergence being observed with "
          "pretrained matrices.", ("empirical",),
          checks=(("empirical.audit.report:rate_record", "empirical"),)),
    Claim("emp.in-kind-trained", "sec. 6.2, Fig. 7-8 (in kind)", "sec. 5.2, Fig. 7-8 (in kind)",
          "Not printed: the question of figures 7-8 asked of trained models of other families (SmolLM2-135M, Llama "
          "family; Gemma 3 270M). Looped with and without the feed-forward layers, the mean E over the prompts "
          "converges to 0, as the paper observes for trained GPT-2 XL and GPT-Neo 2.7B: by the stated collapse "
          "test of empirical/decision.py (the exponent of E ~ depth over the last octave of 50 passes, every block "
          "read, nothing read within 10 x the effective floor), in every cell of its grid of halved and doubled "
          "constants. Not necessarily at every pass: Gemma 3 with FFN collapses slowly and not monotonically (in float64 at "
          "8 x 200 its E stays near 2e-2 from pass 20 to 40, then falls to 6e-13 by pass 100; docs/empirical.md; "
          "whether E falls at every pass is reported beside the verdict, as a separate finding).", ("empirical",),
          checks=(("empirical.checks:check_in_kind", "empirical"),), limit=True),
    # --- Theory meets practice: the theorems' premises in real transformers (the audit) ------------
    Claim("emp.audit-hemisphere", "Remark 4.3, Theorem 4.1", "Remark 3.4, Theorem 3.2",
          "Theorem 4.1's premise, all tokens in one open hemisphere, 'deals with the most general situation for "
          "higher dimensions': by Wendel's theorem l tokens with n >= l lie in one hemisphere almost surely. Audit: "
          "the token states of real transformers (prompts shorter than the width) lie in one open hemisphere at "
          "every layer.", ("empirical",),
          checks=(("empirical.audit.report:hemisphere_record", "empirical"),),
          formula=r"\exists v:\ v^\top y_i > 0\ \ \forall i\quad (l \le n + 1,\ \text{every layer})"),
    Claim("emp.theory-scope", "sec. 6.2", "sec. 5.2",
          "'Our theoretical results predict this observation only when feedforward layers are absent, i.e., the case "
          "depicted in Fig. 7' (looped GPT-2 XL and GPT-Neo 2.7B without FFN). READING (this suite's: the sentence "
          "is a loose remark, and the paper's section 6 says its experiments go beyond the hypotheses): do those "
          "models satisfy the theorems' hypotheses (U = I, or h = 1 with U symmetric whose largest eigenvalue is "
          "simple and positive; P bounded; normalisation onto a sphere or ellipsoid; tokens in an open hemisphere)? "
          "Multi-head attention with value matrices of rank d_head < d answers no by construction.",
          ("empirical",), origin="suite",
          checks=(("empirical.audit.report:scope_record", "empirical"),),
          formula=r"U_\eta = I\quad \text{or}\quad \bigl(h = 1,\ U = U^\top,\ \lambda_{\max}(U)\ \text{simple}, > 0\bigr)"),
    # --- Open conjectures: settled by certified counterexample searches (sim/conjectures/search.py) -------------
    Claim("conj.multihead-causal", "sec. 1 (on Theorem 5.2)", "sec. 1 (on Theorem 4.5)",
          "Quoted: 'We were only able to establish this result for the single-head case although we believe it holds "
          "in greater generality.' The sentence names no multi-head hypothesis; READING A (this suite's): causal "
          "attention, h >= 2 constant symmetric U_eta, bounded P_eta (constant in the search), v the top eigenvector "
          "of sum_eta U_eta with a simple positive eigenvalue: (v, ..., v) is asymptotically stable and its domain "
          "of attraction contains D^l(v) = {y : v^T y_i > 0 for all i}.", ("search",), "suite",
          checks=SEARCH_CHECKS,
          formula=r"\begin{aligned}&h \ge 2,\quad \Bigl(\sum_\eta U_\eta\Bigr) v = \lambda v:\\&"
                  r"D^l(v) \subset \text{domain of attraction of}\ (v, \dots, v)\end{aligned}"),
    Claim("conj.multihead-causal-common", "sec. 1 (on Theorem 5.2)", "sec. 1 (on Theorem 4.5)",
          "Quoted as conj.multihead-causal. READING B (this suite's): causal attention, h >= 2 constant symmetric "
          "U_eta sharing an eigenvector v that is, for every head, the eigenvector of its largest eigenvalue "
          "lambda_eta, simple and positive; bounded P_eta: (v, ..., v) is asymptotically stable and its domain of "
          "attraction contains D^l(v).", ("proof", "search"), "suite",
          checks=(("theory.multihead_cascade:check_multihead_common_proof", "proof"),
                  *SEARCH_CHECKS)),
    Claim("conj.value-causal", "Remark 5.3, sec. 1 (citing [26])", "Remark 4.6, sec. 1 (citing Karagodin et al.)",
          "Quoted: 'there is no result available in the literature for the case where U is not the identity matrix "
          "although this is conjectured, but not proved, in' Karagodin, Polyanskiy, Rigollet, 'Clustering in causal "
          "attention masking' (arXiv 2411.04990); ICML Remark 4.6: 'two conjectures are proposed, but not proved'. "
          "Those two conjectures are registered verbatim as conj.karagodin-thm1.5 and conj.karagodin-thm2-* (their "
          "sec. 4, as transcribed). READING 'consensus' (this suite's reconstruction of the remark's 'U is not the "
          "identity matrix', not a statement of Karagodin et al.): causal attention, one head, constant P, a "
          "constant U != I whose eigenvalue of largest real part is real, simple and positive: for almost every "
          "initial state the tokens converge to consensus.", ("search",), "suite",
          checks=SEARCH_CHECKS,
          formula=r"U \ne I,\ \ \lambda_1(U) = \operatorname{arg\,max}_\lambda \operatorname{Re}\lambda\ \text{real, simple}, > 0"),
    Claim("conj.value-causal-antipodal", "Remark 5.3, sec. 1 (citing [26])",
          "Remark 4.6, sec. 1 (citing Karagodin et al.)",
          "Quoted as conj.value-causal. READING 'antipodal' (this suite's reading, after third-party summaries of "
          "the cited paper's 'atlas' of final configurations, which allow a pair of antipodal clusters; not a "
          "statement of Karagodin et al., whose conjectures are conj.karagodin-thm1.5 and conj.karagodin-thm2-*, "
          "and weaker in its hypothesis than thm1.5: only the top eigenvalue is asked to be real, simple and "
          "positive): causal attention, one head, constant P, a constant U != I whose eigenvalue of largest real "
          "part is real, simple and positive with eigenvector v: for almost every initial state every token "
          "converges to +v or to -v (consensus, or the antipodal pair of clusters).", ("search",), "suite",
          checks=SEARCH_CHECKS),
    Claim("conj.value-full", "Remark 5.3, sec. 1 (citing [26])", "Remark 4.6, sec. 1 (citing Karagodin et al.)",
          "The full-attention counterpart of conj.value-causal, READING 'consensus' (this suite's reconstruction): "
          "full attention, one head, constant P, a constant U != I whose eigenvalue of largest real part is real, "
          "simple and positive: for almost every initial state the tokens converge to consensus.", ("search",),
          "suite",
          checks=SEARCH_CHECKS,
          formula=r"U \ne I,\ \ \lambda_1(U) = \operatorname{arg\,max}_\lambda \operatorname{Re}\lambda\ \text{real, simple}, > 0"),
    Claim("conj.value-full-antipodal", "Remark 5.3, sec. 1 (citing [26])",
          "Remark 4.6, sec. 1 (citing Karagodin et al.)",
          "The full-attention counterpart of conj.value-causal-antipodal (this suite's reading; Karagodin et al.'s "
          "conjectures are about causal attention only): for almost every initial state every token converges to "
          "+v or to -v.", ("search",), "suite",
          checks=SEARCH_CHECKS),
    Claim("conj.gradient-equilibria", "sec. 3.3 (after Theorem 3.2)", "-",
          "Quoted: 'If we take P to be the identity, linearization ... shows that the only equilibria that are "
          "asymptotically stable are the consensus equilibria ... when P is not the identity this strategy leads to "
          "conditions whose validity cannot be easily ascertained.' The case left open: under Hypothesis 3.1 "
          "(h = 1, U = I, P constant symmetric positive definite; reconstructed W = P) with P != I, every "
          "asymptotically stable equilibrium is a consensus equilibrium.", ("proof", "search"),
          checks=(("theory.conjectures:check_gradient_equilibria_proof", "proof"),
                  *SEARCH_CHECKS),
          formula=r"h = 1,\ U = I,\ W = P = P^\top \succ 0,\ P \ne I"),
    Claim("conj.gradient-value", "sec. 3 (with the condition of grad.field)", "-",
          "This suite's own question (not printed): the same question asked of the whole gradient class this suite "
          "verified (grad.field: P = P^T and W U = P), here W = I and U = P symmetric, possibly indefinite: every "
          "asymptotically stable equilibrium is a consensus equilibrium.", ("search",), "suite",
          checks=SEARCH_CHECKS,
          formula=r"W = I,\ \ U = P = P^\top"),
    Claim("conj.nonsymmetric-full", "sec. 4 (beyond Theorem 4.1, Remark 4.3)", "sec. 3 (beyond Theorem 3.2)",
          "This suite's own question (not printed as a conjecture): full attention with U = I, h >= 1 and bounded "
          "non-symmetric P (constant in the search), which has no gradient structure: for almost every initial "
          "state, including states in no open hemisphere (outside Theorem 4.1's premise), the tokens converge to "
          "consensus. Its stored witnesses have a negative-definite symmetric part of P (repulsive attention: "
          "P = -2I + J/2, and a two-head instance likewise); the symmetric P = -2I keeps the same attractor, so "
          "non-symmetry plays no role in that refutation (conj.nonsymmetric-attractive asks the question where it "
          "does).", ("search",), "suite",
          checks=SEARCH_CHECKS,
          formula=r"U = I,\ \ P \ne P^\top"),
    Claim("conj.nonsymmetric-attractive", "sec. 4 (beyond Theorem 4.1, Remark 4.3)", "sec. 3 (beyond Theorem 3.2)",
          "This suite's own question (not printed as a conjecture), conj.nonsymmetric-full restated so that "
          "non-symmetry is what is tested. Why: the refutation of conj.nonsymmetric-full rests on repulsive attention "
          "(sym(P) negative definite) and survives P -> sym(P), while for symmetric positive-definite P with U = I "
          "(Hypothesis 3.1, W = P) every asymptotically stable equilibrium is a consensus (conj.gradient-equilibria, "
          "proved). The question: full attention, U = I, h >= 1, every P_eta with a positive-definite symmetric part "
          "(attractive attention) and some P_eta with a non-zero skew part: for almost every initial state, "
          "including states in no open hemisphere, do the tokens still converge to consensus? A witness must be "
          "an attractor away from consensus that P's symmetric part alone does not have.", ("search",), "suite",
          checks=SEARCH_CHECKS,
          formula=r"U = I,\ \ P + P^\top \succ 0,\ \ P \ne P^\top"),
    # --- The two conjectures the paper cites (ICML Remark 4.6 / long Remark 5.3: 'two conjectures are proposed, but
    # not proved, in (Karagodin et al., 2024)'), as a public Lean formalisation transcribes arXiv 2411.04990v2 sec. 4
    # (the authors' own text is not among the project's sources: second-hand, and said so in each statement) -------
    Claim("conj.karagodin-thm1.5", "Remark 5.3 (citing [26])", "Remark 4.6 (citing Karagodin et al.)",
          "Cited conjecture (Karagodin, Polyanskiy, Rigollet, 'Clustering in causal attention masking', arXiv "
          "2411.04990v2, sec. 4, as transcribed in a public Lean formalisation; the paper: 'two conjectures are "
          "proposed, but not proved'): 'Let V be diagonalizable with d distinct positive real eigenvalues, the "
          "largest lambda_max with unit eigenvector xi. Then for arbitrary Q, K and almost any initialization the CSA "
          "dynamics satisfy: for every k, lim_{t->inf} x_k(t) in {xi, -xi}.' CSA: causal attention on the sphere, "
          "alpha_kj proportional to exp(beta <Q x_k, K x_j>) over j <= k, rows summing to 1 (eq. 6 with h = 1, "
          "P = beta Q^T K, U = V, up to the time scale sqrt(d)). Witnesses must meet the hypothesis exactly: the "
          "spectrum certified by Arb eigenvalue balls.", ("search", "symbolic"), "cited",
          checks=(("theory.karagodin:check_thm15_two_tokens", "symbolic"),
                  *SEARCH_CHECKS)),
    Claim("conj.karagodin-thm2-normalized-component", "Remark 5.3 (citing [26])",
          "Remark 4.6 (citing Karagodin et al.)",
          "Cited conjecture (arXiv 2411.04990v2, sec. 4, as transcribed): 'Let lambda > 0, let L be an eigenspace of "
          "V for lambda with dim L >= 2, let V preserve L^perp, and let <Vz, z> < lambda |z|^2 for every nonzero z in "
          "L^perp. Then almost every initialization yields convergence of every token to the normalized L-component "
          "of x_1(0).' READING 1 (the source's words, the transcriber's choice): the limit is "
          "P_L x_1(0) / |P_L x_1(0)|. CSA dynamics as conj.karagodin-thm1.5; hypotheses decided in exact rational "
          "arithmetic.", ("search",), "cited",
          checks=SEARCH_CHECKS),
    Claim("conj.karagodin-thm2-perp-projection", "Remark 5.3 (citing [26])", "Remark 4.6 (citing Karagodin et al.)",
          "Quoted as conj.karagodin-thm2-normalized-component. READING 2 (the source's symbols, "
          "y_1 := P_{L^perp}(x_1(0))): every token converges to P_{L^perp} x_1(0) / |P_{L^perp} x_1(0)|.",
          ("search", "proof"), "cited",
          checks=(("theory.karagodin:check_thm2_perp_first_token", "proof"),
                  *SEARCH_CHECKS)),
)

CLAIMS_BY_ID: dict[str, Claim] = {claim.id: claim for claim in CLAIMS}


def get_claim(claim_id: str) -> Claim:
    """The registry entry for ``claim_id``; a clear error for an unknown ID."""
    try:
        return CLAIMS_BY_ID[claim_id]
    except KeyError:
        raise KeyError(f"claim id {claim_id!r} is not in the registry (foundation/registry.py); known ids: "
                       f"{', '.join(CLAIMS_BY_ID)}") from None
