"""Session-scoped models for the empirical tests (tiny configurations, and the real SmolLM2 once)."""

import pytest

from empirical.models import load_model


@pytest.fixture(scope="session")
def smollm2():
    """SmolLM2-135M-Instruct with its trained weights (the embedded GGUF), float32 on the CPU."""
    return load_model("smollm2-135m", "trained")
