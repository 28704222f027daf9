"""notebook-bcc: DSLC workflows planned by an AI or a blueprint, run in real notebooks.

This module stays light: it only hands out Jupyter's discovery hooks, so ``notebook-bcc --help``
and ``jupyter server extension list`` do not pay for heavy imports.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from notebook_bcc.server.app import NotebookBccApp

    return [{"module": "notebook_bcc", "app": NotebookBccApp}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "notebook-bcc"}]
