"""The ``notebook_bcc`` server extension application."""

from __future__ import annotations

from jupyter_server.extension.application import ExtensionApp

from notebook_bcc.server.handlers import route_table


class NotebookBccApp(ExtensionApp):
    """Jupyter server extension that serves the notebook-bcc REST API.

    It runs inside ``jupyter lab`` / ``jupyter server`` next to the other extensions
    (``load_other_extensions``), so the JupyterLab panel and the workflow engine share the
    server's kernels, contents and authentication. Configurable traits are added as the
    engine grows.
    """

    name = "notebook_bcc"
    description = "Run DSLC workflows in real notebooks, driven from a JupyterLab panel."
    load_other_extensions = True

    def initialize_handlers(self) -> None:
        """Register the REST routes; ExtensionApp prefixes each with the server's base_url."""
        self.handlers.extend(route_table())
