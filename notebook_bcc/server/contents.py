"""API paths and the server's contents manager, seen from the workflow service.

Every path a client names (the notebook, the blueprint, input files) is an *API path*: relative
to the server root, ``/``-separated, the way ``/api/contents`` names files. :func:`api_path`
refuses absolute paths, ``..`` and other malformed input (400) before anything runs;
:meth:`Contents.check_inside_root` refuses a path that a symlink leads out of the root (403)
when the contents manager is file-backed. Files are then read and written only through the
contents manager, so hooks, checkpoints, hidden-file rules and non-file backends apply.

:class:`Contents` is the one place that talks to the contents manager; it turns its tornado
``HTTPError`` s into :class:`ContentsError` so the service above it stays free of tornado.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from jupyter_core.utils import ensure_async
from tornado import web

from notebook_bcc.server.errors import ContentsError, PathForbiddenError, PathRefusedError

T = TypeVar("T")

_DRIVE = re.compile(r"^[A-Za-z]:")


def api_path(raw: object, *, what: str) -> str:
    """``raw`` as a normalized API path (``a/./b//c`` -> ``a/b/c``), or :class:`PathRefusedError`.

    Refused: non-strings, empty paths, absolute paths (``/x``, ``C:x``, ``~x``), backslashes,
    NUL bytes, any ``..`` component and a name over 255 bytes (what file systems hold).
    ``what`` names the field in the error message.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise PathRefusedError(f"{what}: an API path is a non-empty string", details={"what": what})
    details = {"what": what, "path": raw}
    if "\x00" in raw or "\\" in raw:
        raise PathRefusedError(
            f"{what}: {raw!r} contains a NUL byte or a backslash", details=details
        )
    if raw.startswith(("/", "~")) or _DRIVE.match(raw):
        raise PathRefusedError(
            f"{what}: {raw!r} is absolute; API paths are relative to the server root",
            details=details,
        )
    parts = [part for part in raw.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise PathRefusedError(
            f"{what}: {raw!r} climbs out of its folder with '..'; name it from the server root",
            details=details,
        )
    if not parts:
        raise PathRefusedError(f"{what}: {raw!r} names the root itself", details=details)
    long = next((part for part in parts if len(part.encode("utf-8", "surrogatepass")) > 255), None)
    if long is not None:
        raise PathRefusedError(
            f"{what}: the name {long[:40]!r}... is {len(long.encode('utf-8', 'surrogatepass'))} "
            "bytes long; a file or folder name holds at most 255",
            details=details,
        )
    return "/".join(parts)


def notebook_api_path(raw: object) -> str:
    """An API path that names a ``.ipynb`` file."""
    path = api_path(raw, what="notebook_path")
    if not path.endswith(".ipynb"):
        raise PathRefusedError(
            f"notebook_path: {path!r} is not a .ipynb file", details={"path": path}
        )
    return path


def folder_of(path: str) -> str:
    """The API folder holding ``path`` (``""`` for the root)."""
    return posixpath.dirname(path)


def relative_to_folder(path: str, folder: str) -> str:
    """``path`` as the kernel of a notebook in ``folder`` sees it (its working directory)."""
    return posixpath.relpath(path, folder or ".")


def join_api(folder: str, name: str, *, what: str) -> str:
    """``name`` (relative, as written in a blueprint) resolved against API ``folder``.

    ``..`` is allowed here as long as the result stays under the root: a blueprint may name
    ``../data/x.csv`` when both live under the root.
    """
    if not isinstance(name, str) or not name or name.startswith("/") or "\\" in name:
        raise PathRefusedError(f"{what}: {name!r} is not a relative path", details={"what": what})
    joined = (
        posixpath.normpath(posixpath.join(folder, name)) if folder else posixpath.normpath(name)
    )
    if joined == ".." or joined.startswith("../"):
        raise PathRefusedError(
            f"{what}: {name!r} resolves outside the server root", details={"path": name}
        )
    return api_path(joined, what=what)


@dataclass(frozen=True)
class Stamp:
    """What identifies one version of a file cheaply: its modification time and size."""

    mtime_ns: int
    size: int | None


class Contents:
    """The server's contents manager behind a small, typed, tornado-free surface."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    # -- containment ----------------------------------------------------------------------

    @property
    def root_dir(self) -> str | None:
        """The OS folder behind the root when the manager is file-backed, else None."""
        from jupyter_server.services.contents.fileio import FileManagerMixin

        if not isinstance(self.manager, FileManagerMixin):
            return None
        root = getattr(self.manager, "root_dir", None)
        return root if isinstance(root, str) and os.path.isdir(root) else None

    def os_path(self, path: str) -> str | None:
        """The OS path of an API path on a file-backed manager (no containment check)."""
        root = self.root_dir
        return None if root is None else os.path.join(root, *path.split("/"))

    def check_inside_root(self, path: str, *, what: str) -> None:
        """Refuse (403) an API path whose real location is outside the root (symlinks).

        The deepest existing part of the path is resolved, so a notebook that does not exist
        yet inside a symlinked folder is checked too. Non-file managers own their namespace
        and are trusted.
        """
        root = self.root_dir
        if root is None:
            return
        real_root = os.path.realpath(root)
        real = os.path.realpath(os.path.join(root, *path.split("/")))
        if os.path.commonpath([real_root, real]) != real_root:
            raise PathForbiddenError(
                f"{what}: {path!r} resolves outside the server root", details={"path": path}
            )

    # -- calls ----------------------------------------------------------------------------

    async def _call(self, path: str, call: Callable[[], Awaitable[T] | T]) -> T:
        try:
            return await ensure_async(call())
        except web.HTTPError as exc:
            message = exc.log_message % exc.args if exc.log_message and exc.args else None
            raise ContentsError(
                message or exc.log_message or exc.reason or f"contents error on {path}",
                status=exc.status_code,
                path=path,
            ) from None
        except FileNotFoundError as exc:
            # the file went away inside the manager's call (a save reads the file back after
            # writing it: a delete landing in between leaves the manager's own os.lstat raising)
            raise ContentsError(
                f"{path} disappeared during the operation ({exc.strerror})", status=404, path=path
            ) from None

    async def exists(self, path: str) -> bool:
        """Whether a file (not a folder) exists at ``path``."""
        return bool(await self._call(path, lambda: self.manager.file_exists(path)))

    async def dir_exists(self, path: str) -> bool:
        """Whether a folder exists at ``path`` (the root always does)."""
        if not path:
            return True
        return bool(await self._call(path, lambda: self.manager.dir_exists(path)))

    async def ensure_folder(self, folder: str) -> None:
        """Create ``folder`` and its missing ancestors through the contents manager."""
        if not folder or await self.dir_exists(folder):
            return
        await self.ensure_folder(folder_of(folder))
        await self._call(folder, lambda: self.manager.save({"type": "directory"}, folder))

    async def size(self, path: str) -> int | None:
        """A file's size in bytes as the contents manager reports it (None when it does not)."""
        model = await self._call(path, lambda: self.manager.get(path, content=False, type="file"))
        size = model.get("size")
        return size if isinstance(size, int) else None

    async def read_text(self, path: str) -> str:
        """The text of a file (UTF-8)."""
        model = await self._call(
            path, lambda: self.manager.get(path, content=True, type="file", format="text")
        )
        content = model.get("content")
        if not isinstance(content, str):
            raise ContentsError(f"{path} is not a text file", status=400, path=path)
        return content

    async def read_notebook(self, path: str) -> tuple[dict[str, Any], Stamp]:
        """A notebook's JSON content and the stamp of the version read."""
        model = await self._call(
            path, lambda: self.manager.get(path, content=True, type="notebook")
        )
        content = model.get("content")
        if not isinstance(content, dict):
            raise ContentsError(f"{path} is not a notebook", status=400, path=path)
        return content, _stamp(model)

    async def stamp(self, path: str) -> Stamp | None:
        """The stamp of the file now, or None when it does not exist."""
        if not await self.exists(path):
            return None
        model = await self._call(path, lambda: self.manager.get(path, content=False))
        return _stamp(model)

    async def delete_file(self, path: str) -> None:
        """Delete a file through the contents manager (its trash policy applies; no event)."""
        await self._call(path, lambda: self.manager.delete_file(path))

    async def save_notebook(self, path: str, content: dict[str, Any]) -> Stamp:
        """Save a notebook's JSON content; returns the stamp of the version written."""
        body = {"type": "notebook", "format": "json", "content": content}
        model = await self._call(path, lambda: self.manager.save(body, path))
        return _stamp(model)


def _stamp(model: dict[str, Any]) -> Stamp:
    modified = model.get("last_modified")
    if isinstance(modified, datetime):
        mtime_ns = int(modified.timestamp() * 1_000_000) * 1000
    else:
        mtime_ns = hash(str(modified))
    size = model.get("size")
    return Stamp(mtime_ns, size if isinstance(size, int) else None)
