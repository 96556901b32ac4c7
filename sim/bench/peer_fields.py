"""Other libraries' adaptive Dopri5 on the same small systems, for ``sim bench``: diffrax under ``jax.jit`` and
torchdiffeq (the optional extra ``.[peers]``; absent, ``available()`` says which and why).

Each peer integrates eq. 6 on the sphere (``sim.field.array_field``, in its own array library, W = I, no retraction:
neither library has one) with the whole batch as one state ``[b, l, d]``, in float64 (JAX with x64 enabled), from 0 to
t1 at rtol = atol = tol, and returns the end states. A problem is ``Systems``: per-instance matrices ``P, U :
[b, h, d, d]`` (P' when modulated by ``CosineDiagonal`` arrays ``[h, d]``), ``causal``, ``y0 : [b, l, d]``, t1.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from sim.field.array_field import array_field

#: The peers' step budget: far above what any tolerance of the benchmark needs (a few hundred steps), so a run
#: never stops early; reaching it is an error.
PEER_MAX_STEPS = 100_000


@dataclass(frozen=True)
class Systems:
    """A batch of small systems of eq. 6 on the sphere (see the module docstring); ``modulation`` is None or the
    arrays (amplitude, omega, phase, sine) of P_eta(t) = diag(D_eta(t)) P'_eta, each ``[h, d]``."""

    name: str
    P: np.ndarray
    U: np.ndarray
    causal: bool
    y0: np.ndarray
    t1: float
    modulation: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None


def available() -> dict[str, str | None]:
    """Each peer's name -> None when importable, else the reason it is skipped (how to install it)."""
    hint = "not installed: pip install -e '.[peers]' (with the CPU constraints file, see docs/simulation.md)"
    return {"diffrax": None if all(importlib.util.find_spec(m) for m in ("jax", "diffrax")) else hint,
            "torchdiffeq": None if importlib.util.find_spec("torchdiffeq") else hint}


@dataclass
class PreparedPeer:
    """A peer ready to run ``systems`` at any tolerance: ``run(tol) -> end states [b, l, d]``; ``compile_seconds``
    the one-off compilation (jax.jit's; 0 for torchdiffeq, which has none); ``threads`` what it ran on."""

    name: str
    run: Callable[[float], np.ndarray]
    compile_seconds: float
    threads: str


def prepare_diffrax(systems: Systems) -> PreparedPeer:
    """diffrax ``Dopri5`` with a ``PIDController(rtol=tol, atol=tol)`` (its defaults: RMS norm over the whole
    state, an I controller), ``dt0=None`` (its own starting step), jitted once with the tolerance an argument;
    the compile timed apart (``jax.jit(...).lower(...).compile()``). On one thread, as ours (XLA's flags are set
    before JAX is first imported; if it was imported before, its own settings stay and ``threads`` says so)."""
    fresh = "jax" not in sys.modules
    if fresh:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1").strip()
    import jax

    jax.config.update("jax_enable_x64", True)
    import diffrax
    import jax.numpy as jnp

    modulation = None if systems.modulation is None else tuple(map(jnp.asarray, systems.modulation))
    field = array_field(jnp, lambda s: jax.nn.softmax(s, axis=-1), jnp.asarray(systems.P), jnp.asarray(systems.U),
                        systems.causal, modulation)
    term = diffrax.ODETerm(lambda t, y, args: field(t, y))

    def integrate(y0, tol):
        solution = diffrax.diffeqsolve(term, diffrax.Dopri5(), t0=0.0, t1=systems.t1, dt0=None, y0=y0,
                                       stepsize_controller=diffrax.PIDController(rtol=tol, atol=tol),
                                       max_steps=PEER_MAX_STEPS)
        return solution.ys[-1]

    y0 = jnp.asarray(systems.y0)
    started = time.perf_counter()
    compiled = jax.jit(integrate).lower(y0, jnp.float64(1e-8)).compile()
    compile_seconds = time.perf_counter() - started

    def run(tol: float) -> np.ndarray:
        return np.asarray(jax.block_until_ready(compiled(y0, jnp.float64(tol))))

    threads = "1 (XLA_FLAGS)" if fresh else f"XLA's own (JAX was imported before; XLA_FLAGS={os.environ.get('XLA_FLAGS')!r})"
    return PreparedPeer("diffrax", run, compile_seconds, threads)


def prepare_torchdiffeq(systems: Systems) -> PreparedPeer:
    """torchdiffeq ``odeint(method="dopri5", rtol=tol, atol=tol)`` on float64 tensors (its RMS norm over the whole
    state, its own starting step)."""
    import torch
    from torchdiffeq import odeint

    as_tensor = lambda a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    modulation = None if systems.modulation is None else tuple(map(as_tensor, systems.modulation))
    field = array_field(torch, lambda s: torch.softmax(s, dim=-1), as_tensor(systems.P), as_tensor(systems.U),
                        systems.causal, modulation)
    y0 = torch.from_numpy(np.ascontiguousarray(systems.y0))
    times = torch.tensor([0.0, systems.t1], dtype=torch.float64)

    def run(tol: float) -> np.ndarray:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # one thread, as ours (with more, its tiny products wait on each other)
        try:
            with torch.no_grad():
                return odeint(field, y0, times, rtol=tol, atol=tol, method="dopri5",
                              options={"max_num_steps": PEER_MAX_STEPS})[-1].numpy()
        finally:
            torch.set_num_threads(threads)

    return PreparedPeer("torchdiffeq", run, 0.0, "1 (torch.set_num_threads)")


PREPARE = {"diffrax": prepare_diffrax, "torchdiffeq": prepare_torchdiffeq}
