"""The Jupyter server extension: REST and websocket handlers under ``{base_url}notebook-bcc/api/``.

Jupyter reaches it through the discovery hook in ``notebook_bcc/__init__.py``. The package
itself imports nothing heavy: :mod:`notebook_bcc.server.models` (the wire models the schema
registry and clients use) loads without jupyter_server or tornado, and ``NotebookBccApp`` is
imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from notebook_bcc.server.app import NotebookBccApp

__all__ = ["NotebookBccApp"]


def __getattr__(name: str) -> Any:
    if name == "NotebookBccApp":
        from notebook_bcc.server.app import NotebookBccApp

        return NotebookBccApp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
