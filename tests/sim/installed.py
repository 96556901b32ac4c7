"""Optional packages in the tests: a missing one skips its test visibly, or fails it in CI."""

import os

import pytest


#: Set by .ci/run, which installs the extra .[peers]: there a missing peer or backend fails its test instead of
#: skipping it, so that CI checks the jax backend and the peers' harness against the installed versions.
REQUIRE_PEERS = "CONSENSUS_REQUIRE_PEERS"


def skip_unless_installed(what: str, reason: str | None) -> None:
    """Skip, naming ``what`` and ``reason`` (what to install), when ``reason`` is not None; fail instead where
    :data:`REQUIRE_PEERS` is set."""
    if reason is None:
        return
    if os.environ.get(REQUIRE_PEERS):
        pytest.fail(f"{REQUIRE_PEERS} is set but {what} cannot run: {reason}")
    pytest.skip(f"{what}: {reason}")
