"""The SQLite store: the only durable log of a workflow (D10).

One write transaction per :class:`Commit` (``BEGIN IMMEDIATE``): the snapshot by compare-and-set
on its version (in parts: only the parts and items that changed, see :mod:`.parts`), the FSM
history, trace and event rows (hash-chained), contract and cell upserts. WAL with
``synchronous=NORMAL`` survives a killed process (not a power cut). Connections are
single-threaded: :class:`SqliteStore` is used from one thread, :class:`AsyncStore` gives asyncio
code the same API on one dedicated executor thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from notebook_bcc.models.base import utc_now_iso
from notebook_bcc.models.cell_sources import DIGEST_CHARS, SOURCES_KEPT, source_digest
from notebook_bcc.models.contract import ExecutionContract
from notebook_bcc.models.event import EventKind, WorkflowEvent
from notebook_bcc.models.records import HistoryEntry, TraceRecord
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.store import anchor, checkpoints, crash, exchanges, file_ids, opening, parts
from notebook_bcc.store.errors import (
    CorruptSnapshotError,
    IdempotencyViolationError,
    NotAStateDatabaseError,
    NotebookBusyError,
    StoreUnavailableError,
    UnknownWorkflowError,
    VersionConflictError,
)
from notebook_bcc.store.inbox import StoreInbox
from notebook_bcc.store.reads import CellRow, StoreReads

GENESIS = anchor.GENESIS
"""``prev_hash`` of the first row of every chained table."""

INACTIVE_STATUSES = frozenset({"completed", "cancelled"})
"""Run statuses after which a notebook may host a new workflow."""

ReleaseReason = Literal["finished", "deleted", "replaced"]
"""Why an inactive workflow no longer holds its notebook (``workflows.released``)."""

_SOURCES_CHARS = SOURCES_KEPT * (DIGEST_CHARS + 1) - 1
"""The length of a full ``cells.sources`` column: the last SOURCES_KEPT digests, comma separated."""

T = TypeVar("T")

__all__ = ["CellRow", "Commit", "CommitResult", "EventDraft", "ReleaseReason", "SqliteStore"]


@dataclass(frozen=True)
class EventDraft:
    """A :class:`WorkflowEvent` before the store gives it ``seq``, ``version`` and ``at``."""

    kind: EventKind
    from_: str | None = None
    event: str | None = None
    to: str | None = None
    actor: str = "engine"
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Commit:
    """Everything one step of the engine makes durable, atomically."""

    snapshot: WorkflowSnapshot
    expected_version: int
    history: Sequence[HistoryEntry] = ()
    trace: Sequence[TraceRecord] = ()
    contracts: Sequence[ExecutionContract] = ()
    cells: Sequence[CellRow] = ()
    events: Sequence[EventDraft] = ()
    kinds: frozenset[str] = frozenset()
    """What the commit records (``transition``, ``contract_running``, ``cell``, ...), for the
    crash suite's kill points and for logs."""


@dataclass(frozen=True)
class CommitResult:
    """The stored snapshot (with its new version) and the events as published."""

    snapshot: WorkflowSnapshot
    events: list[WorkflowEvent]


row_hash = anchor.row_hash
"""SHA-256 over the previous row's hash and the canonical JSON of a row's columns."""


def _dump(model: Any) -> str:
    return str(model.model_dump_json(by_alias=True))


def _event_row(
    base: dict[str, Any], draft: EventDraft, made: list[WorkflowEvent]
) -> Callable[[int], tuple[Any, ...]]:
    """An ``events`` row as a function of its ``seq`` (the body embeds it); the event is
    built once, from ``base`` (the commit's fields) and ``draft``, and appended to ``made``."""

    def row(seq: int) -> tuple[Any, ...]:
        event = WorkflowEvent(
            **base,
            seq=seq,
            kind=draft.kind,
            from_=draft.from_,
            event=draft.event,
            to=draft.to,
            actor=draft.actor,
            detail=draft.detail,
        )
        made.append(event)
        return (event.workflow_id, event.version, _dump(event))

    return row


_json = anchor.canonical_json
"""Canonical JSON of stored JSON columns (trace metadata, cells, command bodies)."""


class SqliteStore(StoreInbox, StoreReads):
    """Synchronous store over one SQLite file; use from a single thread."""

    def __init__(
        self, path: str | Path, *, busy_timeout: float = 5.0, existing: bool = False
    ) -> None:
        """Open (and create or migrate) the state database at ``path``.

        A SQLite file that is not one (tables of its own and no schema version) is refused
        before anything is written to it; with ``existing`` (the commands that read a run:
        ``status``, ``trace``, ``resume``) so is one that holds nothing yet.
        """
        self.path = Path(path)
        if self.path.is_dir():
            raise NotAStateDatabaseError(
                f"{self.path} is a directory, not a state database (give a file path, e.g. "
                f"{self.path / 'state.sqlite'})"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._crash = crash.CrashPlan.from_env()
        self._layouts: dict[str, parts.Layout] = {}
        """What is stored of each workflow this connection wrote (see :mod:`.parts`)."""
        self._pending = parts.Layout(0)
        self.last_write = parts.WriteStats()
        """Snapshot rows and bytes the last commit wrote (benchmarks read it)."""
        self.checkpointer: checkpoints.Checkpointer | None = None
        """Set by :meth:`checkpoint_in_background`."""
        try:
            self._db = sqlite3.connect(
                str(self.path), timeout=busy_timeout, isolation_level=None, check_same_thread=True
            )
            opening.check_ours(self._db, self.path, existing=existing)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            opening.migrate(self._db, self.path)
            exchanges.ensure_table(self._db)
            file_ids.ensure_table(self._db)
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc):
                raise NotAStateDatabaseError(
                    f"{self.path} is not a state database: SQLite says {exc}"
                ) from exc
            raise StoreUnavailableError(f"cannot open state database {self.path}: {exc}") from exc

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (idempotent), after the background checkpoints if any."""
        if self.checkpointer is not None:
            self.checkpointer.close()
        self._db.close()

    def checkpoint_in_background(self) -> None:
        """Move the WAL into the database on a thread of its own from now on, instead of in
        the commit that fills it (see :mod:`.checkpoints`); for a long-lived writer."""
        if self.checkpointer is None:
            self._db.execute(f"PRAGMA wal_autocheckpoint={checkpoints.BACKSTOP_PAGES}")
            self._db.execute(f"PRAGMA journal_size_limit={checkpoints.LOG_LIMIT_BYTES}")
            self.checkpointer = checkpoints.Checkpointer(self.path)

    @property
    def connection(self) -> sqlite3.Connection:
        """The open connection, for the store's side tables (:mod:`.exchanges`)."""
        return self._db

    @property
    def schema_version(self) -> int:
        """The schema version of the open database."""
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    # -- transactions ------------------------------------------------------------------------

    def _write(self, fn: Callable[[], T], *, kinds: frozenset[str] = frozenset()) -> T:
        """Run ``fn`` in one ``BEGIN IMMEDIATE`` transaction; map SQLite failures to types."""
        die_before = die_after = False
        if self._crash is not None and self._crash.tick(kinds | {"any"}):
            die_before = self._crash.when == "before"
            die_after = self._crash.when == "after"
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreUnavailableError(
                f"state database {self.path} is locked by another writer ({exc}); nothing was "
                "recorded: run `notebook-bcc resume` once it is free",
                details={"path": str(self.path), "cause": str(exc)},
            ) from exc
        try:
            result = fn()
            if die_before:
                crash.die()
            self._db.execute("COMMIT")
            if self.checkpointer is not None:
                self.checkpointer.committed()
        except sqlite3.IntegrityError as exc:
            self._db.execute("ROLLBACK")
            if "contracts" in str(exc) or "idempotency_key" in str(exc):
                raise IdempotencyViolationError(
                    f"an irreversible action with the same content is already running, waiting "
                    f"or completed in this run ({exc})"
                ) from exc
            raise
        except sqlite3.OperationalError as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise StoreUnavailableError(
                f"state database {self.path} could not be written: {exc}",
                details={"path": str(self.path), "cause": str(exc)},
            ) from exc
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        if die_after:
            crash.die()
        return result

    # -- workflows ---------------------------------------------------------------------------

    def create(self, snapshot: WorkflowSnapshot) -> WorkflowSnapshot:
        """Insert a new workflow; refuses a second active workflow on the same notebook."""

        def insert() -> WorkflowSnapshot:
            if snapshot.notebook_path is not None:
                row = self._db.execute(
                    "SELECT workflow_id FROM workflows WHERE notebook_path = ? AND active = 1",
                    (snapshot.notebook_path,),
                ).fetchone()
                if row is not None:
                    raise NotebookBusyError(snapshot.notebook_path, row[0])
                # the notebook's finished workflows are now replaced by this one
                self._db.execute(
                    "UPDATE workflows SET released = 'replaced'"
                    " WHERE notebook_path = ? AND active = 0 AND released = 'finished'",
                    (snapshot.notebook_path,),
                )
            now = utc_now_iso()
            self._db.execute(
                "INSERT INTO workflows (workflow_id, run_id, notebook_path, version, fsm_state,"
                " run_status, active, snapshot, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?)",
                (
                    snapshot.workflow_id,
                    snapshot.run_id,
                    snapshot.notebook_path,
                    snapshot.version,
                    snapshot.fsm.state.value,
                    snapshot.run.status,
                    "",
                    now,
                    now,
                ),
            )
            empty = parts.Layout(snapshot.version)
            self._pending, self.last_write = parts.write(
                self._db, snapshot.workflow_id, snapshot, empty
            )
            return snapshot

        try:
            created = self._write(insert, kinds=frozenset({"create"}))
            self._layouts[snapshot.workflow_id] = self._pending
            return created
        except sqlite3.IntegrityError as exc:
            if "workflows.workflow_id" in str(exc):
                raise StoreUnavailableError(f"workflow {snapshot.workflow_id} exists") from exc
            raise NotebookBusyError(snapshot.notebook_path or "", None) from exc

    def load(self, workflow_id: str) -> WorkflowSnapshot:
        """The current snapshot of ``workflow_id``: its full view, assembled from its parts."""
        if self._db.in_transaction:
            return self._read(workflow_id)
        self._db.execute("BEGIN")
        try:
            return self._read(workflow_id)
        finally:
            self._db.execute("COMMIT")

    def _read(self, workflow_id: str) -> WorkflowSnapshot:
        row = self._db.execute(
            "SELECT snapshot, version FROM workflows WHERE workflow_id = ?", (workflow_id,)
        ).fetchone()
        if row is None:
            raise UnknownWorkflowError(workflow_id)
        try:
            full = parts.read_full(self._db, workflow_id, int(row[1]))
            if full is not None:
                return full
            return WorkflowSnapshot.model_validate_json(row[0])  # stored before schema 4
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "its top level"
            raise CorruptSnapshotError(str(self.path), workflow_id, where, first["msg"]) from exc
        except (ValueError, KeyError, TypeError) as exc:  # JSON or layout of the parts
            raise CorruptSnapshotError(
                str(self.path), workflow_id, "its stored parts", f"{type(exc).__name__}: {exc}"
            ) from exc

    def _layout(self, workflow_id: str, version: int) -> parts.Layout:
        """What is stored of ``workflow_id`` at ``version`` (inside the write transaction)."""
        layout = self._layouts.get(workflow_id)
        if layout is not None and layout.version == version:
            return layout
        full = parts.read_full(self._db, workflow_id, version)
        if full is None:
            return parts.Layout(version)
        return parts.read_layout(self._db, workflow_id, full)

    def workflow_ids(
        self, *, notebook_path: str | None = None, active: bool | None = None
    ) -> list[str]:
        """Workflow ids, oldest first, optionally for one notebook and/or only active ones."""
        query = "SELECT workflow_id FROM workflows WHERE 1 = 1"
        params: list[Any] = []
        if notebook_path is not None:
            query += " AND notebook_path = ?"
            params.append(notebook_path)
        if active is not None:
            query += " AND active = ?"
            params.append(1 if active else 0)
        query += " ORDER BY created_at, workflow_id"
        return [r[0] for r in self._db.execute(query, params)]

    def deactivate(self, workflow_id: str, reason: ReleaseReason = "replaced") -> None:
        """Release the workflow's notebook so that a new workflow may start on it.

        ``reason`` is recorded (``released``): ``replaced`` (the default: a new run takes the
        notebook) or ``deleted``; a workflow already deleted or replaced keeps its reason.
        """
        self._write(
            lambda: self._db.execute(
                "UPDATE workflows SET active = 0, released = CASE"
                " WHEN active = 0 AND released IN ('deleted', 'replaced') THEN released"
                " ELSE ? END WHERE workflow_id = ?",
                (reason, workflow_id),
            )
        )

    def move_notebook(self, old: str, new: str | None) -> list[str]:
        """The notebook ``old`` (or a folder holding notebooks) was renamed to ``new``, or
        deleted (``new`` None): re-key its workflows, so that a new notebook at ``old`` never
        finds them. A deleted notebook's workflows keep their path in the snapshot only.
        Returns the workflow ids moved (the version does not change: this is no transition).
        """
        prefix = old.rstrip("/") + "/"

        def target(path: str) -> str | None:
            if new is None:
                return None
            return new if path == old else new.rstrip("/") + "/" + path[len(prefix) :]

        def move() -> list[str]:
            rows = self._db.execute(
                "SELECT workflow_id, notebook_path FROM workflows"
                " WHERE notebook_path = ? OR substr(notebook_path, 1, ?) = ?",
                (old, len(prefix), prefix),
            ).fetchall()
            moved: list[str] = []
            for workflow_id, path in rows:
                to = target(path)
                snapshot = self._read(workflow_id)
                if to is not None:
                    snapshot = snapshot.model_copy(update={"notebook_path": to})
                self._db.execute(
                    "UPDATE workflows SET notebook_path = ? WHERE workflow_id = ?",
                    (to, workflow_id),
                )
                layout = self._layout(workflow_id, snapshot.version)
                parts.write(self._db, workflow_id, snapshot, layout)
                self._layouts.pop(workflow_id, None)
                moved.append(workflow_id)
            return moved

        return self._write(move)

    # -- commits -----------------------------------------------------------------------------

    def commit(self, change: Commit) -> CommitResult:
        """Apply ``change`` atomically if the stored version is ``change.expected_version``."""
        workflow_id = change.snapshot.workflow_id
        try:
            result = self._write(lambda: self._apply(change), kinds=change.kinds)
        except BaseException:
            self._layouts.pop(workflow_id, None)
            raise
        self._layouts[workflow_id] = self._pending
        return result

    def _apply(self, change: Commit) -> CommitResult:
        snap = change.snapshot
        wf = snap.workflow_id
        new_version = change.expected_version + 1
        stored = snap.model_copy(update={"version": new_version})
        now = utc_now_iso()
        cursor = self._db.execute(
            # a workflow replaced or deleted keeps its notebook released whatever it commits
            # later (a failed run's last write after a new run took its notebook made it
            # active again, and the new run's insert was refused); a finished one run again
            # (a reset) takes it back
            "UPDATE workflows SET snapshot = '', version = ?, run_id = ?, fsm_state = ?,"
            " run_status = ?, active = CASE WHEN ? OR released IN ('replaced', 'deleted')"
            " THEN 0 ELSE 1 END, released = CASE WHEN ? THEN COALESCE(released, 'finished')"
            " WHEN released IN ('replaced', 'deleted') THEN released END, updated_at = ?"
            " WHERE workflow_id = ? AND version = ?",
            (
                new_version,
                snap.run_id,
                snap.fsm.state.value,
                snap.run.status,
                snap.run.status in INACTIVE_STATUSES,
                snap.run.status in INACTIVE_STATUSES,
                now,
                wf,
                change.expected_version,
            ),
        )
        if cursor.rowcount != 1:
            raise VersionConflictError(wf, change.expected_version, self._read(wf))
        layout = self._layout(wf, change.expected_version)
        written, self.last_write = parts.write(self._db, wf, stored, layout)
        written.version = new_version
        self._pending = written
        chains = anchor.ChainWriter(self._db)
        for entry in change.history:
            chains.append(
                "history",
                (
                    wf,
                    snap.run_id,
                    entry.from_state.value,
                    entry.event.value,
                    entry.to.value,
                    entry.timestamp,
                    entry.actor,
                ),
            )
        for record in change.trace:
            chains.append(
                "trace",
                (
                    wf,
                    snap.run_id,
                    record.actor,
                    record.action,
                    record.timestamp,
                    record.result,
                    _json(record.metadata),
                ),
            )
        for contract in change.contracts:
            stored_row = self._db.execute(
                "INSERT INTO contracts (execution_id, workflow_id, run_id, action_type,"
                " irreversible, idempotency_key, status, body, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                # every column is written again: a column edited behind the store's back
                # must not survive a re-save and be logged as the row's valid state
                " ON CONFLICT(execution_id) DO UPDATE SET status = excluded.status,"
                " body = excluded.body, updated_at = excluded.updated_at,"
                " workflow_id = excluded.workflow_id, run_id = excluded.run_id,"
                " action_type = excluded.action_type, irreversible = excluded.irreversible,"
                " idempotency_key = excluded.idempotency_key"
                f" RETURNING {', '.join(anchor.CONTRACT_COLUMNS)}",
                (
                    contract.execution_id,
                    contract.workflow_id or wf,
                    contract.run_id or snap.run_id,
                    contract.action_type,
                    1 if contract.irreversible else 0,
                    contract.idempotency_key,
                    contract.status.value,
                    _dump(contract),
                    contract.updated_at,
                ),
            ).fetchone()
            chains.log_change("contracts", (contract.execution_id,), stored_row, wf)
        for cell in change.cells:
            stored_row = self._db.execute(
                "INSERT INTO cells (workflow_id, cell_id, position, contract_id, cell, updated_at,"
                " sources) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(workflow_id, cell_id) DO UPDATE SET cell = excluded.cell,"
                " contract_id = COALESCE(excluded.contract_id, cells.contract_id),"
                " updated_at = excluded.updated_at, sources = CASE"
                f" WHEN substr(cells.sources, -{DIGEST_CHARS}) = excluded.sources"
                " THEN cells.sources"
                " WHEN cells.sources = '' THEN excluded.sources"
                f" ELSE substr(cells.sources || ',' || excluded.sources, -{_SOURCES_CHARS}) END"
                f" RETURNING {', '.join(anchor.CELL_COLUMNS)}",
                (
                    wf,
                    cell.cell_id,
                    cell.position,
                    cell.contract_id,
                    _json(cell.cell),
                    now,
                    source_digest(cell.cell.get("source", "")),
                ),
            ).fetchone()
            chains.log_change("cells", (wf, cell.cell_id), stored_row, wf)
        published: list[WorkflowEvent] = []
        base = {
            "workflow_id": wf,
            "version": new_version,
            "at": now,
            "run_status": snap.run.status,
        }
        for draft in change.events:
            chains.append("events", _event_row(base, draft, published))
        chains.flush()
        return CommitResult(stored, published)

    def stored_bytes(self, workflow_id: str) -> tuple[int, int]:
        """Bytes of the stored snapshot's parts and of its item rows (benchmarks)."""
        return parts.stored_bytes(self._db, workflow_id)

    def chain_anchor(self) -> dict[str, Any]:
        """The chain heads as an exportable anchor (``trace --export-anchor``'s document)."""
        return anchor.notebook_anchor(self._db)

    def verify(self, external: Any = None) -> int:
        """Check every chain, its head, contracts and cells against their change logs, and
        (given) an exported anchor; returns chained rows checked or raises ChainBrokenError."""
        return self.verification(external).total

    def verification(self, external: Any = None) -> anchor.Verification:
        """:meth:`verify` with the rows checked per chain and per mutable table."""
        with anchor.read_consistently(self._db):
            report = anchor.verify_chains(self._db)
            if external is not None:
                anchor.check_anchor(self._db, external)
        return report

    def export_anchor(self) -> dict[str, Any]:
        """The chain heads as JSON, to keep outside the database (``trace --export-anchor``);
        the notebook writers put the same document in ``metadata.notebook_bcc.anchor``."""
        return anchor.export_anchor(self._db)
