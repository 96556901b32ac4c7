"""Deliberately broken variants of the model (``sim.properties.conclusions.MODEL``), for the negative controls.

A *model* is a callable with ``AttentionField``'s keywords (``P``, ``U``, ``W``, ``causal``) returning
a vector field; the properties build their field with it, so a control runs the same check on a broken
variant. The broken variants are ``sim.AttentionField`` with one piece of eq. 6 replaced (they never
re-implement eq. 6: the scores, the value matrices, the grouping and the solver path stay the field's own):

* ``ReversedProjection`` -- the tangent projection piece (``_project_``) with the wrong sign, (y y^T W - I) f
  instead of (I - y y^T W) f, i.e. -1 times the field. (Flipping only the sign of the normal part,
  (I + y y^T W) f, would be invisible: the solvers retract to E_W after every step, which removes any
  normal component.)
* ``UnnormalisedAttention`` -- the softmax piece (``_softmax``) without its normaliser Z_i:
  alpha_ij = exp(y_i^T P y_j) (masked entries stay 0).
* ``full_mask`` -- a non-causal (full) mask where a causal claim needs the causal one.
"""

from __future__ import annotations

import numpy as np

from sim import AttentionField

class ReversedProjection(AttentionField):
    """Broken: dy_i/dt = (y_i y_i^T W - I) f_i, the tangent projection with the wrong sign."""

    def _project_(self, points, vectors):
        return np.negative(super()._project_(points, vectors), out=vectors)


class UnnormalisedAttention(AttentionField):
    """Broken: alpha_ij^eta = exp(y_i^T P_eta y_j) without the normaliser Z_i^eta (masked entries stay 0)."""

    def _softmax(self, scores, dim, out):
        tokens = scores.shape[-1]
        unmasked = np.tri(tokens, dtype=bool) if self.causal else np.ones((tokens, tokens), dtype=bool)
        weights = np.where(unmasked[:, None, :], np.exp(scores), 0.0)  # [batch, l, h, l]
        out[...] = weights if out.ndim == 4 else weights.sum(axis=2)
        return out


def full_mask(**keywords) -> AttentionField:
    """Broken: the model with a full (non-causal) attention mask whatever ``causal`` says."""
    keywords["causal"] = False
    return AttentionField(**keywords)
