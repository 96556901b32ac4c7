"""The suite's Numba code compiled ahead of its first use, into Numba's on-disk cache (``python -m sim compile``).

Every ``@njit(cache=True)`` function compiles on its first call with new argument types and keeps the machine code
in ``__pycache__`` beside its module; later processes load it in milliseconds, until the source changes. A fresh
checkout has no cache, so every process that needed the compiled integration (``sim.solvers.compiled``) compiled
it: under ``make test``'s two workers both did, in the middle of the tests (measured on a fresh clone: a test's first
search took 28.7 s in one worker and 33.1 s in the other, 1.5 s with the cache). The install step (Makefile) runs
``compile_ahead`` once instead: about 37 s on one core here, 1.4 s when the cache is already there.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from sim.field.dynamics import AttentionField
from sim.field.instances import InstanceField
from sim.field.manifold import Ellipsoid
from sim.field.modulation import CosineDiagonal, Modulated
from sim.solvers import AdaptiveStepSize, Dopri5, solve
from sim.solvers.compiled import solve_field, solve_instances

#: Tiny problems: the argument types, not the work, decide what compiles (t1 is a few steps).
_T1 = 0.05
_CONTROLLER = AdaptiveStepSize(rtol=1e-8, atol=1e-8)


def _tokens() -> np.ndarray:
    """Two instances of 10 tokens on S^2, shape=[2, 10, 3] (seeded: the draws here only give the arrays their
    types)."""
    return Ellipsoid().random_point(np.random.default_rng(0), (2, 10, 3))


def _matrices() -> np.ndarray:
    """P and U of two instances with two heads, shape=[2, 2, 2, 3, 3] (seeded, as above)."""
    return np.random.default_rng(1).uniform(-0.5, 0.5, size=(2, 2, 2, 3, 3))


def _modulated_field(causal: bool) -> AttentionField:
    """Two heads P_eta(t) = D(t) P'_eta with D(t) = diag(cos t, sin t, cos 2t), as in Figs. 1-3 and 5-6; U_eta = I
    when full (Figs. 1-3), drawn when causal (Figs. 5-6: the value products take other kernels)."""
    diagonal = CosineDiagonal(np.ones(3), np.array([1.0, 1.0, 2.0]), np.zeros(3), np.array([False, True, False]))
    heads, values = np.random.default_rng(2).uniform(-0.5, 0.5, size=(2, 2, 3, 3))
    return AttentionField(P=tuple(Modulated(p, diagonal) for p in heads), U=tuple(values) if causal else None,
                          W=np.eye(3), causal=causal)


#: Each compiled path of the suite, called once on a tiny problem with the argument types of the suite's runs:
#: ``solve``'s kernels (sim.field.kernels: the field's softmax rows and tangent projection, Dopri5's stage
#: combinations and error norm, the retraction) on a full field with U = I and on a causal one with drawn U; the
#: whole compiled integration of a modulated field (``solve_field``, Figs. 1-3) and of per-instance matrices
#: (``solve_instances``, a conjecture search's path; both compile the same types); eq. 6's Numba backend
#: (``InstanceField``).
PATHS: dict[str, Callable[[], object]] = {
    "solve, full field": lambda: solve(_modulated_field(False), Dopri5(), 0.0, _T1, _tokens(),
                                       controller=_CONTROLLER),
    "solve, causal field": lambda: solve(_modulated_field(True), Dopri5(), 0.0, _T1, _tokens(),
                                         controller=_CONTROLLER),
    "solve_field": lambda: solve_field(_modulated_field(False), _tokens(), _T1, controller=_CONTROLLER),
    "solve_instances": lambda: solve_instances(InstanceField(*_matrices(), causal=True), _tokens(), _T1,
                                               controller=_CONTROLLER),
    "InstanceField": lambda: InstanceField(*_matrices())(0.0, _tokens()),
}


def compile_ahead(paths: dict[str, Callable[[], object]] = PATHS) -> dict[str, float]:
    """Run each of ``paths`` once; return the seconds each took (compiling, or loading Numba's cache)."""
    seconds = {}
    for name, path in paths.items():
        started = time.perf_counter()
        path()
        seconds[name] = time.perf_counter() - started
    return seconds
