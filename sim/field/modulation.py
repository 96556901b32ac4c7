"""Time-varying heads P_eta(t) = D_eta(t) P'_eta (sec. 6.1, Figs. 1-3 and 5-6), as value objects that the NumPy
field calls and the compiled solver (``sim.solvers.compiled``) reads number by number."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Modulated:
    """P(t) = D(t) P' with D(t) = diag(diagonal(t)): ``__call__(t)`` returns shape=[d, d]."""

    base: np.ndarray
    diagonal: Callable[[float], np.ndarray]
    description: str = ""

    def __call__(self, t: float) -> np.ndarray:
        return self.diagonal(t)[:, None] * self.base


@dataclass(frozen=True)
class CosineDiagonal:
    """The diagonal of D(t), shape=[d]: entry k is amplitude_k cos(omega_k t + phase_k), or sin(...) where
    ``sine[k]``. A value object (not a closure), so the compiled integrations (``sim.solvers.compiled``) read its
    numbers and evaluate the same D(t) inside their loop."""

    amplitude: np.ndarray
    omega: np.ndarray
    phase: np.ndarray
    sine: np.ndarray

    def __call__(self, t: float) -> np.ndarray:
        argument = self.omega * t + self.phase
        return self.amplitude * np.where(self.sine, np.sin(argument), np.cos(argument))
