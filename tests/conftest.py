"""Shared test configuration: Hypothesis profiles and fixture paths."""

from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

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


def free_port() -> int:
    """A loopback TCP port nothing listens on right now (for a server a test starts)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def token_request(
    base: str, token: str, method: str, path: str, body: Any = None
) -> tuple[int, Any]:
    """``(status, decoded JSON body)`` of a token-authenticated request to a Jupyter server
    a test started as a subprocess (a body that is not JSON comes back as text)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        base + path,
        data=data,
        method=method,
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw or b"null")
        except ValueError:
            return exc.code, raw.decode(errors="replace")
