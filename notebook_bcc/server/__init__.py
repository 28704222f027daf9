"""The Jupyter server extension: REST handlers under ``{base_url}notebook-bcc/api/``.

Importing this package pulls in jupyter_server and tornado, so the CLI and the pure layers
(``fsm``, ``models``) never import it; Jupyter reaches it through the discovery hook in
``notebook_bcc/__init__.py``.
"""

from __future__ import annotations

from notebook_bcc.server.app import NotebookBccApp

__all__ = ["NotebookBccApp"]
