"""``consensus``: the suite's one entry point (:mod:`consensus.cli`)."""
