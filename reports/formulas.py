"""The report's formulas in LaTeX, for display only (typeset by MathJax in the HTML report).

``verdicts.json`` and the registry keep the ASCII statements; these are their typeset forms:

* :data:`MODEL_EQUATION`: the continuous-time model, eq. 6 (ICML and long version), with its attention weights;
* the formula of each claim's statement is the claim's own (``Claim.formula``, foundation/registry.py);
* :data:`AUDIT_FRAGMENTS`: ASCII formulas as the audit writes them (hypothesis names, prose, table columns)
  -> LaTeX; :func:`typeset_fragments` marks them up wherever they occur in a text.
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

#: Eq. 6 (ICML notation, SPEC section 1): the tangent map of pi_W at y_i applied to the attention-weighted sum.
MODEL_EQUATION = (
    r"\dot y_i = T_{y_i}\pi_W\Bigl(\sum_{\eta=1}^{h}\sum_{j=1}^{l}\alpha_{ij}^{\eta}(t,y)\,U_\eta(t)\,y_j\Bigr),"
    r"\qquad \alpha_{ij}^{\eta} = \frac{e^{y_i^\top P_\eta(t)\,y_j}}{\sqrt{n+1}\,\sum_{k=1}^{l} e^{y_i^\top P_\eta(t)\,y_k}},"
    r"\qquad T_y\pi_W = I - y\,y^\top W \ \ (y \in E_W)"
)

#: ASCII formulas of the audit (empirical: hypothesis names, the "Theory meets practice" prose, table titles and
#: columns) -> LaTeX. Matched longest first, so "U_eta = I" wins over "U_eta".
AUDIT_FRAGMENTS: tuple[tuple[str, str], ...] = (
    ("P_eta = s W_Q,eta^T W_K,eta", r"P_\eta = s\,W_{Q,\eta}^\top W_{K,\eta}"),
    ("U_eta = W_O,eta W_V,eta", r"U_\eta = W_{O,\eta} W_{V,\eta}"),
    ("z_i^T P_eta z_j", r"z_i^\top P_\eta z_j"),
    ("E ~ A exp(-r k)", r"E \approx A\,e^{-r k}"),
    ("|P_eta|_2", r"\|P_\eta\|_2"),
    ("|K|/|S|", r"\|K\|_F / \|S\|_F"),
    ("asym(U_eta)", r"\operatorname{asym}(U_\eta)"),
    ("asym(sum U)", r"\operatorname{asym}\bigl(\textstyle\sum_\eta U_\eta\bigr)"),
    ("1/sqrt(d_head)", r"1/\sqrt{d_{\mathrm{head}}}"),
    ("d_head x d_head", r"d_{\mathrm{head}} \times d_{\mathrm{head}}"),
    ("rank <= d_head", r"\operatorname{rank} \le d_{\mathrm{head}}"),
    ("sqrt(d)", r"\sqrt{d}"),
    ("d x d", r"d \times d"),
    ("|U - U^T|_F/|U|_F", r"\|U - U^\top\|_F / \|U\|_F"),
    ("|P - P^T|_F/|P|_F", r"\|P - P^\top\|_F / \|P\|_F"),
    ("|sum U - I|_F / sqrt(d)", r"\bigl\|\textstyle\sum_\eta U_\eta - I\bigr\|_F / \sqrt{d}"),
    ("max|g|/min|g|", r"\max|g| / \min|g|"),
    ("U_eta = I", r"U_\eta = I"),
    ("U = I", r"U = I"),
    ("W = I", r"W = I"),
    ("W = P", r"W = P"),
    ("h = 1", r"h = 1"),
    ("P_eta", r"P_\eta"),
    ("U_eta", r"U_\eta"),
    ("E_W", r"E_W"),
    ("R^2", r"R^2"),
)


#: ASCII formulas of the printed and corrected statements that the report's first screen quotes (the discrepancies
#: of theory/ and empirical/) -> LaTeX, typeset there as the table's formulas are.
STATEMENT_FRAGMENTS: tuple[tuple[str, str], ...] = (
    ("P_{l,n} = 2^{-(l-1)} sum_{mu=0}^{n-1} C(l-1, mu)", r"P_{l,n} = 2^{-(l-1)} \sum_{\mu=0}^{n-1} \binom{l-1}{\mu}"),
    ("P_{l,n} = 2^{-(l-1)} sum_{mu=0}^{n} C(l-1, mu)", r"P_{l,n} = 2^{-(l-1)} \sum_{\mu=0}^{n} \binom{l-1}{\mu}"),
    ("P_{l,n} = 1", r"P_{l,n} = 1"),
    ("n >= l-1", r"n \ge l - 1"),
    ("n >= l", r"n \ge l"),
    ("l = n+1", r"l = n + 1"),
    ("d = n+1", r"d = n + 1"),
    ("R^{n+1}", r"\mathbb{R}^{n+1}"),
    ("S^n", r"S^n"),
    ("+-v", r"\pm v"),
    ("v^T y = 0", r"v^\top y = 0"),
    ("u_2^T y > 0", r"u_2^\top y > 0"),
    ("u_2", r"u_2"),
    ("lambda_2", r"\lambda_2"),
    ("gamma = gamma0 1", r"\gamma = \gamma_0 \mathbf{1}"),
    ("|N(x) - beta|^2 = (n+1) gamma0^2 var/(var + eps)",
     r"\|N(x) - \beta\|^2 = (n+1)\,\gamma_0^2\,\frac{\mathrm{var}}{\mathrm{var} + \varepsilon}"),
    ("|N(x) - beta|^2 = (n+1) gamma0^2", r"\|N(x) - \beta\|^2 = (n+1)\,\gamma_0^2"),
    ("(n+1) gamma0^2", r"(n+1)\,\gamma_0^2"),
    ("sqrt(n+1) |gamma0|", r"\sqrt{n+1}\,|\gamma_0|"),
    ("sqrt(n+1)|gamma0|", r"\sqrt{n+1}\,|\gamma_0|"),
    ("sqrt(var/(var+eps))", r"\sqrt{\mathrm{var} / (\mathrm{var} + \varepsilon)}"),
    ("1^T (N(x) - beta) = 0", r"\mathbf{1}^\top (N(x) - \beta) = 0"),
    ("1^T (z - beta) = 0", r"\mathbf{1}^\top (z - \beta) = 0"),
    ("eps -> 0", r"\varepsilon \to 0"),
)


def _fragment_pattern(fragments: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    """One alternation of the ASCII forms, longest first; a form starting or ending with a letter or digit
    must not continue a word there (``P_eta`` is not matched inside ``XP_etas``)."""
    parts = []
    for ascii_form, _ in sorted(fragments, key=lambda pair: -len(pair[0])):
        before = r"(?<!\w)" if ascii_form[0].isalnum() else ""
        after = r"(?!\w)" if ascii_form[-1].isalnum() else ""
        parts.append(before + re.escape(ascii_form) + after)
    return re.compile("|".join(parts))


_PATTERN = _fragment_pattern(AUDIT_FRAGMENTS + STATEMENT_FRAGMENTS)
_TEX = dict(AUDIT_FRAGMENTS + STATEMENT_FRAGMENTS)


def inline_math(tex: str) -> Markup:
    """``tex`` as an inline formula for MathJax: ``<span class="math">\\( tex \\)</span>`` (HTML-escaped)."""
    return Markup('<span class="math">\\(') + escape(tex) + Markup('\\)</span>')


def display_math(tex: str) -> Markup:
    """``tex`` as a display formula for MathJax: ``<div class="math display">\\[ tex \\]</div>``."""
    return Markup('<div class="math display">\\[') + escape(tex) + Markup('\\]</div>')


def typeset_fragments(text: str) -> Markup:
    """``text`` HTML-escaped, with every ASCII formula of :data:`AUDIT_FRAGMENTS` and :data:`STATEMENT_FRAGMENTS`
    replaced by its inline math."""
    out, start = Markup(""), 0
    for match in _PATTERN.finditer(text):
        out += escape(text[start:match.start()]) + inline_math(_TEX[match.group(0)])
        start = match.end()
    return out + escape(text[start:])
