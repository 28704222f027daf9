"""Shared test configuration: Hypothesis profiles and fixture paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["pytest_jupyter.jupyter_server"]

FIXTURES = Path(__file__).parent / "fixtures"

settings.register_profile(
    "notebook_bcc",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    max_examples=100,
)
settings.register_profile(
    "notebook_bcc_ci",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    max_examples=100,
    derandomize=True,
    print_blob=True,
)
settings.register_profile(
    "notebook_bcc_slow",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    max_examples=10_000,
)
if os.environ.get("NOTEBOOK_BCC_SLOW") == "1":
    settings.load_profile("notebook_bcc_slow")
elif os.environ.get("CI"):
    settings.load_profile("notebook_bcc_ci")
else:
    settings.load_profile("notebook_bcc")

SLOW = os.environ.get("NOTEBOOK_BCC_SLOW") == "1"
"""Stress modes (>= 10,000 fuzz cases, every crash point) run only when this is set."""


@pytest.fixture
def fixtures_dir() -> Path:
    """The ``tests/fixtures`` folder."""
    return FIXTURES
