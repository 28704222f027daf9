"""The server's notebook writer: the kernel layer's merge rules, saved through the contents manager.

:class:`~notebook_bcc.kernel.writer.NotebookWriter` owns what D10 asks of every writer: cells
serialized once per change, debounced writes, and a merge with whatever is in the file now
(cells the user added or moved stay where they are, a workflow cell the user edited is
detached, one they deleted stays deleted). Only its file I/O is replaced here: the current
version is read with ``contents_manager.get`` and the merged notebook is written with
``contents_manager.save``, so checkpoints, save hooks and non-file backends apply as in Lab.

A version is recognised by the contents model's ``last_modified`` and ``size``: when they are
the ones of the last save, nothing is read back; otherwise the notebook is read and merged.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime
from pathlib import Path
from time import monotonic
from typing import Any

from notebook_bcc.kernel.cells import bcc_of
from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.kernel.errors import NotebookWriteError
from notebook_bcc.kernel.results import CellRecord
from notebook_bcc.kernel.serialize import notebook_text
from notebook_bcc.kernel.writer import NotebookWriter, WriteReport, _Outcome, _Plan, _Stamp
from notebook_bcc.server.coedit import Coediting
from notebook_bcc.server.contents import Contents, Stamp
from notebook_bcc.server.delivery import Delivery
from notebook_bcc.server.doc_merge import MergePlan, WorkflowCell, plan_merge
from notebook_bcc.server.errors import ContentsError
from notebook_bcc.server.room_running import mark_running
from notebook_bcc.server.save_pacing import SavePacer

log = logging.getLogger(__name__)


class _Vanished(Exception):
    """The notebook was removed while the writer's save of it was under way."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


_RECHECK_S = 2.0
"""While the open document is held, how often a deferred write looks again."""

_PENDING_PLANS = 32
"""Merge plans handed out and not yet acknowledged, kept at most."""

_DOC_METADATA = ("kernelspec", "language_info", "title", "notebook_bcc")
"""Notebook metadata keys the workflow sets in an open document."""

_LAB_METADATA = frozenset({"kernelspec", "language_info"})
"""Of those, the keys JupyterLab keeps up to date itself in an open document."""

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
        coedit: Coediting | None = None,
        pacer: SavePacer | None = None,
    ) -> None:
        super().__init__(Path(api_path), document, debounce=debounce, fsync=False)
        self.contents = contents
        self.pacer = pacer
        """Shared by the server's writers: debounced saves take turns (see :mod:`.save_pacing`)."""
        self._awaiting_turn = False
        self.api_path = api_path
        self.coedit = coedit
        self.version = 0
        """Bumped on every cell or metadata change (the panel asks for a merge when it moves)."""
        self.closed = False
        self.gone = False
        """The notebook was deleted, or a newer workflow writes it: nothing is written."""
        self.before_write: Callable[[], Awaitable[None]] | None = None
        """Called before each write (following the notebook by file id, :mod:`.file_ids`)."""
        self.after_write: Callable[[ContentsNotebookWriter], Awaitable[None]] | None = None
        """Called after each file write that wrote (recording the file's id)."""
        self.saving = False
        """A file write of this writer's is under way, up to its :attr:`after_write`: the
        file changes under a file-id check then, which leaves it to that hook."""
        self._current: dict[str, Any] | None = None
        self._current_error: str | None = None
        self._applied: dict[str, str] = {}
        self._known: dict[str, set[str]] = {}
        """Per browser (holder): the cells it acknowledged having in its document."""
        self._placed_at: dict[str, float] = {}
        """When each cell first reached the file (epoch seconds, the file's clock)."""
        self._pending: dict[str, tuple[str, dict[str, tuple[str, str]], int]] = {}
        self.delivery = Delivery()
        """Which cells version a browser's document holds (held notebooks)."""
        self._saved_at: tuple[str, Stamp] | None = None
        """Where the last save went and the version it wrote there."""
        self._reclaims: set[asyncio.Task[None]] = set()
        self.running_cell: Callable[[], str | None] = lambda: None
        """The workflow cell the kernel runs now (the runtime's runner): a collaboration room
        shows it running (:mod:`.room_running`)."""
        self._marked: str | None = None

    # -- changes --------------------------------------------------------------------------

    def put(self, record: CellRecord) -> None:
        """A cell changed: bump :attr:`version`, write with the next (debounced) write."""
        self.version += 1
        super().put(record)

    def metadata_changed(self, metadata: Any) -> None:
        """Notebook metadata changed: bump :attr:`version`, write with the next write."""
        self.version += 1
        super().metadata_changed(metadata)

    def rename(self, api_path: str) -> None:
        """The notebook was renamed or moved: write to ``api_path`` from now on.

        A write under way when the file moved may still land at the old path and so recreate
        the old notebook; :meth:`_reclaim` takes that file back once the write is done.
        """
        old = self.api_path
        self.api_path = api_path
        self.path = Path(api_path)
        if old != api_path:
            self._spawn(self._reclaim(old, rewrite=True))

    def deleted(self) -> None:
        """The notebook was deleted: write nothing more (and take back a write under way)."""
        self.gone = True
        self._spawn(self._reclaim(self.api_path, rewrite=False))

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        try:
            task = asyncio.get_running_loop().create_task(coroutine)
        except RuntimeError:
            coroutine.close()
            return
        self._reclaims.add(task)
        task.add_done_callback(self._reclaims.discard)

    async def _reclaim(self, old: str, *, rewrite: bool) -> None:
        """Once no write is in flight: a file at ``old`` that is exactly the version this
        writer saved there was written after the user moved or deleted the notebook (a move
        or delete takes the user's file away, so nobody else wrote that version); remove it,
        and (after a move) write the cells where the notebook is now."""
        await self.settled()
        saved = self._saved_at
        if saved is None or saved[0] != old:
            return
        try:
            if await self.contents.stamp(old) != saved[1]:
                return
            await self.contents.delete_file(old)
        except ContentsError as exc:
            log.warning("notebook-bcc: could not take back %s: %s", old, exc.message)
            return
        self._saved_at = None
        log.info("notebook-bcc: removed %s, written by the workflow after it had moved", old)
        if rewrite and not self.gone:
            self._metadata_dirty = True  # the new path lacks that write: write it there
            self.flush_soon()

    # -- where a write goes ---------------------------------------------------------------

    async def flush_async(self) -> WriteReport:
        """Write the workflow's cells where the notebook lives now (see :mod:`.coedit`)."""
        if self.before_write is not None:
            await self.before_write()
        if self.gone:
            return WriteReport(self.path, written=False)
        coedit = self.coedit
        if coedit is None:
            return await self._flush_file()
        room = await coedit.room_document(self.api_path)
        if room is not None:
            return await self._flush_room(room)
        if coedit.leases.held(self.api_path):
            self._defer()
            return WriteReport(self.path, written=False)
        return await self._flush_file()

    async def aclose(self) -> WriteReport:
        """Write what is left. While a browser holds the notebook the writer stays registered
        (the browser still merges the last cells from it) and writes the file only once the
        hold lapses; then it unregisters."""
        self.closed = True
        task = self._task
        if task is not None and not task.done() and self._awaiting_turn:
            task.cancel()  # still waiting for its turn: the final write below covers it
            self._task = None
        report = await super().aclose()
        if self.coedit is not None and report.written:
            self._release()
        return report

    async def _background_flush(self) -> WriteReport:
        """The debounced write, in its turn among the server's writers (when paced)."""
        if self.pacer is None or self.closed:
            return await super()._background_flush()
        self._awaiting_turn = True
        try:
            async with self.pacer.turn():
                self._awaiting_turn = False
                return await super()._background_flush()
        finally:
            self._awaiting_turn = False

    async def _flush_file(self) -> WriteReport:
        if self.coedit is not None:
            log.debug(
                "notebook-bcc: %s is not open in a browser: the workflow saves it", self.api_path
            )
        self.saving = True
        try:
            return await self._flush_file_saving()
        finally:
            self.saving = False

    async def _flush_file_saving(self) -> WriteReport:
        try:
            report = await super().flush_async()
        except _Vanished as gone:
            # deleted while the save was under way: not a failed write (the store holds every
            # cell, D10) but a notebook gone; the followers decide (a delete through Jupyter has
            # marked this writer gone; a terminal rm is found by the file-id check, run now)
            log.info("notebook-bcc: %s was removed while the workflow saved it", gone.path)
            self._metadata_dirty = True
            check = self.before_write
            if check is not None:

                async def look() -> None:
                    await check()

                self._spawn(look())
            return WriteReport(self.path, written=False)
        if report.written and self.after_write is not None:
            await self.after_write(self)
        self._applied.clear()  # an open document no longer holds what was applied to it
        if report.written and self._stamp is not None:
            written_at = self._stamp.mtime_ns / 1e9
            for cell_id in self._placed:
                self._placed_at.setdefault(cell_id, written_at)
        if self.closed and report.written:
            self._release()
        return report

    def _release(self) -> None:
        if self.coedit is None:
            return
        for workflow_id, writer in self.coedit.writers():
            if writer is self:
                self.coedit.unregister(workflow_id)

    def _defer(self) -> None:
        """Look again shortly: the hold may lapse (browser gone) and the file need the cells."""
        if self._timer is not None or not (self.dirty or self.closed):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._timer = loop.call_later(max(self.debounce, _RECHECK_S), self._fire)

    async def settled(self) -> None:
        """Return once no file write is in flight."""
        if self._lock is not None:
            async with self._lock:
                pass

    async def reclaimed(self) -> None:
        """Return once the writer has looked at every old path a rename or delete left (and
        taken back a write of its own that landed there); see :meth:`rename`."""
        while self._reclaims:
            await asyncio.gather(*self._reclaims, return_exceptions=True)

    # -- open documents -------------------------------------------------------------------

    def _workflow_cells(self) -> list[WorkflowCell]:
        self._plan()  # serialize what changed (fragments are the cells' file form)
        cells: list[WorkflowCell] = []
        for cell in self.document.cells:
            cell_id = str(cell.get("id"))
            if bcc_of(cell) is None or cell_id not in self._fragments:
                continue
            digest = hashlib.sha1(self._fragments[cell_id].encode("utf-8")).hexdigest()
            cells.append(WorkflowCell(cell_id, self._sources[cell_id], digest))
        return cells

    def _plan_for(
        self,
        view: list[tuple[str | None, str]],
        placed: set[str],
        *,
        applied: dict[str, str] | None = None,
    ) -> tuple[MergePlan, dict[str, WorkflowCell]]:
        cells = self._workflow_cells()
        plan = plan_merge(
            view,
            cells,
            baseline=self._written,
            placed=placed,
            applied=self._applied if applied is None else applied,
            detached=self._detached,
            deleted=self._deleted,
        )
        return plan, {cell.cell_id: cell for cell in cells}

    def _cell_json(self, cell_id: str) -> dict[str, Any]:
        cell = self.document.get(cell_id)
        assert cell is not None
        data: dict[str, Any] = json.loads(json.dumps(cell))
        return data

    def doc_metadata(self) -> dict[str, Any]:
        """The notebook metadata keys the workflow owns, as JSON."""
        meta = self.document.nb.metadata
        data: dict[str, Any] = json.loads(
            json.dumps({key: meta[key] for key in _DOC_METADATA if key in meta})
        )
        return data

    def merge_for_document(
        self,
        holder: str,
        view: list[tuple[str | None, str]],
        document_modified: str | None,
        *,
        reloaded: bool = False,
    ) -> dict[str, Any]:
        """A merge plan against browser ``holder``'s document (see :meth:`acknowledge`).

        A workflow cell missing from the document counts as deleted by the user only when
        the document had it: the browser acknowledged it, or the cell was in the file when
        the document was loaded or last saved (``document_modified``). A document loaded
        earlier (another tab, a stale model) gets the cell inserted instead.

        ``reloaded``: Lab replaced the document with its file since (a revert; Revert to
        Checkpoint restores an older file with its own time): what the browser acknowledged
        is no longer in it, so only the file's time tells what it had, the cells placed after
        it are inserted again, and the workflow cells it holds are brought up to date.
        """
        loaded = _epoch(document_modified)
        had = set() if reloaded else set(self._known.get(holder, ()))
        if loaded is not None:
            had |= {cid for cid, at in self._placed_at.items() if at <= loaded + 0.001}
        plan, cells = self._plan_for(view, had, applied={} if reloaded else None)
        token = uuid.uuid4().hex
        self._pending[token] = (
            holder,
            {op.cell_id: (cells[op.cell_id].source, cells[op.cell_id].digest) for op in plan.ops},
            self.version,
        )
        if not plan.ops:
            self.delivery.reached(self.version)
        while len(self._pending) > _PENDING_PLANS:
            self._pending.pop(next(iter(self._pending)))
        return {
            "version": self.version,
            "token": token,
            "ops": [
                {
                    "op": op.op,
                    "index": op.index,
                    "cell_id": op.cell_id,
                    "cell": self._cell_json(op.cell_id),
                }
                for op in plan.ops
            ],
            "metadata": self.doc_metadata(),
            "detached": sorted(plan.detached),
            "deleted": sorted(plan.deleted),
        }

    def acknowledge(
        self, token: str, saved: str | None, detached: list[str], deleted: list[str]
    ) -> bool:
        """The browser applied the plan ``token`` and saved it (file version ``saved``);
        False when the plan is unknown (superseded: merge again)."""
        pending = self._pending.pop(token, None)
        if pending is None:
            return False
        holder, applied, version = pending
        self._known.setdefault(holder, set()).update(applied)
        at = _epoch(saved)
        if at is not None:
            for cell_id in applied:
                self._placed_at.setdefault(cell_id, at)
        self._commit_document(applied, set(detached), set(deleted))
        self.delivery.reached(version)
        return True

    def _commit_document(
        self, applied: dict[str, tuple[str, str]], detached: set[str], deleted: set[str]
    ) -> None:
        ours = {cell.cell_id for cell in self._workflow_cells()}
        for cell_id, (source, digest) in applied.items():
            self._placed.add(cell_id)
            self._written[cell_id] = source
            self._applied[cell_id] = digest
        self._detached |= detached & ours
        self._deleted |= deleted & ours
        # the file changes under the server from now on: its next file write merges afresh
        self._stamp = None
        self._digest = None

    async def _flush_room(self, room: Any) -> WriteReport:
        """Apply the workflow's cells to a collaboration room's shared notebook."""
        began = monotonic()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        view = [
            (
                str(ycell.get("id")) if ycell.get("id") else None,
                str(ycell["source"]) if "source" in ycell else "",
            )
            for ycell in room.ycells
        ]
        plan, cells = self._plan_for(view, self._placed)
        with room.ydoc.transaction():
            for op in plan.ops:
                value = self._cell_json(op.cell_id)
                if op.op == "insert":
                    room.ycells.insert(op.index, room.create_ycell(value))
                else:
                    room.set_cell(op.index, value=value)
            metadata_written = self._room_metadata(room)
        now, before = self.running_cell(), self._marked
        self._marked = now
        mark_running(room, now, before)
        self._commit_document(
            {op.cell_id: (cells[op.cell_id].source, cells[op.cell_id].digest) for op in plan.ops},
            plan.detached,
            plan.deleted,
        )
        report = WriteReport(self.path, written=bool(plan.ops) or metadata_written)
        report.cells = len(view) + sum(1 for op in plan.ops if op.op == "insert")
        report.detached = sorted(self._detached)
        report.deleted = sorted(self._deleted)
        report.duration_s = monotonic() - began
        return report

    def _room_metadata(self, room: Any) -> bool:
        """Put the workflow's notebook metadata (``notebook_bcc``, ``title``) into a room's
        shared notebook where it differs (Lab's own keys only when the room has none); True
        when something was written (jupyter_ydoc's metadata map is ``YNotebook._ymeta``)."""
        ymeta = getattr(room, "_ymeta", None)
        if ymeta is None:
            return False
        shared = ymeta.get("metadata") if "metadata" in ymeta else None
        if shared is None:
            return False
        present = shared.to_py() or {}
        written = False
        for key, value in self.doc_metadata().items():
            if key in _LAB_METADATA and key in present:
                continue
            if present.get(key) != value:
                shared[key] = value
                written = True
        return written

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
            if self.gone:
                # deleted while this write waited for its turn (behind one under way): the
                # check before the wait is not enough, it must not land after the delete
                raise _Vanished(self.api_path)
            before = await self._current_stamp()
            if before is None and self._stamp is not None:
                # this writer saved the file and it is gone: removed (a terminal rm the
                # file-id check has not decided on yet); never recreate it, the followers decide
                raise _Vanished(self.api_path)
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
            target = self.api_path
            try:
                saved = await self.contents.save_notebook(target, content)
            except ContentsError as exc:
                if exc.status == 404:
                    raise _Vanished(target) from exc
                raise NotebookWriteError(
                    f"could not save {target}: {exc.message}",
                    details={"path": target, "status": exc.status},
                ) from exc
            self._saved_at = (target, saved)
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
            if exc.status == 404:
                return None  # removed between the existence check and the look
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


def _epoch(value: str | None) -> float | None:
    """An ISO time (a contents model's ``last_modified``) as epoch seconds, or None."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
