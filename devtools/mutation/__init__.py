"""Mutation testing of the core modules (`make mutants`): a development tool, not part of the product packages.

`make mutants` runs mutmut (configuration: ``[tool.mutmut]`` in pyproject.toml) and, for the Numba-compiled code
that mutmut cannot reach, cosmic-ray (tests/mutation/compiled.toml, run by ``python -m devtools.mutation compiled
CONFIG SESSION``: devtools/mutation/compiled.py); then ``python -m devtools.mutation DIR OUT --cosmic-ray SESSION``
reads mutmut's results (``DIR/<package>/<module>.py.meta``), cosmic-ray's session and the checked-in list of
equivalent mutants (tests/mutation/equivalent.toml: mutant name -> one-line reason) and writes ``OUT``
(build/mutants/summary.json). The score of a module is detected / non-equivalent mutants, where detected = killed
+ timed out (a mutant that makes the tests hang is caught by the per-test time limit) and a mutant no selected
test reaches, or whose test process crashed without a verdict, counts as undetected; ``python -m devtools.mutation
fresh SCOPE...`` runs each crashed mutant's tests again in a fresh process (devtools/mutation/fresh.py:
mutmut's forked test processes abort when Numba compiles in them), and the summary counts that run's verdict. A listed equivalent counts apart only while it survives: one that a test now
kills, or that no longer exists, is reported as stale, never dropped silently (one not run yet is neither).

``python -m devtools.mutation measure OUT -- COMMAND`` runs the mutation tools and records what the run cost
(``OUT``, build/mutants/run.json): the git revision measured, wall and CPU time, and the machine's load average
sampled during the run (a shared machine's load inflates the wall time, not the CPU time). The summary takes one
such record per segment of a run (``--run``, repeatable: a run resumed after an interruption).
"""
