"""Wiring for a headless run: store, planner, kernel runtime and engine from plain settings.

The CLI (and tests, benchmarks) call :func:`open_headless`; the server builds its engines
with its own kernels and contents manager instead.
"""

from __future__ import annotations

import logging
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from notebook_bcc.engine.budget import budget_for
from notebook_bcc.engine.engine import Engine
from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.engine.rerun import (
    check_notebook,
    drop_workflow_cells,
    read_document,
    release_notebook,
)
from notebook_bcc.engine.runtime import KernelRuntime
from notebook_bcc.errors import NotebookBccError
from notebook_bcc.kernel.client import OutputListener
from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.kernel.errors import NotebookWriteError
from notebook_bcc.kernel.session import KernelSession
from notebook_bcc.kernel.writer import NotebookWriter
from notebook_bcc.models.snapshot import WorkflowSnapshot, new_snapshot
from notebook_bcc.planners.base import Planner
from notebook_bcc.store.anchor import put_anchor
from notebook_bcc.store.async_store import AsyncStore

log = logging.getLogger(__name__)


@dataclass
class HeadlessRun:
    """Everything a headless run needs (paths are resolved by the caller).

    ``parameters`` are injected after the inputs cell (``injected-parameters``); ``cwd`` is
    the kernel's working directory (default: the notebook's folder, D14); ``start_timeout``
    bounds the kernel start; ``output_listener`` sees each cell output as it arrives;
    ``max_tokens`` / ``max_planner_calls`` cap planner usage (``engine.budget``). The
    runner owns its kernel: on Linux it talks to it over IPC sockets.
    """

    planner: Planner
    notebook: Path
    state_db: Path
    problem: str | None = None
    files: list[Path] = field(default_factory=list)
    options: EngineOptions = field(default_factory=EngineOptions)
    workflow_id: str | None = None
    abandon: bool = False
    """Archive the notebook's unfinished earlier run (recorded as cancelled) instead of
    refusing to start (see :mod:`notebook_bcc.engine.rerun`)."""
    parameters: dict[str, Any] = field(default_factory=dict)
    cwd: Path | None = None
    start_timeout: float | None = None
    output_listener: OutputListener | None = None
    max_tokens: int | None = None
    max_planner_calls: int | None = None


def owned_session(
    notebook: Path,
    options: EngineOptions,
    *,
    cwd: Path | None = None,
    start_timeout: float | None = None,
    output_listener: OutputListener | None = None,
) -> KernelSession:
    """The kernel session of a headless run (IPC on Linux, so no TCP warning)."""
    extra: dict[str, Any] = {}
    if start_timeout is not None:
        extra["startup_timeout"] = start_timeout
    return KernelSession(
        kernel_name=options.kernel_name,
        cwd=cwd if cwd is not None else notebook.parent,
        transport="ipc" if sys.platform.startswith("linux") else None,
        output_listener=output_listener,
        **extra,
    )


async def open_headless(run: HeadlessRun) -> Engine:
    """Create the workflow in the store and return its engine (kernel not started yet).

    An existing notebook is read and appended to (D19); its cells are never executed. Cells
    of the notebook's earlier runs are removed and those runs archived first, as papermill
    overwrites its output (:mod:`notebook_bcc.engine.rerun`).
    """
    missing = [str(path) for path in run.files if not path.exists()]
    if missing:
        raise NotebookBccError(f"input file(s) not found: {', '.join(missing)}")
    workflow_id = run.workflow_id or f"wf-{uuid.uuid4().hex[:12]}"
    notebook = run.notebook.resolve()
    # refused before anything is made: no state database beside a notebook we cannot use
    check_notebook(notebook, workflow_id)
    notebook.parent.mkdir(parents=True, exist_ok=True)
    store = await AsyncStore.open(run.state_db, inline=True)
    try:
        await release_notebook(store, str(notebook), state_db=run.state_db, abandon=run.abandon)
        drop_workflow_cells(notebook)
        document = (
            read_document(notebook, workflow_id)
            if notebook.exists()
            else NotebookDocument(workflow_id=workflow_id)
        )
        runtime = KernelRuntime(
            notebook_path=notebook,
            workflow_id=workflow_id,
            document=document,
            session=owned_session(
                notebook,
                run.options,
                cwd=run.cwd,
                start_timeout=run.start_timeout,
                output_listener=run.output_listener,
            ),
            cell_timeout=run.options.cell_timeout,
            write_debounce=run.options.write_debounce,
        )
        runtime.session.start_soon()
        snapshot = new_snapshot(
            workflow_id,
            uuid.uuid4().hex[:12],
            notebook_path=str(notebook),
            problem=run.problem,
            files=[str(path.resolve()) for path in run.files],
            parameters=run.parameters,
            budget=budget_for(run.max_tokens, run.max_planner_calls),
        )
        # kept with the workflow: the command that continues it after a crash says so too
        snapshot = snapshot.model_copy(
            update={"options": {"auto_confirm": run.options.auto_confirm}}
        )
        return await Engine.start_new(
            store=store,
            planner=run.planner,
            runtime=runtime,
            snapshot=snapshot,
            options=run.options,
        )
    except BaseException:
        await store.close()
        raise


async def close_headless(engine: Engine) -> None:
    """Shut the kernel down, release the planner, close the store.

    A notebook that cannot be written at close is logged, not raised: the run has recorded
    the write failure (D1) and the store keeps every cell for ``resume`` to write.
    """
    try:
        await engine.runtime.close()
    except NotebookWriteError as exc:
        log.warning("notebook-bcc: %s", exc.message)
    finally:
        try:
            await engine.planner.aclose()
        finally:
            await engine.store.close()


def planner_for(snapshot_planner: dict[str, object]) -> Planner:
    """The planner a stored workflow was started with (``snapshot.planner``), for ``resume``,
    built by :mod:`notebook_bcc.planners.registry` (the one place planners are built)."""
    from notebook_bcc.planners.registry import planner_for as from_stored

    return from_stored(snapshot_planner)


async def _stored_document(
    store: AsyncStore, snapshot: WorkflowSnapshot, state_db: Path
) -> tuple[Path, NotebookDocument]:
    """The workflow's notebook path and its document rebuilt from the store's cells (D10)."""
    workflow_id = snapshot.workflow_id
    cells = await store.call(lambda s: s.cells(workflow_id))
    notebook = Path(snapshot.notebook_path or state_db.with_suffix(".ipynb"))
    metadata = {"title": snapshot.notebook.title} if snapshot.notebook.title else {}
    document = NotebookDocument.from_cells(
        [row.cell for row in cells],
        metadata,
        workflow_id=workflow_id,
        earlier_sources={row.cell_id: row.sources for row in cells},
    )
    return notebook, document


async def write_stored_notebook(state_db: Path, workflow_id: str) -> None:
    """Write a finished workflow's notebook from the store's cells, with no kernel (D10): a
    process killed after the run's last commit, before its last notebook write, loses no cell,
    and nothing runs again. The user's own cells in the file are kept (the writer's merge)."""
    store = await AsyncStore.open(state_db, inline=True)
    try:
        snapshot = await store.load(workflow_id)
        notebook, document = await _stored_document(store, snapshot, state_db)
        put_anchor(document.nb.metadata, await store.call(lambda s: s.chain_anchor()), workflow_id)
        writer = NotebookWriter(notebook, document)
        writer.metadata_changed(document.nb.metadata)
        await writer.aclose()
    finally:
        await store.close()


async def open_stored(
    state_db: Path,
    *,
    workflow_id: str,
    options: EngineOptions,
    planner: Planner | None = None,
) -> Engine:
    """The engine of a stored workflow, its notebook rebuilt from the store's cells (D10).

    Call ``await engine.recovery.prepare()`` before ``run()`` (D11).
    """
    store = await AsyncStore.open(state_db, inline=True)
    try:
        snapshot = await store.load(workflow_id)
        chosen = planner or planner_for(snapshot.planner.model_dump(mode="json"))
        notebook, document = await _stored_document(store, snapshot, state_db)
        runtime = KernelRuntime(
            notebook_path=notebook,
            workflow_id=workflow_id,
            document=document,
            session=owned_session(notebook, options),
            cell_timeout=options.cell_timeout,
            write_debounce=options.write_debounce,
        )
        runtime.session.start_soon()
        return await Engine.attach(
            store=store,
            planner=chosen,
            runtime=runtime,
            workflow_id=workflow_id,
            options=options,
        )
    except BaseException:
        await store.close()
        raise
