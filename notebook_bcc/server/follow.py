"""Follow a notebook that is renamed, moved or deleted while its workflow runs.

The contents manager announces every rename and delete on jupyter_server's event bus (the
``contents_service`` events JupyterLab's own file browser causes). On a rename or move --
of the notebook or of a folder holding it -- the workflow is re-keyed to the new path: its
writer writes there from the next cell on, the open document's hold moves with it, the store
and the snapshot name the new path (the panel follows), and the old path is free: a new
notebook created there never finds the workflow. On a delete the run is paused with that
reason and the workflow no longer answers to the path; its writer writes nothing more.

Renames done outside Jupyter (``mv`` in a shell) are not announced and not followed.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notebook_bcc.engine.routing import with_run
from notebook_bcc.server.writer import ContentsNotebookWriter
from notebook_bcc.store.sqlite import EventDraft

if TYPE_CHECKING:
    from notebook_bcc.server.service import LiveWorkflow, WorkflowService

log = logging.getLogger(__name__)

CONTENTS_EVENTS = "https://events.jupyter.org/jupyter_server/contents_service/v1"
"""The schema id of jupyter_server's contents events (save, rename, copy, delete...)."""

NOTEBOOK_MOVED = "notebook_moved"
"""The ``event`` of the ``run`` event a rename or move of a workflow's notebook publishes."""


def moved_path(path: str, old: str, new: str) -> str | None:
    """``path`` after ``old`` (a file or a folder) became ``new``; None when unaffected."""
    if path == old:
        return new
    prefix = old.rstrip("/") + "/"
    if path.startswith(prefix):
        return new.rstrip("/") + "/" + path[len(prefix) :]
    return None


def under(path: str, gone: str) -> bool:
    """Whether ``path`` is ``gone`` or lies in the folder ``gone``."""
    return path == gone or path.startswith(gone.rstrip("/") + "/")


class NotebookFollower:
    """Listens to the contents events and keeps the service's workflows on their notebook."""

    def __init__(self, service: WorkflowService) -> None:
        self.service = service
        self._tasks: set[asyncio.Task[None]] = set()

    def install(self, event_logger: Any) -> None:
        """Subscribe to the server's contents events."""
        event_logger.add_listener(schema_id=CONTENTS_EVENTS, listener=self._on_event)

    async def _on_event(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        """A contents event (jupyter_events calls listeners with these keyword arguments)."""
        action = data.get("action")
        path = str(data.get("path") or "").strip("/")
        try:
            if action == "rename":
                source = str(data.get("source_path") or "").strip("/")
                if source and path:
                    await self.renamed(source, path)
            elif action == "delete" and path:
                await self.deleted(path)
        except Exception as exc:  # a listener must never break the contents API
            log.warning("notebook-bcc: following %s of %s failed: %s", action, path, exc)

    def _writers(self) -> list[ContentsNotebookWriter]:
        writers: dict[int, ContentsNotebookWriter] = {}
        coedit = self.service.coedit
        if coedit is not None:
            for _, writer in coedit.writers():
                writers[id(writer)] = writer
        for live in self.service.live_workflows():
            own = getattr(live.engine.runtime, "writer", None)
            if isinstance(own, ContentsNotebookWriter):
                writers[id(own)] = own
        return list(writers.values())

    async def renamed(self, old: str, new: str) -> None:
        """``old`` (a notebook or a folder) is ``new`` now: every workflow on it follows."""
        for writer in self._writers():
            target = moved_path(writer.api_path, old, new)
            if target is not None:
                writer.rename(target)
        coedit = self.service.coedit
        if coedit is not None:
            coedit.leases.renamed(old, new)
        store = await self.service.start()
        await store.call(lambda s: s.move_notebook(old, new))
        for live in self.service.live_workflows():
            target = moved_path(live.notebook_path, old, new)
            if target is None:
                continue
            old_path, live.notebook_path = live.notebook_path, target
            runtime = live.engine.runtime
            os_path = self.service.contents.os_path(target)
            if os_path is not None and hasattr(runtime, "notebook_path"):
                runtime.notebook_path = Path(os_path)
            live.engine.snapshot = live.engine.snapshot.model_copy(update={"notebook_path": target})
            self._spawn(self._record_path(live, old_path, target))
            log.info("notebook-bcc: %s follows its notebook to %s", live.workflow_id, target)

    async def deleted(self, path: str) -> None:
        """``path`` (a notebook or a folder) is gone: its workflows pause and let go of it."""
        for writer in self._writers():
            if under(writer.api_path, path):
                writer.deleted()
        store = await self.service.start()
        await store.call(lambda s: s.move_notebook(path, None))
        for live in self.service.live_workflows():
            if under(live.notebook_path, path):
                reason = f"the notebook {live.notebook_path} was deleted"
                self._spawn(self._pause(live, reason))

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _record_path(live: LiveWorkflow, old: str, target: str) -> None:
        """A new snapshot version naming the new path (after the step in progress), with a
        ``run`` event ``notebook_moved``: a panel refreshes on events, and without one it
        would answer the next decision against the version before the rename (a 409)."""
        engine = live.engine
        async with engine.lock:
            await engine.commit(
                engine.snapshot.model_copy(update={"notebook_path": target}),
                events=[
                    EventDraft(
                        "run",
                        event=NOTEBOOK_MOVED,
                        actor="server",
                        detail={"from": old, "notebook_path": target},
                    )
                ],
            )

    @staticmethod
    async def _pause(live: LiveWorkflow, reason: str) -> None:
        """Pause the run with ``reason`` (after the step in progress), unless it ended."""
        engine = live.engine
        async with engine.lock:
            snapshot = engine.snapshot
            if snapshot.run.status in ("running", "waiting"):
                await engine.commit(with_run(snapshot, "paused", reason))


__all__ = ["CONTENTS_EVENTS", "NOTEBOOK_MOVED", "NotebookFollower", "moved_path", "under"]
