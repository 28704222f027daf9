"""Durable state: one SQLite file holding snapshots, history, trace, events, contracts, cells."""

from notebook_bcc.store.async_store import AsyncStore
from notebook_bcc.store.errors import (
    ChainBrokenError,
    IdempotencyViolationError,
    NotAStateDatabaseError,
    NotebookBusyError,
    StoreUnavailableError,
    UnknownWorkflowError,
    VersionConflictError,
)
from notebook_bcc.store.sqlite import (
    CellRow,
    Commit,
    CommitResult,
    EventDraft,
    SqliteStore,
    row_hash,
)

__all__ = [
    "AsyncStore",
    "CellRow",
    "ChainBrokenError",
    "Commit",
    "CommitResult",
    "EventDraft",
    "IdempotencyViolationError",
    "NotAStateDatabaseError",
    "NotebookBusyError",
    "SqliteStore",
    "StoreUnavailableError",
    "UnknownWorkflowError",
    "VersionConflictError",
    "row_hash",
]
