"""Theory meets practice: which of the theorems' hypotheses hold in a real transformer, and how fast E decays.

:func:`audit_model` measures, for one model and weight choice (using the loop adapters of
:mod:`empirical.adapters` and the loading of :mod:`empirical.models`):

* per layer and head, ``P_eta`` (with the model's attention scaling) and ``U_eta = W_O W_V``:
  norms, asymmetry ``|U - U^T|_F / |U|_F``, the top eigenvalue (real? positive? simple?), gap and
  spread (Theorem 5.2's hypotheses), see :mod:`empirical.heads` and :mod:`empirical.hypotheses`;
* the normalisation geometry: each norm gain's axis ratio (sphere or ellipsoid) and the residuals
  of the model's normalised states from the predicted surface (:mod:`empirical.geometry`);
* per prompt and block of the looped forward (with and without feed-forward layers): whether the
  tokens lie in one open hemisphere (LP, Theorem 4.1's premise) for the residual stream and for the
  normalised states, how far the first token moves per block and per pass (fixed when U = I), and E;
* exponential rate fits of E per layer (:mod:`empirical.rates`);
* what later architectures add to the paper's block (Gemma 3 has all of it): an embedding scale, attention
  windows, key/value heads shared by several query heads, QK-norm (measured: how much the per-token
  divisors ``rms(W_Q z_i) rms(W_K z_j)`` of the logits vary) and a norm on the attention output (measured:
  how far the no-FFN block's update is from the output projection's output).

:func:`hypothesis_rows` turns that into "hypothesis -> holds / nearly / fails" with the numbers.
All thresholds are module constants with their reasons.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from reports.records import jsonable

from .adapters import LoopAdapter, adapter_for
from .consensus import misalignment
from .geometry import gain_geometry, layernorm_residuals, rmsnorm_ellipsoid, rmsnorm_residuals
from .heads import attention_window, head_factors, layer_value_matrix, norm_gain, output_projection, qk_norms
from .hypotheses import (asymmetry, low_rank_asymmetry, low_rank_norms, low_rank_summary, open_hemisphere,
                         spectrum_summary)
from .loop import embed
from .models import describe_model, load_model
from .prompts import authors_prompts
from .rates import blocks_to_fraction, compare_rates, fit_exponential, RateFit

#: "holds" for a matrix identity or symmetry: relative Frobenius distance below this. Reason: weights
#: are stored in float32 (relative rounding 6e-8); products of a few of them stay below 1e-6.
EXACT_TOL = 1e-6
#: "nearly" below this relative distance (a chosen cut-off, stated with each verdict): 10% of the norm.
NEARLY_TOL = 0.1
#: "nearly" for a per-head or per-state property when at least this share of heads / states has it.
NEARLY_SHARE = 0.9
#: Surface residuals of normalised float32 states: "holds" below this. Reason: float32 normalisation of
#: d <= 4096 entries accumulates relative errors ~ sqrt(d) * 6e-8 < 1e-5; 1e-4 leaves a margin.
SURFACE_TOL_FLOAT32 = 1e-4
#: "nearly" for the conclusion "E decays" when no exponential rate is resolved but the last E is at most this
#: fraction of the first (a chosen cut-off, stated with the verdict: E fell by at least a factor 10).
E_FALL_FACTOR = 0.1
#: Full d x d eigen-decompositions of the layer's summed U only up to this width (cost d^3 per layer).
DENSE_EIGEN_MAX_WIDTH = 1024


@dataclass(frozen=True)
class AuditSettings:
    """What an audit runs: ``prompts`` authors' prompts of ``length`` tokens, ``passes`` loops, ``seed`` for random weights."""

    prompts: int = 8
    length: int = 64
    passes: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("prompts", "length", "passes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer.")
        if self.prompts < 2:
            raise ValueError(f"prompts={self.prompts} must be at least 2 (rate intervals are over prompts).")


# -- weights ----------------------------------------------------------------------------------------
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


# -- states ------------------------------------------------------------------------------------------
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


def audit_states(adapter: LoopAdapter, input_ids: torch.Tensor, passes: int, *, ffn: bool) -> dict[str, Any]:
    """Loop the model ``passes`` times and measure, after every block and per prompt, the quantities of
    the module docstring. Arrays are ``[prompts, passes * layers + 1]`` (index 0: the embeddings) or
    ``[prompts, passes * layers]`` (per block; the update against the output projection only without FFN,
    else ``[prompts, 0]``)."""
    layers = adapter.num_layers
    x, e0 = embed(adapter, input_ids)
    inputs = adapter.block_inputs(input_ids.shape[1], x.device, x.dtype)
    energy = [e0.double().numpy()]
    inside, margin = _hemispheres(x)
    inside_res, margin_res = [inside], [margin]
    inside_norm, margin_norm, drift_block, drift_pass = [], [], [], []
    surface_radial, surface_hyperplane, radii = [], [], []
    qk_spread, update_distance, update_within = [], [], []
    previous_first: list[torch.Tensor] = []
    qk = [qk_norms(adapter, index) for index in range(layers)]
    qk_eps = [None if pair is None else tuple(norm_gain(m)[3] for m in pair) for pair in qk]
    projections = [output_projection(adapter, index) for index in range(layers)] if not ffn else []
    captured: dict[str, torch.Tensor] = {}

    def keep(name):
        return lambda module, args, *output: captured.__setitem__(name, output[0] if output else args[0])

    with torch.inference_mode():
        for k in range(passes):
            current_first = []
            for index in range(layers):
                block = adapter.blocks[index]
                norm = adapter._norm_1(block)
                if norm is None:  # attention reads the raw residual stream (OLMo-2)
                    z = x
                else:
                    kind, gain, bias, eps = norm_gain(norm)
                    z = norm(x)
                    xs, zs = x.double().cpu().numpy(), z.double().cpu().numpy()
                    if kind == "layernorm":
                        res = layernorm_residuals(xs, zs, gain, bias, eps)
                        radii.append(np.linalg.norm(zs - bias, axis=-1).ravel())
                        z = z - torch.as_tensor(bias, dtype=z.dtype)
                    else:
                        res = rmsnorm_residuals(xs, zs, gain, eps)
                    surface_radial.append(res.radial_eps)
                    surface_hyperplane.append(res.hyperplane)
                ok, m = _hemispheres(z)
                inside_norm.append(ok)
                margin_norm.append(m)
                handles = []
                if qk[index] is not None:
                    handles += [qk[index][0].register_forward_pre_hook(keep("q")),
                                qk[index][1].register_forward_pre_hook(keep("k"))]
                if not ffn:
                    handles.append(projections[index].register_forward_hook(keep("o")))
                try:
                    out = adapter.block(index, x, inputs, ffn=ffn)
                finally:
                    for handle in handles:
                        handle.remove()
                if not bool(torch.isfinite(out).all()):
                    raise FloatingPointError(f"non-finite activations after block {index + 1} of pass {k + 1}.")
                qk_spread.append(np.zeros(x.shape[0]) if qk[index] is None
                                 else _qk_spread(captured.pop("q"), captured.pop("k"), *qk_eps[index]))
                if not ffn:
                    distance, within = _update_against_output(x, out, captured.pop("o"))
                    update_distance.append(distance)
                    update_within.append(within)
                drift_block.append(_cos_distance(x[:, 0], out[:, 0]))
                current_first.append(out[:, 0].clone())
                if previous_first:
                    drift_pass.append(_cos_distance(previous_first[index], out[:, 0]))
                x = out
                energy.append(misalignment(x).double().cpu().numpy())
                ok, m = _hemispheres(x)
                inside_res.append(ok)
                margin_res.append(m)
            previous_first = current_first
            x = adapter.final_norm(x)
    stack = lambda values: np.stack(values, axis=1)  # noqa: E731  (list of [prompts] -> [prompts, blocks])
    empty = np.zeros((input_ids.shape[0], 0))
    result = {
        "ffn": ffn,
        "E": stack(energy),
        "inside_residual": stack(inside_res), "margin_residual": stack(margin_res),
        "inside_normalised": stack(inside_norm), "margin_normalised": stack(margin_norm),
        "first_token_drift_block": stack(drift_block),
        "first_token_drift_pass": stack(drift_pass) if drift_pass else empty,
        "surface_radial": np.array(surface_radial), "surface_hyperplane": np.array(surface_hyperplane),
        "qk_scale_spread": stack(qk_spread),
        "update_distance": stack(update_distance) if update_distance else empty,
        "update_within_rounding": stack(update_within) if update_within else empty.astype(bool),
    }
    if radii:
        all_radii = np.concatenate(radii)
        result["layernorm_radius"] = {"min": float(all_radii.min()), "max": float(all_radii.max())}
    return result


# -- rates ---------------------------------------------------------------------------------------------
def rate_summary(values: np.ndarray) -> dict[str, Any]:
    """Exponential fit of E per layer, with its CI over prompts and the model-free blocks-to-half."""
    fit = fit_exponential(values)
    return {"rate": fit.rate, "ci_low": fit.ci_low, "ci_high": fit.ci_high, "r2": fit.r2,
            "half_life": fit.half_life, "per_prompt": fit.per_prompt, "window": list(fit.window),
            "blocks_to_half": blocks_to_fraction(values, 0.5), "E_start": float(np.mean(values[:, 0])),
            "E_end": float(np.mean(values[:, -1]))}


def _fit(summary: dict[str, Any]) -> RateFit:
    return RateFit(summary["rate"], summary["ci_low"], summary["ci_high"], np.asarray(summary["per_prompt"], dtype=float),
                   summary["r2"], tuple(summary["window"]), int(np.isfinite(np.asarray(summary["per_prompt"], dtype=float)).sum()))


def comparison(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Paired comparison of two rate summaries on the same prompts (``first - second``)."""
    result = compare_rates(_fit(first), _fit(second))
    return {"difference": result.difference, "ci_low": result.ci_low, "ci_high": result.ci_high,
            "ratio": result.ratio, "verdict": result.verdict, "prompts": result.prompts}


# -- the audit -------------------------------------------------------------------------------------------
def audit_adapter(adapter: LoopAdapter, input_ids: torch.Tensor, passes: int, *,
                  progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Weights and states (with and without FFN) of one loaded model, plus rate fits.
    ``progress`` receives a line per stage (the CLI prints them to stderr)."""
    started = time.time()
    say = progress or (lambda message: None)
    # One BLAS thread for the many small numpy/scipy products: on a shared 2-core machine OpenBLAS's
    # spinning threads made them ~10-40x slower. torch's own thread pool is not affected.
    with threadpool_limits(limits=1, user_api="blas"):
        say(f"weights: {adapter.num_layers} layers")
        weights = audit_weights(adapter)
        weights["embedding_scale"] = embedding_scale(adapter, input_ids)
        variants = {}
        for ffn in (True, False):
            say(f"states {'with' if ffn else 'without'} FFN: {input_ids.shape[0]} prompts x {passes} passes "
                f"(+{time.time() - started:.0f}s)")
            states = audit_states(adapter, input_ids, passes, ffn=ffn)
            states["rate"] = rate_summary(states["E"])
            variants["ffn" if ffn else "no-ffn"] = states
    return {"weights": weights, "variants": variants, "seconds": time.time() - started,
            "context_length": adapter.context_length,
            "ffn_effect": comparison(variants["ffn"]["rate"], variants["no-ffn"]["rate"])}


def audit_model(model: str, weights: str = "trained", settings: AuditSettings = AuditSettings(), *,
                dtype: torch.dtype = torch.float32, compare_random: bool | None = None,
                progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The audit of ``model`` with ``weights`` (``trained`` or ``random``); with trained weights the same
    architecture is also audited with random weights (``compare_random``) for the in-kind rate comparison."""
    if weights not in ("trained", "random"):
        raise ValueError(f"weights={weights!r} must be 'trained' or 'random' (a re-drawn model has no fixed P, U).")
    compare_random = (weights == "trained") if compare_random is None else compare_random
    if compare_random and weights != "trained":
        raise ValueError("compare_random compares trained weights with random ones: it needs weights='trained'.")
    ensure_memory(model, dtype)
    loaded = load_model(model, weights, seed=settings.seed, dtype=dtype)
    adapter = adapter_for(loaded)
    vocab = adapter.vocab_size
    ids = torch.tensor(authors_prompts(settings.prompts, settings.length, vocab))
    result = {"model": model, "weights": weights, "settings": settings.__dict__, "dtype": str(dtype),
              "description": describe_model(model, adapter), "runs": {weights: audit_adapter(adapter, ids, settings.passes, progress=progress)}}
    del loaded, adapter
    if compare_random:
        ensure_memory(model, dtype)
        other = adapter_for(load_model(model, "random", seed=settings.seed, dtype=dtype))
        result["runs"]["random"] = audit_adapter(other, ids, settings.passes, progress=progress)
        result["trained_vs_random"] = {
            variant: comparison(result["runs"]["trained"]["variants"][variant]["rate"],
                                result["runs"]["random"]["variants"][variant]["rate"])
            for variant in ("ffn", "no-ffn")}
    result["hypotheses"] = {name: hypothesis_rows(run, settings.length) for name, run in result["runs"].items()}
    return result


#: Memory a loaded model needs beyond its parameters (activations of short prompts, interpreter, copies
#: made while drawing the weights), as a fraction of the parameters' size; measured for GPT-2 XL in float32:
#: 6.6 GB resident for 6.2 GB of parameters.
MEMORY_OVERHEAD = 0.15


def available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (``None`` where there is no such file)."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def ensure_memory(model: str, dtype: torch.dtype) -> None:
    """Raise ``MemoryError`` with the numbers when ``model`` will not fit in the available memory (rather
    than being killed by the kernel, possibly with other processes)."""
    from transformers import AutoModelForCausalLM

    from .models import load_config

    with torch.device("meta"):
        skeleton = AutoModelForCausalLM.from_config(load_config(model))
    needed = sum(p.numel() for p in skeleton.parameters()) * torch.finfo(dtype).bits // 8
    needed = int(needed * (1 + MEMORY_OVERHEAD))
    available = available_memory()
    if available is not None and needed > available:
        raise MemoryError(f"model {model!r} needs about {needed / 2**30:.1f} GiB in {dtype} but only "
                          f"{available / 2**30:.1f} GiB are available: free memory, or use --dtype bfloat16.")


# -- verdicts --------------------------------------------------------------------------------------------
def _graded(value: float, exact: float = EXACT_TOL, nearly: float = NEARLY_TOL) -> str:
    return "holds" if value <= exact else "nearly" if value <= nearly else "fails"


def _share(share: float) -> str:
    return "holds" if share >= 1.0 else "nearly" if share >= NEARLY_SHARE else "fails"


def hypothesis_rows(run: dict[str, Any], tokens: int) -> list[dict[str, str]]:
    """"hypothesis -> holds / nearly / fails" rows with the numbers, for one audited model run on prompts of
    ``tokens`` tokens."""
    layers = run["weights"]["layers"]
    heads = [h for layer in layers for h in layer["heads"]]
    width = layers[0]["width"]
    head_dim = layers[0]["head_dim"]
    u_asym = np.array([h["U_asymmetry"] for h in heads])
    p_asym = np.array([h["P_asymmetry"] for h in heads])
    simple = np.array([h["U_simple_positive_top"] for h in heads])
    p_spectral = max(h["P_spectral"] for h in heads)
    identity = np.array([layer["U_sum_identity_distance"] for layer in layers])
    norms = run["weights"]["norms"]
    ratios = np.array([n["axis_ratio"] for n in norms])
    norm_verdicts = [n["verdict"] for n in norms]
    norm_kind = norms[0]["kind"]
    rows = [
        {"hypothesis": "P_eta bounded", "needed_by": "Lemma 4.1; Thm 4.1, 5.1, 5.2",
         "verdict": "holds", "numbers": f"fixed finite weights; max |P_eta|_2 = {p_spectral:.3g} over all heads"},
        {"hypothesis": "P, U time-invariant", "needed_by": "Thm 5.2; Remark 4.1",
         "verdict": "fails" if len(layers) > 1 else "holds",
         "numbers": f"{len(layers)} blocks with their own weights (per pass; periodic over passes)"},
        {"hypothesis": "U_eta = I", "needed_by": "Thm 4.1, 5.1 (Hyp. 4.1, 5.1)",
         # every block must have U = I (Hyp. 4.1 / 5.1 hold for the model only if they hold layer by layer)
         "verdict": "fails" if head_dim < width else _graded(float(identity.max())),
         "numbers": (f"each U_eta has rank <= d_head = {head_dim} < d = {width}; summed over heads: "
                     f"|sum U - I|_F / sqrt(d) = {identity.min():.3g} .. {identity.max():.3g}")},
        {"hypothesis": "one head (h = 1)", "needed_by": "Thm 5.2 (Hyp. 5.2)",
         "verdict": "holds" if len(layers[0]["heads"]) == 1 else "fails",
         "numbers": f"h = {len(layers[0]['heads'])} heads per block"},
        {"hypothesis": "U_eta symmetric", "needed_by": "Thm 5.2, Lemma 5.2",
         "verdict": "holds" if u_asym.max() <= EXACT_TOL else "nearly" if np.median(u_asym) <= NEARLY_TOL else "fails",
         "numbers": (f"|U - U^T|_F/|U|_F median {np.median(u_asym):.3g}, range {u_asym.min():.3g} .. {u_asym.max():.3g} "
                     f"(random matrices: ~1.41)")},
        {"hypothesis": "top eigenvalue of U_eta real, simple, > 0", "needed_by": "Thm 5.2, Lemma 5.2",
         "verdict": _share(float(simple.mean())),
         "numbers": f"{int(simple.sum())} of {simple.size} heads"},
        {"hypothesis": "U invertible", "needed_by": "Remark 5.2 (reparametrisation)",
         "verdict": "fails" if head_dim < width else "holds",
         "numbers": (f"each head's U_eta has rank <= {head_dim} < d = {width}"
                     + (f"; summed U condition number {min(l['U_sum_condition'] for l in layers):.3g} .. "
                        f"{max(l['U_sum_condition'] for l in layers):.3g}" if "U_sum_condition" in layers[0] else ""))},
        {"hypothesis": "P symmetric positive definite (W = P)", "needed_by": "Thm 3.1 (gradient case)",
         "verdict": "fails" if head_dim < width else _graded(float(np.median(p_asym))),
         "numbers": (f"each P_eta has rank <= {head_dim} < d = {width} (not definite); "
                     f"|P - P^T|_F/|P|_F median {np.median(p_asym):.3g}")},
        {"hypothesis": "normalisation onto a sphere (constant gain)", "needed_by": "Remark 2.3; all theorems (W = I)",
         "verdict": "fails" if "fails" in norm_verdicts else "nearly" if "nearly" in norm_verdicts else "holds",
         "numbers": (f"{norm_kind}; gain axis ratio max|g|/min|g| median {np.median(ratios):.3g}, max {ratios.max():.3g} "
                     f"over {len(norms)} norms")},
    ]
    if norm_kind == "layernorm":
        bias = max(n["bias_norm"] / (math.sqrt(width) * n["gain_rms"]) for n in norms)
        rows.append({"hypothesis": "normalised states on a surface centred at 0 (E_W)", "needed_by": "eq. 2 (E_W)",
                     "verdict": _graded(bias),
                     "numbers": f"LayerNorm centre beta: max |beta| / (sqrt(d) rms(gamma)) = {bias:.3g}; "
                                "states also lie in the hyperplane 1^T (z - beta)/gamma = 0"})
    else:
        rows.append({"hypothesis": "normalised states on a surface centred at 0 (E_W)", "needed_by": "eq. 2 (E_W)",
                     "verdict": "holds",
                     "numbers": ("RMSNorm: E_W with W = diag(1/(d g^2)), entries "
                                 + (f"{min(n['W_min'] for n in norms):.3g} .. {max(n['W_max'] for n in norms):.3g}"
                                    if all("W_min" in n for n in norms) else "undefined (a zero gain)")
                                 + "; the map is diag(g) . pi_{I/d}, not pi_W")})
    rows += architecture_rows(run, tokens)
    for name, variant in run["variants"].items():
        if variant["surface_radial"].size == 0:  # OLMo-2: attention reads the raw stream
            rows.append({"hypothesis": f"normalised states on the predicted surface [{name}]",
                         "needed_by": "Remark 2.3 (corrected); model.layernorm", "verdict": "fails",
                         "numbers": "no norm before attention: it reads the un-normalised residual stream"})
        else:
            radial = float(variant["surface_radial"].max())
            rows.append({"hypothesis": f"normalised states on the predicted surface [{name}]",
                         "needed_by": "Remark 2.3 (corrected); model.layernorm",
                         "verdict": "holds" if radial <= SURFACE_TOL_FLOAT32 else "fails",
                         "numbers": (f"max | |u|^2/d - s/(s+eps) | = {radial:.2g}"
                                     + (f", max |mean u| = {variant['surface_hyperplane'].max():.2g}"
                                        if norm_kind == "layernorm" else "")
                                     + f" (tolerance {SURFACE_TOL_FLOAT32:g}: float32)")})
        for key, label in (("normalised", "normalised states"), ("residual", "residual stream")):
            flags = variant[f"inside_{key}"]
            margins = variant[f"margin_{key}"]
            rows.append({"hypothesis": f"tokens in one open hemisphere, {label} [{name}]",
                         "needed_by": "Thm 4.1 (premise)", "verdict": _share(float(flags.mean())),
                         "numbers": (f"{int(flags.sum())} of {flags.size} (prompt, block) states; min LP margin "
                                     f"{margins.min():.3g}; l = {tokens} tokens, d = {width}")})
        block_drift = variant["first_token_drift_block"]
        pass_drift = variant["first_token_drift_pass"]
        numbers = f"1 - cos per block: median {np.median(block_drift):.3g}, max {block_drift.max():.3g}"
        if pass_drift.size:
            last = pass_drift[:, -len(run["weights"]["layers"]):]
            numbers += f"; same block, consecutive passes: max {pass_drift.max():.3g}, last pass max {last.max():.3g}"
        rows.append({"hypothesis": f"first token fixed [{name}]", "needed_by": "Thm 5.1 (consequence of U = I)",
                     "verdict": _graded(float(block_drift.max()), exact=EXACT_TOL, nearly=1e-2), "numbers": numbers})
        rows.append({"hypothesis": f"conclusion: E decays [{name}]", "needed_by": "Thm 4.1, 5.1, 5.2 (conclusion)",
                     **decay_verdict(variant["rate"], variant["E"])})
    return rows


def decay_verdict(rate: dict[str, Any], values: np.ndarray) -> dict[str, str]:
    """The conclusion "E decays" from a :func:`rate_summary` and E (``[prompts, blocks + 1]``): ``holds`` for a
    resolved positive exponential rate with E lower at the end; ``nearly`` when no such rate is resolved but E
    fell at least ``1 / E_FALL_FACTOR``-fold (a collapse within a few blocks to a floor, as trained Gemma 3
    without FFN: 0.78 -> 0.006 in 2 blocks, then 1e-3..2e-2, is no single exponential and its fitted rate can
    be negative); ``fails`` otherwise."""
    mean_e = np.mean(values, axis=0)
    decays = rate["ci_low"] > 0 and rate["E_end"] < rate["E_start"]
    fell = rate["E_end"] <= E_FALL_FACTOR * rate["E_start"]
    numbers = (f"E {rate['E_start']:.3g} -> {rate['E_end']:.3g} (mean over prompts; lowest {mean_e.min():.3g} after "
               f"block {int(mean_e.argmin())}); rate {rate['rate']:.3g}/layer [{rate['ci_low']:.3g}, "
               f"{rate['ci_high']:.3g}], R^2 {rate['r2']:.2f}")
    if decays:
        return {"verdict": "holds", "numbers": numbers}
    if fell:
        return {"verdict": "nearly", "numbers": numbers + f"; E fell at least {1 / E_FALL_FACTOR:g}-fold, but not as "
                                                          "one exponential over the blocks"}
    return {"verdict": "fails", "numbers": numbers}


def architecture_rows(run: dict[str, Any], tokens: int) -> list[dict[str, str]]:
    """Rows for what later architectures add to the paper's block (all of it in Gemma 3): embedding scaling,
    attention windows, grouped-query attention, QK-norm and a norm on the attention output (post-norm)."""
    layers = run["weights"]["layers"]
    width = layers[0]["width"]
    heads = len(layers[0]["heads"])
    rows = []
    scale = run["weights"]["embedding_scale"]
    rows.append({"hypothesis": "initial tokens are the embedding rows (no embedding scale)",
                 "needed_by": "y_i(0) (Sec. 2); the size of each update relative to the stream",
                 "verdict": _graded(abs(scale["factor"] - 1.0)),
                 "numbers": (f"embed(ids) = c W_E[ids] with c = {scale['factor']:.4g} (sqrt(d) = {scale['sqrt_width']:.4g}), "
                             f"fit residual {scale['residual']:.2g}"
                             + ("" if scale["factor"] == 1.0 else
                                f"; N(c y) = N(y) up to eps, but each block's first update is {scale['factor']:.3g} "
                                "times smaller relative to the stream than with unscaled embeddings"))})
    windows = [layer["window"] for layer in layers]
    windowed = [w for w in windows if w is not None]
    context = run.get("context_length")
    restricting = [w for w in windowed if context is None or w < context]
    rows.append({"hypothesis": "each token attends to all earlier tokens (no attention window)",
                 "needed_by": "the attention dynamics (Sec. 2: sum over j <= i); E's consensus",
                 "verdict": "fails" if restricting else "holds",
                 "numbers": (f"{len(windowed)} of {len(layers)} layers see only the last {sorted(set(windowed))} tokens: "
                             f"for prompts longer than that a token no longer sees the first ones; "
                             + (f"the audited prompts (l = {tokens}) fit in the window" if min(windowed) >= tokens
                                else f"the audited prompts (l = {tokens}) are longer")
                             if windowed else "every layer attends to all earlier tokens")})
    kv = layers[0]["kv_heads"]
    rows.append({"hypothesis": "every head has its own keys and values (no grouped-query attention)",
                 "needed_by": "the per-head P_eta, U_eta (Sec. 2) as independent matrices",
                 "verdict": "holds" if kv == heads else "fails",
                 "numbers": (f"h = {heads} query heads share {kv} key/value head(s) ({heads // kv} per group): "
                             "P_eta = s W_Q,eta^T W_K,g and U_eta = W_O,eta W_V,g with the group's W_K,g, W_V,g, so "
                             "the U_eta of a group share their row space" if kv < heads
                             else f"h = {heads} heads, each with its own W_K, W_V")})
    spread = np.concatenate([np.asarray(v["qk_scale_spread"], dtype=float).ravel() for v in run["variants"].values()])
    qk_layers = sum(layer["qk_norm"] for layer in layers)
    qk_gains = run["weights"].get("qk_norms", [])
    rows.append({"hypothesis": "attention logits z_i^T P_eta z_j with a fixed P_eta (no QK-norm)",
                 "needed_by": "Lemma 4.1; Thm 4.1, 5.1, 5.2 (fixed P)",
                 "verdict": _graded(float(spread.max())) if spread.size else "holds",
                 "numbers": ((f"QK-norm in {qk_layers} of {len(layers)} layers: the logit is a fixed bilinear form divided "
                              f"by rms(W_Q z_i) rms(W_K z_j); over token pairs that divisor varies by max/min - 1 = "
                              f"median {np.median(spread):.3g}, max {spread.max():.3g} (per prompt, head and block); "
                              f"q/k norm gain axis ratio up to {max(n['axis_ratio'] for n in qk_gains):.3g}")
                             if qk_layers else "no QK-norm: the logits are s (W_Q z_i)^T (W_K z_j) (rotary aside)")})
    if "no-ffn" in run["variants"]:
        variant = run["variants"]["no-ffn"]
        distance = np.asarray(variant["update_distance"], dtype=float)
        within = np.asarray(variant["update_within_rounding"], dtype=bool)
        verdict = "holds" if within.all() else "nearly" if distance.max() <= NEARLY_TOL else "fails"
        rows.append({"hypothesis": "the block adds the attention output itself (no post-norm) [no-ffn]",
                     "needed_by": "the update y + sum_eta U_eta (...) of Sec. 2; pi_W acts on the stream, not the update",
                     "verdict": verdict,
                     "numbers": (f"update x_out - x_in against the output projection's output a: |update - a|/|a| median "
                                 f"{np.median(distance):.3g}, max {distance.max():.3g}; {int(within.sum())} of {within.size} "
                                 f"(prompt, block) updates equal a to float32 rounding"
                                 + ("" if verdict == "holds" else "; a norm rescales a to a fixed rms times its gain "
                                    "before it joins the stream, which is not the projection pi_W of the stream"))})
    return rows


# -- output ----------------------------------------------------------------------------------------------
def rates_from_results(directory: Path) -> dict[str, Any]:
    """Rate fit of a ``python -m empirical run`` output (``DIR/results.json`` with ``"E"``: prompts x blocks)."""
    path = Path(directory) / "results.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: pass a directory written by `python -m empirical run --out DIR`.")
    data = json.loads(path.read_text())
    values = np.asarray(data["E"], dtype=np.float64)
    manifest_path = Path(directory) / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    return {"source": str(directory), "manifest": manifest, "rate": rate_summary(values)}


#: The per-variant arrays of :func:`audit_states` (restored as numpy arrays by :func:`read_audit`).
STATE_ARRAYS = ("E", "inside_residual", "margin_residual", "inside_normalised", "margin_normalised",
                "first_token_drift_block", "first_token_drift_pass", "surface_radial", "surface_hyperplane",
                "qk_scale_spread", "update_distance", "update_within_rounding")
BOOLEAN_ARRAYS = ("inside_residual", "inside_normalised", "update_within_rounding")
#: Modules whose source defines an audit's numbers: a cached audit is reused only if none changed.
AUDIT_SOURCES = ("audit.py", "heads.py", "hypotheses.py", "geometry.py", "rates.py", "adapters.py", "models.py",
                 "embedded.py")


def _restore(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v) for v in value]
    if value in ("inf", "-inf", "nan"):
        return float(value)
    return value


def read_audit(path: Path) -> dict[str, Any]:
    """An ``audit.json`` back as :func:`audit_model` returned it (numpy arrays, non-finite floats)."""
    result = _restore(json.loads(Path(path).read_text()))
    for run in result["runs"].values():
        for variant in run["variants"].values():
            for key in STATE_ARRAYS:
                variant[key] = np.asarray(variant[key], dtype=bool if key in BOOLEAN_ARRAYS else np.float64)
            variant["rate"]["per_prompt"] = np.asarray(variant["rate"]["per_prompt"], dtype=np.float64)
    return result


def audit_fingerprint(model: str, weights: str, settings: AuditSettings, dtype: torch.dtype) -> str:
    """A hash of what defines an audit: model, weights, settings, dtype and the audit's source code."""
    import hashlib

    digest = hashlib.sha256(json.dumps([model, weights, settings.__dict__, str(dtype)]).encode())
    for name in AUDIT_SOURCES:
        digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()[:16]


def cached_audit(model: str, weights: str, settings: AuditSettings, folder: Path, *,
                 dtype: torch.dtype = torch.float32, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """:func:`audit_model`, reused from ``folder/<fingerprint>/audit.json`` when the same audit (same
    settings and audit code) was written there before."""
    target = Path(folder) / f"{model.replace('/', '_')}-{weights}-{audit_fingerprint(model, weights, settings, dtype)}"
    if (target / "audit.json").is_file():
        return read_audit(target / "audit.json")
    result = audit_model(model, weights, settings, dtype=dtype, progress=progress)
    write_audit(result, target)
    return read_audit(target / "audit.json")


def write_audit(result: dict[str, Any], out: Path) -> Path:
    """Write ``out/audit.json`` atomically and return its path."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "audit.json"
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(jsonable(result), indent=1))
    temporary.replace(path)
    return path
