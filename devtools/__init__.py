"""Development tools of the suite, outside the product packages (theory, sim, empirical, reports, consensus):
nothing there imports them, and they are not installed with the project (docs/layout.md).
"""
