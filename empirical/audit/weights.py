"""The audit's weight measures: per layer and head ``P_eta`` and ``U_eta = W_O W_V`` (norms, asymmetry, spectra;
Theorem 5.2's hypotheses), the summed U of each layer, the norm gains' geometry and the embedding scale."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ..adapters import LoopAdapter
from .geometry import gain_geometry, rmsnorm_ellipsoid
from .heads import attention_window, head_factors, layer_value_matrix, norm_gain, qk_norms
from .hypotheses import asymmetry, low_rank_asymmetry, low_rank_norms, low_rank_summary, spectrum_summary

#: Full d x d eigen-decompositions of the layer's summed U only up to this width (cost d^3 per layer).
DENSE_EIGEN_MAX_WIDTH = 1024


def audit_weights(adapter: LoopAdapter) -> dict[str, Any]:
    """Per layer and head: P_eta and U_eta measures; per layer: the summed U; the norm gains."""
    layers = []
    for index in range(adapter.num_layers):
        factors = head_factors(adapter, index)
        heads = []
        for head in range(factors.heads):
            p_left, p_right = factors.p_factors(head)
            u_left, u_right = factors.u_factors(head)
            p_frobenius, p_spectral = low_rank_norms(p_left, p_right)
            u_frobenius, u_spectral = low_rank_norms(u_left, u_right)
            u_spectrum = low_rank_summary(u_left, u_right)
            p_spectrum = low_rank_summary(p_left, p_right)
            heads.append({
                "head": head,
                "P_frobenius": p_frobenius, "P_spectral": p_spectral,
                "P_asymmetry": low_rank_asymmetry(p_left, p_right),
                "P_top_real": p_spectrum.top.real, "P_positive_fraction": p_spectrum.positive_fraction,
                "U_frobenius": u_frobenius, "U_spectral": u_spectral,
                "U_asymmetry": low_rank_asymmetry(u_left, u_right),
                "U_top_real": u_spectrum.top.real, "U_top_imag": u_spectrum.top.imag,
                "U_top_is_real": u_spectrum.top_is_real, "U_top_multiplicity": u_spectrum.multiplicity,
                "U_gap": u_spectrum.gap, "U_spread": u_spectrum.spread, "U_radius": u_spectrum.radius,
                "U_positive_fraction": u_spectrum.positive_fraction,
                "U_simple_positive_top": u_spectrum.simple_positive_real,
                "rank_bound": int(u_left.shape[1]),
            })
        total = layer_value_matrix(factors)
        width = total.shape[0]
        layer = {
            "layer": index, "heads": heads, "head_dim": int(factors.query.shape[1]), "width": width,
            "scaling": factors.scaling, "qkv_biased": factors.biased, "kv_heads": factors.kv_heads,
            "qk_norm": factors.qk_norm, "window": attention_window(adapter, index),
            "U_sum_asymmetry": asymmetry(total),
            "U_sum_identity_distance": float(np.linalg.norm(total - np.eye(width)) / math.sqrt(width)),
        }
        if width <= DENSE_EIGEN_MAX_WIDTH:
            summary = spectrum_summary(total)
            singular = np.linalg.svd(total, compute_uv=False)
            layer.update({"U_sum_top_real": summary.top.real, "U_sum_top_is_real": summary.top_is_real,
                          "U_sum_simple_positive_top": summary.simple_positive_real,
                          "U_sum_condition": float(singular[0] / singular[-1]) if singular[-1] > 0 else float("inf")})
        layers.append(layer)
    modules = [(f"block {i} norm_1", adapter._norm_1(block)) for i, block in enumerate(adapter.blocks)]
    modules.append(("final norm", adapter._final_norm_module()))
    qk = [(f"block {i} {name}", module) for i in range(adapter.num_layers) if (pair := qk_norms(adapter, i))
          for name, module in zip(("q_norm", "k_norm"), pair)]
    return {"layers": layers, "norms": [_norm_entry(where, module) for where, module in modules if module is not None],
            "qk_norms": [_norm_entry(where, module) for where, module in qk]}


def embedding_scale(adapter: LoopAdapter, input_ids: torch.Tensor) -> dict[str, float]:
    """How the input embedding module maps the table's rows: ``factor`` c of the least-squares fit
    ``embed(ids) ~ c W_E[ids]`` and the relative ``residual`` of that fit (Gemma: c = sqrt(d), residual 0)."""
    module = adapter.model.get_input_embeddings()
    with torch.inference_mode():
        embedded = module(input_ids).double()
        rows = module.weight[input_ids].double()
    factor = float((embedded * rows).sum() / (rows * rows).sum())
    residual = float((embedded - factor * rows).norm() / embedded.norm())
    return {"factor": factor, "residual": residual, "sqrt_width": math.sqrt(adapter.width)}


def _norm_entry(where: str, module: torch.nn.Module) -> dict[str, Any]:
    """A norm's gain geometry; for RMSNorm also the range of W = diag(1/(d g^2)) of its ellipsoid E_W."""
    kind, gain, bias, eps = norm_gain(module)
    geometry = gain_geometry(gain)
    entry = {"where": where, "kind": kind, "axis_ratio": geometry.axis_ratio, "cv": geometry.cv,
             "negative": geometry.negative, "verdict": geometry.verdict, "eps": eps,
             "bias_norm": float(np.linalg.norm(bias)) if bias is not None else 0.0,
             "gain_rms": float(np.sqrt(np.mean(gain**2)))}
    if kind == "rmsnorm" and geometry.min_abs > 0:
        w = rmsnorm_ellipsoid(gain)
        entry.update({"W_min": float(w.min()), "W_max": float(w.max())})
    return entry
