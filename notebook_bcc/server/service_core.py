"""The workflow service's core: its state, the store, and the wiring of one engine.

:class:`ServiceCore` holds what every room of the service shares -- the settings, the
contents and kernel managers, the store (opened once), the live workflows and the
per-notebook locks -- and wires an engine to its kernel, notebook writer and event hub,
and drives its run loop. The rooms built on it: recovery after a restart
(:mod:`.recover`), creating workflows (:mod:`.create`), queries (:mod:`.queries`); the
service itself (:mod:`.service`) adds commands and shutdown.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import Any

from notebook_bcc.engine.engine import Engine
from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.engine.routing import with_run
from notebook_bcc.engine.runtime import KernelRuntime
from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.kernel.session import KernelSession
from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.planners.base import Planner
from notebook_bcc.server.coedit import Coediting
from notebook_bcc.server.contents import (
    Contents,
)
from notebook_bcc.server.encoding import SnapshotTexts
from notebook_bcc.server.errors import (
    ServiceStoppedError,
)
from notebook_bcc.server.kernels import Kernels, NotebookKernel
from notebook_bcc.server.live import LiveWorkflow, ServiceSettings
from notebook_bcc.server.models import NotRecovered
from notebook_bcc.server.restore import (
    replace_kernel,
    restart_kernel,
)
from notebook_bcc.server.save_pacing import SavePacer
from notebook_bcc.server.stopping import interrupt_running_cell
from notebook_bcc.server.store_place import claim_store
from notebook_bcc.server.stream import WorkflowHub
from notebook_bcc.server.writer import ContentsNotebookWriter
from notebook_bcc.store.async_store import AsyncStore
from notebook_bcc.store.sqlite import ReleaseReason

log = logging.getLogger(__name__)

DELETED = "stopped: the workflow was deleted from this server"


class ServiceCore:
    """State and engine wiring shared by the rooms of :class:`~.service.WorkflowService`."""

    coedit: Coediting | None = None
    """Open documents and collaboration rooms the writers write into (set by the app)."""

    def __init__(self, settings: ServiceSettings, contents: Contents, kernels: Kernels) -> None:
        self.settings = settings
        self.contents = contents
        self.kernels = kernels
        self._store: AsyncStore | None = None
        self._opening: asyncio.Lock | None = None
        self._live: dict[str, LiveWorkflow] = {}
        self._recovering: dict[str, asyncio.Task[None]] = {}
        self._notebook_locks: dict[str, asyncio.Lock] = {}
        self._closing = False
        self.file_ids: Any = None
        """Set by the app: the :class:`~notebook_bcc.server.file_ids.FileIdFollower` that
        hooks each workflow writer (None: notebooks are followed by contents events only)."""
        self.snapshot_texts = SnapshotTexts()
        """The JSON text of each live workflow's latest snapshot (:mod:`.encoding`)."""
        self.save_pacer = SavePacer()
        """Debounced notebook saves of every workflow here take turns (:mod:`.save_pacing`)."""
        self.recovered: list[str] = []
        """Active workflows found in the store at start-up (left by an earlier server)."""
        self.store_check: asyncio.Future[str | None] | None = None
        """The start-up verification of the store (None: nothing was active to recover, so
        nothing was checked): its result is what makes the store untrustworthy, or None."""
        self.refused: dict[str, NotRecovered] = {}
        """Workflows found active at start-up and not recovered: a reason code (``altered``:
        the store was changed behind its back, :meth:`~.recover.RecoveryRoom._altered`;
        ``not_recovered``: recovery failed) and a message, as ``GET /workflows`` lists them."""

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> AsyncStore:
        """Open the store (once) and apply the restart policy to what it holds."""
        if self._store is not None:
            return self._store
        if self._closing:
            raise ServiceStoppedError("the notebook-bcc service is shutting down")
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._store is None:
                if self.settings.server_root is not None:
                    root = self.settings.server_root
                    await asyncio.to_thread(claim_store, self.settings.store_path, root)
                store = await AsyncStore.open(self.settings.store_path)
                # published once the recoveries are registered: a caller that finds the store
                # open then also finds a workflow's recovery to wait for (not "not live")
                await self._recover(store)
                self._store = store
        assert self._store is not None
        return self._store

    async def _recover(self, store: AsyncStore) -> None:
        """Bring back what an earlier server left active (see :mod:`.recover`)."""

    async def _recovered(self, workflow_id: str) -> None:
        """Wait until the workflow's recovery after a restart (if any) has finished."""
        task = self._recovering.get(workflow_id)
        if task is not None:
            await asyncio.wait([task])

    async def _engine_on(
        self,
        *,
        store: AsyncStore,
        planner: Planner,
        kernel: NotebookKernel,
        notebook: str,
        workflow_id: str,
        document: NotebookDocument,
        options: EngineOptions,
    ) -> Engine:
        """A stored workflow's engine writing through the contents manager."""
        runtime = self._runtime(notebook, workflow_id, document, kernel.km, options)
        return await Engine.attach(
            store=store, planner=planner, runtime=runtime, workflow_id=workflow_id, options=options
        )

    def _live_workflow(self, engine: Engine, kernel: NotebookKernel, notebook: str) -> LiveWorkflow:
        hub = WorkflowHub(lambda: engine.snapshot, limit=self.settings.stream_buffer)
        live = LiveWorkflow(engine=engine, kernel=kernel, hub=hub, notebook_path=notebook)
        engine.subscribe(self._listener(live))
        engine.runtime.kernel_replacer = partial(replace_kernel, self.kernels, live)
        engine.runtime.kernel_restarter = partial(restart_kernel, self.kernels, live)
        return live

    def _listener(self, live: LiveWorkflow) -> Callable[[WorkflowEvent], None]:
        kernels = self.kernels

        def on_event(event: WorkflowEvent) -> None:
            live.hub.publish(event)
            kernels.touch(live.kernel.kernel_id)

        return on_event

    def _runtime(
        self,
        notebook: str,
        workflow_id: str,
        document: NotebookDocument,
        km: Any,
        options: EngineOptions,
    ) -> KernelRuntime:
        """The kernel side of a workflow: the session kernel and the contents-manager writer."""
        writer = ContentsNotebookWriter(
            self.contents,
            notebook,
            document,
            debounce=options.write_debounce,
            coedit=self.coedit,
            pacer=self.save_pacer,
        )
        if self.coedit is not None:
            self.coedit.register(workflow_id, writer)
        if self.file_ids is not None:
            self.file_ids.attach(writer)
        runtime = KernelRuntime(
            notebook_path=Path(self.contents.os_path(notebook) or notebook),
            workflow_id=workflow_id,
            document=document,
            # a cancelled cell gets a quarter of a stop's budget to end (see _retire)
            session=KernelSession(km=km, interrupt_grace=self.settings.stop_timeout / 4),
            kernel_name=options.kernel_name,
            cell_timeout=options.cell_timeout,
            write_debounce=options.write_debounce,
            writer=writer,
        )
        runner = runtime.runner
        writer.running_cell = lambda: runner.executing
        return runtime

    # -- running --------------------------------------------------------------------------

    def _ensure_running(self, live: LiveWorkflow) -> None:
        """Start the run loop unless it runs already or the run is not ``running``."""
        if self._closing or live.running or live.engine.stopped():
            return
        if self._live.get(live.workflow_id) is not live:
            return  # retired meanwhile (deleted while a command was being answered)
        live.task = asyncio.ensure_future(self._drive(live))

    async def _drive(self, live: LiveWorkflow) -> None:
        """``engine.run()`` while the run stays ``running`` (a command may have resumed it
        while the previous call was finishing). Nothing awaits after the final check, so a
        command that sees this task as not done can rely on it to pick the new status up."""
        engine = live.engine
        while True:
            try:
                await engine.run()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                live.failure = f"{type(exc).__name__}: {exc}"
                log.error(
                    "notebook-bcc: the run loop of %s stopped: %s",
                    live.workflow_id,
                    live.failure,
                    exc_info=exc,
                )
                with suppress(Exception):
                    await engine.fail_run(f"the engine stopped unexpectedly: {live.failure}")
                return
            if self._closing or engine.stopped():
                return

    async def _retire(self, workflow_id: str, reason: ReleaseReason) -> WorkflowSnapshot:
        """Stop a live workflow's loop, close its channels, deactivate it (``reason``: deleted,
        or replaced by a new workflow on its notebook), end its feeds."""
        live = self._live.pop(workflow_id, None)
        self.snapshot_texts.forget(workflow_id)
        store = await self.start()
        if live is None:
            await store.call(lambda s: s.deactivate(workflow_id, reason))
            return await store.load(workflow_id)
        task = live.task
        if task is not None and not task.done():
            live.engine.request_interrupt(DELETED)
            await interrupt_running_cell(live, self.kernels)  # a stuck cell must not hold it
            _, late = await asyncio.wait([task], timeout=self.settings.stop_timeout / 2)
            if late:
                # cancelled, the loop still writes what it has (its cell given a quarter of
                # the budget to end): wait for that, or it writes to a closed store
                task.cancel()
                await asyncio.wait([task], timeout=self.settings.stop_timeout / 2)
            if task.done() and live.engine.snapshot.run.status == "running":
                # the loop was cancelled before its safe point: the stop is recorded here
                await live.engine.commit(with_run(live.engine.snapshot, "interrupted", DELETED))
        elif live.engine.lock.locked():
            # no run loop, but a command executes a cell (an approved re-run of a lost
            # irreversible cell): stop that cell, and let the command record how it ended
            await interrupt_running_cell(live, self.kernels)
            with suppress(TimeoutError):
                await asyncio.wait_for(_lock_free(live), self.settings.stop_timeout / 2)
        await self._close_live(live)
        await store.call(lambda s: s.deactivate(workflow_id, reason))
        snapshot = live.engine.snapshot
        live.hub.close_all(snapshot)
        return snapshot

    async def _close_live(self, live: LiveWorkflow) -> None:
        """Write the notebook, close the kernel channels (the kernel stays), free the planner."""
        for what, close in (
            ("notebook and kernel channels", live.engine.runtime.close),
            ("planner", live.engine.planner.aclose),
        ):
            try:
                await close()
            except Exception as exc:
                log.warning("notebook-bcc: closing the %s of %s: %s", what, live.workflow_id, exc)


async def _lock_free(live: LiveWorkflow) -> None:
    """Return once no step or command of ``live``'s engine holds its lock."""
    async with live.engine.lock:
        return
