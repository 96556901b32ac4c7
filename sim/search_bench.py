"""Throughput of the searches' integrations: one batched solve against a per-instance ``solve_ivp`` loop.

``measure(claim, instances, t1)`` draws the instances of chunk 0 of ``claim``'s family (one shape), integrates
them to ``t1`` (a) at once with ``sim.solve`` (Dopri5 on ``InstanceField``, the search's own call) and (b) one by
one with SciPy's ``solve_ivp`` (RK45, the same rtol/atol, the tangent field without retraction), and measures both
against a reference (SciPy DOP853 at rtol 1e-12) on the first ``reference`` instances; the loop runs again at
100x tighter tolerances, to compare at equal accuracy. Throughput is instances x
time units per second of wall time.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.integrate import solve_ivp

from .conjectures import chunk_seed, get_family
from .instances import InstanceField
from .search import SEARCH_CONTROLLER, SEARCH_MAX_STEPS
from .solvers import Dopri5, solve


def measure(claim: str = "conj.value-full", instances: int = 200, t1: float = 20.0, reference: int = 20) -> dict:
    family = get_family(claim)
    rng = np.random.default_rng(chunk_seed(claim, 0))
    shape = family.draw_shape(rng)
    _, batch = family.draw(rng, instances, shape)
    field_ = InstanceField(batch.P, batch.U, family.causal)
    started = time.perf_counter()
    ours = solve(field_, Dopri5(), 0.0, t1, batch.y0, controller=SEARCH_CONTROLLER, max_steps=SEARCH_MAX_STEPS).ys[-1]
    batched = time.perf_counter() - started

    def single(b, rtol, atol, method):
        one = InstanceField(batch.P[b:b + 1], batch.U[b:b + 1], family.causal)
        return solve_ivp(lambda t, x: one(t, x.reshape(1, *shape_of)).reshape(-1), (0.0, t1),
                         batch.y0[b].reshape(-1), method=method, rtol=rtol, atol=atol).y[:, -1].reshape(shape_of)

    shape_of = batch.y0.shape[1:]
    started = time.perf_counter()
    theirs = np.stack([single(b, SEARCH_CONTROLLER.rtol, SEARCH_CONTROLLER.atol, "RK45") for b in range(instances)])
    looped = time.perf_counter() - started
    # At the same tolerances the loop is less accurate (each instance steps alone, the batch at the step of its
    # most demanding instance); 100x tighter tolerances bring the loop to the batch's accuracy.
    started = time.perf_counter()
    matched = np.stack([single(b, SEARCH_CONTROLLER.rtol / 100, SEARCH_CONTROLLER.atol / 100, "RK45")
                        for b in range(instances)])
    looped_matched = time.perf_counter() - started
    exact = np.stack([single(b, 1e-12, 1e-14, "DOP853") for b in range(reference)])
    return {
        "loop_tight_seconds": looped_matched, "speed_up_at_equal_accuracy": looped_matched / batched,
        "worst_error_loop_tight": float(np.max(np.abs(matched[:reference] - exact))),
        "claim": claim, "instances": instances, "shape": [shape.heads, shape.tokens, shape.dim], "t1": t1,
        "rtol": SEARCH_CONTROLLER.rtol, "atol": SEARCH_CONTROLLER.atol,
        "batched_seconds": batched, "loop_seconds": looped, "speed_up": looped / batched,
        "batched_throughput": instances * t1 / batched, "loop_throughput": instances * t1 / looped,
        "worst_error_batched": float(np.max(np.abs(ours[:reference] - exact))),
        "worst_error_loop": float(np.max(np.abs(theirs[:reference] - exact))),
        "seed": chunk_seed(claim, 0),
    }
