"""``python -m sim bench --part fields``: one evaluation of eq. 6 by every backend (``sim.field.backends``), side by
side.

Sizes: the searches' small systems (256 instances of 4 tokens on S^2, h = 2, causal) and the figures' (32
instances of 10 tokens on S^2, h = 2), and one larger system (4 instances of 50 tokens in d = 64, h = 2, causal).
Each backend is timed best of ``REPEATS`` after one warm-up call (compilation, jit tracing), one after the
other in one run, and its answer compared with the oracle ``sim.field.eq6`` on every instance first: a backend that
disagrees is reported, not timed.
"""

from __future__ import annotations

import time

import numpy as np

from sim.field.backends import BACKENDS, available, make_field
from sim.field.eq6 import eq6

REPEATS = 20
#: (name, instances, tokens, d, h, causal)
SIZES = (("searches", 256, 4, 3, 2, True), ("figures", 32, 10, 3, 2, False), ("larger", 4, 50, 64, 2, True))
#: As tests/sim/test_backends.py: round-off of the same float64 formula summed in other orders.
TOLERANCE = 1e-11
SEED = 0


def _problem(instances: int, tokens: int, dim: int, heads: int, seed: int):
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(instances, heads, dim, dim)) / np.sqrt(dim)
    U = rng.normal(size=P.shape) / np.sqrt(dim)
    y = rng.normal(size=(instances, tokens, dim))
    return P, U, y / np.linalg.norm(y, axis=-1, keepdims=True)


def _seconds(field, y) -> float:
    field(0.0, y)
    best = np.inf
    for _ in range(REPEATS):
        started = time.perf_counter()
        field(0.0, y)
        best = min(best, time.perf_counter() - started)
    return best


def run_field_benchmark(seed: int = SEED) -> dict:
    """Per size, per backend: seconds of one evaluation (best of ``REPEATS``), its deviation from the oracle, or
    why it did not run; the seed of the draws."""
    reasons = available()
    rows = []
    for index, (name, instances, tokens, dim, heads, causal) in enumerate(SIZES):
        P, U, y = _problem(instances, tokens, dim, heads, seed + index)
        oracle = np.stack([eq6(y[b], P[b], U[b], causal) for b in range(instances)])
        for backend in BACKENDS:
            row = {"size": name, "shape": [instances, tokens, dim, heads], "causal": causal, "backend": backend}
            if reasons[backend] is not None:
                rows.append({**row, "skipped": reasons[backend]})
                continue
            field = make_field(backend, P, U, causal)
            deviation = float(np.max(np.abs(field(0.0, y) - oracle)))
            row["deviation"] = deviation
            if deviation <= TOLERANCE:
                row["seconds"] = _seconds(field, y)
            rows.append(row)
    return {"seed": seed, "repeats": REPEATS, "tolerance": TOLERANCE, "rows": rows}


def table(results: dict) -> str:
    """The rows as a plain-text table, the fastest backend of each size marked."""
    lines = [f"{'size':<9} {'[b, l, d, h]':<16} {'backend':<7} {'seconds':>10} {'vs fastest':>10}  deviation"]
    for size in dict.fromkeys(row["size"] for row in results["rows"]):
        rows = [row for row in results["rows"] if row["size"] == size]
        fastest = min((row["seconds"] for row in rows if "seconds" in row), default=np.nan)
        for row in rows:
            shape = str(row["shape"])
            if "skipped" in row:
                lines.append(f"{size:<9} {shape:<16} {row['backend']:<7} skipped: {row['skipped']}")
            elif "seconds" not in row:
                lines.append(f"{size:<9} {shape:<16} {row['backend']:<7} DISAGREES with eq6 by {row['deviation']:.1e}")
            else:
                lines.append(f"{size:<9} {shape:<16} {row['backend']:<7} {row['seconds']:>10.2e} "
                             f"{row['seconds'] / fastest:>9.1f}x  {row['deviation']:.1e}")
    return "\n".join(lines)
