"""The audit table: every hypothesis of the paper the audit judges, as a :class:`~empirical.audit.grading.Hypothesis`
(measure, grade, describe), and :func:`hypothesis_rows`, which applies them to one audited run.

Three groups, in the table's order: the paper's own hypotheses on the weights and the normalisation, what later
architectures add to the paper's block (all of it in Gemma 3), and the hypotheses judged per variant (with and
without feed-forward layers) on the looped states.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .grading import (EXACT_TOL, NEARLY_TOL, SURFACE_TOL_FLOAT32, Hypothesis, RunView, decay_graded, decay_numbers,
                      graded, share_graded, worst)


def _holds(measured: Any) -> str:
    """The grade of a hypothesis that every run meets (e.g. fixed finite weights)."""
    return "holds"


def _identity(view: RunView) -> dict[str, Any]:
    return {"head_dim": view.head_dim, "width": view.width,
            "identity": np.array([layer["U_sum_identity_distance"] for layer in view.layers])}


def _u_asymmetry_graded(u_asym: np.ndarray) -> str:
    return "holds" if u_asym.max() <= EXACT_TOL else "nearly" if np.median(u_asym) <= NEARLY_TOL else "fails"


def _head_rank(m: dict[str, Any], matrix: str) -> str:
    """What a head's width allows ``matrix`` (d x d): rank at most d_head below d, or a full-width head."""
    if m["head_dim"] < m["width"]:
        return f"each {matrix} has rank <= d_head = {m['head_dim']} < d = {m['width']}"
    return f"each {matrix} is d x d with d_head = d = {m['width']}"


def _invertible_numbers(m: dict[str, Any]) -> str:
    layers = m["layers"]
    return (_head_rank(m, "head's U_eta")
            + (f"; summed U condition number {min(l['U_sum_condition'] for l in layers):.3g} .. "
               f"{max(l['U_sum_condition'] for l in layers):.3g}" if "U_sum_condition" in layers[0] else ""))


def _centre_offset(view: RunView) -> float:
    """LayerNorm's centre: max |beta| / (sqrt(d) rms(gamma)) over the norms."""
    return max(n["bias_norm"] / (math.sqrt(view.width) * n["gain_rms"]) for n in view.norms)


def _rmsnorm_centre_numbers(norms: list[dict[str, Any]]) -> str:
    return ("RMSNorm: E_W with W = diag(1/(d g^2)), entries "
            + (f"{min(n['W_min'] for n in norms):.3g} .. {max(n['W_max'] for n in norms):.3g}"
               if all("W_min" in n for n in norms) else "undefined (a zero gain)")
            + "; the map is diag(g) . pi_{I/d}, not pi_W")


#: The paper's hypotheses on the weights and the normalisation.
MODEL_HYPOTHESES = (
    Hypothesis("P_eta bounded", "Lemma 4.1; Thm 4.1, 5.1, 5.2",
               lambda v: max(h["P_spectral"] for h in v.heads), _holds,
               lambda p_spectral: f"fixed finite weights; max |P_eta|_2 = {p_spectral:.3g} over all heads"),
    Hypothesis("P, U time-invariant", "Thm 5.2; Remark 4.1",
               lambda v: len(v.layers), lambda blocks: "fails" if blocks > 1 else "holds",
               lambda blocks: f"{blocks} blocks with their own weights (per pass; periodic over passes)"),
    # every block must have U = I (Hyp. 4.1 / 5.1 hold for the model only if they hold layer by layer)
    Hypothesis("U_eta = I", "Thm 4.1, 5.1 (Hyp. 4.1, 5.1)", _identity,
               lambda m: "fails" if m["head_dim"] < m["width"] else graded(float(m["identity"].max())),
               lambda m: (f"{_head_rank(m, 'U_eta')}; summed over heads: "
                          f"|sum U - I|_F / sqrt(d) = {m['identity'].min():.3g} .. {m['identity'].max():.3g}")),
    Hypothesis("one head (h = 1)", "Thm 5.2 (Hyp. 5.2)",
               lambda v: len(v.layers[0]["heads"]), lambda h: "holds" if h == 1 else "fails",
               lambda h: f"h = {h} heads per block"),
    Hypothesis("U_eta symmetric", "Thm 5.2, Lemma 5.2",
               lambda v: np.array([h["U_asymmetry"] for h in v.heads]), _u_asymmetry_graded,
               lambda u_asym: (f"|U - U^T|_F/|U|_F median {np.median(u_asym):.3g}, range {u_asym.min():.3g} .. "
                               f"{u_asym.max():.3g} (random matrices: ~1.41)")),
    Hypothesis("top eigenvalue of U_eta real, simple, > 0", "Thm 5.2, Lemma 5.2",
               lambda v: np.array([h["U_simple_positive_top"] for h in v.heads]),
               lambda simple: share_graded(float(simple.mean())),
               lambda simple: f"{int(simple.sum())} of {simple.size} heads"),
    Hypothesis("U invertible", "Remark 5.2 (reparametrisation)",
               lambda v: {"head_dim": v.head_dim, "width": v.width, "layers": v.layers},
               lambda m: "fails" if m["head_dim"] < m["width"] else "holds", _invertible_numbers),
    Hypothesis("P symmetric positive definite (W = P)", "Thm 3.1 (gradient case)",
               lambda v: {"head_dim": v.head_dim, "width": v.width,
                          "p_asym": np.array([h["P_asymmetry"] for h in v.heads])},
               lambda m: "fails" if m["head_dim"] < m["width"] else graded(float(np.median(m["p_asym"]))),
               lambda m: (_head_rank(m, "P_eta")
                          + (" (not definite)" if m["head_dim"] < m["width"] else "")
                          + f"; |P - P^T|_F/|P|_F median {np.median(m['p_asym']):.3g}")),
    Hypothesis("normalisation onto a sphere (constant gain)", "Remark 2.3; all theorems (W = I)",
               lambda v: v.norms, lambda norms: worst([n["verdict"] for n in norms]),
               lambda norms: (f"{norms[0]['kind']}; gain axis ratio max|g|/min|g| median "
                              f"{np.median([n['axis_ratio'] for n in norms]):.3g}, max "
                              f"{max(n['axis_ratio'] for n in norms):.3g} over {len(norms)} norms")),
    Hypothesis("normalised states on a surface centred at 0 (E_W)", "eq. 2 (E_W)", _centre_offset, graded,
               lambda bias: (f"LayerNorm centre beta: max |beta| / (sqrt(d) rms(gamma)) = {bias:.3g}; "
                             "states also lie in the hyperplane 1^T (z - beta)/gamma = 0"),
               applies=lambda v: v.norm_kind == "layernorm"),
    Hypothesis("normalised states on a surface centred at 0 (E_W)", "eq. 2 (E_W)",
               lambda v: v.norms, _holds, _rmsnorm_centre_numbers,
               applies=lambda v: v.norm_kind != "layernorm"),
)


def _embedding_numbers(scale: dict[str, float]) -> str:
    return (f"embed(ids) = c W_E[ids] with c = {scale['factor']:.4g} (sqrt(d) = {scale['sqrt_width']:.4g}), "
            f"fit residual {scale['residual']:.2g}"
            + ("" if scale["factor"] == 1.0 else
               f"; N(c y) = N(y) up to eps, but each block's first update is {scale['factor']:.3g} "
               "times smaller relative to the stream than with unscaled embeddings"))


def _windows(view: RunView) -> dict[str, Any]:
    windowed = [layer["window"] for layer in view.layers if layer["window"] is not None]
    context = view.run.get("context_length")
    return {"windowed": windowed, "layers": len(view.layers), "tokens": view.tokens,
            "restricting": [w for w in windowed if context is None or w < context]}


def _window_numbers(m: dict[str, Any]) -> str:
    windowed, tokens = m["windowed"], m["tokens"]
    if not windowed:
        return "every layer attends to all earlier tokens"
    return (f"{len(windowed)} of {m['layers']} layers see only the last {sorted(set(windowed))} tokens: "
            f"for prompts longer than that a token no longer sees the first ones; "
            + (f"the audited prompts (l = {tokens}) fit in the window" if min(windowed) >= tokens
               else f"the audited prompts (l = {tokens}) are longer"))


def _kv_numbers(m: tuple[int, int]) -> str:
    heads, kv = m
    if kv < heads:
        return (f"h = {heads} query heads share {kv} key/value head(s) ({heads // kv} per group): "
                "P_eta = s W_Q,eta^T W_K,g and U_eta = W_O,eta W_V,g with the group's W_K,g, W_V,g, so "
                "the U_eta of a group share their row space")
    return f"h = {heads} heads, each with its own W_K, W_V"


def _qk(view: RunView) -> dict[str, Any]:
    spread = np.concatenate([np.asarray(v["qk_scale_spread"], dtype=float).ravel()
                             for v in view.run["variants"].values()])
    return {"spread": spread, "qk_layers": sum(layer["qk_norm"] for layer in view.layers), "layers": len(view.layers),
            "gains": view.run["weights"].get("qk_norms", [])}


def _qk_numbers(m: dict[str, Any]) -> str:
    if not m["qk_layers"]:
        return "no QK-norm: the logits are s (W_Q z_i)^T (W_K z_j) (rotary aside)"
    spread = m["spread"]
    varies = (f"median {np.median(spread):.3g}, max {spread.max():.3g} (per prompt, head and block)" if spread.size
              else "not measured (no block was looped)")
    return (f"QK-norm in {m['qk_layers']} of {m['layers']} layers: the logit is a fixed bilinear form divided "
            f"by rms(W_Q z_i) rms(W_K z_j); over token pairs that divisor varies by max/min - 1 = {varies}; "
            f"q/k norm gain axis ratio up to {max(n['axis_ratio'] for n in m['gains']):.3g}")


def _qk_graded(m: dict[str, Any]) -> str:
    """The divisor's largest spread, graded; with QK-norm layers whose spread was never measured, ``fails``: nothing
    shows the divisor constant."""
    if m["spread"].size:
        return graded(float(m["spread"].max()))
    return "fails" if m["qk_layers"] else "holds"


def _update(view: RunView) -> tuple[np.ndarray, np.ndarray]:
    variant = view.run["variants"]["no-ffn"]
    return (np.asarray(variant["update_distance"], dtype=float),
            np.asarray(variant["update_within_rounding"], dtype=bool))


def _update_graded(m: tuple[np.ndarray, np.ndarray]) -> str:
    distance, within = m
    return "holds" if within.all() else "nearly" if distance.max() <= NEARLY_TOL else "fails"


def _update_numbers(m: tuple[np.ndarray, np.ndarray]) -> str:
    distance, within = m
    return (f"update x_out - x_in against the output projection's output a: |update - a|/|a| median "
            f"{np.median(distance):.3g}, max {distance.max():.3g}; {int(within.sum())} of {within.size} "
            f"(prompt, block) updates equal a to float32 rounding"
            + ("" if _update_graded(m) == "holds" else "; a norm rescales a to a fixed rms times its gain "
               "before it joins the stream, which is not the projection pi_W of the stream"))


#: What later architectures add to the paper's block (all of it in Gemma 3): embedding scaling, attention
#: windows, grouped-query attention, QK-norm and a norm on the attention output (post-norm).
ARCHITECTURE_HYPOTHESES = (
    Hypothesis("initial tokens are the embedding rows (no embedding scale)",
               "y_i(0) (Sec. 2); the size of each update relative to the stream",
               lambda v: v.run["weights"]["embedding_scale"], lambda scale: graded(abs(scale["factor"] - 1.0)),
               _embedding_numbers),
    Hypothesis("each token attends to all earlier tokens (no attention window)",
               "the attention dynamics (Sec. 2: sum over j <= i); E's consensus",
               _windows, lambda m: "fails" if m["restricting"] else "holds", _window_numbers),
    Hypothesis("every head has its own keys and values (no grouped-query attention)",
               "the per-head P_eta, U_eta (Sec. 2) as independent matrices",
               lambda v: (len(v.layers[0]["heads"]), v.layers[0]["kv_heads"]),
               lambda m: "holds" if m[1] == m[0] else "fails", _kv_numbers),
    Hypothesis("attention logits z_i^T P_eta z_j with a fixed P_eta (no QK-norm)",
               "Lemma 4.1; Thm 4.1, 5.1, 5.2 (fixed P)",
               _qk, _qk_graded, _qk_numbers),
    Hypothesis("the block adds the attention output itself (no post-norm) [no-ffn]",
               "the update y + sum_eta U_eta (...) of Sec. 2; pi_W acts on the stream, not the update",
               _update, _update_graded, _update_numbers, applies=lambda v: "no-ffn" in v.run["variants"]),
)


def _surface(view: RunView) -> dict[str, Any] | None:
    """The largest surface residuals of the variant's normalised states; ``None`` without a norm before attention."""
    if view.variant["surface_radial"].size == 0:  # OLMo-2: attention reads the raw stream
        return None
    return {"radial": float(view.variant["surface_radial"].max()),
            "hyperplane": view.variant["surface_hyperplane"].max() if view.norm_kind == "layernorm" else None}


def _surface_numbers(m: dict[str, Any] | None) -> str:
    if m is None:
        return "no norm before attention: it reads the un-normalised residual stream"
    return (f"max | |u|^2/d - s/(s+eps) | = {m['radial']:.2g}"
            + (f", max |mean u| = {m['hyperplane']:.2g}" if m["hyperplane"] is not None else "")
            + f" (tolerance {SURFACE_TOL_FLOAT32:g}: float32)")


def _hemisphere(key: str, label: str) -> Hypothesis:
    """Theorem 4.1's premise on the variant's ``key`` states (normalised or residual)."""
    return Hypothesis(
        f"tokens in one open hemisphere, {label} [{{variant}}]", "Thm 4.1 (premise)",
        lambda v: (v.variant[f"inside_{key}"], v.variant[f"margin_{key}"], v.tokens, v.width),
        lambda m: share_graded(float(m[0].mean())),
        lambda m: (f"{int(m[0].sum())} of {m[0].size} (prompt, block) states; min LP margin "
                   f"{m[1].min():.3g}; l = {m[2]} tokens, d = {m[3]}"))


def _first_token_numbers(m: tuple[np.ndarray, np.ndarray, int]) -> str:
    block_drift, pass_drift, layers = m
    numbers = f"1 - cos per block: median {np.median(block_drift):.3g}, max {block_drift.max():.3g}"
    if pass_drift.size:
        last = pass_drift[:, -layers:]
        numbers += f"; same block, consecutive passes: max {pass_drift.max():.3g}, last pass max {last.max():.3g}"
    return numbers


def variant_hypotheses() -> tuple[Hypothesis, ...]:
    """The hypotheses judged per variant (with and without FFN) on the looped states.

    Built on each call, not at import: the rows' measures and texts are then made by the code that is current when
    the table is drawn (mutation testing switches a mutant on after the module is imported).
    """
    return (
        Hypothesis("normalised states on the predicted surface [{variant}]", "Remark 2.3 (corrected); model.layernorm",
                   _surface, lambda m: "holds" if m is not None and m["radial"] <= SURFACE_TOL_FLOAT32 else "fails",
                   _surface_numbers),
        _hemisphere("normalised", "normalised states"),
        _hemisphere("residual", "residual stream"),
        Hypothesis("first token fixed [{variant}]", "Thm 5.1 (consequence of U = I)",
                   lambda v: (v.variant["first_token_drift_block"], v.variant["first_token_drift_pass"],
                              len(v.layers)),
                   lambda m: graded(float(m[0].max()), nearly=1e-2), _first_token_numbers),
        Hypothesis("conclusion: E decays [{variant}]", "Thm 4.1, 5.1, 5.2 (conclusion)",
                   lambda v: (v.variant["rate"], v.variant["E"]), lambda m: decay_graded(m[0]),
                   lambda m: decay_numbers(*m)),
    )


def hypothesis_rows(run: dict[str, Any], tokens: int) -> list[dict[str, str]]:
    """"hypothesis -> holds / nearly / fails" rows with the numbers, for one audited model run on prompts of
    ``tokens`` tokens."""
    view = RunView(run, tokens)
    rows = [h.row(view) for h in (*MODEL_HYPOTHESES, *ARCHITECTURE_HYPOTHESES) if h.applies(view)]
    return rows + [h.row(variant) for variant in view.per_variant() for h in variant_hypotheses()
                   if h.applies(variant)]
