"""The time-reversed model: a deliberately broken field for negative controls.

``TimeReversed(field)`` is ``-field``: the same trajectories run backwards, so tokens that the attention dynamics
(eq. 6) draws together are pushed apart and a consensus repels. A check of convergence, stability or a decreasing
Lyapunov function must say "refuted" on it; the figures' checks, the stability check of Remark 4.1 and the
theorems' figures use it as their control.
"""

from __future__ import annotations

import numpy as np


class TimeReversed:
    """``dy/dt = -field(t, y)`` on the field's manifold (``field``: any eq. 6 field with a ``manifold``)."""

    def __init__(self, field) -> None:
        self.field, self.manifold = field, field.manifold

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        """Minus the field at ``(t, y)``, shape=[..., l, d] like ``y``."""
        return -self.field(t, y)
