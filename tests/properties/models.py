"""The model under test and deliberately broken variants, for the negative controls.

A *model* is a callable with ``AttentionField``'s keywords (``P``, ``U``, ``W``, ``causal``) returning
a vector field; the properties build their field with it, so a control runs the same check on a broken
variant. The broken variants wrap ``sim.AttentionField`` (they never re-implement eq. 6):

* ``ReversedProjection`` -- the tangent projection with the wrong sign, (y y^T W - I) f instead of
  (I - y y^T W) f, i.e. -1 times the field. (Flipping only the sign of the normal part, (I + y y^T W) f,
  would be invisible: the solvers retract to E_W after every step, which removes any normal component.)
* ``UnnormalisedAttention`` -- the softmax normaliser Z_i dropped: alpha_ij = exp(y_i^T P y_j).
* ``full_mask`` -- a non-causal (full) mask where a causal claim needs the causal one.
"""

from __future__ import annotations

import numpy as np

from sim import AttentionField

#: The model as printed (eq. 6).
MODEL = AttentionField


class ReversedProjection(AttentionField):
    """Broken: dy_i/dt = (y_i y_i^T W - I) f_i, the tangent projection with the wrong sign."""

    def __call__(self, t, y):
        return -super().__call__(t, y)


class UnnormalisedAttention(AttentionField):
    """Broken: alpha_ij^eta = exp(y_i^T P_eta y_j) without the normaliser Z_i^eta (masked entries stay 0).

    Built on the public API (``query_key``, ``values``, ``manifold``): the weights, then eq. 6 with them.
    """

    def attention(self, t, y):
        y = np.asarray(y, dtype=np.float64)
        scores = np.einsum("...id,hde,...je->...hij", y, self.query_key(t), y)
        weights = np.exp(scores)
        if self.causal:
            weights = weights * np.tri(y.shape[-2])
        return weights

    def attention_update(self, t, y):
        mixed = self.attention(t, y) @ np.asarray(y, dtype=np.float64)[..., None, :, :]  # [..., h, l, d]
        if self.U is None:  # U_eta = I
            return np.sum(mixed, axis=-3)
        return np.einsum("hde,...hie->...id", self.values(t), mixed)

    def __call__(self, t, y):
        return self.manifold.tangent_projection(y, self.attention_update(t, y))


def full_mask(**keywords) -> AttentionField:
    """Broken: the model with a full (non-causal) attention mask whatever ``causal`` says."""
    keywords["causal"] = False
    return AttentionField(**keywords)
