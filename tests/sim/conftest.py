"""Shared fixtures of the sim tests: the manifolds under test and a seeded generator."""

import numpy as np
import pytest

from sim import Ellipsoid

#: A fixed SPD matrix for the ellipsoid cases (eigenvalues about 0.4, 1.0, 2.1).
W3 = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 0.5]])


@pytest.fixture(params=["sphere", "ellipsoid"])
def manifold(request):
    return Ellipsoid() if request.param == "sphere" else Ellipsoid(W3)


@pytest.fixture
def rng():
    return np.random.default_rng(20250701)


@pytest.fixture
def verdict_at(monkeypatch):
    """``verdict_at(check, data, module, name, factor)``: the verdict of ``check(data)`` with the threshold ``name``
    of ``module`` (where the check reads it) multiplied by ``factor``, put back afterwards."""

    def verdict(check, data, module, name, factor):
        with monkeypatch.context() as patch:
            patch.setattr(module, name, getattr(module, name) * factor)
            return check(data).verdict

    return verdict

