"""Shared test set-up: Hypothesis settings profiles, chosen by HYPOTHESIS_PROFILE.

``dev`` is fast for editing, ``ci`` (the default, used by `make test`) runs the whole property suite in
a few minutes on 2 cores and is derandomised so every run tries the same examples, ``thorough`` is
what `make report` uses.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=10, deadline=None)
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=300, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
