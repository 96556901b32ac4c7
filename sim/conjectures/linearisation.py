"""Linearisation of the attention dynamics at an equilibrium (claim ``grad.stable-consensus``).

The long version (sec. 3.3) states: with P = I (and U = I, W = I, h = 1, the gradient case), linearising
around each equilibrium shows that the only asymptotically stable equilibria are the consensus points.
Equilibria cannot all be enumerated, so the check (i) linearises at consensus and at the symmetric
non-consensus equilibria (antipodal splits, regular polygons on a great circle) and (ii) integrates the
flow from random starts and reports where it ends.

It is a finite, uncertified search for a counterexample to a universal statement: finding none supports it
(``supported``, never ``verified``: the claim's verified comes from its proof,
``theory.conjectures:check_stable_consensus_proof``); finding
one is ``unsupported``, never ``refuted``, since neither a finite-difference spectrum nor a run to a horizon is a
certificate.
"""

from __future__ import annotations

import numpy as np

from foundation.registration import claim_result, named_check
from foundation.records import CheckResult, Table

from sim.field.dynamics import AttentionField, misalignment
from sim.solvers import AdaptiveStepSize, Dopri5, solve

#: Central-difference step: truncation error ~ FD_STEP^2 |F'''| ~ 1e-12, rounding ~ 1e-16 / FD_STEP = 1e-10.
FD_STEP = 1e-6
#: |eigenvalue| below this counts as zero: 100x above the ~1e-10 finite-difference error, far below the
#: smallest non-zero rate (~1e-2 for the configurations here).
ZERO_EIGENVALUE = 1e-7
#: A start has reached consensus when E (eq. 9) is below this at the horizon. Near consensus E is quadratic in the
#: distance, which decays at the consensus rate 1/sqrt(d) (the non-zero consensus eigenvalues of P = U = W = I are
#: -1/sqrt(d)): by t = 200 E is at the rounding floor (~1e-16); near a non-consensus equilibrium E is of order 1
#: (an antipodal split 1 + (l-1) has E = 2 (l-1)/l). 1e-6 lies ten orders from both.
CONSENSUS_E = 1e-6


def tangent_basis(y: np.ndarray) -> np.ndarray:
    """Orthonormal basis of T_y (S^n)^l, shape=[l d, l (d-1)] for ``y : shape=[l, d]`` on the sphere."""
    tokens, dim = y.shape
    basis = np.zeros((tokens * dim, tokens * (dim - 1)))
    for i, token in enumerate(y):
        # The last d-1 columns of a complete QR of y_i span its orthogonal complement.
        q, _ = np.linalg.qr(token[:, None], mode="complete")
        basis[i * dim:(i + 1) * dim, i * (dim - 1):(i + 1) * (dim - 1)] = q[:, 1:]
    return basis


def tangent_jacobian(field: AttentionField, y: np.ndarray, t: float = 0.0) -> np.ndarray:
    """The linearisation of ``field`` at the equilibrium ``y`` on the tangent space, shape=[l (d-1), l (d-1)]."""
    tokens, dim = y.shape
    flat = y.reshape(-1)
    basis = tangent_basis(y)
    columns = []
    for direction in basis.T:
        plus = field(t, (flat + FD_STEP * direction).reshape(tokens, dim)).reshape(-1)
        minus = field(t, (flat - FD_STEP * direction).reshape(tokens, dim)).reshape(-1)
        columns.append((plus - minus) / (2 * FD_STEP))
    return basis.T @ np.stack(columns, axis=1)


def equilibria(tokens: int, dim: int) -> dict[str, np.ndarray]:
    """Named equilibria of the P = U = W = I flow: consensus, antipodal splits, a regular polygon."""
    e1, e2 = np.eye(dim)[0], np.eye(dim)[1]
    found = {"consensus": np.tile(e1, (tokens, 1))}
    for k in range(1, tokens // 2 + 1):
        found[f"antipodal {k}+{tokens - k}"] = np.array([e1] * k + [-e1] * (tokens - k))
    angles = 2 * np.pi * np.arange(tokens) / tokens
    found["regular polygon"] = np.cos(angles)[:, None] * e1 + np.sin(angles)[:, None] * e2
    return found


@named_check
def check_stable_consensus(*, tokens: int = 4, dim: int = 3, value_sign: float = 1.0, starts: int = 20,
                           seed: int = 0, horizon: float = 200.0, consensus_e: float = CONSENSUS_E) -> CheckResult:
    """Linearise the P = I flow at its symmetric equilibria and integrate it from random starts to ``horizon``; a start
    reached consensus when E < ``consensus_e`` there. ``supported`` when nothing goes against the claim (a finite search
    proves nothing about a universal statement), ``unsupported`` when something does (uncertified).

    ``value_sign = -1`` gives the deliberately broken model U = -I (repulsive), the negative control.
    """
    field = AttentionField(P=(np.eye(dim),), U=(value_sign * np.eye(dim),))
    rows, stable_non_consensus, consensus_stable = [], [], False
    for name, y in equilibria(tokens, dim).items():
        residual = float(np.max(np.abs(field(0.0, y))))
        eigenvalues = np.linalg.eigvals(tangent_jacobian(field, y)).real
        zero = int(np.sum(np.abs(eigenvalues) < ZERO_EIGENVALUE))
        largest = float(np.max(eigenvalues))
        # Asymptotically stable (as a set, for consensus: the rotations of the sphere move it along the
        # d-1 dimensional manifold of consensus points): no positive eigenvalue, and only the neutral
        # directions of that manifold at zero.
        neutral = dim - 1 if name == "consensus" else 0
        stable = largest < ZERO_EIGENVALUE and zero == neutral
        if name == "consensus":
            consensus_stable = stable
        elif stable or largest < ZERO_EIGENVALUE:
            stable_non_consensus.append(name)
        rows.append((name, residual, largest, zero, "stable" if stable else "unstable"))
    rng = np.random.default_rng(seed)
    y0 = rng.standard_normal((starts, tokens, dim))
    y0 /= np.linalg.norm(y0, axis=-1, keepdims=True)
    final = solve(field, Dopri5(), 0.0, horizon, y0, controller=AdaptiveStepSize(rtol=1e-9, atol=1e-12)).ys[-1]
    final_E = misalignment(final)
    reached_consensus = int(np.sum(final_E < consensus_e))
    holds = consensus_stable and not stable_non_consensus and reached_consensus == starts
    detail = (f"P = U = W = I (h = 1), l = {tokens} tokens on S^{dim - 1}. Linearisation on the tangent space by "
              f"central differences: consensus {'is' if consensus_stable else 'is NOT'} stable (d-1 = {dim - 1} "
              f"neutral directions along the consensus manifold); non-consensus equilibria with no unstable "
              f"direction: {stable_non_consensus or 'none'}. From {starts} random starts the flow reached "
              f"consensus (E < {consensus_e:g} at t = {horizon:g}) {reached_consensus} times. A finite, uncertified "
              "search: " + ("nothing went against the claim: supported, which proves nothing about every equilibrium "
                            "(the claim's verified is its proof's)." if holds else "it went against the claim without a "
                            "certificate (finite differences, a run to a horizon): unsupported, not refuted."))
    if value_sign != 1.0:
        detail = f"Broken model U = {value_sign:g} I (negative control). " + detail
    return claim_result(
        "supported" if holds else "unsupported", detail=detail,
        numbers={"starts_reaching_consensus": reached_consensus, "starts": starts,
                 "largest_final_E": float(np.max(final_E)), "horizon": horizon, "consensus_E": consensus_e},
        tolerance=ZERO_EIGENVALUE,
        tolerance_reason="|eigenvalue| below it counts as zero: 100x the ~1e-10 central-difference error, "
                         f"far below the smallest non-zero rate (~1e-2). A start counts as consensus when E < "
                         f"{consensus_e:g} at the horizon: E reaches the rounding floor (~1e-16) by t = 200 near "
                         "consensus (rate 1/sqrt(d)) and is of order 1 near any other equilibrium",
        tables=(Table("Equilibria and their linearisation", ("equilibrium", "max |F(y)|", "largest eigenvalue",
                                                             "zero eigenvalues", "verdict"), tuple(rows)),),
        seeds={"random_starts": seed},
    )
