"""The store's reads of the chained and upserted tables (a mixin of :class:`SqliteStore`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from notebook_bcc.models.cell_sources import kept_digests
from notebook_bcc.models.contract import ExecutionContract, ExecutionStatus
from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.models.records import HistoryEntry, TraceRecord
from notebook_bcc.store.errors import CorruptRowError, UnknownWorkflowError

T = TypeVar("T")


@dataclass(frozen=True)
class CellRow:
    """One notebook cell as the store keeps it: nbformat JSON plus its position and contract."""

    cell_id: str
    position: int
    cell: dict[str, Any]
    contract_id: str | None = None
    sources: frozenset[str] = frozenset()
    """Digests of the latest sources the workflow gave the cell (models/cell_sources.py)."""


def _read(table: str, rows: Iterable[Any], build: Callable[[Any], T]) -> list[T]:
    """``build`` over rows whose first column is ``seq``; a row that does not read as what the
    store wrote is :class:`CorruptRowError` naming it, not a validation traceback."""
    built: list[T] = []
    for row in rows:
        try:
            built.append(build(row))
        except (ValidationError, ValueError, TypeError) as exc:
            what = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if isinstance(exc, ValidationError) and exc.errors():
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first.get("loc", ()))
                what = f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
            raise CorruptRowError(table, row[0], what) from None
    return built


class StoreReads:
    """History, trace, events, contracts and cells of a workflow, read from ``_db``."""

    _db: sqlite3.Connection

    def released(self, *, notebook_path: str | None = None) -> dict[str, str]:
        """Why each inactive workflow released its notebook: ``finished``, ``deleted`` or
        ``replaced`` (see ``workflows.released``), by workflow id; optionally of one notebook."""
        query = "SELECT workflow_id, released FROM workflows WHERE active = 0"
        params: list[Any] = []
        if notebook_path is not None:
            query += " AND notebook_path = ?"
            params.append(notebook_path)
        return {str(row[0]): str(row[1] or "finished") for row in self._db.execute(query, params)}

    def history(self, workflow_id: str) -> list[HistoryEntry]:
        """The full FSM history of a workflow, in order."""
        rows = self._db.execute(
            "SELECT seq, from_state, event, to_state, timestamp, actor FROM history"
            " WHERE workflow_id = ? ORDER BY seq",
            (workflow_id,),
        )
        return _read(
            "history",
            rows,
            lambda r: HistoryEntry.model_validate(
                {"from": r[1], "event": r[2], "to": r[3], "timestamp": r[4], "actor": r[5]}
            ),
        )

    def trace(self, workflow_id: str) -> list[TraceRecord]:
        """The full execution trace of a workflow, in order."""
        rows = self._db.execute(
            "SELECT seq, actor, action, timestamp, result, metadata FROM trace"
            " WHERE workflow_id = ? ORDER BY seq",
            (workflow_id,),
        )
        return _read(
            "trace",
            rows,
            lambda r: TraceRecord(
                actor=r[1], action=r[2], timestamp=r[3], result=r[4], metadata=json.loads(r[5])
            ),
        )

    def events(self, workflow_id: str, *, after_seq: int = 0) -> list[WorkflowEvent]:
        """Published events of a workflow with ``seq > after_seq``, in order."""
        rows = self._db.execute(
            "SELECT seq, body FROM events WHERE workflow_id = ? AND seq > ? ORDER BY seq",
            (workflow_id, after_seq),
        )
        return _read("events", rows, lambda r: WorkflowEvent.model_validate_json(r[1]))

    def recent_events(
        self, workflow_id: str, *, after_seq: int = 0, limit: int
    ) -> tuple[list[WorkflowEvent], bool]:
        """The newest ``limit`` events with ``seq > after_seq``, oldest first, and whether
        older ones after ``after_seq`` were left out. Unknown workflow: UnknownWorkflowError."""
        known = self._db.execute(
            "SELECT 1 FROM workflows WHERE workflow_id = ?", (workflow_id,)
        ).fetchone()
        if known is None:
            raise UnknownWorkflowError(workflow_id)
        rows = self._db.execute(
            "SELECT body FROM events WHERE workflow_id = ? AND seq > ? ORDER BY seq DESC LIMIT ?",
            (workflow_id, after_seq, limit + 1),
        ).fetchall()
        more = len(rows) > limit
        kept = rows[:limit]
        kept.reverse()
        return [WorkflowEvent.model_validate_json(r[0]) for r in kept], more

    def contracts(
        self,
        workflow_id: str,
        *,
        run_id: str | None = None,
        statuses: Iterable[ExecutionStatus] | None = None,
        idempotency_key: str | None = None,
    ) -> list[ExecutionContract]:
        """Contracts of a workflow, filtered by run, status and key; in creation order."""
        query = "SELECT body FROM contracts WHERE workflow_id = ?"
        params: list[Any] = [workflow_id]
        if run_id is not None:
            query += " AND run_id = ?"
            params.append(run_id)
        if statuses is not None:
            wanted = [s.value for s in statuses]
            query += f" AND status IN ({', '.join('?' for _ in wanted)})"
            params.extend(wanted)
        if idempotency_key is not None:
            query += " AND idempotency_key = ?"
            params.append(idempotency_key)
        query += " ORDER BY rowid"
        return [
            ExecutionContract.model_validate_json(r[0]) for r in self._db.execute(query, params)
        ]

    def cells(self, workflow_id: str) -> list[CellRow]:
        """The workflow's cells in notebook order."""
        rows = self._db.execute(
            "SELECT cell_id, position, cell, contract_id, sources FROM cells WHERE workflow_id = ?"
            " ORDER BY position, cell_id",
            (workflow_id,),
        )
        return [CellRow(r[0], int(r[1]), json.loads(r[2]), r[3], kept_digests(r[4])) for r in rows]
