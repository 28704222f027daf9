"""How a ``POST /workflows`` names its files: API paths from the server root, or paths
relative to the notebook's folder (what the panel's start form sends for every path)."""

from __future__ import annotations

from dataclasses import dataclass

from notebook_bcc.server.contents import api_path, join_api


@dataclass(frozen=True)
class PathBase:
    """The folder a request's paths are relative to: ``folder`` None for API paths (from the
    server root), else the notebook's API folder (``""`` when it sits at the root)."""

    folder: str | None = None

    def resolve(self, raw: str, *, what: str) -> str:
        """``raw`` as a checked API path (``..`` allowed from a folder while under the root)."""
        if self.folder is None:
            return api_path(raw, what=what)
        return join_api(self.folder, raw.strip(), what=what)

    def where(self) -> str:
        """The folder paths are read from, in words."""
        if self.folder is None:
            return "the server root"
        if not self.folder:
            return "the notebook's folder (the server root)"
        return f"the notebook's folder {self.folder!r}"

    def missing(self, what: str, raw: str, path: str, *, noun: str = "file") -> str:
        """The message for a path that names nothing: the field, what was given, where it
        was looked for and from which folder."""
        if self.folder is None or raw.strip() == path:
            looked = f"{path!r}"
        else:
            looked = f"{raw.strip()!r} (looked for {path!r})"
        return f"{what}: no such {noun} {looked}; paths here are relative to {self.where()}"


ROOT = PathBase()
"""API paths, from the server root (the REST default)."""

__all__ = ["ROOT", "PathBase"]
