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

from sim.field.instances import InstanceField
from sim.field.manifold import Ellipsoid
from sim.figures.scenarios import FIG3_V, full_attention_example, symmetric_value_example
from sim.solvers import AdaptiveStepSize, Dopri5, solve
from sim.solvers.compiled import solve_field, solve_instances

#: Tiny problems: the argument types, not the work, decide what compiles (t1 is a few steps).
_T1 = 0.05
_CONTROLLER = AdaptiveStepSize(rtol=1e-8, atol=1e-8)


def _tokens() -> np.ndarray:
    """Two instances of 10 tokens on S^2, shape=[2, 10, 3] (seeded: the draw only gives the arrays their types)."""
    return Ellipsoid().random_point_in_hemisphere(FIG3_V, np.random.default_rng(0), (2, 10, 3))


def _matrices() -> np.ndarray:
    """P and U of two instances with two heads, shape=[2, 2, 2, 3, 3] (seeded, as above)."""
    return np.random.default_rng(1).uniform(-0.5, 0.5, size=(2, 2, 2, 3, 3))


#: Each compiled path of the suite, called once on a tiny problem with the argument types of the suite's runs:
#: ``solve``'s kernels (sim.field.kernels: the field's softmax rows and tangent projection, Dopri5's stage
#: combinations and error norm, the retraction) on a full and a causal field; the whole compiled integration of a
#: modulated field (``solve_field``, Figs. 1-3) and of per-instance matrices (``solve_instances``, a conjecture
#: search's path; both compile the same types); eq. 6's Numba backend (``InstanceField``).
PATHS: dict[str, Callable[[], object]] = {
    "solve, full field": lambda: solve(full_attention_example(), Dopri5(), 0.0, _T1, _tokens(),
                                       controller=_CONTROLLER),
    "solve, causal field": lambda: solve(symmetric_value_example(), Dopri5(), 0.0, _T1, _tokens(),
                                         controller=_CONTROLLER),
    "solve_field": lambda: solve_field(full_attention_example(), _tokens(), _T1, controller=_CONTROLLER),
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
