"""The verification report: the pytest plugin that collects the checks' records, the HTML report and
``verdicts.json`` built from them, the comparison of two reports, and the command line ``python -m reports``.

It sits on top of every package it reports on; the claim registry, the result records and the checks' registration
it reads are the ground floor, :mod:`foundation` (docs/layout.md).
"""
