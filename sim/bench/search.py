"""Throughput of the searches' integrations: the compiled whole integrations against a per-instance ``solve_ivp``
loop, at equal accuracy.

``measure(claim, instances, t1)`` draws the instances of chunk 0 of ``claim``'s family (one shape; seed
``chunk_seed(claim, 0)``), integrates them to ``t1`` (a) with the search's own call
(``sim.conjectures.search.integrate``: ``sim.solvers.compiled``, adaptive Dopri5 per instance at the search's
tolerances) and (b) one by one with SciPy's ``solve_ivp`` (RK45 on the compiled field ``InstanceField`` of that one
instance, without retraction). Both are measured against a reference (SciPy DOP853 at rtol 1e-12, atol 1e-14) on the
first ``reference`` instances; the loop runs at the loosest of rtol x 1, 1/10, 1/100, ... whose worst error there is no
larger than ours (equal accuracy), and is timed on all instances at that tolerance. Throughput: instances x time units
per second of wall time. The load average of the machine is recorded before and after.
"""

from __future__ import annotations

import os
import time

import numpy as np
from scipy.integrate import solve_ivp

from sim.conjectures.families import chunk_seed, get_family
from sim.field.instances import InstanceField
from sim.conjectures.search import SEARCH_CONTROLLER, integrate

#: The loop's tolerances tried, as fractions of the search's: the first as accurate as ours is timed.
LOOP_FRACTIONS = (1.0, 0.1, 0.01, 0.001, 1e-4)
#: Our integration is timed this many times (median): a run of a second is easily caught by a busy moment of the
#: shared machine, the loop's run of many seconds is not.
OUR_REPEATS = 3


def _loop(batch, causal: bool, t1: float, rtol: float, atol: float, method: str, count: int) -> np.ndarray:
    """``solve_ivp`` on each of the first ``count`` instances, one at a time; end states [count, l, d]."""
    shape = batch.y0.shape[1:]
    finals = []
    for b in range(count):
        one = InstanceField(batch.P[b:b + 1], batch.U[b:b + 1], causal)
        result = solve_ivp(lambda t, x: one(t, x.reshape(1, *shape)).reshape(-1), (0.0, t1), batch.y0[b].reshape(-1),
                           method=method, rtol=rtol, atol=atol)
        if not result.success:
            raise RuntimeError(f"solve_ivp failed on instance {b}: {result.message}")
        finals.append(result.y[:, -1].reshape(shape))
    return np.stack(finals)


def measure(claim: str = "conj.value-full", instances: int = 200, t1: float = 20.0, reference: int = 20) -> dict:
    load_before = os.getloadavg()
    family = get_family(claim)
    rng = np.random.default_rng(chunk_seed(claim, 0))
    shape = family.draw_shape(rng)
    _, batch = family.draw(rng, instances, shape)
    reference = min(reference, instances)
    integrate(family, batch, t1)  # loads the compiled integrator (Numba's cache) outside the timing
    timings = []
    for _ in range(OUR_REPEATS):
        started = time.perf_counter()
        ours = integrate(family, batch, t1)
        timings.append(time.perf_counter() - started)
    ours_seconds = float(np.median(timings))
    exact = _loop(batch, family.causal, t1, 1e-12, 1e-14, "DOP853", reference)
    worst_ours = float(np.max(np.abs(ours[:reference] - exact)))
    tried = []
    for fraction in LOOP_FRACTIONS:
        rtol, atol = SEARCH_CONTROLLER.rtol * fraction, SEARCH_CONTROLLER.atol * fraction
        worst = float(np.max(np.abs(_loop(batch, family.causal, t1, rtol, atol, "RK45", reference) - exact)))
        tried.append({"rtol": rtol, "atol": atol, "worst_error": worst})
        if worst <= worst_ours:
            break
    chosen = tried[-1]
    started = time.perf_counter()
    _loop(batch, family.causal, t1, chosen["rtol"], chosen["atol"], "RK45", instances)
    loop_seconds = time.perf_counter() - started
    return {
        "claim": claim, "instances": instances, "shape": [shape.heads, shape.tokens, shape.dim], "t1": t1,
        "seed": chunk_seed(claim, 0), "rtol": SEARCH_CONTROLLER.rtol, "atol": SEARCH_CONTROLLER.atol,
        "ours_seconds": ours_seconds, "ours_timings": timings, "ours_throughput": instances * t1 / ours_seconds,
        "worst_error_ours": worst_ours, "reference_instances": reference,
        "loop_tolerances_tried": tried, "loop_rtol": chosen["rtol"], "loop_atol": chosen["atol"],
        "worst_error_loop": chosen["worst_error"], "equal_accuracy": chosen["worst_error"] <= worst_ours,
        "loop_seconds": loop_seconds, "loop_throughput": instances * t1 / loop_seconds,
        "speed_up_at_equal_accuracy": loop_seconds / ours_seconds, "target": ">= 20",
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
    }
