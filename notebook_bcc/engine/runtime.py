"""The kernel side of one workflow: session, document, runner, writer and the store sink.

The engine owns one :class:`KernelRuntime`. Cells the runner produces go to two sinks: the
:class:`CollectingSink`, whose rows the engine commits in the same transaction as the
contract they belong to (D10), and the :class:`NotebookWriter` that materializes the
``.ipynb`` (debounced, flushed at behavior boundaries).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.kernel.results import CellRecord
from notebook_bcc.kernel.runner import ActionRunner
from notebook_bcc.kernel.session import KernelSession
from notebook_bcc.kernel.writer import NotebookWriter
from notebook_bcc.store.sqlite import CellRow
from notebook_bcc.workflow.digest import NotebookDigest


class CollectingSink:
    """Collects cell changes until the engine commits them (latest state per cell wins)."""

    def __init__(self, digest: NotebookDigest | None = None) -> None:
        self._rows: dict[str, CellRow] = {}
        self.digest = digest or NotebookDigest()
        self.metadata: dict[str, Any] = {}
        self._seen: set[str] = set()

    def put(self, record: CellRecord) -> None:
        """Keep a JSON copy of the cell now (the runner changes cells in place later)."""
        cell = json.loads(json.dumps(record.cell))
        self._rows[record.cell_id] = CellRow(
            record.cell_id, max(record.index, 0), cell, record.contract_id
        )
        if record.cell_id not in self._seen:
            self._seen.add(record.cell_id)
            self.digest.add(str(cell.get("cell_type", "")), cell.get("source", ""))

    def metadata_changed(self, metadata: Mapping[str, Any]) -> None:
        """Keep the notebook metadata (kernelspec, language_info, title)."""
        self.metadata = json.loads(json.dumps(dict(metadata)))

    def drain(self) -> list[CellRow]:
        """The rows collected since the last drain, in notebook order."""
        rows = sorted(self._rows.values(), key=lambda row: row.position)
        self._rows.clear()
        return rows


class KernelRuntime:
    """One warm kernel and the notebook it fills."""

    def __init__(
        self,
        *,
        notebook_path: Path,
        workflow_id: str,
        document: NotebookDocument | None = None,
        session: KernelSession | None = None,
        kernel_name: str = "python3",
        cell_timeout: float | None = None,
        write_debounce: float = 0.5,
        writer: NotebookWriter | None = None,
    ) -> None:
        self.notebook_path = notebook_path
        self.document = (
            document if document is not None else NotebookDocument(workflow_id=workflow_id)
        )
        self.session = session or KernelSession(kernel_name=kernel_name, cwd=notebook_path.parent)
        self.collector = CollectingSink()
        self.collector.digest.extend(self.document.cells)
        self.writer = writer or NotebookWriter(
            notebook_path, self.document, debounce=write_debounce
        )
        self.kernel_replacer: Callable[[], Awaitable[None]] | None = None
        """How to replace a dead kernel (the server: a new session kernel when the old one is
        gone from its manager); None: restart it through its kernel manager."""
        self.kernel_restarter: Callable[[], Awaitable[None]] | None = None
        """How to restart the live kernel for a fresh namespace (the server: through its
        kernel manager, so JupyterLab sees the restart); None: :meth:`KernelSession.restart`."""
        self.runner = ActionRunner(
            self.session,
            self.document,
            sinks=[self.collector, self.writer],
            workflow_id=workflow_id,
            cell_timeout=cell_timeout,
        )

    async def start(self) -> None:
        """Start the kernel (or await the pre-warmed one) and record its metadata."""
        await self.runner.start()

    async def flush(self) -> None:
        """Write the notebook now (the end of a run)."""
        await self.writer.flush_async()

    def flush_soon(self) -> None:
        """Write the notebook in the background, within the writer's debounce (behavior
        boundaries): first raise :class:`~notebook_bcc.kernel.errors.NotebookWriteError` if
        the last background write failed (D1: the run then fails here)."""
        self.writer.raise_failure()
        self.writer.flush_soon()

    async def close(self) -> None:
        """Write what is left and shut the kernel down (at once when we own it)."""
        try:
            await self.writer.aclose()
        finally:
            await self.session.shutdown()
