"""``python -m empirical suite --scheduler ADDRESS``: the experiment grid on a Dask cluster, one variant per task.

Each task runs (or resumes) one variant with ``empirical.suite.run_variant`` into ``root / variant.key``, which
checkpoints after every pass (atomic writes). When a worker dies, Dask hands its task to another worker, which
resumes from the last checkpoint: no pass is lost or computed twice into the results. ``root`` must be storage
every worker sees (the same folder on one machine; a shared file system on a cluster). The paper's GPU grid (12
variants, 100 prompts, 50 passes) then spreads over a cluster's GPU workers (``--device cuda``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Mapping

from foundation.files import json_sha256
from sim.conjectures.distributed import connect

from .run import RunSettings
from .suite import Variant, run_variant


@dataclass(frozen=True)
class VariantOptions:
    """How every variant of a suite runs, as ``run_variant``'s options: ``device``, ``dtype``, the weights' ``seed``,
    ``weights_dirs`` (folders of trained weights, seen by every worker) and ``decide``."""

    device: str = RunSettings.device
    dtype: str = RunSettings.dtype
    seed: int = RunSettings.seed
    weights_dirs: Mapping[str, Path] | None = None
    decide: bool = False


def _task(variant: Variant, root: str, options: VariantOptions) -> dict:
    """One variant on a worker: a short summary (the numbers stay in the variant's folder), naming the folder and
    the dtype it wrote."""
    manifest, results = run_variant(variant, Path(root), device=options.device, dtype=options.dtype,
                                    seed=options.seed, progress=False, weights_dirs=options.weights_dirs,
                                    decide=options.decide)
    return {"key": variant.key, "folder": str(Path(root) / variant.key), "dtype": manifest.get("dtype"),
            "passes": results["passes"], "layers": results["layers"], "E_first": results["E_mean"][0],
            "E_last": results["E_mean"][-1], "status": manifest.get("status")}


def task_key(variant: Variant, root: str, options: VariantOptions) -> str:
    """The Dask key of ``variant``'s task: its folder and every option in a digest, so that a second suite on the same
    scheduler (another folder, dtype or device) never receives this one's result under a key it shares."""
    digest = json_sha256({"root": root, "variant": asdict(variant), "options": asdict(options)}, default=str)
    return f"variant-{variant.key}-{digest[:16]}"


def run_suite(chosen: Iterable[Variant], root: Path, *, scheduler: str | None = None, workers: int | None = None,
              options: VariantOptions = VariantOptions(), progress: bool = True) -> list[dict]:
    """Run ``chosen`` variants as Dask tasks (``scheduler``: a running cluster; ``workers``: a LocalCluster of that
    many processes), each under ``options``; return their summaries in the order given. Raises ConnectionError for
    a scheduler that does not answer, before anything is written."""
    chosen = list(chosen)
    if (scheduler is None) == (workers is None):
        raise ValueError("give exactly one of scheduler (a running cluster) or workers (a LocalCluster).")
    root = Path(root).resolve()  # absolute: a worker's working folder is not the client's
    stack, client = connect(workers=workers, scheduler=scheduler)
    with stack:
        root.mkdir(parents=True, exist_ok=True)
        from distributed import as_completed
        from tqdm import tqdm

        futures = {client.submit(_task, v, str(root), options, key=task_key(v, str(root), options)): v.key
                   for v in chosen}
        done = {}
        with tqdm(total=len(futures), desc="variants", unit="variant", disable=not progress) as bar:
            for future in as_completed(futures):
                summary = done[futures[future]] = future.result()
                if summary["folder"] != str(root / summary["key"]):
                    raise RuntimeError(f"the task of {summary['key']} wrote {summary['folder']}, not "
                                       f"{root / summary['key']}: a task of another suite answered under its key.")
                bar.update(1)
    return [done[v.key] for v in chosen]
