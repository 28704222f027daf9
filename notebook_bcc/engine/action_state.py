"""Pure helpers of the action executor: the carried action, snapshot and cell rows."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.kernel.results import ExecResult
from notebook_bcc.models.contract import ExecutionContract
from notebook_bcc.models.records import HistoryEntry, TraceRecord
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.store.sqlite import CellRow

LAST_OUTPUT_CHARS = 500
"""How much of the last execution's output ``snapshot.notebook.last_output`` keeps."""


@dataclass(frozen=True)
class Carried:
    """An action applied but not yet committed: it rides in the next commit (issue 23)."""

    snapshot: WorkflowSnapshot
    records: list[HistoryEntry | TraceRecord]
    contracts: list[ExecutionContract]
    cells: list[CellRow]
    warnings: list[str]
    kinds: frozenset[str] = frozenset()
    """Commit kinds of what is carried (the previous code action's ``contract_terminal``)."""

    def then(self, later: Carried) -> Carried:
        """What is carried, followed by ``later`` (whose snapshot is the newer one)."""
        return Carried(
            later.snapshot,
            [*self.records, *later.records],
            [*self.contracts, *later.contracts],
            [*self.cells, *later.cells],
            [*self.warnings, *later.warnings],
            self.kinds | later.kinds,
        )

    @staticmethod
    def nothing(snapshot: WorkflowSnapshot) -> Carried:
        """Nothing carried yet, at ``snapshot``."""
        return Carried(snapshot, [], [], [], [])


def cell_source(cell: Any) -> str:
    """A cell's source as one string."""
    source = cell.get("source", "") if cell is not None else ""
    return "".join(source) if isinstance(source, list) else str(source)


def failure_text(result: ExecResult | None) -> str:
    """Why an execution failed, in one line."""
    if result is None:
        return "no execution"
    if result.error is not None:
        return f"{result.status}: {result.error.ename}: {result.error.evalue}"
    return f"{result.status}: {result.message or 'failed'}"


def notebook_summary(
    document: NotebookDocument, snapshot: WorkflowSnapshot, result: ExecResult | None
) -> WorkflowSnapshot:
    """``snapshot.notebook`` brought up to date with the document (and an execution)."""
    last = document.cells[-1] if document.cells else None
    summary = snapshot.notebook.model_copy(
        update={
            "title": document.title or snapshot.notebook.title,
            "cell_count": len(document.cells),
            "last_cell_type": None if last is None else last.get("cell_type"),
        }
    )
    if result is not None:
        text = "".join(result.effects)[-LAST_OUTPUT_CHARS:]
        summary = summary.model_copy(
            update={
                "execution_count": result.execution_count or summary.execution_count,
                "last_output": text or summary.last_output,
            }
        )
    return snapshot.model_copy(update={"notebook": summary})


def with_queue(snapshot: WorkflowSnapshot, **update: Any) -> WorkflowSnapshot:
    """``snapshot`` with its action queue updated."""
    return snapshot.model_copy(
        update={"action_queue": snapshot.action_queue.model_copy(update=update)}
    )


def cell_row(document: NotebookDocument, cell_id: str, contract_id: str | None) -> CellRow | None:
    """The store row of a document cell (None when the cell is gone)."""
    cell = document.get(cell_id)
    position = document.position(cell_id)
    if cell is None or position is None:
        return None
    return CellRow(cell_id, position, json.loads(json.dumps(cell)), contract_id)
