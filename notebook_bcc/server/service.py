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
import dataclasses
import itertools
import logging
import uuid
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from notebook_bcc.engine.engine import Engine
from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.engine.runtime import KernelRuntime
from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.kernel.session import KernelSession
from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.models.names import State
from notebook_bcc.models.snapshot import RunStatus, WorkflowSnapshot, new_snapshot
from notebook_bcc.planners.base import Planner
from notebook_bcc.server.coedit import Coediting
from notebook_bcc.server.contents import (
    Contents,
    api_path,
    folder_of,
    join_api,
    notebook_api_path,
    relative_to_folder,
)
from notebook_bcc.server.errors import (
    BadRequestError,
    PlannerUnavailableError,
    ServiceStoppedError,
    WorkflowNotLiveError,
)
from notebook_bcc.server.kernels import Kernels, NotebookKernel
from notebook_bcc.server.models import (
    BlueprintPlannerSpec,
    CreateWorkflowRequest,
    DiagramDocument,
    HttpPlannerSpec,
    LlmPlannerSpec,
    PlannerKind,
    PlannerList,
    PlannerSpec,
    ReplayPlannerSpec,
    TraceDocument,
    WorkflowList,
    WorkflowSummary,
)
from notebook_bcc.server.orphans import end_orphan
from notebook_bcc.server.restore import (
    kernel_record,
    persisted_options,
    rebuild_now,
    replace_kernel,
    restored_options,
)
from notebook_bcc.server.stopping import interrupt_running_cell, is_stop, stop_command
from notebook_bcc.server.stream import EventFeed, WorkflowHub
from notebook_bcc.server.writer import ContentsNotebookWriter
from notebook_bcc.store.errors import NotebookBusyError
from notebook_bcc.store.sqlite import AsyncStore

log = logging.getLogger(__name__)

RestartPolicy = Literal["resume", "wait"]

AVAILABLE_PLANNERS = ("blueprint", "replay", "http", "llm")
"""Planner kinds this installation can run; the others are validated, then answered 501."""

_FINISHED_STATES = frozenset({State.WORKFLOW_COMPLETED, State.CANCELLED})

_PLANNER_SPEC: TypeAdapter[PlannerSpec] = TypeAdapter(PlannerSpec)


@dataclass(frozen=True)
class ServiceSettings:
    """What the service needs from the extension's configuration."""

    store_path: Path
    engine: EngineOptions = field(default_factory=EngineOptions)
    default_planner: dict[str, Any] = field(default_factory=dict)
    stream_buffer: int = 1000
    stop_timeout: float = 10.0
    restart_policy: RestartPolicy = "resume"
    allowed_planners: tuple[str, ...] = AVAILABLE_PLANNERS
    """Kinds this server's configuration lets clients start (``allowed_planners`` trait)."""


@dataclass
class LiveWorkflow:
    """A workflow an engine drives in this server process."""

    engine: Engine
    kernel: NotebookKernel
    hub: WorkflowHub
    notebook_path: str
    task: asyncio.Task[None] | None = None
    failure: str | None = None
    """The last exception that escaped the engine's run loop (logged too)."""

    @property
    def workflow_id(self) -> str:
        """The workflow's id."""
        return self.engine.snapshot.workflow_id

    @property
    def running(self) -> bool:
        """True while the run loop executes."""
        return self.task is not None and not self.task.done()


def is_finished(snapshot: WorkflowSnapshot) -> bool:
    """Completed or cancelled: nothing more will happen in this workflow."""
    return snapshot.fsm.state in _FINISHED_STATES or snapshot.run.status in (
        "completed",
        "cancelled",
    )


def may_yield_notebook(snapshot: WorkflowSnapshot) -> bool:
    """Finished or failed: a new workflow on the notebook archives this one.

    A failed run can be retried from its own record until then; starting anew on its
    notebook must never be refused (a failure is not a dead end)."""
    return is_finished(snapshot) or snapshot.run.status == "failed"


def _validation_problems(exc: ValidationError) -> list[str]:
    return [
        "/" + "/".join(str(part) for part in error["loc"]) + ": " + error["msg"]
        for error in exc.errors()
    ]


class WorkflowService:
    """Creates, drives, commands and stops workflows; answers queries from the store."""

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
        self.recovered: list[str] = []
        """Active workflows found in the store at start-up (left by an earlier server)."""

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
                store = await AsyncStore.open(self.settings.store_path)
                self._store = store
                await self._recover(store)
        assert self._store is not None
        return self._store

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
        for workflow_id in ids:
            if workflow_id in self._live or workflow_id in self._recovering:
                continue
            self._recovering[workflow_id] = asyncio.ensure_future(
                self._recover_one(store, workflow_id)
            )

    async def _recover_one(self, store: AsyncStore, workflow_id: str) -> None:
        """Attach, prepare and (per the restart policy) restart one workflow; never raises."""
        try:
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
        from notebook_bcc.engine.headless import planner_for

        workflow_id = snapshot.workflow_id
        notebook = snapshot.notebook_path
        if notebook is None:
            log.warning("notebook-bcc: workflow %s has no notebook path", workflow_id)
            return None
        options = restored_options(self.settings.engine, snapshot.options)
        planner = planner_for(snapshot.planner.model_dump(mode="json"))
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
                )
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

    async def _end_orphan(self, snapshot: WorkflowSnapshot) -> None:
        """The kernel a dead server left running for this workflow is ended first, so that
        nothing it still does can race an in-doubt answer (see :mod:`.orphans`)."""
        live_ids = {str(k) for k in self.kernels.kernel_manager.list_kernel_ids()}
        outcome = await end_orphan(snapshot.kernel, live_kernel_ids=live_ids)
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

    async def close(self) -> None:
        """Shutdown: interrupt every run at its next safe point, close channels and the store.

        Workflows stay active in the store (interrupted, resumable); kernels are left to the
        server, which shuts its kernels down after its extensions.
        """
        self._closing = True
        recovering = list(self._recovering.values())
        if recovering:
            _, late = await asyncio.wait(recovering, timeout=self.settings.stop_timeout)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late, timeout=self.settings.stop_timeout)
        lives = list(self._live.values())
        for live in lives:
            live.engine.request_interrupt()
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

    async def _recovered(self, workflow_id: str) -> None:
        """Wait until the workflow's recovery after a restart (if any) has finished."""
        task = self._recovering.get(workflow_id)
        if task is not None:
            await asyncio.wait([task])

    async def wait_recovered(self) -> None:
        """Wait until every workflow found at start-up is recovered (or given up)."""
        tasks = list(self._recovering.values())
        if tasks:
            await asyncio.wait(tasks)

    def activity(self) -> list[dict[str, Any]]:
        """The workflows whose run loop executes now (the server's idle check reads this)."""
        return [
            {
                "workflow_id": live.workflow_id,
                "notebook_path": live.notebook_path,
                "run_status": live.engine.snapshot.run.status,
            }
            for live in self._live.values()
            if live.running
        ]

    def live_workflows(self) -> list[LiveWorkflow]:
        """The workflows engines drive in this server now."""
        return list(self._live.values())

    def live(self, workflow_id: str) -> LiveWorkflow | None:
        """The live workflow with this id, if an engine drives it here."""
        return self._live.get(workflow_id)

    # -- queries --------------------------------------------------------------------------

    async def snapshot(self, workflow_id: str) -> WorkflowSnapshot:
        """The current snapshot (the engine's for a live workflow, else the stored one)."""
        live = self._live.get(workflow_id)
        if live is not None:
            return live.engine.snapshot
        store = await self.start()
        return await store.load(workflow_id)

    async def list_workflows(self, notebook_path: str | None = None) -> WorkflowList:
        """Every workflow in the store, oldest first, optionally for one notebook."""
        store = await self.start()
        path = notebook_api_path(notebook_path) if notebook_path is not None else None

        def read(s: Any) -> tuple[list[WorkflowSnapshot], set[str]]:
            ids = s.workflow_ids(notebook_path=path)
            active = set(s.workflow_ids(notebook_path=path, active=True))
            return [s.load(i) for i in ids], active

        snapshots, active = await store.call(read)
        rows = []
        for stored in snapshots:
            live = self._live.get(stored.workflow_id)
            snap = live.engine.snapshot if live is not None else stored
            rows.append(
                WorkflowSummary(
                    workflow_id=snap.workflow_id,
                    notebook_path=snap.notebook_path,
                    version=snap.version,
                    state=snap.fsm.state.value,
                    run_status=snap.run.status,
                    reason=snap.run.reason,
                    pending=len(snap.run.pending),
                    active=snap.workflow_id in active,
                    live=live is not None,
                    running=live is not None and live.running,
                    kernel_id=live.kernel.kernel_id if live is not None else None,
                    last_activity=max(
                        (t for t in (snap.fsm.timestamp, snap.run.since) if t), default=None
                    ),
                )
            )
        return WorkflowList(workflows=rows)

    def planner_kinds(self) -> PlannerList:
        """Every planner kind, whether this server runs it and why not, with its defaults."""
        default = self.settings.default_planner
        rows: list[PlannerKind] = []
        for kind in ("blueprint", "replay", "http", "llm"):
            reason = self._unavailable(kind)
            defaults = (
                {key: value for key, value in default.items() if key != "kind"}
                if default.get("kind") == kind
                else {}
            )
            rows.append(
                PlannerKind.model_validate(
                    {
                        "kind": kind,
                        "available": reason is None,
                        "reason": reason,
                        "defaults": defaults,
                    }
                )
            )
        return PlannerList(planners=rows)

    def _unavailable(self, kind: str) -> str | None:
        """Why ``kind`` cannot start here, or None."""
        if kind not in AVAILABLE_PLANNERS:
            return f"the {kind} planner is not part of this installation"
        if kind not in self.settings.allowed_planners:
            allowed = ", ".join(self.settings.allowed_planners) or "none"
            return (
                f"the {kind} planner is turned off on this server "
                f"(NotebookBccApp.allowed_planners: {allowed})"
            )
        return None

    async def trace(self, workflow_id: str) -> TraceDocument:
        """The full FSM history and execution trace from the store."""
        store = await self.start()
        await store.load(workflow_id)
        history = await store.call(lambda s: s.history(workflow_id))
        trace = await store.call(lambda s: s.trace(workflow_id))
        return TraceDocument(workflow_id=workflow_id, history=history, trace=trace)

    async def diagram(self, workflow_id: str, machine: str) -> DiagramDocument:
        """Mermaid for the 14-state FSM or the stage machine, the current state marked."""
        from notebook_bcc.blueprint.diagram import rule_machine_mermaid
        from notebook_bcc.fsm.mermaid import state_diagram, workflow_fsm_mermaid
        from notebook_bcc.fsm.rules import RuleMachine

        if machine not in ("fsm", "stages"):
            raise BadRequestError(
                f"machine: expected 'fsm' or 'stages', got {machine!r}",
                details={"machine": machine},
            )
        snap = await self.snapshot(workflow_id)
        if machine == "fsm":
            state = snap.fsm.state.value
            return DiagramDocument(
                workflow_id=workflow_id,
                machine="fsm",
                current=state,
                mermaid=workflow_fsm_mermaid(state),
            )
        stages = snap.location.progress.stages
        current = snap.stage_machine.current_state or (
            stages.current.id if stages.current is not None else None
        )
        live = self._live.get(workflow_id)
        rules = getattr(live.engine.planner, "machine", None) if live is not None else None
        if isinstance(rules, RuleMachine):
            text = rule_machine_mermaid(rules, current)
        else:
            order = [
                *(item.id for item in stages.completed),
                *([stages.current.id] if stages.current is not None else []),
                *(item.id for item in stages.remaining),
            ]
            names = list(dict.fromkeys(order))
            edges = [(a, "", b) for a, b in itertools.pairwise(names)]
            text = state_diagram(
                names,
                edges,
                start=names[0] if names else None,
                ends=names[-1:],
                current=current if current in names else None,
            )
        return DiagramDocument(
            workflow_id=workflow_id, machine="stages", current=current, mermaid=text
        )

    async def open_feed(self, workflow_id: str) -> tuple[EventFeed, Callable[[], None]]:
        """A client's event feed and the function that releases it.

        For a workflow no engine drives here, the feed holds the stored snapshot and ends.
        """
        live = self._live.get(workflow_id)
        if live is not None:
            feed = live.hub.open()
            hub = live.hub
            return feed, lambda: hub.release(feed)
        store = await self.start()
        stored = await store.load(workflow_id)
        feed = EventFeed(self.settings.stream_buffer, lambda: stored)
        feed.close(stored)
        return feed, feed.close

    # -- create ---------------------------------------------------------------------------

    async def create(self, request: CreateWorkflowRequest) -> WorkflowSnapshot:
        """Validate, create and start a workflow; returns its first snapshot (see module doc)."""
        store = await self.start()
        notebook = notebook_api_path(request.notebook_path)
        self.contents.check_inside_root(notebook, what="notebook_path")
        spec = self._planner_spec(request.planner)
        unavailable = self._unavailable(spec.kind)
        if unavailable is not None:
            raise PlannerUnavailableError(
                f"planner: {unavailable}",
                details={"kind": spec.kind, "allowed": list(self.settings.allowed_planners)},
            )
        planner, planner_files = await self._planner(spec)
        try:
            files = await self._input_files(planner_files, request.files)
            options = dataclasses.replace(
                self.settings.engine, **request.options.model_dump(exclude_none=True)
            )
            problem = request.problem
            if problem is None and isinstance(spec, BlueprintPlannerSpec):
                problem = getattr(getattr(planner, "blueprint", None), "name", None)
            if problem is None and isinstance(spec, ReplayPlannerSpec):
                problem = getattr(planner, "problem", None)
            lock = self._notebook_locks.setdefault(notebook, asyncio.Lock())
            async with lock:
                if self._closing:
                    raise ServiceStoppedError("the notebook-bcc service is shutting down")
                await self._release_finished(store, notebook)
                live = await self._open_engine(
                    store,
                    planner,
                    notebook=notebook,
                    problem=problem,
                    files=[relative_to_folder(path, folder_of(notebook)) for path in files],
                    options=options,
                )
        except BaseException:
            await planner.aclose()
            raise
        self._live[live.workflow_id] = live
        self._ensure_running(live)
        return live.engine.snapshot

    def _planner_spec(self, given: PlannerSpec | None) -> PlannerSpec:
        default = self.settings.default_planner
        if given is None:
            if not default:
                raise BadRequestError(
                    "planner: required (this server has no default planner configured)",
                    details={"field": "planner"},
                )
            data = dict(default)
        elif default and default.get("kind") == given.kind:
            data = {**default, **given.model_dump(exclude_unset=True)}
        else:
            return given
        try:
            return _PLANNER_SPEC.validate_python(data)
        except ValidationError as exc:
            problems = _validation_problems(exc)
            raise BadRequestError(
                "planner (with the server's default_planner): " + "; ".join(problems),
                details={"errors": problems},
            ) from None

    async def _template_folder(self, raw: str) -> tuple[str, str]:
        """An llm planner's template folder: (API path, OS path), confined to the root.

        Each ``.md`` file in it is checked too: a symlink out of the root would send a file
        of the server's into the prompts.
        """
        folder = api_path(raw, what="planner.templates")
        self.contents.check_inside_root(folder, what="planner.templates")
        if not await self.contents.dir_exists(folder):
            raise BadRequestError(
                f"planner.templates: no such folder {folder!r}", details={"path": folder}
            )
        os_folder = self.contents.os_path(folder)
        if os_folder is None:
            raise BadRequestError(
                "planner.templates: prompt templates need a file-backed contents manager",
                details={"path": folder},
            )
        for entry in sorted(Path(os_folder).glob("*.md")):
            self.contents.check_inside_root(f"{folder}/{entry.name}", what="planner.templates")
        return folder, os_folder

    async def _planner(self, spec: PlannerSpec) -> tuple[Planner, list[str]]:
        """The planner a spec names and the input files it declares (API paths)."""
        if isinstance(spec, ReplayPlannerSpec):
            return await self._replay_planner(spec)
        if isinstance(spec, HttpPlannerSpec):
            from notebook_bcc.planners.http import HttpPlanner, HttpPlannerSettings

            settings = HttpPlannerSettings(
                url=spec.url,
                total_timeout=spec.timeout or HttpPlannerSettings.total_timeout,
                state_case=spec.state_case or "upper",
            )
            return HttpPlanner(settings), []
        if isinstance(spec, LlmPlannerSpec):
            from notebook_bcc.planners.llm import LlmPlanner, LlmSettings, LlmSettingsError
            from notebook_bcc.planners.llm.errors import TemplateError
            from notebook_bcc.planners.llm.settings import api_key

            if not spec.base_url:
                raise BadRequestError(
                    "planner.base_url: required for an llm planner (the API root with its "
                    "version, e.g. http://127.0.0.1:11434/v1)",
                    details={"field": "planner.base_url"},
                )
            options: dict[str, Any] = {"base_url": spec.base_url, "model": spec.model}
            for key in ("api_key_env", "temperature", "stream", "max_tokens", "max_parse_retries"):
                if getattr(spec, key) is not None:
                    options[key] = getattr(spec, key)
            templates: tuple[str, str] | None = None
            if spec.templates is not None:
                templates = await self._template_folder(spec.templates)
                options["templates"] = templates[1]
            try:
                llm_settings = LlmSettings(**options)
                api_key(llm_settings)  # a named variable missing on the server: 400 now
                return LlmPlanner(llm_settings), []
            except (LlmSettingsError, TemplateError) as exc:
                message = exc.message
                if templates is not None:  # name files by API path, never the server OS path
                    message = message.replace(templates[1], templates[0])
                raise BadRequestError(f"planner: {message}", details={"kind": "llm"}) from None
        if not isinstance(spec, BlueprintPlannerSpec):
            raise PlannerUnavailableError(
                f"planner kind {spec.kind!r} is not available in this installation "
                f"(available: {', '.join(AVAILABLE_PLANNERS)})",
                details={"kind": spec.kind, "available": list(AVAILABLE_PLANNERS)},
            )
        from notebook_bcc.planners.blueprint import BlueprintPlanner
        from notebook_bcc.server.blueprints import load_blueprint_api

        path = api_path(spec.path, what="planner.path")
        self.contents.check_inside_root(path, what="planner.path")
        if not await self.contents.exists(path):
            raise BadRequestError(f"planner.path: no such file {path!r}", details={"path": path})
        loaded = await load_blueprint_api(self.contents, path)  # size-capped, off the loop
        os_path = self.contents.os_path(path)
        if os_path is not None:
            # recorded in snapshot.planner.settings: what a later server needs to reload it
            loaded = dataclasses.replace(loaded, path=Path(os_path))
        planner = BlueprintPlanner(loaded)
        folder = folder_of(path)
        files = [join_api(folder, name, what=f"{path} files") for name in loaded.blueprint.files]
        return planner, files

    async def _replay_planner(self, spec: ReplayPlannerSpec) -> tuple[Planner, list[str]]:
        """A recorded transcript folder under the root, played back with its inputs."""
        from notebook_bcc.server.transcripts import open_replay_api

        return await open_replay_api(self.contents, spec.path)  # every path confined, off-loop

    async def _input_files(self, declared: list[str], given: list[str]) -> list[str]:
        """Blueprint files then request files, as checked API paths that exist."""
        paths = list(declared)
        for index, raw in enumerate(given):
            paths.append(api_path(raw, what=f"files[{index}]"))
        missing = []
        for path in paths:
            self.contents.check_inside_root(path, what="files")
            if not await self.contents.exists(path):
                missing.append(path)
        if missing:
            raise BadRequestError(
                f"input file(s) not found: {', '.join(missing)}", details={"missing": missing}
            )
        return list(dict.fromkeys(paths))

    async def _release_finished(self, store: AsyncStore, notebook: str) -> None:
        """Retire the notebook's earlier workflows if they are finished, else refuse (409).

        The store releases a notebook by itself when a run completes or is cancelled; an
        engine still registered here for it is retired too, so that a later RESET on it
        cannot compete with the new workflow for the notebook.
        """
        ids = await store.call(lambda s: s.workflow_ids(notebook_path=notebook, active=True))
        earlier = [wid for wid, live in self._live.items() if live.notebook_path == notebook]
        for workflow_id in dict.fromkeys([*ids, *earlier]):
            live = self._live.get(workflow_id)
            snap = live.engine.snapshot if live is not None else await store.load(workflow_id)
            if not may_yield_notebook(snap) or (live is not None and live.running):
                raise NotebookBusyError(notebook, workflow_id)
            await self._retire(workflow_id)

    async def _open_engine(
        self,
        store: AsyncStore,
        planner: Planner,
        *,
        notebook: str,
        problem: str | None,
        files: list[str],
        options: EngineOptions,
    ) -> LiveWorkflow:
        workflow_id = f"wf-{uuid.uuid4().hex[:12]}"
        document = await self._document(notebook, workflow_id)
        kernel = await self.kernels.for_notebook(notebook, options.kernel_name)
        try:
            runtime = self._runtime(notebook, workflow_id, document, kernel.km, options)
            snapshot = new_snapshot(
                workflow_id,
                uuid.uuid4().hex[:12],
                notebook_path=notebook,
                problem=problem,
                files=files,
            ).model_copy(
                update={
                    "options": persisted_options(options),
                    "kernel": kernel_record(kernel.kernel_id, kernel.session_id, kernel.km),
                }
            )
            engine = await Engine.start_new(
                store=store, planner=planner, runtime=runtime, snapshot=snapshot, options=options
            )
        except BaseException:
            await self.kernels.discard(kernel)
            raise
        return self._live_workflow(engine, kernel, notebook)

    def _live_workflow(self, engine: Engine, kernel: NotebookKernel, notebook: str) -> LiveWorkflow:
        hub = WorkflowHub(lambda: engine.snapshot, limit=self.settings.stream_buffer)
        live = LiveWorkflow(engine=engine, kernel=kernel, hub=hub, notebook_path=notebook)
        engine.subscribe(self._listener(live))
        engine.runtime.kernel_replacer = partial(replace_kernel, self.kernels, live)
        return live

    async def _document(self, notebook: str, workflow_id: str) -> NotebookDocument:
        """The notebook as the workflow starts on it: read (D19: appended to, never re-run)
        or created empty through the contents manager so JupyterLab can open it at once."""
        import nbformat

        if await self.contents.exists(notebook):
            content, _ = await self.contents.read_notebook(notebook)
            nb = nbformat.from_dict(content)  # type: ignore[no-untyped-call]
            return NotebookDocument(nb, workflow_id=workflow_id)
        if await self.contents.dir_exists(notebook):
            raise BadRequestError(
                f"notebook_path: {notebook!r} is a folder", details={"path": notebook}
            )
        await self.contents.ensure_folder(folder_of(notebook))
        document = NotebookDocument(workflow_id=workflow_id)
        await self.contents.save_notebook(notebook, _plain(document.nb))
        return document

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
            self.contents, notebook, document, debounce=options.write_debounce, coedit=self.coedit
        )
        if self.coedit is not None:
            self.coedit.register(workflow_id, writer)
        if self.file_ids is not None:
            self.file_ids.attach(writer)
        return KernelRuntime(
            notebook_path=Path(self.contents.os_path(notebook) or notebook),
            workflow_id=workflow_id,
            document=document,
            session=KernelSession(km=km),
            kernel_name=options.kernel_name,
            cell_timeout=options.cell_timeout,
            write_debounce=options.write_debounce,
            writer=writer,
        )

    # -- running --------------------------------------------------------------------------

    def _ensure_running(self, live: LiveWorkflow) -> None:
        """Start the run loop unless it runs already or the run is not ``running``."""
        if self._closing or live.running or live.engine.stopped():
            return
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
        else:
            snapshot = await live.engine.command(body)
        self._ensure_running(live)
        return snapshot

    async def _require_live(self, workflow_id: str) -> LiveWorkflow:
        await self._recovered(workflow_id)
        live = self._live.get(workflow_id)
        if live is not None:
            return live
        snapshot = await self.snapshot(workflow_id)
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
            return await self._retire(workflow_id)
        store = await self.start()
        snapshot = await store.load(workflow_id)
        await store.call(lambda s: s.deactivate(workflow_id))
        return snapshot

    async def _retire(self, workflow_id: str) -> WorkflowSnapshot:
        """Stop a live workflow's loop, close its channels, deactivate it, end its feeds."""
        live = self._live.pop(workflow_id, None)
        store = await self.start()
        if live is None:
            await store.call(lambda s: s.deactivate(workflow_id))
            return await store.load(workflow_id)
        task = live.task
        if task is not None and not task.done():
            live.engine.request_interrupt()
            await interrupt_running_cell(live, self.kernels)  # a stuck cell must not hold it
            _, late = await asyncio.wait([task], timeout=self.settings.stop_timeout / 2)
            if late:
                task.cancel()
                await asyncio.wait([task], timeout=self.settings.stop_timeout / 4)
        await self._close_live(live)
        await store.call(lambda s: s.deactivate(workflow_id))
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


def _plain(nb: Any) -> dict[str, Any]:
    """A notebook node as plain JSON data."""
    import json

    data: dict[str, Any] = json.loads(json.dumps(nb))
    return data


__all__ = [
    "AVAILABLE_PLANNERS",
    "LiveWorkflow",
    "ServiceSettings",
    "WorkflowService",
    "is_finished",
]
