"""The audit's state measures: loop the model and measure, after every block and per prompt, whether the tokens
lie in one open hemisphere (Theorem 4.1's premise), the normalised states' distance from the predicted surface,
the first token's drift, E, the QK-norm divisors' spread and the block update against the output projection."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from sim.field.hemisphere import open_hemisphere

from ..adapters import LoopAdapter
from ..eq9 import misalignment
from ..loop import embed
from .geometry import layernorm_residuals, rmsnorm_residuals
from .heads import norm_gain, output_projection, qk_norms


def _cos_distance(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    """``1 - cos(a_p, b_p)`` per row (float64), shapes ``[prompts, d]``."""
    a64, b64 = a.double(), b.double()
    cos = (a64 * b64).sum(-1) / (a64.norm(dim=-1) * b64.norm(dim=-1))
    return (1.0 - cos).cpu().numpy()


def _hemispheres(states: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Per prompt: inside one open hemisphere? and the LP margin. ``states``: ``[prompts, tokens, d]``."""
    results = [open_hemisphere(s) for s in states.double().cpu().numpy()]
    return np.array([r.inside for r in results]), np.array([r.margin for r in results])


def _qk_spread(query: torch.Tensor, key: torch.Tensor, eps_q: float, eps_k: float) -> np.ndarray:
    """Per prompt: ``max / min - 1`` over token pairs of the QK-norm divisor ``rms(q_i) rms(k_j)`` of one head's
    logits (the largest over heads). ``query`` / ``key`` are what the norms receive: ``[prompts, heads, tokens,
    d_head]`` (per-head norms; fewer key heads with grouped-query attention) or ``[prompts, tokens, width]``."""
    rq = torch.sqrt(query.double().pow(2).mean(-1) + eps_q)
    rk = torch.sqrt(key.double().pow(2).mean(-1) + eps_k)
    ratio_q, ratio_k = rq.amax(-1) / rq.amin(-1), rk.amax(-1) / rk.amin(-1)
    if ratio_q.ndim == 2:  # per head: a query head's keys are those of its group
        ratio_k = ratio_k.repeat_interleave(ratio_q.shape[1] // ratio_k.shape[1], dim=1)
        return (ratio_q * ratio_k).amax(1).cpu().numpy() - 1.0
    return (ratio_q * ratio_k).cpu().numpy() - 1.0


def _update_against_output(x: torch.Tensor, out: torch.Tensor, attention_output: torch.Tensor
                           ) -> tuple[np.ndarray, np.ndarray]:
    """Per prompt: the relative distance ``|Delta - a|_F / |a|_F`` of the block's update ``Delta = out - x`` from
    the output projection's output ``a``, and whether they agree to the rounding of ``out = x + a``
    (``|Delta - a| <= eps_dtype |out|`` in every entry; ``Delta`` is computed in float64, exactly)."""
    a = attention_output.double()
    difference = (out.double() - x.double()) - a
    distance = difference.flatten(1).norm(dim=1) / a.flatten(1).norm(dim=1)
    within = (difference.abs() <= torch.finfo(out.dtype).eps * out.double().abs()).flatten(1).all(dim=1)
    return distance.cpu().numpy(), within.cpu().numpy()


@dataclass
class _Series:
    """What :func:`audit_states` collects: per block (and for E and the residual stream's hemispheres also the
    embeddings) one ``[prompts]`` array each; per normalised block input the surface residuals and radii."""

    energy: list = field(default_factory=list)
    inside_res: list = field(default_factory=list)
    margin_res: list = field(default_factory=list)
    inside_norm: list = field(default_factory=list)
    margin_norm: list = field(default_factory=list)
    drift_block: list = field(default_factory=list)
    drift_pass: list = field(default_factory=list)
    surface_radial: list = field(default_factory=list)
    surface_hyperplane: list = field(default_factory=list)
    radii: list = field(default_factory=list)
    qk_spread: list = field(default_factory=list)
    update_distance: list = field(default_factory=list)
    update_within: list = field(default_factory=list)

    def residual(self, x: torch.Tensor) -> None:
        """E and the hemisphere test of the residual stream ``x`` (``[prompts, tokens, d]``)."""
        self.energy.append(misalignment(x).double().cpu().numpy())
        ok, m = _hemispheres(x)
        self.inside_res.append(ok)
        self.margin_res.append(m)

    def normalised(self, norm: torch.nn.Module | None, x: torch.Tensor) -> None:
        """The attention input ``norm(x)``: its distance from the predicted surface and its hemisphere test
        (LayerNorm states centred at their bias ``beta``). Without a norm attention reads ``x`` itself (OLMo-2)."""
        if norm is None:
            z = x
        else:
            kind, gain, bias, eps = norm_gain(norm)
            z = norm(x)
            xs, zs = x.double().cpu().numpy(), z.double().cpu().numpy()
            if kind == "layernorm":
                res = layernorm_residuals(xs, zs, gain, bias, eps)
                self.radii.append(np.linalg.norm(zs - bias, axis=-1).ravel())
                z = z - torch.as_tensor(bias, dtype=z.dtype)
            else:
                res = rmsnorm_residuals(xs, zs, gain, eps)
            self.surface_radial.append(res.radial_eps)
            self.surface_hyperplane.append(res.hyperplane)
        ok, m = _hemispheres(z)
        self.inside_norm.append(ok)
        self.margin_norm.append(m)

    def arrays(self, prompts: int, ffn: bool) -> dict[str, Any]:
        """The collected series as the arrays :func:`audit_states` returns."""
        stack = lambda values: np.stack(values, axis=1)  # noqa: E731  (list of [prompts] -> [prompts, blocks])
        empty = np.zeros((prompts, 0))
        result = {
            "ffn": ffn,
            "E": stack(self.energy),
            "inside_residual": stack(self.inside_res), "margin_residual": stack(self.margin_res),
            "inside_normalised": stack(self.inside_norm), "margin_normalised": stack(self.margin_norm),
            "first_token_drift_block": stack(self.drift_block),
            "first_token_drift_pass": stack(self.drift_pass) if self.drift_pass else empty,
            "surface_radial": np.array(self.surface_radial), "surface_hyperplane": np.array(self.surface_hyperplane),
            "qk_scale_spread": stack(self.qk_spread),
            "update_distance": stack(self.update_distance) if self.update_distance else empty,
            "update_within_rounding": stack(self.update_within) if self.update_within else empty.astype(bool),
        }
        if self.radii:
            all_radii = np.concatenate(self.radii)
            result["layernorm_radius"] = {"min": float(all_radii.min()), "max": float(all_radii.max())}
        return result


class _Hooks:
    """Captures, while one block runs, what its QK-norms receive (``q``, ``k``) and, without FFN, the output
    projection's output (``o``)."""

    def __init__(self, adapter: LoopAdapter, ffn: bool) -> None:
        layers = adapter.num_layers
        self.qk = [qk_norms(adapter, index) for index in range(layers)]
        self.qk_eps = [None if pair is None else tuple(norm_gain(m)[3] for m in pair) for pair in self.qk]
        self.projections = [output_projection(adapter, index) for index in range(layers)] if not ffn else []
        self.captured: dict[str, torch.Tensor] = {}

    def _keep(self, name):
        return lambda module, args, *output: self.captured.__setitem__(name, output[0] if output else args[0])

    def run(self, adapter: LoopAdapter, index: int, x: torch.Tensor, inputs, ffn: bool) -> torch.Tensor:
        """Block ``index`` on ``x`` with the hooks attached (and removed after)."""
        handles = []
        if self.qk[index] is not None:
            handles += [self.qk[index][0].register_forward_pre_hook(self._keep("q")),
                        self.qk[index][1].register_forward_pre_hook(self._keep("k"))]
        if not ffn:
            handles.append(self.projections[index].register_forward_hook(self._keep("o")))
        try:
            return adapter.block(index, x, inputs, ffn=ffn)
        finally:
            for handle in handles:
                handle.remove()

    def record(self, series: _Series, index: int, x: torch.Tensor, out: torch.Tensor, ffn: bool) -> None:
        """The QK-norm divisors' spread and (without FFN) the update against the output projection of block
        ``index``."""
        series.qk_spread.append(np.zeros(x.shape[0]) if self.qk[index] is None
                                else _qk_spread(self.captured.pop("q"), self.captured.pop("k"), *self.qk_eps[index]))
        if not ffn:
            distance, within = _update_against_output(x, out, self.captured.pop("o"))
            series.update_distance.append(distance)
            series.update_within.append(within)


def audit_states(adapter: LoopAdapter, input_ids: torch.Tensor, passes: int, *, ffn: bool) -> dict[str, Any]:
    """Loop the model ``passes`` times and measure, after every block and per prompt, the quantities of
    the module docstring. Arrays are ``[prompts, passes * layers + 1]`` (index 0: the embeddings) or
    ``[prompts, passes * layers]`` (per block; the update against the output projection only without FFN,
    else ``[prompts, 0]``)."""
    x, e0 = embed(adapter, input_ids)
    inputs = adapter.block_inputs(input_ids.shape[1], x.device, x.dtype)
    series = _Series(energy=[e0.double().numpy()])
    ok, m = _hemispheres(x)
    series.inside_res.append(ok)
    series.margin_res.append(m)
    hooks = _Hooks(adapter, ffn)
    previous_first: list[torch.Tensor] = []
    with torch.inference_mode():
        for k in range(passes):
            current_first = []
            for index in range(adapter.num_layers):
                series.normalised(adapter._norm_1(adapter.blocks[index]), x)
                out = hooks.run(adapter, index, x, inputs, ffn)
                if not bool(torch.isfinite(out).all()):
                    raise FloatingPointError(f"non-finite activations after block {index + 1} of pass {k + 1}.")
                hooks.record(series, index, x, out, ffn)
                series.drift_block.append(_cos_distance(x[:, 0], out[:, 0]))
                current_first.append(out[:, 0].clone())
                if previous_first:
                    series.drift_pass.append(_cos_distance(previous_first[index], out[:, 0]))
                x = out
                series.residual(x)
            previous_first = current_first
            x = adapter.final_norm(x)
    return series.arrays(input_ids.shape[0], ffn)
