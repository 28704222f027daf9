"""Recovery after a server restart: the workflows an earlier server left active come back.

See :meth:`RecoveryRoom._recover` for what happens to each one (D1, D7, D10, D11).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
from contextlib import suppress
from functools import partial
from typing import Any

from notebook_bcc.errors import NotebookBccError
from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.models.snapshot import RunStatus, WorkflowSnapshot
from notebook_bcc.planners.registry import REGISTRY
from notebook_bcc.server.errors import (
    PathForbiddenError,
    ServiceStoppedError,
)
from notebook_bcc.server.live import LiveWorkflow, is_finished
from notebook_bcc.server.models import NotRecovered
from notebook_bcc.server.orphans import end_orphan
from notebook_bcc.server.restore import (
    kernel_record,
    rebuild_now,
    restored_options,
)
from notebook_bcc.server.service_core import ServiceCore
from notebook_bcc.store.anchor import anchor_workflow, carried_anchor, put_anchor
from notebook_bcc.store.async_store import AsyncStore
from notebook_bcc.store.errors import ChainBrokenError, StoreUnavailableError
from notebook_bcc.store.sqlite import SqliteStore

log = logging.getLogger(__name__)

MAX_ANCHOR_NOTEBOOK_BYTES = 64 * 1024 * 1024
"""A notebook larger than this is not read for its anchor at recovery."""

PLANNER_PATH_SETTINGS = ("path", "transcript", "templates", "record")
"""The stored planner settings that name files or folders (checked against the root)."""


class RecoveryRoom(ServiceCore):
    """Attaches, prepares and restarts the workflows found active in the store at start-up."""

    async def _recover(self, store: AsyncStore) -> None:
        """Bring back the workflows an earlier server left active (D1, D7, D10, D11).

        Each one gets an engine again, in a background task so the server starts at once:
        its planner from ``snapshot.planner``, its notebook from the store's cells (written
        through the contents manager, which merges with whatever the file holds now: a
        notebook edited while the server was down is never overwritten), its session kernel
        (a new one), and the engine's recovery: RUNNING contracts settled (a reversible one
        runs again; an irreversible one becomes an ``in_doubt`` decision and is never re-run
        automatically), kernel state rebuilt (or a ``kernel_rebuild`` decision), ``error``
        left by a retry. Then the restart policy: a run that was ``running`` or
        ``interrupted`` continues (``resume``) or stays ``interrupted`` until a client sends
        ``run`` (``wait``); a waiting run keeps its pending decisions; a paused or failed run
        stays so. A client command for a workflow still recovering waits for it.
        """
        ids = await store.call(lambda s: s.workflow_ids(active=True))
        self.recovered = list(ids)
        if not ids:
            return
        checked = asyncio.ensure_future(self._altered(store))
        self.store_check = checked
        for workflow_id in ids:
            if workflow_id in self._live or workflow_id in self._recovering:
                continue
            self._recovering[workflow_id] = asyncio.ensure_future(
                self._recover_one(store, workflow_id, checked)
            )

    async def _altered(self, store: AsyncStore) -> str | None:
        """What makes the store untrustworthy, or None: recovery replays cells from it and may
        run an irreversible action's stored code, so a row edited behind its back must stop
        recovery before anything runs or is saved again (a re-save would log the forged row as
        valid), as ``notebook-bcc resume`` refuses. The whole file is verified once, in the
        store's thread, while the server already serves."""
        try:
            await store.call(lambda s: s.verification())
            for workflow_id in self.recovered:
                path, kept = await self._notebook_anchor(store, workflow_id)
                if kept is None or await _foreign(store, kept):
                    continue  # none, or another database's: it vouches for nothing here
                try:
                    await store.call(partial(_verify_against, kept))
                except ChainBrokenError as exc:
                    raise ChainBrokenError(
                        f"{exc.message} (the anchor is the one notebook {path} keeps)",
                        details=exc.details,
                    ) from None
        except (ChainBrokenError, StoreUnavailableError, sqlite3.DatabaseError) as exc:
            message = exc.message if isinstance(exc, NotebookBccError) else str(exc)
            return (
                f"the state database {self.settings.store_path} was altered after it was "
                f"written, so this server will not act on its workflows: {message} "
                f"(`notebook-bcc trace --verify --state-db {self.settings.store_path}` checks it)"
            )
        return None

    async def _notebook_anchor(
        self, store: AsyncStore, workflow_id: str
    ) -> tuple[str | None, dict[str, Any] | None]:
        """The chain anchor a workflow's notebook keeps (``metadata.notebook_bcc.anchor``,
        written at each flush), or None: a copy of the chain heads outside the database, so a
        chain rewritten together with its head while no server ran is caught at recovery."""
        snapshot = await store.load(workflow_id)
        path = snapshot.notebook_path
        os_path = self.contents.os_path(path) if path else None
        if os_path is None:
            return path, None

        def read() -> Any:
            try:
                if os.path.getsize(os_path) > MAX_ANCHOR_NOTEBOOK_BYTES:
                    return None
                with open(os_path, encoding="utf-8") as handle:
                    return json.load(handle)
            except (OSError, ValueError):
                return None

        kept = carried_anchor(await asyncio.to_thread(read))
        return path, kept if isinstance(kept, dict) else None

    async def _recover_one(
        self, store: AsyncStore, workflow_id: str, checked: asyncio.Future[str | None]
    ) -> None:
        """Attach, prepare and (per the restart policy) restart one workflow; never raises."""
        try:
            altered = await asyncio.shield(checked)
            if altered is not None:
                self.refused[workflow_id] = NotRecovered(reason="altered", message=altered)
                log.error("notebook-bcc: workflow %s not recovered: %s", workflow_id, altered)
                return
            before = await store.load(workflow_id)
            if is_finished(before):
                return
            await self._end_orphan(before)
            live = await self._attach(store, before)
            if live is None:
                return
            try:
                await self._record_kernel(live)
                await live.engine.recovery.prepare(kernel_alive=False)
                await rebuild_now(live.engine)
                await self._apply_restart_policy(live, before)
            except Exception as exc:
                reason = f"recovery after a server restart failed: {type(exc).__name__}: {exc}"
                log.error("notebook-bcc: workflow %s: %s", workflow_id, reason, exc_info=exc)
                with suppress(Exception):
                    await live.engine.fail_run(reason)
            if self._closing:
                await self._close_live(live)
                return
            self._live[workflow_id] = live
            log.info(
                "notebook-bcc: recovered workflow %s on %s (run %s -> %s, restart policy %s)",
                workflow_id,
                live.notebook_path,
                before.run.status,
                live.engine.snapshot.run.status,
                self.settings.restart_policy,
            )
            self._ensure_running(live)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.refused[workflow_id] = NotRecovered(
                reason="not_recovered",
                message=f"this server could not recover it: {type(exc).__name__}: {exc}",
            )
            log.error(
                "notebook-bcc: could not recover workflow %s: %s: %s; it stays listed (DELETE "
                "releases its notebook)",
                workflow_id,
                type(exc).__name__,
                exc,
                exc_info=exc,
            )
        finally:
            self._recovering.pop(workflow_id, None)

    async def _attach(self, store: AsyncStore, snapshot: WorkflowSnapshot) -> LiveWorkflow | None:
        """An engine for a stored workflow, on its notebook's session kernel (not prepared)."""
        workflow_id = snapshot.workflow_id
        notebook = snapshot.notebook_path
        if notebook is None:
            log.warning("notebook-bcc: workflow %s has no notebook path", workflow_id)
            return None
        options = restored_options(self.settings.engine, snapshot.options)
        self._check_planner_paths(snapshot)
        planner = REGISTRY.from_stored(snapshot.planner.model_dump(mode="json"))
        try:
            lock = self._notebook_locks.setdefault(notebook, asyncio.Lock())
            async with lock:
                if self._closing:
                    raise ServiceStoppedError("the notebook-bcc service is shutting down")
                cells = await store.call(lambda s: s.cells(workflow_id))
                title = snapshot.notebook.title
                document = NotebookDocument.from_cells(
                    [row.cell for row in cells],
                    {"title": title} if title else {},
                    workflow_id=workflow_id,
                    earlier_sources={row.cell_id: row.sources for row in cells},
                )
                # the notebook keeps its anchor across the restart (its first write would
                # otherwise drop it until the next flush); checked against the store above
                mirror = await store.call(lambda s: s.chain_anchor())
                put_anchor(document.nb.metadata, mirror, workflow_id)
                kernel = await self.kernels.for_notebook(notebook, options.kernel_name)
                try:
                    live = self._live_workflow(
                        await self._engine_on(
                            store=store,
                            planner=planner,
                            kernel=kernel,
                            notebook=notebook,
                            workflow_id=workflow_id,
                            document=document,
                            options=options,
                        ),
                        kernel,
                        notebook,
                    )
                except BaseException:
                    await self.kernels.discard(kernel)
                    raise
        except BaseException:
            await planner.aclose()
            raise
        return live

    def _check_planner_paths(self, snapshot: WorkflowSnapshot) -> None:
        """Refuse stored planner files outside the server root: the settings come from the
        store (no chain covers the snapshot), and a blueprint, transcript, template folder or
        recording directory elsewhere is one no client of this server could have named."""
        root = self.contents.root_dir
        if root is None:
            return
        real_root = os.path.realpath(root)
        for key in PLANNER_PATH_SETTINGS:
            value = snapshot.planner.settings.get(key)
            if not isinstance(value, str) or not value:
                continue
            real = os.path.realpath(os.path.join(root, value))
            if os.path.commonpath([real_root, real]) != real_root:
                raise PathForbiddenError(
                    f"its stored planner setting {key!r} ({value}) resolves outside the server "
                    "root",
                    details={"setting": key},
                )

    async def _end_orphan(self, snapshot: WorkflowSnapshot) -> None:
        """The kernel a dead server left running for this workflow is ended first, so that
        nothing it still does can race an in-doubt answer (see :mod:`.orphans`)."""
        live_ids = {str(k) for k in self.kernels.kernel_manager.list_kernel_ids()}
        outcome = await end_orphan(
            snapshot.kernel,
            live_kernel_ids=live_ids,
            connection_dir=getattr(self.kernels.kernel_manager, "connection_dir", None),
        )
        if outcome.status in ("killed", "none") and snapshot.kernel is not None:
            log.warning("notebook-bcc: workflow %s: %s", snapshot.workflow_id, outcome.detail)

    async def _record_kernel(self, live: LiveWorkflow) -> None:
        """Record the workflow's (new) kernel in its snapshot, for the next server."""
        engine = live.engine
        record = kernel_record(live.kernel.kernel_id, live.kernel.session_id, live.kernel.km)
        await engine.commit(engine.snapshot.model_copy(update={"kernel": record}))

    async def _apply_restart_policy(self, live: LiveWorkflow, before: WorkflowSnapshot) -> None:
        """After recovery: run on, or leave the run as the policy and its status say."""
        from notebook_bcc.engine.routing import with_run

        engine = live.engine
        snap = engine.snapshot
        if snap.run.pending or is_finished(snap):
            return  # waiting on a decision (kept, or in doubt / kernel rebuild): a human answers
        unfinished = before.run.status in ("running", "interrupted")
        if unfinished and self.settings.restart_policy == "resume":
            if snap.run.status != "running":
                await engine.command(
                    {"action": "run", "expected_version": snap.version}, check_version=False
                )
            return
        status: RunStatus
        reason: str | None
        if unfinished:
            status = "interrupted"
            reason = "the server restarted (restart_policy 'wait'): send 'run' to resume"
        elif snap.run.status != before.run.status:
            status, reason = before.run.status, before.run.reason
        else:
            return
        await engine.commit(with_run(snap, status, reason))

    async def wait_recovered(self) -> None:
        """Wait until every workflow found at start-up is recovered (or given up)."""
        tasks = list(self._recovering.values())
        if tasks:
            await asyncio.wait(tasks)


def _verify_against(kept: dict[str, Any], store: SqliteStore) -> None:
    """The store verified, and checked against an anchor kept outside it."""
    store.verification(external=kept)


async def _foreign(store: AsyncStore, kept: dict[str, Any]) -> bool:
    """Whether a notebook's anchor was written for a workflow this database does not hold
    (the notebook was run against another database first)."""
    owner = anchor_workflow(kept)
    return owner is not None and owner not in await store.call(lambda s: s.workflow_ids())
