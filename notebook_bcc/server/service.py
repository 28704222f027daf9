"""The workflow service: the server's registry of engines, with no workflow logic of its own.

One :class:`~notebook_bcc.engine.engine.Engine` per workflow, each on the session kernel of
its notebook and writing its notebook through the contents manager; one shared SQLite store
whose calls run on the store's own thread, so nothing here blocks the tornado loop. The
service only wires, starts and stops: what a workflow does next is the engine's business.

Life of a workflow in a server process:
- ``create`` validates every path and the planner before anything runs, then creates the
  workflow in the store (one active workflow per notebook; a completed or cancelled one
  yields its notebook to the new one), and starts its run loop in a background task;
- the run loop is ``engine.run()`` repeated while the run status says ``running``: it
  returns when the workflow completes, fails, waits for a human, is paused or interrupted;
- ``command`` applies a D3 command through the engine and, when the run is ``running``
  afterwards (a decision approved, ``run`` after ``pause``, ``RESET``), restarts the loop in
  the background; the caller gets the snapshot right after the command applied;
- ``delete`` stops the loop at its next safe point and releases the notebook (the notebook
  and the session kernel stay);
- ``close`` (server shutdown) interrupts every loop the D1 way -- the running cell finishes
  and is committed -- and leaves the workflows active in the store for a later restart;
- ``start`` (the next server, same store) recovers them: see :meth:`WorkflowService._recover`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.server.contents import (
    Contents,
)
from notebook_bcc.server.create import CreateRoom
from notebook_bcc.server.errors import (
    BadRequestError,
    NotebookGoneError,
    WorkflowNotLiveError,
)
from notebook_bcc.server.kernels import Kernels
from notebook_bcc.server.live import AVAILABLE_PLANNERS, LiveWorkflow, ServiceSettings, is_finished
from notebook_bcc.server.planner_specs import PlannerSpecs
from notebook_bcc.server.queries import QueryRoom
from notebook_bcc.server.recover import RecoveryRoom
from notebook_bcc.server.stopping import is_stop, stop_command

log = logging.getLogger(__name__)


class WorkflowService(RecoveryRoom, CreateRoom, QueryRoom):
    """Creates, drives, commands and stops workflows; answers queries from the store."""

    def __init__(self, settings: ServiceSettings, contents: Contents, kernels: Kernels) -> None:
        super().__init__(settings, contents, kernels)
        self.planners = PlannerSpecs(settings, contents)
        """REST planner specs -> planners (the planner registry, this server's rules)."""

    async def close(self) -> None:
        """Shutdown: interrupt every run at its next safe point, close channels and the store.

        Workflows stay active in the store (interrupted, resumable); kernels are left to the
        server, which shuts its kernels down after its extensions.
        """
        self._closing = True
        self.save_pacer.close()  # shutdown writes every notebook at once
        recovering = list(self._recovering.values())
        if recovering:
            _, late = await asyncio.wait(recovering, timeout=self.settings.stop_timeout)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late, timeout=self.settings.stop_timeout)
        lives = list(self._live.values())
        for live in lives:
            live.engine.request_interrupt("the server shut down")
        tasks = [live.task for live in lives if live.task is not None and not live.task.done()]
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=self.settings.stop_timeout)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late, timeout=self.settings.stop_timeout)
        for live in lives:
            await self._close_live(live)
            live.hub.close_all(live.engine.snapshot)
        self._live.clear()
        if self._store is not None:
            store, self._store = self._store, None
            await store.close()

    # -- commands -------------------------------------------------------------------------

    async def command(self, workflow_id: str, body: Any) -> WorkflowSnapshot:
        """Apply a D3 command; restart the run loop when the run is ``running`` afterwards.

        Stale ``expected_version``: :class:`VersionConflictError` (409, current snapshot in
        the details); a command the FSM or the run refuses: a 400 naming the reason.
        """
        live = await self._require_live(workflow_id)
        if not isinstance(body, dict):
            raise BadRequestError(
                f"a command is a JSON object, got {type(body).__name__}",
                details={"type": type(body).__name__},
            )
        if is_stop(body):
            snapshot = await stop_command(live, body, self.kernels, self.settings.stop_timeout)
        elif body.get("action") in GOES_ON and getattr(live.engine.runtime.writer, "gone", False):
            raise NotebookGoneError(
                f"the notebook {live.notebook_path} of workflow {workflow_id} was deleted: a run "
                "that went on would write its cells to no file. Cancel it and start a new "
                "workflow (the store keeps this one's record and cells)",
                details={"workflow_id": workflow_id, "notebook_path": live.notebook_path},
            )
        else:
            try:
                snapshot = await live.engine.command(body)
            except asyncio.CancelledError:
                cancelling = getattr(asyncio.current_task(), "cancelling", None)
                if cancelling is None or cancelling():
                    raise  # this request itself was cancelled (the client went away)
                # the work the command waited on (a cell it re-ran) was stopped under it: the
                # workflow was deleted or stopped meanwhile
                raise WorkflowNotLiveError(
                    f"workflow {workflow_id} was stopped while this command was being answered",
                    details={"workflow_id": workflow_id},
                ) from None
        self._ensure_running(live)
        return snapshot

    async def _require_live(self, workflow_id: str) -> LiveWorkflow:
        await self.start()  # the store open and its recovery scheduled before we look
        await self._recovered(workflow_id)
        live = self._live.get(workflow_id)
        if live is not None:
            return live
        snapshot = await self.snapshot(workflow_id)
        refused = self.refused.get(workflow_id)
        if refused is not None:
            raise WorkflowNotLiveError(
                f"workflow {workflow_id} was not recovered: {refused.message}",
                details={
                    "workflow_id": workflow_id,
                    "run_status": snapshot.run.status,
                    "reason": refused.reason,
                },
            )
        raise WorkflowNotLiveError(
            f"workflow {workflow_id} is not running in this server (run status "
            f"{snapshot.run.status}); an earlier server or the CLI left it",
            details={"workflow_id": workflow_id, "run_status": snapshot.run.status},
        )

    async def delete(self, workflow_id: str) -> WorkflowSnapshot:
        """Stop the workflow (its running cell finishes first) and release its notebook.

        The notebook and the session kernel stay; the record stays in the store (inactive).
        """
        await self._recovered(workflow_id)
        if workflow_id in self._live:
            return await self._retire(workflow_id, "deleted")
        store = await self.start()
        snapshot = await store.load(workflow_id)
        await store.call(lambda s: s.deactivate(workflow_id, "deleted"))
        return snapshot


GOES_ON = frozenset({"run", "retry", "restart"})
"""Commands that make a stopped run go on (and write cells)."""

__all__ = [
    "AVAILABLE_PLANNERS",
    "LiveWorkflow",
    "ServiceSettings",
    "WorkflowService",
    "is_finished",
]
