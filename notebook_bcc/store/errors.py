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
