"""Does the skew part of P matter to a witness? (conj.nonsymmetric-attractive asks that non-symmetry be what is
tested.)

:func:`skew_matters` replaces every P_eta by its symmetric part (P + P^T)/2 and asks (a) whether the certifier
(:func:`sim.conjectures.validated.certify`, Arb balls) still finds an attractor at the witness's y* (with the
witness's generator where it still commutes, and without one), and (b) where the dynamics from y0 goes (float64,
sim's Dopri5 at the replay's tolerance and horizon): the diameter max_ij |y_i - y_j| at the end. The skew part
matters when the symmetric instance has no certified attractor there and its run from y0 reaches consensus
(diameter below ``CONSENSUS``). For conj.nonsymmetric-full's stored witnesses it does not matter (their symmetric
part is negative definite: repulsive attention keeps the same attractor); a witness of conj.nonsymmetric-attractive
must make it matter (tests/sim/test_witnesses.py).
"""

from __future__ import annotations

import numpy as np

from sim.conjectures.certify import attention_field, integrate
from sim.conjectures.families import symmetrised
from sim.conjectures.validated import Problem, certify, commutes

#: A run ends at consensus when its diameter is below this (1e4 x the replay integrators' 1e-10 tolerance).
CONSENSUS = 1e-6


def without_skew(witness: dict) -> dict:
    """``witness`` with every P_eta replaced by (P_eta + P_eta^T)/2 (exactly symmetric in float64)."""
    return dict(witness, P=symmetrised(np.asarray(witness["P"], float)).tolist())


def skew_matters(witness: dict) -> dict:
    """{"certified_without_skew", "diameter_without_skew", "matters"} (see the module docstring)."""
    from sim.conjectures.certify import EVIDENCE, EVIDENCE_HORIZON

    P = symmetrised(np.asarray(witness["P"], float))
    U, causal = np.asarray(witness["U"], float), bool(witness["causal"])
    y_star, y0 = np.asarray(witness["equilibrium"], float), np.asarray(witness["y0"], float)
    generators = [None]
    if witness.get("generator") is not None:
        generator = np.asarray(witness["generator"], float)
        if commutes(Problem(P, U, causal, generator)):
            generators.insert(0, generator)
    certified = any(certify(Problem(P, U, causal, g), y_star).certified for g in generators)
    end = np.asarray(integrate(attention_field(P, U, causal), y0, EVIDENCE_HORIZON, EVIDENCE))[-1]
    diameter = float(np.max(np.linalg.norm(end[:, None] - end[None], axis=-1)))
    return {"certified_without_skew": certified, "diameter_without_skew": diameter,
            "matters": not certified and diameter < CONSENSUS}
