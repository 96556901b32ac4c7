"""``python -m empirical suite --scheduler ADDRESS``: the experiment grid on a Dask cluster, one variant per task.

Each task runs (or resumes) one variant with ``empirical.suite.run_variant`` into ``root / variant.key``, which
checkpoints after every pass (atomic writes). When a worker dies, Dask hands its task to another worker, which
resumes from the last checkpoint: no pass is lost or computed twice into the results. ``root`` must be storage
every worker sees (the same folder on one machine; a shared file system on a cluster). The paper's GPU grid (12
variants, 100 prompts, 50 passes) then spreads over a cluster's GPU workers (``--device cuda``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping

from sim.distributed import connect

from .run import RunSettings
from .suite import Variant, run_variant


def _task(variant: Variant, root: str, device: str, dtype: str, seed: int,
          weights_dirs: Mapping[str, Path] | None, decide: bool) -> dict:
    """One variant on a worker: a short summary (the numbers stay in the variant's folder)."""
    manifest, results = run_variant(variant, Path(root), device=device, dtype=dtype, seed=seed, progress=False,
                                    weights_dirs=weights_dirs, decide=decide)
    return {"key": variant.key, "passes": results["passes"], "layers": results["layers"],
            "E_first": results["E_mean"][0], "E_last": results["E_mean"][-1], "status": manifest.get("status")}


def run_suite(chosen: Iterable[Variant], root: Path, *, scheduler: str | None = None, workers: int | None = None,
              device: str = RunSettings.device, dtype: str = RunSettings.dtype, seed: int = RunSettings.seed,
              progress: bool = True, weights_dirs: Mapping[str, Path] | None = None, decide: bool = False) -> list[dict]:
    """Run ``chosen`` variants as Dask tasks (``scheduler``: a running cluster; ``workers``: a LocalCluster of that
    many processes; ``weights_dirs``: folders of trained weights, seen by every worker, and ``decide``, as for
    ``run_variant``);
    return their summaries in the order given. Raises ConnectionError for a scheduler that does
    not answer, before anything is written."""
    chosen = list(chosen)
    if (scheduler is None) == (workers is None):
        raise ValueError("give exactly one of scheduler (a running cluster) or workers (a LocalCluster).")
    stack, client = connect(workers=workers, scheduler=scheduler)
    with stack:
        Path(root).mkdir(parents=True, exist_ok=True)
        from distributed import as_completed
        from tqdm import tqdm

        futures = {client.submit(_task, v, str(root), device, dtype, seed, weights_dirs, decide,
                                 key=f"variant-{v.key}-{seed}"): v.key for v in chosen}
        done = {}
        with tqdm(total=len(futures), desc="variants", unit="variant", disable=not progress) as bar:
            for future in as_completed(futures):
                done[futures[future]] = future.result()
                bar.update(1)
    return [done[v.key] for v in chosen]
