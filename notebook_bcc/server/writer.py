"""The server's notebook writer: the kernel layer's merge rules, saved through the contents manager.

:class:`~notebook_bcc.kernel.writer.NotebookWriter` owns what D10 asks of every writer: cells
serialized once per change, debounced writes, and a merge with whatever is in the file now
(cells the user added or moved stay where they are, a workflow cell the user edited is
detached, one they deleted stays deleted). Only its file I/O is replaced here: the current
version is read with ``contents_manager.get`` and the merged notebook is written with
``contents_manager.save``, so checkpoints, save hooks, hidden-file rules and non-file backends
apply exactly as when JupyterLab saves.

A version is recognised by the contents model's ``last_modified`` and ``size``: when they are
the ones of the last save, nothing is read back; otherwise the notebook is read and merged.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from time import monotonic
from typing import Any

from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.kernel.errors import NotebookWriteError
from notebook_bcc.kernel.serialize import notebook_text
from notebook_bcc.kernel.writer import NotebookWriter, WriteReport, _Outcome, _Plan, _Stamp
from notebook_bcc.server.contents import Contents, Stamp
from notebook_bcc.server.errors import ContentsError

_ATTEMPTS = 3
"""How many times a write is merged again when the notebook changed while it was merged."""


def _writer_stamp(stamp: Stamp | None) -> _Stamp | None:
    if stamp is None:
        return None
    return _Stamp(stamp.mtime_ns, -1 if stamp.size is None else stamp.size, 0)


def _content_digest(content: dict[str, Any]) -> str:
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ContentsNotebookWriter(NotebookWriter):
    """A :class:`NotebookWriter` (and so a cell sink) that saves through the contents manager.

    ``api_path`` names the notebook under the server root. Only the asynchronous entry points
    work (``flush_async``, ``aclose`` and the debounced background write): the contents
    manager lives on the server's event loop.
    """

    def __init__(
        self,
        contents: Contents,
        api_path: str,
        document: NotebookDocument,
        *,
        debounce: float = 1.0,
    ) -> None:
        super().__init__(Path(api_path), document, debounce=debounce, fsync=False)
        self.contents = contents
        self.api_path = api_path
        self._current: dict[str, Any] | None = None
        self._current_error: str | None = None

    def flush(self) -> WriteReport:
        """Not available: a contents manager is asynchronous; use :meth:`flush_async`."""
        raise NotebookWriteError(
            "the contents-manager writer writes asynchronously: await flush_async()",
            details={"path": self.api_path},
        )

    async def _persist(self, plan: _Plan) -> _Outcome:
        """Merge with the notebook's current version and save it through the contents manager."""
        return await self._save(plan)

    async def _save(self, plan: _Plan) -> _Outcome:
        began = monotonic()
        for _attempt in range(_ATTEMPTS):
            before = await self._current_stamp()
            self._current = None
            self._current_error = None
            if before is not None and before != self._stamp:
                await self._read_current()
            outcome = self._merge(plan, before)
            text = notebook_text(
                (
                    plan.fragments[value] if kind == "ours" else value
                    for kind, value, _ in outcome.layout
                ),
                outcome.disk_metadata,
                plan.nbformat_minor,
            )
            content: dict[str, Any] = json.loads(text)
            if await self._current_stamp() != before:
                continue  # saved by someone else while we merged: merge again
            try:
                saved = await self.contents.save_notebook(self.api_path, content)
            except ContentsError as exc:
                raise NotebookWriteError(
                    f"could not save {self.api_path}: {exc.message}",
                    details={"path": self.api_path, "status": exc.status},
                ) from exc
            stamp = _writer_stamp(saved)
            assert stamp is not None
            outcome.stamp = stamp
            outcome.digest = _content_digest(content)
            report = outcome.report
            report.written = True
            report.cells = len(outcome.layout)
            report.validated = plan.validated
            report.duration_s = monotonic() - began
            return outcome
        raise NotebookWriteError(
            f"{self.api_path} kept changing while notebook-bcc tried to save it",
            details={"path": self.api_path},
        )

    async def _current_stamp(self) -> _Stamp | None:
        try:
            return _writer_stamp(await self.contents.stamp(self.api_path))
        except ContentsError as exc:
            raise NotebookWriteError(
                f"could not look at {self.api_path}: {exc.message}",
                details={"path": self.api_path},
            ) from exc

    async def _read_current(self) -> None:
        try:
            self._current, _ = await self.contents.read_notebook(self.api_path)
        except ContentsError as exc:
            self._current_error = exc.message

    # -- the parent's merge reads "the disk" through these two ------------------------------

    def _file_digest(self) -> str | None:
        return None if self._current is None else _content_digest(self._current)

    def _read_disk(self) -> dict[str, Any]:
        if self._current is None:
            raise NotebookWriteError(
                f"{self.api_path} changed and is not a readable notebook; not overwriting it "
                f"({self._current_error or 'it could not be read'})",
                details={"path": self.api_path},
            )
        data: dict[str, Any] = json.loads(json.dumps(self._current))
        return data
