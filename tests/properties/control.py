"""Shared helpers of the property tests: per-test example budgets and the existence search of a control."""

from __future__ import annotations

from hypothesis import Phase, find, settings


def budget(fraction: float, minimum: int = 3) -> settings:
    """The loaded profile's settings with ``fraction`` of its max_examples (at least ``minimum``).

    The profiles (tests/conftest.py: dev, ci, thorough) set the scale; an expensive property takes a
    fraction of it so the whole suite keeps its time budget under every profile.
    """
    return settings(settings.default, max_examples=max(minimum, int(settings.default.max_examples * fraction)))


def find_violation(strategy, violated, *, max_examples: int = 25):
    """The first generated instance on which ``violated(instance)`` is true, and how many were tried.

    A negative control whose broken model need not fail on *every* instance uses this: the property must
    be seen to fail on some instance of the property's own strategy. Derandomised and without shrinking
    (each try integrates an ODE), so it is reproducible and cheap; raises hypothesis' NoSuchExample when
    no violation is found among ``max_examples`` tries.
    """
    tried = []

    def condition(instance) -> bool:
        tried.append(instance)
        return violated(instance)

    found = find(strategy, condition, settings=settings(max_examples=max_examples, phases=[Phase.generate],
                                                        derandomize=True, database=None, deadline=None))
    return found, len(tried)
