"""Where evaluations of the attention field keep their arrays: the field (``sim.field.dynamics.AttentionField``) holds
the mathematics, frozen; this object holds what its evaluations reuse, per thread (a solve's workers evaluate the
same field at once): the intermediate arrays and P(t) of the last few times."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

import numpy as np

#: How many times' P(t) a thread keeps (Dopri5's stages fall on 6 distinct times a step; one more for the next).
P_TIMES = 7


class FieldWorkspace:
    """Per-thread arrays of a field's evaluations, reused by the next evaluation in the same thread."""

    def __init__(self) -> None:
        self.threads = threading.local()  # this thread's {name: array} (its __dict__)

    def buffer(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """This thread's array ``name`` of ``shape`` for an intermediate result of an evaluation, reused by the next
        one (a leading part of a longer one: the last group of a field's call may be shorter): Fig. 4's 25 MB of
        temporaries per evaluation, allocated anew, cost a page fault per 4 KiB (about a tenth of a solve's time
        went to the kernel)."""
        buffers = self.threads.__dict__
        array = buffers.get(name)
        if array is None or array.shape[1:] != shape[1:] or len(array) < shape[0]:
            array = buffers[name] = np.empty(shape)
        return array[: shape[0]]

    def at_time(self, t: float, shape: tuple[int, ...], fill: Callable[[np.ndarray], None]) -> np.ndarray:
        """A matrix of time ``t`` (shared between calls: not to be written), ``fill``-ed into an array of ``shape``
        the first time: this thread keeps those of its last ``P_TIMES`` times. A solver steps its parts one after
        the other at the same stage times (and RK4's middle stages, or an accepted step's last stage and the next
        one's first, share a time), and P(t) of a large d costs about 4% of an evaluation."""
        kept = self.threads.__dict__.setdefault("P_by_time", OrderedDict())  # time -> matrix, oldest first
        if t in kept:
            return kept[t]
        reused = kept.popitem(last=False)[1] if len(kept) >= P_TIMES else None
        matrix = reused if reused is not None and reused.shape == shape else np.empty(shape)
        fill(matrix)
        kept[t] = matrix  # (only once whole: an exception in fill leaves no half-written matrix behind)
        return matrix
