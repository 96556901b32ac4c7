"""What a conjecture's instance family is, and the geometry its rules share: the instances' ``Shape`` and
``Batch``, the ``Family`` record (decoder, hypotheses, distance to the claimed conclusion, state margin), chunk seeds,
scalings onto the hypotheses, the top eigenpair of a value matrix (float64, and certified in ball arithmetic), and
the checks of exact symmetry and certified positive tops.

The catalogue of families, one per ``conj.*`` claim, is :mod:`sim.conjectures.families`; the families of the
conjectures the paper cites are :mod:`sim.conjectures.karagodin`; both build on this module.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from flint import acb_mat, arb_mat, ctx

from sim.field.dynamics import leading_eigenpair


#: ||P_eta||_2 <= P_MAX (the "bounded P" of the hypotheses, for the search: constant matrices of norm up to 20,
#: so scores y_i^T P y_j span up to 40 between tokens and attention can be almost hard).
P_MAX = 20.0
#: A top eigenvalue counts as simple and positive when it exceeds the next real part and zero by this much.
EIGEN_GAP = 1e-3


@dataclass(frozen=True)
class Shape:
    heads: int
    tokens: int
    dim: int


@dataclass(frozen=True)
class Batch:
    """Instances of one shape: ``P, U : shape=[n, h, d, d]``, ``y0 : shape=[n, l, d]``, ``valid : shape=[n]``."""

    P: np.ndarray
    U: np.ndarray
    y0: np.ndarray
    valid: np.ndarray


def no_state_hypothesis(U: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """+inf for each state of ``ys : shape=[N, l, d]``, shape=[N]: the claim restricts no state ("almost every
    initial state")."""
    return np.full(len(ys), np.inf)


@dataclass(frozen=True)
class Family:
    """The search space of one conjecture (see the module docstring)."""

    claim: str
    causal: bool
    heads: tuple[int, ...]
    tokens: tuple[int, ...]
    dims: tuple[int, ...]
    horizon: float
    description: str
    decode: Callable[[np.ndarray, Shape], Batch]
    distance: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    hypotheses: Callable[[np.ndarray, np.ndarray, np.ndarray], list[str]]
    state_margin: Callable[[np.ndarray, np.ndarray], np.ndarray] = no_state_hypothesis
    #: How the seeking search's structured draws (``sim.conjectures.structured``) may form U: "symmetric" (multi-head,
    #: U_eta symmetric), "top-real" (U with a real, simple, positive top eigenvalue), "equal-P" (U = P symmetric),
    #: "identity" (U = I); None: the search draws only the claim's random family.
    value_rule: str | None = None
    #: For a claim whose outcome depends on the start (thm2: a component of x_1(0)), ``start_distance(P, U, y, y0)``:
    #: the distance of the states ``y`` from the outcome claimed for the starts ``y0``; None: the outcome is the same
    #: for every start and ``distance`` measures it (:meth:`outcome_distance` picks).
    start_distance: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None
    #: Why no witness of this claim can ever be certified ("" when one can): its search then settles nothing, and its
    #: record is ``not-run``, never ``supported`` (``sim.conjectures.distributed.summarise``).
    no_witness: str = ""

    def outcome_distance(self, P: np.ndarray, U: np.ndarray, y: np.ndarray, y0: np.ndarray) -> np.ndarray:
        """The distance of the states ``y : shape=[n, l, d]`` from the outcome claimed for the starts ``y0`` (same
        shape), shape=[n]: ``start_distance`` when the claim's outcome depends on the start, ``distance`` otherwise."""
        if self.start_distance is None:
            return self.distance(P, U, y)
        return self.start_distance(P, U, y, y0)

    def parameters(self, shape: Shape) -> int:
        """Length of the normal vector that ``decode`` turns into one instance of ``shape``."""
        h, l, d = shape.heads, shape.tokens, shape.dim
        return 2 * h * d * d + l * d + 2 * h

    def draw_shape(self, rng: np.random.Generator) -> Shape:
        return Shape(int(rng.choice(self.heads)), int(rng.choice(self.tokens)), int(rng.choice(self.dims)))

    def draw(self, rng: np.random.Generator, n: int, shape: Shape) -> tuple[np.ndarray, Batch]:
        """``n`` instances of ``shape`` from standard normal vectors (returned too, for the adversarial stage)."""
        theta = rng.standard_normal((n, self.parameters(shape)))
        return theta, self.decode(theta, shape)


def chunk_seed(claim: str, index: int) -> list[int]:
    """The seed of chunk ``index`` of ``claim``'s search: the same chunk draws the same instances on any worker."""
    return [zlib.crc32(claim.encode()), int(index)]


# --- pieces of the decoders ----------------------------------------------------------------------------------
def split_theta(theta: np.ndarray, shape: Shape):
    """The raw parts of ``theta`` ``[n, size]``: P ``[n, h, d, d]``, U ``[n, h, d, d]``, y ``[n, l, d]`` and the
    scale variables of P and U ``[n, h]`` each."""
    n, h, l, d = len(theta), shape.heads, shape.tokens, shape.dim
    sizes = [h * d * d, h * d * d, l * d, h, h]
    parts = np.split(theta, np.cumsum(sizes)[:-1], axis=1)
    return (parts[0].reshape(n, h, d, d), parts[1].reshape(n, h, d, d), parts[2].reshape(n, l, d), parts[3],
            parts[4])


def bounded_scale(z: np.ndarray, top: float) -> np.ndarray:
    """A scale in (0, top) from a normal number (monotone, so the optimiser can move it)."""
    return top * 0.5 * (1.0 + np.tanh(z))


def unit_spectral_norm(matrices: np.ndarray) -> np.ndarray:
    """Each [..., d, d] matrix divided by its spectral norm (zero stays zero)."""
    norms = np.linalg.norm(matrices, ord=2, axis=(-2, -1))
    return matrices / np.where(norms > 0, norms, 1.0)[..., None, None]


def onto_sphere(y: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(y, axis=-1, keepdims=True)
    return y / np.where(norms > 0, norms, 1.0)


def symmetric_part(a: np.ndarray) -> np.ndarray:
    """(a + a^T) / 2 over the last two axes."""
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def top_eigenpair(U: np.ndarray) -> tuple[bool, float, np.ndarray]:
    """(simple and positive?, lambda, v) for the eigenvalue of ``U : shape=[d, d]`` of largest real part:
    simple, real and positive by ``EIGEN_GAP`` (``sim.field.dynamics.leading_eigenpair`` gives lambda, v and the
    gap)."""
    top, v, runner = leading_eigenpair(U)
    ok = abs(top.imag) < 1e-12 and top.real > EIGEN_GAP and top.real - runner > EIGEN_GAP
    return bool(ok), float(top.real), v


def certified_top(U: np.ndarray) -> str | None:
    """None when Arb certifies that the eigenvalue of largest real part of ``U : shape=[d, d]`` (float64 entries,
    taken exactly; ``shape=[h, d, d]``: of sum_eta U_eta, summed in balls) is real, simple and positive; otherwise
    what could not be certified.

    ``acb_mat.eig`` (multiple=False) returns disjoint balls, each holding exactly one eigenvalue, or raises. The top
    ball B must lie strictly right of every other ball and of 0 (so its eigenvalue is simple, of largest real part,
    and positive); it holds a real eigenvalue when its mirror image conj(B) meets no other ball: the conjugate of
    B's eigenvalue (U is real) then lies in B too, and B holds only one. No tolerance: the balls decide."""
    U = np.asarray(U, float)
    matrix = sum((arb_mat(u.tolist()) for u in U[1:]), arb_mat(U[0].tolist())) if U.ndim == 3 else arb_mat(U.tolist())
    old, ctx.prec = ctx.prec, 106  # 2x float64, as sim.conjectures.validated.PRECISION
    try:
        spectrum = list(acb_mat(matrix).eig())
    except ValueError:
        return "Arb cannot isolate the eigenvalues of U (a multiple or clustered eigenvalue)"
    finally:
        ctx.prec = old
    # a complex pair ties in real part: it fails "strictly largest" before the realness test below
    top = max(range(len(spectrum)), key=lambda k: float(spectrum[k].real.mid()))
    ball, others = spectrum[top], spectrum[:top] + spectrum[top + 1:]
    if not ball.real > 0:
        return f"the eigenvalue of largest real part ({float(ball.real.mid()):.6g}) is not certified positive"
    if not all(ball.real > other.real for other in others):
        return "the eigenvalue of largest real part is not certified simple and strictly largest in real part"
    if any(ball.conjugate().overlaps(other) for other in others):
        return "the eigenvalue of largest real part is not certified real"
    return None


def symmetrised(M: np.ndarray) -> np.ndarray:
    """(M + M^T) / 2 over the last two axes: exactly symmetric in float64 (a + b = b + a), for the constructions
    (Q D Q^T, projections) that are symmetric only up to rounding while the hypothesis asks for symmetry."""
    return 0.5 * (M + np.swapaxes(M, -1, -2))


def exactly_symmetric(M: np.ndarray) -> bool:
    """M == M^T entry by entry (float64 equality: the hypothesis is symmetry, not near-symmetry)."""
    return bool(np.array_equal(M, np.swapaxes(M, -1, -2)))
