"""Typed errors of the store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from notebook_bcc.errors import NotebookBccError

if TYPE_CHECKING:
    from notebook_bcc.models.snapshot import WorkflowSnapshot


class VersionConflictError(NotebookBccError):
    """A compare-and-set commit based on a stale snapshot version; carries the current one."""

    code = "conflict"

    def __init__(self, workflow_id: str, expected: int, current: WorkflowSnapshot) -> None:
        super().__init__(
            f"workflow {workflow_id} is at version {current.version}, not {expected}: "
            "reload and retry",
            details={"snapshot": current.model_dump(mode="json", by_alias=True)},
        )
        self.current = current
        self.expected = expected


class UnknownWorkflowError(NotebookBccError):
    """No workflow with that id in the store."""

    code = "not_found"

    def __init__(self, workflow_id: str) -> None:
        super().__init__(f"no workflow {workflow_id!r} in the store", details={"id": workflow_id})


class NotebookBusyError(NotebookBccError):
    """The notebook path already has an active workflow (one per notebook)."""

    code = "conflict"

    def __init__(self, notebook_path: str, workflow_id: str | None) -> None:
        super().__init__(
            f"notebook {notebook_path!r} already has an active workflow ({workflow_id})",
            details={"notebook_path": notebook_path, "workflow_id": workflow_id},
        )


class IdempotencyViolationError(NotebookBccError):
    """A second live or completed irreversible contract with the same key in one run (D7)."""

    code = "idempotency_violation"


class StoreUnavailableError(NotebookBccError):
    """The database cannot be written (locked by another writer, disk full, corrupt)."""

    code = "store_unavailable"


class ChainBrokenError(NotebookBccError):
    """A chained table row whose hash does not match its content and predecessor."""

    code = "chain_broken"


class NotAStateDatabaseError(StoreUnavailableError):
    """The path given as the state database is a directory, or a file that is no SQLite
    database. To the CLI it is bad input (exit 2: the path is wrong, not the database); a
    server's store is unavailable (503)."""

    code = "not_a_state_database"


class CorruptSnapshotError(StoreUnavailableError):
    """A stored snapshot that no longer reads as a :class:`WorkflowSnapshot`: the database was
    edited or damaged. Nothing is written on top of it (the chained record is checked apart,
    by ``trace --verify``)."""

    code = "corrupt_state"

    def __init__(self, path: str, workflow_id: str, where: str, what: str) -> None:
        super().__init__(
            f"state database {path}: the stored snapshot of workflow {workflow_id} is unreadable "
            f"at {where}: {what}. The database was edited or damaged; nothing was changed. The "
            "chained record is kept apart from the snapshot: "
            f"`notebook-bcc trace --verify --state-db {path}` checks it",
            details={"path": path, "workflow_id": workflow_id, "where": where, "what": what},
        )


class CorruptRowError(StoreUnavailableError):
    """A stored row that no longer reads as what the store wrote (a history, trace or event
    row edited behind its back): named by table and ``seq``, nothing written on top of it."""

    code = "corrupt_state"

    def __init__(self, table: str, seq: object, what: str) -> None:
        super().__init__(
            f"{table} row seq={seq} cannot be read ({what}): the state database was edited or "
            "damaged after it was written; `notebook-bcc trace --verify` checks the record",
            details={"table": table, "seq": seq, "what": what},
        )
