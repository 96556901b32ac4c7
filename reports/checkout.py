"""What ``consensus report`` (``python -m reports build``) needs besides the installed packages: a checkout.

The report's evidence is the test suite: ``tests/`` (the checks' tests, their negative controls, the Hypothesis
properties) run by pytest under the project's ``pyproject.toml`` (test paths, markers, time limits). An installed
package ships neither (the tests are no package data: one copy of them, in the repository), and pytest, Hypothesis
and pytest-timeout are the ``report`` extra, not runtime dependencies. :func:`report_prerequisites` says what is
missing, so that the command refuses at once with that sentence instead of failing inside pytest.

This module also holds the environment variables that the report command hands to its pytest run, so that the
command does not import pytest (``reports.pytest_plugin`` reads them).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

#: Set by ``python -m reports build`` to run the expensive checks marked ``full`` (or ``pytest --full``).
FULL_ENV = "CONSENSUS_FULL"
#: Set by ``python -m reports build`` to the report folder it has checked and claimed for its pytest run.
BUILD_FOLDER_ENV = "CONSENSUS_REPORT_BUILD_FOLDER"
#: The modules the report's pytest run imports beyond the runtime dependencies (the ``report`` extra of
#: pyproject.toml): module -> the distribution that provides it.
REPORT_MODULES = {"pytest": "pytest", "hypothesis": "hypothesis", "pytest_timeout": "pytest-timeout"}
#: How to get everything the report needs.
HOW_TO = ("clone the repository and install it with its test extra (`pip install -e '.[test]'`, or `make report`, "
          "which does both)")


def report_prerequisites(root: Path) -> str | None:
    """None when the report can run from ``root`` (the folder holding the packages); else one sentence naming
    what is missing (the test suite and configuration of a checkout, the report extra's packages) and how to get
    it."""
    missing = [f"{name} (the test suite)" if name == "tests" else name
               for name in ("tests", "pyproject.toml") if not (root / name).exists()]
    missing += [f"the package {distribution}" for module, distribution in REPORT_MODULES.items()
                if importlib.util.find_spec(module) is None]
    if not missing:
        return None
    return (f"consensus report needs a checkout of the project and its test extra: the report runs the test suite, "
            f"and {root} lacks {', '.join(missing)}; {HOW_TO}.")
