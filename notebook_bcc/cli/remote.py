"""Remote output paths: ``--notebook`` and ``--report`` given as fsspec URLs.

``s3://bucket/run.ipynb``, ``gs://...``, ``az://...``, ``http(s)://...`` (HTTP PUT),
``file://...``, ``memory://...``: any protocol fsspec knows, when its filesystem package is
installed (s3fs, gcsfs, adlfs, aiohttp, ...). The run works on a local copy (downloaded first
when the remote file exists, so an existing notebook is appended to, D19) and uploads it at
flush points (a stage completed, the end of the run). A missing package is a typed error naming
it (exit 2); a URL never becomes a local folder named after its scheme.
"""

from __future__ import annotations

import contextlib
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notebook_bcc.errors import NotebookBccError

if TYPE_CHECKING:
    from notebook_bcc.models.event import WorkflowEvent

URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
"""A URL: a scheme of two characters or more (``C:\\`` is a Windows drive, not a scheme)."""

FLUSH_TRANSITIONS = frozenset({"stage_completed", "workflow_completed"})
"""Transitions after which a remote notebook is uploaded."""


class RemotePathError(NotebookBccError, ValueError):
    """A remote path whose filesystem is not installed, unknown, or unreachable."""

    code = "remote_path"


def is_url(text: str) -> bool:
    """True for ``scheme://...`` with a scheme of two characters or more."""
    match = URL.match(text)
    return match is not None and len(match.group("scheme")) > 1


def filesystem(url: str) -> tuple[Any, str]:
    """``(fsspec filesystem, path in it)`` for ``url``; a typed error naming what is missing."""
    scheme = URL.match(url).group("scheme").lower()  # type: ignore[union-attr]
    try:
        import fsspec
    except ImportError:
        raise RemotePathError(
            f"{url}: remote paths need the 'fsspec' package (pip install fsspec) and the "
            f"filesystem for {scheme}://",
            details={"missing": "fsspec", "scheme": scheme},
        ) from None
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except ImportError as exc:
        raise RemotePathError(
            f"{url}: the filesystem for {scheme}:// is not installed: {exc}",
            details={"scheme": scheme},
        ) from None
    except ValueError as exc:
        raise RemotePathError(
            f"{url}: no fsspec filesystem for {scheme}:// ({exc})", details={"scheme": scheme}
        ) from None
    return fs, str(path)


@dataclass
class RemoteFile:
    """A remote file and the local copy the run works on."""

    url: str
    local: Path
    fs: Any
    path: str
    uploads: int = 0
    errors: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def download_if_exists(self) -> bool:
        """Fetch the remote file into the local copy when it exists (True if it did)."""
        try:
            exists = bool(self.fs.exists(self.path))
        except Exception as exc:
            raise RemotePathError(f"{self.url}: cannot be reached: {exc}") from None
        if not exists:
            return False
        self.local.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.fs.get_file(self.path, str(self.local))
        except Exception as exc:
            raise RemotePathError(f"{self.url}: cannot be downloaded: {exc}") from None
        return True

    def upload(self) -> bool:
        """Put the local copy at the URL; a failure is kept (and returned False), not raised."""
        if not self.local.exists():
            return False
        with self._lock:
            try:
                parent = self.path.rsplit("/", 1)[0] if "/" in self.path else ""
                if parent:
                    # object stores have no folders; HTTP has no mkdir
                    with contextlib.suppress(Exception):
                        self.fs.makedirs(parent, exist_ok=True)
                self.fs.put_file(str(self.local), self.path)
            except Exception as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
                return False
            self.uploads += 1
            return True


def remote_file(url: str, local: Path) -> RemoteFile:
    """A :class:`RemoteFile` for ``url`` worked on at ``local`` (filesystem checked now)."""
    fs, path = filesystem(url)
    return RemoteFile(url=url, local=local, fs=fs, path=path)


def local_name(url: str) -> str:
    """The file name a URL ends with (``run.ipynb`` for ``s3://bucket/dir/run.ipynb``)."""
    tail = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return tail or "notebook.ipynb"


class FlushUploader:
    """Uploads a remote notebook after each stage and at the end of the run, off the loop."""

    def __init__(self, target: RemoteFile) -> None:
        self.target = target
        self._pending: Any = None

    def on_event(self, event: WorkflowEvent) -> None:
        """Schedule an upload after a flush-point transition (one at a time)."""
        if event.kind != "transition" or event.to not in FLUSH_TRANSITIONS:
            return
        if self._pending is not None and not self._pending.done():
            return
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._pending = loop.run_in_executor(None, self.target.upload)
