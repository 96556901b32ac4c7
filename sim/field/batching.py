"""Splitting a batch of independent instances (the first axis of a state ``[batch, l, d]``) into groups."""

from __future__ import annotations

import numpy as np


def instance_groups(batch: int, groups: int) -> list[slice]:
    """Slices of the first axis that split ``batch`` instances into ``min(groups, batch)`` groups of nearly
    equal size (one slice of everything when that is a single group)."""
    count = min(groups, batch)
    if count <= 1:
        return [slice(None)]
    bounds = np.linspace(0, batch, count + 1).round().astype(int)
    return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]


def groups_of_at_most(batch: int, instance_bytes: int, group_bytes: int, multiple_of: int = 1) -> list[slice]:
    """``instance_groups`` with as few groups as keep each within ``group_bytes`` (instances of
    ``instance_bytes`` each; at least one instance a group), their count a multiple of ``multiple_of``."""
    per_group = max(1, group_bytes // max(1, instance_bytes))
    count = -(-batch // (per_group * multiple_of)) * multiple_of  # ceil to a multiple
    return instance_groups(batch, count)
