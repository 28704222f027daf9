"""Materializing the ``.ipynb``: atomic, debounced, and never over a user's edits (DESIGN D10).

:class:`NotebookWriter` is a :class:`~notebook_bcc.kernel.sinks.CellSink`: every cell change
marks the file dirty and schedules a write ``debounce`` seconds later (on the running event
loop); :meth:`NotebookWriter.flush` / :meth:`NotebookWriter.flush_async` write on demand (the
engine calls them at behavior boundaries). A write goes to a temporary file in the same folder,
is fsynced and renamed over the notebook, so a reader never sees half a file.

Each cell is serialized and schema-validated once per change (:mod:`.serialize`), so a write is
a join of cached fragments, not a re-validation of the notebook.

External edits: the writer remembers the bytes it last wrote. When the file on disk is
different (JupyterLab saved it, the user added or moved cells), the disk version is the base:
- cells the workflow did not create stay where the user put them;
- a workflow cell whose *source* the user changed is kept as the user left it and no longer
  updated from the workflow (reported in ``WriteReport.detached``);
- a workflow cell the user deleted stays deleted (``WriteReport.deleted``);
- new workflow cells are appended at the end; notebook metadata keeps the user's keys, with
  ``kernelspec``, ``language_info``, ``title`` and ``notebook_bcc`` from the workflow.
A file that is no longer a readable notebook is never overwritten: the write fails with
:class:`NotebookWriteError`. Known limit: an edit landing between the final check and the rename
(a few microseconds) can still be lost.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic
from typing import Any

from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.kernel.errors import NotebookWriteError
from notebook_bcc.kernel.results import CellRecord
from notebook_bcc.kernel.serialize import (
    cell_fragment,
    notebook_text,
    validate_cell,
    validate_metadata,
)
from notebook_bcc.models.cell_sources import source_digest

log = logging.getLogger(__name__)

_OWN_METADATA = ("kernelspec", "language_info", "title", "notebook_bcc")
"""Notebook metadata keys the workflow sets over what is on disk."""

_Entry = tuple[str, str, str | None]
"""A layout entry: ``("ours", cell_id, cell_id)`` or ``("foreign", fragment, its id)``."""


@dataclass(slots=True)
class WriteReport:
    """What one write did."""

    path: Path
    written: bool
    cells: int = 0
    external_change: bool = False
    foreign_cells: int = 0
    detached: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    validated: int = 0
    duration_s: float = 0.0


@dataclass(frozen=True, slots=True)
class _Stamp:
    mtime_ns: int
    size: int
    inode: int


@dataclass(slots=True)
class _Plan:
    """Everything a write needs, copied on the event loop so the I/O thread shares nothing."""

    order: list[str]
    fragments: dict[str, str]
    sources: dict[str, str]
    metadata: dict[str, Any]
    nbformat_minor: int
    validated: int


@dataclass(slots=True)
class _Outcome:
    layout: list[_Entry]
    digest: str
    stamp: _Stamp
    disk_metadata: dict[str, Any]
    report: WriteReport
    detached: set[str]
    deleted: set[str]


def _stamp(path: Path) -> _Stamp | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return _Stamp(st.st_mtime_ns, st.st_size, st.st_ino)


def _source_text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


class NotebookWriter:
    """Writes one :class:`NotebookDocument` to ``path``; also a cell sink (debounced writes)."""

    def __init__(
        self,
        path: str | Path,
        document: NotebookDocument,
        *,
        debounce: float = 1.0,
        fsync: bool = True,
        validate: bool = True,
    ) -> None:
        self.path = Path(path)
        self.document = document
        self.debounce = debounce
        self.fsync = fsync
        self.validate = validate
        self.last_report: WriteReport | None = None
        self.last_error: BaseException | None = None
        self._fragments: dict[str, str] = {}
        self._sources: dict[str, str] = {}
        self._written: dict[str, str] = {}
        self._dirty: set[str] = set()
        self._metadata_dirty = True
        self._layout: list[_Entry] = []
        self._placed: set[str] = set()
        self._detached: set[str] = set()
        self._deleted: set[str] = set()
        self._absorbed: set[str] = set()
        self._digest: str | None = None
        self._stamp: _Stamp | None = None
        self._disk_metadata: dict[str, Any] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[WriteReport] | None = None
        self._lock: asyncio.Lock | None = None

    # -- CellSink -------------------------------------------------------------------------

    def put(self, record: CellRecord) -> None:
        """A cell changed: write it with the next (debounced) write."""
        self._dirty.add(record.cell_id)
        self._schedule()

    def metadata_changed(self, metadata: Any) -> None:
        """Notebook metadata changed: write it with the next (debounced) write."""
        self._metadata_dirty = True
        self._schedule()

    def absorb(self, cell_id: str) -> None:
        """A blank cell of the user's that the workflow took over (see ``blank_trailing_cell``).

        It is left out of every merge from now on while it stays blank in the file: a copy
        of the notebook that still holds it (an editor's unsaved model) does not bring it back,
        but text typed into it does.
        """
        self._absorbed.add(cell_id)
        self._layout = [entry for entry in self._layout if entry[2] != cell_id]
        self._metadata_dirty = True
        self._schedule()

    @property
    def dirty(self) -> bool:
        """True when something changed since the last write."""
        return bool(self._dirty) or self._metadata_dirty or self._unplaced()

    def _unplaced(self) -> bool:
        done = len(self._placed) + len(self._deleted) + len(self._detached)
        return done < len(self.document)

    def _schedule(self) -> None:
        if self._timer is not None or self.debounce < 0:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._timer = loop.call_later(self.debounce, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._task = asyncio.ensure_future(self._background_flush())

    async def _background_flush(self) -> WriteReport:
        try:
            return await self.flush_async()
        except Exception as exc:
            self.last_error = exc
            log.warning("notebook-bcc: writing %s failed: %s", self.path, exc)
            return WriteReport(self.path, written=False)

    def flush_soon(self) -> None:
        """Make sure a write comes within the debounce, without waiting for it (behavior
        boundaries): the caller goes on; a failure is kept for :meth:`raise_failure`. Writing
        at every boundary would cost the run O(cells) per behavior; the store holds every
        cell already (D10), the file follows within ``debounce`` seconds. A writer with no
        debounced writes (``debounce < 0``) writes now, in the background."""
        if self.debounce >= 0:
            self._schedule()
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self._fire()

    def raise_failure(self) -> None:
        """Raise :class:`NotebookWriteError` when the last background write failed."""
        error = self.last_error
        if error is None:
            return
        if isinstance(error, NotebookWriteError):
            raise error
        raise NotebookWriteError(f"{type(error).__name__}: {error}") from error

    # -- writing --------------------------------------------------------------------------

    def flush(self) -> WriteReport:
        """Write now, in this thread (library and CLI use)."""
        plan = self._plan()
        outcome = self._write(plan)
        return self._commit(plan, outcome)

    async def flush_async(self) -> WriteReport:
        """Write now: cells are serialized on the loop, file I/O runs in a worker thread."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            plan = self._plan()
            outcome = await self._persist(plan)
            return self._commit(plan, outcome)

    async def _persist(self, plan: _Plan) -> _Outcome:
        """Where a flush writes: the file, in a worker thread (other writers override this)."""
        return await asyncio.to_thread(self._write, plan)

    async def aclose(self) -> WriteReport:
        """Cancel the pending timer and write what is left."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._task is not None and not self._task.done():
            await self._task
        return await self.flush_async()

    def _plan(self) -> _Plan:
        """Serialize (and validate) changed cells; copy what the I/O step needs."""
        order: list[str] = []
        validated = 0
        for cell in self.document.cells:
            cell_id = str(cell.get("id"))
            order.append(cell_id)
            if cell_id in self._fragments and cell_id not in self._dirty:
                continue
            if self.validate:
                try:
                    validate_cell(cell)
                except Exception as exc:
                    raise NotebookWriteError(
                        f"cell {cell_id} is not a valid nbformat 4.5 cell: {exc}",
                        details={"cell_id": cell_id},
                    ) from exc
                validated += 1
            self._fragments[cell_id] = cell_fragment(cell)
            self._sources[cell_id] = _source_text(cell)
        self._dirty.clear()
        metadata = json.loads(json.dumps(self.document.nb.metadata))
        if self.validate and self._metadata_dirty:
            try:
                validate_metadata(metadata)
            except Exception as exc:
                raise NotebookWriteError(f"invalid notebook metadata: {exc}") from exc
        self._metadata_dirty = False
        return _Plan(
            order=order,
            fragments={cid: self._fragments[cid] for cid in order},
            sources={cid: self._sources[cid] for cid in order},
            metadata=metadata,
            nbformat_minor=int(self.document.nb.get("nbformat_minor", 5)),
            validated=validated,
        )

    def _commit(self, plan: _Plan, outcome: _Outcome) -> WriteReport:
        self._layout = outcome.layout
        self._placed = {value for kind, value, _ in outcome.layout if kind == "ours"}
        self._detached = outcome.detached
        self._deleted = outcome.deleted
        self._digest = outcome.digest
        self._stamp = outcome.stamp
        self._disk_metadata = outcome.disk_metadata
        self._written = plan.sources
        self.last_report = outcome.report
        self.last_error = None
        return outcome.report

    def _write(self, plan: _Plan) -> _Outcome:
        """Merge with the file on disk if it changed, then replace it atomically (I/O thread)."""
        began = monotonic()
        for _attempt in range(3):
            before = _stamp(self.path)
            outcome = self._merge(plan, before)
            text = notebook_text(
                (
                    plan.fragments[value] if kind == "ours" else value
                    for kind, value, _ in outcome.layout
                ),
                outcome.disk_metadata,
                plan.nbformat_minor,
            )
            data = text.encode("utf-8")
            if _stamp(self.path) != before:
                continue  # the file changed while we merged: merge again
            self._replace(data)
            stamp = _stamp(self.path)
            assert stamp is not None
            outcome.stamp = stamp
            outcome.digest = hashlib.sha256(data).hexdigest()
            report = outcome.report
            report.written = True
            report.cells = len(outcome.layout)
            report.validated = plan.validated
            report.duration_s = monotonic() - began
            return outcome
        raise NotebookWriteError(
            f"{self.path} kept changing while notebook-bcc tried to write it",
            details={"path": str(self.path)},
        )

    def _merge(self, plan: _Plan, stamp: _Stamp | None) -> _Outcome:
        report = WriteReport(self.path, written=False)
        detached = set(self._detached)
        deleted = set(self._deleted)
        ours = set(plan.order)
        unchanged = stamp is not None and stamp == self._stamp
        if stamp is not None and not unchanged and self._digest is not None:
            unchanged = self._file_digest() == self._digest
        if stamp is None or unchanged:
            if stamp is None and self._digest is not None:
                report.external_change = True  # the file was deleted: write it afresh
                layout = [entry for entry in self._layout if entry[0] == "ours"]
            else:
                layout = list(self._layout)
            placed = {value for kind, value, _ in layout if kind == "ours"}
            disk_metadata = dict(self._disk_metadata)
        else:
            report.external_change = True
            disk = self._read_disk()
            layout, placed, disk_metadata = self._rebase(disk, plan, ours, detached, deleted)
        # A cell on disk that carries the id of a cell we are adding now (a workflow action
        # replayed over a notebook that already holds its earlier result) is replaced in place:
        # an upsert, never a duplicate id.
        foreign_at = {
            cell_id: i
            for i, (kind, _, cell_id) in enumerate(layout)
            if kind == "foreign" and cell_id is not None and cell_id not in detached
        }
        for cell_id in plan.order:
            if cell_id in placed or cell_id in deleted or cell_id in detached:
                continue
            entry: _Entry = ("ours", cell_id, cell_id)
            if cell_id in foreign_at:
                layout[foreign_at.pop(cell_id)] = entry
            else:
                layout.append(entry)
            placed.add(cell_id)
        for key in _OWN_METADATA:
            if key in plan.metadata:
                disk_metadata[key] = plan.metadata[key]
        for key, value in plan.metadata.items():
            disk_metadata.setdefault(key, value)
        report.foreign_cells = sum(1 for kind, _, _ in layout if kind == "foreign")
        report.detached = sorted(detached)
        report.deleted = sorted(deleted)
        return _Outcome(
            layout=layout,
            digest="",
            stamp=_Stamp(0, 0, 0),
            disk_metadata=disk_metadata,
            report=report,
            detached=detached,
            deleted=deleted,
        )

    def _rebase(
        self,
        disk: dict[str, Any],
        plan: _Plan,
        ours: set[str],
        detached: set[str],
        deleted: set[str],
    ) -> tuple[list[_Entry], set[str], dict[str, Any]]:
        """The disk's cell order as the base; our unchanged cells in it take our version."""
        layout: list[_Entry] = []
        placed: set[str] = set()
        for cell in disk.get("cells", []):
            cell_id = cell.get("id")
            if cell_id in self._absorbed and not _source_text(cell).strip():
                continue
            if isinstance(cell_id, str) and cell_id in ours and cell_id not in placed:
                if cell_id not in detached and self._is_ours(cell_id, _source_text(cell), plan):
                    layout.append(("ours", cell_id, cell_id))
                    placed.add(cell_id)
                    continue
                detached.add(cell_id)
                placed.add(cell_id)
            layout.append(
                ("foreign", cell_fragment(cell), cell_id if isinstance(cell_id, str) else None)
            )
        for cell_id in self._placed:
            if cell_id not in placed:
                deleted.add(cell_id)
        metadata = disk.get("metadata")
        return layout, placed, dict(metadata) if isinstance(metadata, dict) else {}

    def _is_ours(self, cell_id: str, source: str, plan: _Plan) -> bool:
        """True when the file's ``source`` of one of our cells is a version the workflow wrote:
        the one this writer last wrote, or (before it wrote the cell) the one it holds now or
        one an earlier process of the workflow gave it. Anything else is a user's edit."""
        written = self._written.get(cell_id)
        if written is not None:
            return source == written
        if source == plan.sources.get(cell_id, ""):
            return True
        earlier = self.document.earlier_sources.get(cell_id)
        return earlier is not None and source_digest(source) in earlier

    def _file_digest(self) -> str | None:
        try:
            return hashlib.sha256(self.path.read_bytes()).hexdigest()
        except FileNotFoundError:
            return None

    def _read_disk(self) -> dict[str, Any]:
        import nbformat

        try:
            text = self.path.read_text(encoding="utf-8")
            nb = nbformat.reads(text, as_version=4)  # type: ignore[no-untyped-call]
        except Exception as exc:
            raise NotebookWriteError(
                f"{self.path} changed on disk and is not a readable notebook; "
                f"not overwriting it ({type(exc).__name__}: {exc})",
                details={"path": str(self.path)},
            ) from exc
        data: dict[str, Any] = json.loads(json.dumps(nb))
        return data

    def _replace(self, data: bytes) -> None:
        """Write ``data`` to a temporary file beside the notebook, fsync, rename over it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:12]}.tmp")
        try:
            with tmp.open("wb") as out:
                out.write(data)
                out.flush()
                if self.fsync:
                    os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise NotebookWriteError(
                f"could not write {self.path}: {exc}", details={"path": str(self.path)}
            ) from exc
