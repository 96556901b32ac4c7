"""Eq. 6's fast forms behind one interface, each held to the oracle ``sim.field.eq6`` (tests/sim/test_backends.py).

    field = make_field(backend, P, U, causal)   # P, U : [b, h, d, d], constant heads, one system per instance
    dy = field(t, y)                            # y, dy : [b, l, d], float64 NumPy arrays, on the sphere (W = I)

- ``numpy``: ``sim.AttentionField``, BLAS products in a per-thread workspace (it also takes any ellipsoid and
  time-varying heads); run by the figures, the property tests, ``theory``'s numeric checks, the float64 screens.
- ``numba``: ``sim.field.instances.InstanceField``, compiled lanes, one instance per lane; the form of the compiled
  solver ``sim.solvers.compiled`` and of the searches.
- ``torch``: ``sim.field.array_field`` in PyTorch tensors; torchdiffeq's field in the peers' benchmark.
- ``jax``: ``sim.field.array_field`` in ``jax.numpy`` (extra ``.[peers]``), jitted; diffrax's field there.
"""

from __future__ import annotations

import importlib.util
from typing import Callable

import numpy as np

from sim.field.array_field import array_field
from sim.field.dynamics import AttentionField
from sim.field.instances import InstanceField

Field = Callable[[float, np.ndarray], np.ndarray]


def _numpy(P: np.ndarray, U: np.ndarray, causal: bool) -> Field:
    fields = [AttentionField(tuple(p), tuple(u), causal=causal) for p, u in zip(P, U)]
    return lambda t, y: np.stack([field(t, instance) for field, instance in zip(fields, y)])


def _torch(P: np.ndarray, U: np.ndarray, causal: bool) -> Field:
    import torch

    field = array_field(torch, lambda s: torch.softmax(s, dim=-1), torch.from_numpy(P), torch.from_numpy(U), causal)
    return lambda t, y: field(t, torch.from_numpy(np.ascontiguousarray(y, dtype=np.float64))).numpy()


def _jax(P: np.ndarray, U: np.ndarray, causal: bool) -> Field:
    import jax

    jax.config.update("jax_enable_x64", True)  # float64, as every other backend
    import jax.numpy as jnp

    field = jax.jit(array_field(jnp, lambda s: jax.nn.softmax(s, axis=-1), jnp.asarray(P), jnp.asarray(U), causal))
    return lambda t, y: np.asarray(field(t, jnp.asarray(y, dtype=jnp.float64)))


#: Each backend's constructor and the modules it needs.
BACKENDS: dict[str, tuple[Callable[[np.ndarray, np.ndarray, bool], Field], tuple[str, ...]]] = {
    "numpy": (_numpy, ()),
    "numba": (lambda P, U, causal: InstanceField(P, U, causal), ()),
    "torch": (_torch, ("torch",)),
    "jax": (_jax, ("jax",)),
}


def available() -> dict[str, str | None]:
    """Each backend's name -> None when it can run here, else why not (what to install)."""
    return {name: next((f"needs {module}: pip install -e '.[peers]' (see docs/simulation.md)"
                        for module in modules if importlib.util.find_spec(module) is None), None)
            for name, (_, modules) in BACKENDS.items()}


def make_field(backend: str, P, U=None, causal: bool = False) -> Field:
    """Eq. 6 for ``P : [b, h, d, d]`` and ``U`` of that shape (None: U_eta = I) by ``backend`` (a key of
    ``BACKENDS``); ``ValueError`` naming the choices for another name, ``RuntimeError`` saying what to install for
    one that cannot run here."""
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} must be one of {sorted(BACKENDS)}.")
    reason = available()[backend]
    if reason is not None:
        raise RuntimeError(f"backend {backend!r} cannot run here: {reason}.")
    P = np.ascontiguousarray(P, dtype=np.float64)
    if P.ndim != 4 or P.shape[-1] != P.shape[-2]:
        raise ValueError(f"P must have shape [b, h, d, d]; got {P.shape}.")
    U = np.broadcast_to(np.eye(P.shape[-1]), P.shape).copy() if U is None else np.ascontiguousarray(U, np.float64)
    if U.shape != P.shape:
        raise ValueError(f"U must have the shape of P {P.shape}; got {U.shape}.")
    return BACKENDS[backend][0](P, U, bool(causal))
