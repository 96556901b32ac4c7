"""Other libraries' adaptive Dopri5 on the same small systems, for ``sim bench``: diffrax under ``jax.jit``,
torchdiffeq and torchode (the optional extra ``.[peers]``; absent, ``available()`` says which and why).

Each peer integrates eq. 6 on the sphere (``sim.field.array_field``, in its own array library, W = I, no retraction:
none of them has one) in float64 (JAX with x64 enabled), from 0 to t1 at rtol = atol = tol, and returns the end
states: diffrax and torchdiffeq with the whole batch as one state ``[b, l, d]`` (one step size, their RMS norm over
the batch), torchode with one state, one time and one step size per instance (its RMS norm per instance), as ours.
Every peer runs on ``device``: "cpu" (the default), or "cuda" (``python -m sim bench --part peers --device cuda``,
part of the GPU script ``consensus gpu-checks``): the PyTorch peers' tensors there, JAX on its GPU backend. A problem
is ``Systems``: per-instance matrices ``P, U : [b, h, d, d]`` (P' when modulated by ``CosineDiagonal`` arrays ``[h,
d]``), ``causal``, ``y0 : [b, l, d]``, t1.
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
            "torchdiffeq": None if importlib.util.find_spec("torchdiffeq") else hint,
            "torchode": None if importlib.util.find_spec("torchode") else hint}


@dataclass
class PreparedPeer:
    """A peer ready to run ``systems`` at any tolerance: ``run(tol) -> end states [b, l, d]``; ``compile_seconds``
    the one-off compilation (jax.jit's; 0 for the PyTorch peers, which run eagerly); ``threads`` what it ran on."""

    name: str
    run: Callable[[float], np.ndarray]
    compile_seconds: float
    threads: str
    method: str = ""


def prepare_diffrax(systems: Systems, threads: int = 1, device: str = "cpu") -> PreparedPeer:
    """diffrax ``Dopri5`` with a ``PIDController(rtol=tol, atol=tol)`` (its defaults: RMS norm over the whole
    state, an I controller), ``dt0=None`` (its own starting step), jitted once with the tolerance an argument;
    the compile timed apart (``jax.jit(...).lower(...).compile()``); the runs call the jitted function, which
    compiles once more on the ladder's first, untimed-for-the-comparison run (a ``Compiled`` object called by hand
    must be given JAX's hoisted constants too, which changed between JAX versions). On ``device``: "cpu" on
    ``threads`` threads, one by default as ours, or "cuda", JAX's GPU backend (XLA's flags and JAX's platform are
    set before JAX is first imported, so the first call of a process decides; if JAX was imported before, its own
    settings stay and ``threads`` says so)."""
    fresh = "jax" not in sys.modules
    if fresh:
        eigen = "false" if threads == 1 else "true"
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --xla_cpu_multi_thread_eigen={eigen} "
                                   f"intra_op_parallelism_threads={threads}").strip()
        os.environ["JAX_PLATFORMS"] = "cpu" if device == "cpu" else "cuda"
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # the PyTorch peers share the GPU
    import jax

    jax.config.update("jax_enable_x64", True)
    import diffrax
    import jax.numpy as jnp

    modulation = None if systems.modulation is None else tuple(map(jnp.asarray, systems.modulation))
    field = array_field(jnp, lambda s: jax.nn.softmax(s, axis=-1), jnp.asarray(systems.P), jnp.asarray(systems.U),
                        systems.causal, modulation, tokens=systems.y0.shape[1])
    term = diffrax.ODETerm(lambda t, y, args: field(t, y))

    def integrate(y0, tol):
        solution = diffrax.diffeqsolve(term, diffrax.Dopri5(), t0=0.0, t1=systems.t1, dt0=None, y0=y0,
                                       stepsize_controller=diffrax.PIDController(rtol=tol, atol=tol),
                                       max_steps=PEER_MAX_STEPS)
        return solution.ys[-1]

    y0 = jnp.asarray(systems.y0)
    jitted = jax.jit(integrate)
    started = time.perf_counter()
    jitted.lower(y0, jnp.float64(1e-8)).compile()
    compile_seconds = time.perf_counter() - started

    def run(tol: float) -> np.ndarray:
        return np.asarray(jax.block_until_ready(jitted(y0, jnp.float64(tol))))

    where = jax.devices()[0].platform
    threads = (f"{where} (JAX)" if where != "cpu" else f"{threads} (XLA_FLAGS)" if fresh
               else f"as at JAX's first import in this process (XLA_FLAGS={os.environ.get('XLA_FLAGS')!r})")
    return PreparedPeer("diffrax", run, compile_seconds, threads,
                        f"diffrax Dopri5 + PIDController (jax.jit) on JAX's {where}, the batch as one state, "
                        "no retraction")


def _torch_field(systems: Systems, device: str):
    """The systems' field in PyTorch float64 tensors on ``device``, and ``y0`` there."""
    import torch

    as_tensor = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(device)  # noqa: E731
    modulation = None if systems.modulation is None else tuple(map(as_tensor, systems.modulation))
    field = array_field(torch, lambda s: torch.softmax(s, dim=-1), as_tensor(systems.P), as_tensor(systems.U),
                        systems.causal, modulation, tokens=systems.y0.shape[1])
    return field, as_tensor(systems.y0)


def _torch_threads(device: str, threads: int) -> str:
    return f"{threads} (torch.set_num_threads)" if device == "cpu" else f"{device} (torch)"


def _on_threads(solve: Callable[[], np.ndarray], threads: int) -> np.ndarray:
    """``solve()`` with PyTorch on ``threads`` CPU threads (1 by default, as ours: with more, its tiny products
    wait on each other)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.no_grad():
            return solve()
    finally:
        torch.set_num_threads(before)


def prepare_torchdiffeq(systems: Systems, device: str = "cpu", threads: int = 1) -> PreparedPeer:
    """torchdiffeq ``odeint(method="dopri5", rtol=tol, atol=tol)`` on float64 tensors (its RMS norm over the whole
    state, its own starting step)."""
    import torch
    from torchdiffeq import odeint

    field, y0 = _torch_field(systems, device)
    times = torch.tensor([0.0, systems.t1], dtype=torch.float64, device=device)

    def run(tol: float) -> np.ndarray:
        return _on_threads(lambda: odeint(field, y0, times, rtol=tol, atol=tol, method="dopri5",
                                          options={"max_num_steps": PEER_MAX_STEPS})[-1].cpu().numpy(), threads)

    return PreparedPeer("torchdiffeq", run, 0.0, _torch_threads(device, threads),
                        f"torchdiffeq dopri5 on {device}, the batch as one state, no retraction")


def prepare_torchode(systems: Systems, device: str = "cpu", threads: int = 1) -> PreparedPeer:
    """torchode ``Dopri5`` with an ``IntegralController(atol=tol, rtol=tol)`` (its default norm: RMS over each
    instance; the same I controller, safety 0.9 and factors 0.2-10 as diffrax's defaults), its own starting step
    per instance, ``AutoDiffAdjoint`` under ``torch.no_grad``, eager (not ``torch.compile``d: see
    docs/simulation.md). Every instance is its own problem of torchode's batch: its own time and step size, its
    state flattened to ``l * d`` numbers. A run that does not reach t1 on every instance raises with torchode's own
    status names."""
    import torch
    import torchode

    field, y0 = _torch_field(systems, device)
    batch, shape = y0.shape[0], y0.shape[1:]
    term = torchode.ODETerm(lambda t, y: field(t, y.reshape(batch, *shape)).reshape(batch, -1))
    t_eval = torch.tensor([0.0, systems.t1], dtype=torch.float64, device=device).repeat(batch, 1)
    problem = torchode.InitialValueProblem(y0=y0.reshape(batch, -1), t_eval=t_eval)

    def solve(tol: float) -> np.ndarray:
        solver = torchode.AutoDiffAdjoint(torchode.Dopri5(term=term),
                                          torchode.IntegralController(atol=tol, rtol=tol, term=term),
                                          max_steps=PEER_MAX_STEPS).to(device)
        solution = solver.solve(problem)
        status = solution.status.cpu().numpy()
        if np.any(status != torchode.status_codes.SUCCESS):
            codes, counts = np.unique(status[status != 0], return_counts=True)
            raise RuntimeError("torchode: " + ", ".join(f"{torchode.Status(int(code)).name} on {count} of {batch} "
                                                        "instances" for code, count in zip(codes, counts)))
        return solution.ys[:, -1].reshape(batch, *shape).cpu().numpy()

    return PreparedPeer("torchode", lambda tol: _on_threads(lambda: solve(tol), threads), 0.0,
                        _torch_threads(device, threads),
                        f"torchode Dopri5 + IntegralController on {device}, eager, each instance its own time and "
                        "step size, no retraction")


PREPARE = {"diffrax": prepare_diffrax, "torchdiffeq": prepare_torchdiffeq, "torchode": prepare_torchode}
