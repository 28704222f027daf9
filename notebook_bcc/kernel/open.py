"""One call to get a workflow's notebook, kernel, runner and writer wired together."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.kernel.runner import ActionRunner
from notebook_bcc.kernel.session import KernelSession, default_cwd
from notebook_bcc.kernel.sinks import CellSink
from notebook_bcc.kernel.writer import NotebookWriter


@dataclass(frozen=True, slots=True)
class NotebookKernel:
    """A workflow's kernel-side objects: session, document, runner and writer."""

    session: KernelSession
    document: NotebookDocument
    runner: ActionRunner
    writer: NotebookWriter

    async def close(self) -> None:
        """Write what is pending, then shut the session down (immediately if we own it)."""
        try:
            await self.writer.aclose()
        finally:
            await self.session.shutdown()


def open_notebook_kernel(
    notebook_path: str | Path,
    *,
    workflow_id: str,
    km: Any | None = None,
    kernel_name: str = "python3",
    cwd: str | Path | None = None,
    sinks: Sequence[CellSink] = (),
    cell_timeout: float | None = None,
    debounce: float = 1.0,
    prewarm: bool = True,
) -> NotebookKernel:
    """Wire a workflow to ``notebook_path`` (call from a running event loop).

    An existing notebook is loaded and its cells kept (D19); the kernel runs in ``cwd``, by
    default the notebook's folder; ``km`` is a kernel manager to borrow (a server session's).
    The writer is the last sink, after ``sinks`` (the engine's store first: durable before
    materialized). With ``prewarm`` the kernel starts in the background right away.
    """
    path = Path(notebook_path)
    if path.exists():
        document = NotebookDocument.read(path, workflow_id=workflow_id)
    else:
        document = NotebookDocument(workflow_id=workflow_id)
    session = KernelSession(
        km, kernel_name=kernel_name, cwd=cwd if cwd is not None else default_cwd(path)
    )
    writer = NotebookWriter(path, document, debounce=debounce)
    runner = ActionRunner(
        session,
        document,
        sinks=[*sinks, writer],
        workflow_id=workflow_id,
        cell_timeout=cell_timeout,
    )
    if prewarm:
        session.start_soon()
    return NotebookKernel(session=session, document=document, runner=runner, writer=writer)
