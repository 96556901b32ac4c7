"""Theory meets practice: which of the theorems' hypotheses hold in a real transformer, and how fast E decays.

:func:`audit_model` (:mod:`.measure`) measures, for one model and weight choice (using the loop adapters of
:mod:`empirical.adapters` and the loading of :mod:`empirical.models`):

* per layer and head, ``P_eta`` (with the model's attention scaling) and ``U_eta = W_O W_V``:
  norms, asymmetry ``|U - U^T|_F / |U|_F``, the top eigenvalue (real? positive? simple?), gap and
  spread (Theorem 5.2's hypotheses), see :mod:`.weights`, :mod:`.heads` and :mod:`.hypotheses`;
* the normalisation geometry: each norm gain's axis ratio (sphere or ellipsoid) and the residuals
  of the model's normalised states from the predicted surface (:mod:`.geometry`);
* per prompt and block of the looped forward (with and without feed-forward layers): whether the
  tokens lie in one open hemisphere (LP, Theorem 4.1's premise) for the residual stream and for the
  normalised states, how far the first token moves per block and per pass (fixed when U = I), and E
  (:mod:`.states`);
* exponential rate fits of E per layer (:mod:`.rates`);
* what later architectures add to the paper's block (Gemma 3 has all of it): an embedding scale, attention
  windows, key/value heads shared by several query heads, QK-norm (measured: how much the per-token
  divisors ``rms(W_Q z_i) rms(W_K z_j)`` of the logits vary) and a norm on the attention output (measured:
  how far the no-FFN block's update is from the output projection's output).

:func:`hypothesis_rows` (:mod:`.checklist`, a table of hypotheses each with its measure, grade and wording)
turns that into "hypothesis -> holds / nearly / fails" with the numbers; the thresholds are constants of
:mod:`.grading` with their reasons. :mod:`.store` writes, reads and reuses ``audit.json``; :mod:`.report`
makes the report's section and claim records.
"""

from .checklist import hypothesis_rows
from .measure import AuditSettings, audit_adapter, audit_model, comparison, rate_summary
from .store import cached_audit, read_audit, write_audit

__all__ = ["AuditSettings", "audit_adapter", "audit_model", "cached_audit", "comparison", "hypothesis_rows",
           "rate_summary", "read_audit", "write_audit"]
