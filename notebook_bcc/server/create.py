"""Creating a workflow: paths and planner checked first, then the engine on its notebook."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from typing import Any

from notebook_bcc.blueprint.parameters import ParameterError
from notebook_bcc.engine.engine import Engine
from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.kernel.cells import bcc_of
from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.models.snapshot import WorkflowSnapshot, new_snapshot
from notebook_bcc.planners.base import Planner
from notebook_bcc.planners.capabilities import parameters_for, problem_of
from notebook_bcc.server.contents import (
    folder_of,
    notebook_api_path,
    relative_to_folder,
)
from notebook_bcc.server.delivery import DELIVERY_WAIT
from notebook_bcc.server.errors import (
    BadRequestError,
    PlannerUnavailableError,
    ServiceStoppedError,
    StoreAlteredError,
)
from notebook_bcc.server.kernels import NotebookKernel
from notebook_bcc.server.live import LiveWorkflow, may_yield_notebook
from notebook_bcc.server.models import (
    CreateWorkflowRequest,
)
from notebook_bcc.server.planner_specs import PlannerSpecs
from notebook_bcc.server.request_paths import ROOT, PathBase
from notebook_bcc.server.restore import (
    kernel_record,
    persisted_options,
)
from notebook_bcc.server.service_core import ServiceCore
from notebook_bcc.server.writer import ContentsNotebookWriter
from notebook_bcc.store.async_store import AsyncStore
from notebook_bcc.store.errors import NotebookBusyError
from notebook_bcc.store.sqlite import SqliteStore
from notebook_bcc.workflow.effects import add_current

log = logging.getLogger(__name__)

EARLIER_SEEN = 20
"""How many of a notebook's latest workflows are looked at for one that ran on its kernel."""


class CreateRoom(ServiceCore):
    """``POST /workflows``: validate, create in the store, start the run loop."""

    planners: PlannerSpecs

    async def create(self, request: CreateWorkflowRequest) -> WorkflowSnapshot:
        """Validate, create and start a workflow; returns its first snapshot (see module doc)."""
        store = await self.start()
        if self.store_check is not None:
            altered = await asyncio.shield(self.store_check)
            if altered is not None:
                raise StoreAlteredError(
                    f"no new workflow is written into this store: {altered}. Move the file "
                    "aside (or set c.NotebookBccApp.store_path) to start anew",
                    details={"reason": "altered"},
                )
        notebook = notebook_api_path(request.notebook_path)
        self.contents.check_inside_root(notebook, what="notebook_path")
        spec = self.planners.spec(request.planner)
        unavailable = self.planners.unavailable(spec.kind)
        if unavailable is not None:
            raise PlannerUnavailableError(
                f"planner: {unavailable}",
                details={"kind": spec.kind, "allowed": list(self.settings.allowed_planners)},
            )
        from_notebook = PathBase(folder_of(notebook))
        planner, planner_files = await self.planners.build(
            spec,
            from_notebook if request.planner_paths_relative_to == "notebook" else ROOT,
            request.planner.model_fields_set if request.planner is not None else frozenset(),
        )
        try:
            base = from_notebook if request.files_relative_to == "notebook" else ROOT
            files = await self._input_files(planner_files, request.files, base=base)
            options = dataclasses.replace(
                self.settings.engine, **request.options.model_dump(exclude_none=True)
            )
            problem = request.problem if request.problem is not None else problem_of(planner)
            try:
                parameters = parameters_for(planner, request.parameters)
            except ParameterError as exc:
                raise BadRequestError(f"parameters: {exc.message}", details=exc.details) from None
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
                    parameters=parameters,
                    options=options,
                    fresh_kernel=request.fresh_kernel,
                )
        except BaseException:
            await planner.aclose()
            raise
        self._live[live.workflow_id] = live
        self._ensure_running(live)
        return live.engine.snapshot

    async def _input_files(
        self, declared: list[str], given: list[str], *, base: PathBase = ROOT
    ) -> list[str]:
        """Blueprint files then request files, as checked API paths that exist.

        ``base`` is what request files are relative to (the notebook's folder, or the root
        for API paths); either way the result is confined to the root. A missing file is a
        400 naming its field, what was given and where it was looked for.
        """
        requested = [
            (f"files[{index}]", raw, base.resolve(raw, what=f"files[{index}]"))
            for index, raw in enumerate(given)
        ]
        paths = [*declared, *(path for _, _, path in requested)]
        for path in paths:
            self.contents.check_inside_root(path, what="files")
        missing = [path for path in dict.fromkeys(paths) if not await self.contents.exists(path)]
        if missing:
            problems = [
                f"the blueprint's files: no such file {path!r}"
                for path in declared
                if path in missing
            ]
            problems += [
                base.missing(what, raw, path) for what, raw, path in requested if path in missing
            ]
            raise BadRequestError(
                "input files not found: " + "; ".join(dict.fromkeys(problems)),
                details={"field": "files", "missing": missing},
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
            if not may_yield_notebook(snap):
                raise NotebookBusyError(notebook, workflow_id)
            if live is not None and live.task is not None and live.running:
                # a finished or failed run's loop ends by itself a moment after its last
                # commit (its notebook's last write): a user who saw it end and started anew
                # at once was refused (409) in that moment
                await asyncio.wait({live.task}, timeout=self.settings.stop_timeout / 2)
                if live.running:
                    raise NotebookBusyError(notebook, workflow_id)
            taken = await self._delivered(live) if live is not None else None
            await self._retire(workflow_id, "replaced")
            if taken is not None and taken.version == taken.delivery.version and self.coedit:
                # its cells are in the browser's document and file (left registered, it
                # wrote the file once more when the hold lapsed, its notebook record over
                # the new workflow's)
                self.coedit.retire(workflow_id, taken)

    async def _delivered(self, live: LiveWorkflow) -> ContentsNotebookWriter | None:
        """Wait (at most :data:`DELIVERY_WAIT`) until the browser holding ``live``'s notebook
        has taken its last cells (see :mod:`.delivery`): once the new workflow writes the
        notebook, the earlier run's last plan is never asked for. The writer when the
        notebook is held (taken or not), else None."""
        writer = getattr(live.engine.runtime, "writer", None)
        coedit = self.coedit
        if not isinstance(writer, ContentsNotebookWriter) or coedit is None:
            return None
        path = writer.api_path
        if not coedit.leases.held(path) or await coedit.room_document(path) is not None:
            return None  # the file or the room has the cells already
        if not await self._holds_cells_of(path, live.workflow_id):
            # the user removed the run's cells (New workflow… offers it, and saves first):
            # its last plan would only put them back
            coedit.retire(live.workflow_id, writer)
            return None
        if not await writer.delivery.wait_for(writer.version, DELIVERY_WAIT):
            log.warning(
                "notebook-bcc: the browser holding %s had not taken the last cells of %s "
                "after %.0f s; the new workflow starts anyway",
                path,
                live.workflow_id,
                DELIVERY_WAIT,
            )
        return writer

    async def _holds_cells_of(self, path: str, workflow_id: str) -> bool:
        """Whether the notebook file at ``path`` has a cell of ``workflow_id`` (True when it
        cannot be read: then nothing is concluded from it)."""
        try:
            content, _ = await self.contents.read_notebook(path)
        except Exception:
            return True
        cells = content.get("cells") if isinstance(content, dict) else None
        for cell in cells if isinstance(cells, list) else []:
            own = bcc_of(cell) if isinstance(cell, dict) else None
            if own is not None and own.get("workflow_id") == workflow_id:
                return True
        return False

    async def _open_engine(
        self,
        store: AsyncStore,
        planner: Planner,
        *,
        notebook: str,
        problem: str | None,
        files: list[str],
        options: EngineOptions,
        parameters: dict[str, Any] | None = None,
        fresh_kernel: bool | None = None,
    ) -> LiveWorkflow:
        workflow_id = f"wf-{uuid.uuid4().hex[:12]}"
        document = await self._document(notebook, workflow_id)
        kernel = await self.kernels.for_notebook(notebook, options.kernel_name)
        try:
            said = await self._fresh_kernel(store, notebook, kernel, fresh_kernel)
            runtime = self._runtime(notebook, workflow_id, document, kernel.km, options)
            snapshot = new_snapshot(
                workflow_id,
                uuid.uuid4().hex[:12],
                notebook_path=notebook,
                problem=problem,
                files=files,
                parameters=parameters,
            ).model_copy(
                update={
                    "options": persisted_options(options),
                    "kernel": kernel_record(kernel.kernel_id, kernel.session_id, kernel.km),
                }
            )
            if said:
                snapshot = snapshot.model_copy(
                    update={"effects": add_current(snapshot.effects, [said])}
                )
            engine = await Engine.start_new(
                store=store, planner=planner, runtime=runtime, snapshot=snapshot, options=options
            )
        except BaseException:
            await self.kernels.discard(kernel)
            raise
        return self._live_workflow(engine, kernel, notebook)

    async def _fresh_kernel(
        self, store: AsyncStore, notebook: str, kernel: NotebookKernel, fresh: bool | None
    ) -> str | None:
        """Restart the notebook's kernel when asked (``fresh``), or, by default, when an
        earlier workflow of this notebook ran on it: its namespace still holds what that run
        left (a blueprint that counts its rounds in a variable would start at round 3). A
        kernel the session just started is fresh already. Returns the effect saying so."""
        if kernel.created or fresh is False:
            return None
        earlier = None if fresh else await self._earlier_on(store, notebook, kernel.kernel_id)
        if not fresh and earlier is None:
            return None
        await self.kernels.restart(kernel)
        if earlier is None:
            return "WARN: the notebook's kernel was restarted before the run (fresh_kernel)"
        return (
            f"WARN: the notebook's kernel held the state of the earlier workflow {earlier}; it "
            "was restarted so this run starts from an empty namespace (fresh_kernel: false "
            "keeps it)"
        )

    @staticmethod
    async def _earlier_on(store: AsyncStore, notebook: str, kernel_id: str) -> str | None:
        """The latest earlier workflow of ``notebook`` that ran on kernel ``kernel_id``."""

        def find(s: SqliteStore) -> str | None:
            for workflow_id in reversed(s.workflow_ids(notebook_path=notebook)[-EARLIER_SEEN:]):
                record = s.load(workflow_id).kernel
                if record is not None and record.kernel_id == kernel_id:
                    return workflow_id
            return None

        return await store.call(find)

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


def _plain(nb: Any) -> dict[str, Any]:
    """A notebook node as plain JSON data."""
    import json

    data: dict[str, Any] = json.loads(json.dumps(nb))
    return data
