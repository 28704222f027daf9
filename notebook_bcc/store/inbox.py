"""Who drives a workflow, and the commands queued for it (a mixin of :class:`SqliteStore`).

A CLI ``resume`` and a server may each drive a stored workflow; ``owner`` (``pid@host``) says
which process does now, so a second one refuses instead of racing it. Commands a human sends
(``cancel``, the panel's buttons) to a process that drives the workflow are queued in
``commands`` and taken at its next safe point.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from notebook_bcc.models.base import utc_now_iso
from notebook_bcc.store.anchor import canonical_json as _json
from notebook_bcc.store.errors import UnknownWorkflowError

if TYPE_CHECKING:
    from notebook_bcc.models.snapshot import WorkflowSnapshot

T = TypeVar("T")


class StoreInbox:
    """Owner and command inbox of a workflow, written through the store's transactions."""

    _db: sqlite3.Connection

    if TYPE_CHECKING:  # SqliteStore's

        def _write(self, fn: Callable[[], T], *, kinds: frozenset[str] = frozenset()) -> T: ...

        def load(self, workflow_id: str) -> WorkflowSnapshot: ...

    def set_owner(self, workflow_id: str, owner: str | None) -> None:
        """Record which process drives the workflow (``pid@host``), or None when it stops."""
        self._write(
            lambda: self._db.execute(
                "UPDATE workflows SET owner = ? WHERE workflow_id = ?", (owner, workflow_id)
            )
        )

    def claim_owner(self, workflow_id: str, owner: str, alive: Callable[[str], bool]) -> str | None:
        """Record ``owner`` as driving the workflow unless another process that is
        ``alive`` does; that process then (nothing changed), else None. Checked and set in
        one write transaction: of two processes resuming the same run at once, one wins and
        the other is told who runs it (not a version conflict half way through)."""

        def claim() -> str | None:
            row = self._db.execute(
                "SELECT owner FROM workflows WHERE workflow_id = ?", (workflow_id,)
            ).fetchone()
            if row is None:
                raise UnknownWorkflowError(workflow_id)
            current = None if row[0] is None else str(row[0])
            if current is not None and current != owner and alive(current):
                return current
            self._db.execute(
                "UPDATE workflows SET owner = ? WHERE workflow_id = ?", (owner, workflow_id)
            )
            return None

        return self._write(claim)

    def owner(self, workflow_id: str) -> str | None:
        """The process recorded as driving the workflow, if any."""
        row = self._db.execute(
            "SELECT owner FROM workflows WHERE workflow_id = ?", (workflow_id,)
        ).fetchone()
        if row is None:
            raise UnknownWorkflowError(workflow_id)
        return None if row[0] is None else str(row[0])

    def enqueue_command(self, workflow_id: str, body: dict[str, Any]) -> int:
        """Queue a human command for the process driving the workflow; returns its id."""
        self.load(workflow_id)

        def insert() -> int:
            cursor = self._db.execute(
                "INSERT INTO commands (workflow_id, body, created_at) VALUES (?, ?, ?)",
                (workflow_id, _json(body), utc_now_iso()),
            )
            return int(cursor.lastrowid or 0)

        return self._write(insert, kinds=frozenset({"command"}))

    def open_commands(self, workflow_id: str) -> list[tuple[int, dict[str, Any]]]:
        """Commands not yet taken, oldest first."""
        rows = self._db.execute(
            "SELECT id, body FROM commands WHERE workflow_id = ? AND done_at IS NULL ORDER BY id",
            (workflow_id,),
        )
        return [(int(r[0]), json.loads(r[1])) for r in rows]

    def finish_command(self, command_id: int, outcome: str) -> None:
        """Mark a queued command taken, with what became of it."""
        self._write(
            lambda: self._db.execute(
                "UPDATE commands SET done_at = ?, outcome = ? WHERE id = ?",
                (utc_now_iso(), outcome, command_id),
            )
        )
