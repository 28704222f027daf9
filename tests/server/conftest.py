"""Fixtures for the server-extension tests: a test server with notebook_bcc enabled."""

from __future__ import annotations

from typing import Any

import pytest

from notebook_bcc.server.app import NotebookBccApp


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    """Enable only notebook_bcc and refuse unauthenticated access, as production should.

    ``jupyter_server_terminals`` is switched off explicitly: pytest-jupyter would add it, and its
    undecorated handlers make jupyter_server warn, which ``filterwarnings = error`` would turn
    into a failure unrelated to this project. Our own handlers must not warn.
    """
    return {
        "ServerApp": {
            "jpserver_extensions": {"notebook_bcc": True, "jupyter_server_terminals": False},
            "allow_unauthenticated_access": False,
        }
    }


@pytest.fixture
def bcc_app(jp_serverapp: Any) -> NotebookBccApp:
    """The NotebookBccApp instance the test server loaded."""
    apps = jp_serverapp.extension_manager.extension_apps["notebook_bcc"]
    assert len(apps) == 1
    app = next(iter(apps))
    assert isinstance(app, NotebookBccApp)
    return app
