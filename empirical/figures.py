"""Figures of E over depth: one run (beside its ``results.json``), runs overlaid, and the claims' panels.

Depth is counted in passes (block index / blocks per pass), so runs of models of different depths
share an axis and the pass boundaries are the integers (a faint vertical line each). E is drawn on a log
scale: the mean over the prompts, a band from the smallest to the largest prompt, the dtype's floor of E
(:mod:`empirical.floor`) as a dashed line in the run's colour, and 10 x that floor, below which the collapse test
reads nothing (:mod:`empirical.decision`), as a dotted one. Values below a decade under the floor (rounding, possibly zero or negative)
are drawn at that decade, where the axis starts; the band below the lowest floor is shaded grey and labelled.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .decision import FLOOR_MARGIN

#: The log axis starts this factor below the lowest floor drawn, and the band is clipped there: values of E below
#: a floor are rounding (float32 runs at consensus give exactly 0 or a rounding-negative -3e-8, which a log axis
#: cannot show), so a decade below the floor shows that they are there without drawing rounding as decay.
BELOW_FLOOR = 10.0
#: The band's clip for runs without a floor in their manifest (made before floors): a decade below float32's
#: evaluation floor at width 32 (3.4e-7).
NO_FLOOR_CLIP = 1e-8


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def describe(manifest: dict[str, Any]) -> str:
    """The run, labelled exactly: model, weights, FFN, prompts, passes, dtype, device."""
    s = manifest["settings"]
    return (f"{s['model']} ({manifest['model']['architecture']}, {manifest['model']['layers']} blocks), "
            f"{s['weights']} weights{' (seed %d)' % s['seed'] if s['weights'] != 'trained' else ''}, "
            f"{'with' if s['ffn'] else 'without'} FFN, {s['prompts']} prompts x {s['length']} tokens "
            f"(seed {s['prompt_seed']}), {manifest.get('passes_done', s['passes'])} passes, {manifest['dtype']}, "
            f"{manifest['device']}")


def short_label(manifest: dict[str, Any]) -> str:
    """Model, weights, FFN and dtype: a legend entry."""
    s = manifest["settings"]
    return f"{s['model']}, {s['weights']}, {'FFN' if s['ffn'] else 'no FFN'}, {manifest['dtype']}"


def floor_of(manifest: dict[str, Any]) -> float | None:
    """The run's effective floor of E (``manifest["floor"]["effective_floor"]``: the larger of the measured floor and
    the float64 twin's largest divergence, SPEC section 5), else its measured floor (``E_floor``); ``None`` for runs
    made before floors were measured."""
    floor = manifest.get("floor") or {}
    return floor.get("effective_floor", floor.get("E_floor"))


def draw_run(axis, manifest: dict[str, Any], results: dict[str, Any], label: str) -> None:
    """Mean E over the prompts against depth in passes, its band over the prompts, and the run's floor."""
    per_prompt = np.asarray(results["E"], dtype=np.float64)               # (prompts, passes * layers + 1)
    depth = np.arange(per_prompt.shape[1]) / results["layers"]
    floor = floor_of(manifest)
    clip = floor / BELOW_FLOOR if floor is not None else NO_FLOOR_CLIP
    mean = per_prompt.mean(0)
    (line,) = axis.plot(depth, np.clip(mean, clip, None), label=label, linewidth=1.2)
    low, high = per_prompt.min(0), per_prompt.max(0)
    axis.fill_between(depth, np.clip(low, clip, None), np.clip(high, clip, None), color=line.get_color(), alpha=0.15)
    if floor is not None:
        axis.axhline(floor, color=line.get_color(), linestyle="--", linewidth=0.9,
                     label=f"floor of E in {manifest['dtype']}: {floor:.1e}")
        axis.axhline(FLOOR_MARGIN * floor, color=line.get_color(), linestyle=":", linewidth=0.9,
                     label=f"{FLOOR_MARGIN:g} x the floor: not read below")


def _decorate(axis, passes: int, floors: list[float | None]) -> None:
    """Log scale from a decade below the lowest floor, a faint line at every pass boundary, labels."""
    axis.set_yscale("log")
    known = [floor for floor in floors if floor is not None]
    bottom = min(known) / BELOW_FLOOR if known else NO_FLOOR_CLIP
    axis.set_ylim(bottom=bottom)
    if known:  # a flat line along the bottom is rounding drawn at the axis, not a stall: shade it as such
        axis.axhspan(bottom, min(known), color="0.9", linewidth=0, zorder=0,
                     label="below the floor: rounding (drawn at the axis' bottom)")
    for k in range(1, passes + 1):
        axis.axvline(k, color="0.85", linewidth=0.6, zorder=0)
    axis.set_xlabel("depth (passes; a faint line at every pass boundary)")
    axis.set_ylabel("mean E over the prompts (band: all prompts)")
    axis.grid(alpha=0.3, axis="y")


def _save(figure, path: Path, title: str) -> Path:
    width = int(figure.get_figwidth() * 14)  # characters of 9-point text across the figure
    figure.suptitle("\n".join(textwrap.wrap(title, width)), fontsize=9)
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    _pyplot().close(figure)
    return path


def plot_run(manifest: dict[str, Any], results: dict[str, Any], path: Path) -> Path:
    """The figure of one run: mean E over depth with its band, pass boundaries, floor and 10 x floor."""
    return plot_overlay([(manifest, results)], path, describe(manifest))


def plot_overlay(runs: Sequence[tuple[dict, dict]], path: Path, title: str) -> Path:
    """Runs ``(manifest, results)`` overlaid on one log-scale panel, each with its floor."""
    figure, axis = _pyplot().subplots(figsize=(8, 4.2))
    for manifest, results in runs:
        draw_run(axis, manifest, results, short_label(manifest))
    _decorate(axis, max(r["passes"] for _, r in runs), [floor_of(m) for m, _ in runs])
    axis.legend(fontsize=7)
    return _save(figure, path, title)


def plot_families(runs: Sequence[tuple[dict, dict]], path: Path, title: str) -> Path:
    """One panel per model, side by side: a line per weights / FFN variant, each with its floor."""
    models = list(dict.fromkeys(m["settings"]["model"] for m, _ in runs))
    figure, axes = _pyplot().subplots(1, len(models), figsize=(5.4 * len(models), 4.0), squeeze=False)
    for axis, model in zip(axes[0], models):
        mine = [(m, r) for m, r in runs if m["settings"]["model"] == model]
        for manifest, results in mine:
            s = manifest["settings"]
            draw_run(axis, manifest, results, f"{s['weights']}, {'FFN' if s['ffn'] else 'no FFN'}")
        _decorate(axis, max(r["passes"] for _, r in mine), [floor_of(m) for m, _ in mine])
        axis.set_title(f"{model} ({mine[0][0]['model']['layers']} blocks per pass)", fontsize=9)
        axis.legend(fontsize=7)
    return _save(figure, path, title)
