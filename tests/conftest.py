"""Shared test set-up: Hypothesis settings profiles, chosen by HYPOTHESIS_PROFILE.

``dev`` is fast for editing, ``ci`` (the default, used by `make test`) runs the whole property suite in
a few minutes on 2 cores and is derandomised so every run tries the same examples, ``thorough`` is
what `make report` uses.
"""

import os

# One BLAS thread per process, unless the user says otherwise: on the 2 shared cores the tests run on,
# multi-threaded BLAS on the small matrices of the tests oversubscribes the CPU (measured: a d = 289 property
# example took 146 s with the default threads and 24 s with one). Set before numpy is first imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Extension modules that cannot be initialised twice in one process (numpy: "cannot load module more than once per
# process"), imported before any test: an inline pytester run removes, when it ends, every module it imported, so the
# first inline run that rendered a report (matplotlib, hence numpy) made the next one fail whenever no earlier test of
# the process had imported them (tests/reports/test_report_plugin.py run alone). Imported here, they are part of the
# snapshot pytester restores. (Running the inline runs as subprocesses instead, --runpytest=subprocess, also works
# but took tests/reports' pytester files from 17.5 s to 48.4 s on 2 cores.)
import matplotlib  # noqa: E402

matplotlib.use("Agg")  # as the figures' modules do: no display here
import matplotlib.pyplot  # noqa: E402,F401
import numpy  # noqa: E402,F401
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402


settings.register_profile("dev", max_examples=10, deadline=None)
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=300, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


#: What a report build (reports/__main__.py) tells its test process: where its sections, build folder and memory
#: ledger are, its memory bound, scale and full checks. An inline pytester run inherits the environment, so inside
#: `make report` it would write its sections into the build's and run at its scale (measured: the parallel-workers
#: test of tests/reports/test_report_plugin.py read the report's benchmark sections as its own, and failed only there).
REPORT_BUILD_ENVIRONMENT = ("CONSENSUS_SECTIONS_DIR", "CONSENSUS_REPORT_BUILD_FOLDER", "CONSENSUS_MEMORY_LEDGER",
                            "CONSENSUS_MEMORY_BOUND_BYTES", "CONSENSUS_REPORT_SCALE", "CONSENSUS_FULL")


@pytest.fixture(autouse=True)
def _inline_runs_outside_the_report_build(request, monkeypatch):
    """A test that runs pytest inline (``pytester``) runs it as ``make test`` would, whoever runs the test."""
    if "pytester" in request.fixturenames:
        for name in REPORT_BUILD_ENVIRONMENT:
            monkeypatch.delenv(name, raising=False)


def pytest_configure(config):
    """A report build's --weights-dir naming a model the report does not run trained is refused before any test
    runs (also when the environment variable was set by hand rather than by the build's command line)."""
    _share_the_cores_between_workers()
    if os.environ.get("CONSENSUS_WEIGHTS_DIRS"):  # empirical.sources.WEIGHTS_DIRS_ENV, read without importing torch
        from empirical.sources import report_weights_dirs  # (torch: only when a report build named folders)

        try:
            report_weights_dirs()
        except ValueError as error:
            raise pytest.UsageError(str(error)) from error


def _share_the_cores_between_workers():
    """Under pytest-xdist (`make test`: 2 workers on 2 cores) each worker's PyTorch products run on its share of
    the cores. PyTorch's intra-op pool (MKL's OpenMP team) takes every core by default in each process, so the
    workers' products wait on each other (measured: Fig. 4's reduced run 15 s alone, 33 s beside another worker).
    Set for the test thread only (PyTorch's count is per thread): new threads keep the default, as for a user."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers:
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(workers)))
