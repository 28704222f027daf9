"""The SQLite schema of the store, as ordered migrations.

``migrations[i]`` takes a database from schema version ``i`` to ``i + 1``. Chained tables
(``history``, ``trace``, ``events`` and the change logs ``contract_log`` / ``cell_log`` of the
upserted ``contracts`` / ``cells``) carry ``prev_hash`` / ``hash`` columns; no other table does.
``chain_heads`` anchors each chain's last row (see :mod:`notebook_bcc.store.anchor`).
"""

from __future__ import annotations

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE workflows (
        workflow_id   TEXT PRIMARY KEY,
        run_id        TEXT NOT NULL,
        notebook_path TEXT,
        version       INTEGER NOT NULL,
        fsm_state     TEXT NOT NULL,
        run_status    TEXT NOT NULL,
        active        INTEGER NOT NULL DEFAULT 1,
        snapshot      TEXT NOT NULL,
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL
    );
    CREATE UNIQUE INDEX workflows_one_active_per_notebook
        ON workflows(notebook_path) WHERE active = 1 AND notebook_path IS NOT NULL;

    CREATE TABLE history (
        seq         INTEGER PRIMARY KEY AUTOINCREMENT,
        workflow_id TEXT NOT NULL,
        run_id      TEXT NOT NULL,
        from_state  TEXT NOT NULL,
        event       TEXT NOT NULL,
        to_state    TEXT NOT NULL,
        timestamp   TEXT NOT NULL,
        actor       TEXT NOT NULL,
        prev_hash   TEXT NOT NULL,
        hash        TEXT NOT NULL
    );
    CREATE INDEX history_by_workflow ON history(workflow_id, seq);

    CREATE TABLE trace (
        seq         INTEGER PRIMARY KEY AUTOINCREMENT,
        workflow_id TEXT NOT NULL,
        run_id      TEXT NOT NULL,
        actor       TEXT NOT NULL,
        action      TEXT NOT NULL,
        timestamp   REAL NOT NULL,
        result      TEXT,
        metadata    TEXT NOT NULL,
        prev_hash   TEXT NOT NULL,
        hash        TEXT NOT NULL
    );
    CREATE INDEX trace_by_workflow ON trace(workflow_id, seq);

    CREATE TABLE events (
        seq         INTEGER PRIMARY KEY AUTOINCREMENT,
        workflow_id TEXT NOT NULL,
        version     INTEGER NOT NULL,
        body        TEXT NOT NULL,
        prev_hash   TEXT NOT NULL,
        hash        TEXT NOT NULL
    );
    CREATE INDEX events_by_workflow ON events(workflow_id, seq);

    CREATE TABLE contracts (
        execution_id    TEXT PRIMARY KEY,
        workflow_id     TEXT NOT NULL,
        run_id          TEXT NOT NULL,
        action_type     TEXT NOT NULL,
        irreversible    INTEGER NOT NULL,
        idempotency_key TEXT,
        status          TEXT NOT NULL,
        body            TEXT NOT NULL,
        updated_at      REAL NOT NULL
    );
    CREATE INDEX contracts_by_workflow ON contracts(workflow_id, run_id);
    CREATE UNIQUE INDEX contracts_irreversible_once
        ON contracts(workflow_id, run_id, idempotency_key)
        WHERE irreversible = 1 AND action_type = 'cell_execution'
          AND idempotency_key IS NOT NULL
          AND status IN ('RUNNING', 'WAITING', 'COMPLETED');

    CREATE TABLE cells (
        workflow_id TEXT NOT NULL,
        cell_id     TEXT NOT NULL,
        position    INTEGER NOT NULL,
        contract_id TEXT,
        cell        TEXT NOT NULL,
        updated_at  TEXT NOT NULL,
        PRIMARY KEY (workflow_id, cell_id)
    );
    CREATE INDEX cells_by_position ON cells(workflow_id, position);
    """,
    """
    CREATE TABLE commands (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        workflow_id TEXT NOT NULL,
        body        TEXT NOT NULL,
        created_at  TEXT NOT NULL,
        done_at     TEXT,
        outcome     TEXT
    );
    CREATE INDEX commands_open ON commands(workflow_id, id) WHERE done_at IS NULL;
    ALTER TABLE workflows ADD COLUMN owner TEXT;
    """,
    # 3: tamper-evidence to the last row (store/anchor.py). The chain heads and the change
    # logs of the mutable tables; an older database's existing rows are anchored by
    # anchor.backfill in the same transaction.
    """
    CREATE TABLE chain_heads (
        chain    TEXT PRIMARY KEY,
        rows     INTEGER NOT NULL,
        last_seq  INTEGER NOT NULL,
        head_hash TEXT NOT NULL
    );
    CREATE TABLE contract_log (
        seq         INTEGER PRIMARY KEY AUTOINCREMENT,
        workflow_id TEXT NOT NULL,
        row_key     TEXT NOT NULL,
        state       TEXT NOT NULL,
        prev_hash   TEXT NOT NULL,
        hash        TEXT NOT NULL
    );
    CREATE TABLE cell_log (
        seq         INTEGER PRIMARY KEY AUTOINCREMENT,
        workflow_id TEXT NOT NULL,
        row_key     TEXT NOT NULL,
        state       TEXT NOT NULL,
        prev_hash   TEXT NOT NULL,
        hash        TEXT NOT NULL
    );
    """,
    # 4: the snapshot in parts (store/parts.py): one row per top-level field, one per item of
    # the collections that grow with a run; ``workflows.snapshot`` keeps a snapshot stored
    # before (read as is until the workflow's next commit writes its parts).
    """
    CREATE TABLE snapshot_parts (
        workflow_id TEXT NOT NULL,
        part        TEXT NOT NULL,
        body        TEXT NOT NULL,
        PRIMARY KEY (workflow_id, part)
    ) WITHOUT ROWID;
    CREATE TABLE snapshot_items (
        workflow_id TEXT NOT NULL,
        path        TEXT NOT NULL,
        seq         INTEGER NOT NULL,
        item_key    TEXT,
        body        TEXT NOT NULL,
        PRIMARY KEY (workflow_id, path, seq)
    ) WITHOUT ROWID;
    """,
    # 5: the digests of the latest sources the workflow gave each cell (models/cell_sources.py),
    # so that a process resuming after a crash tells its predecessor's writes from user edits.
    """
    ALTER TABLE cells ADD COLUMN sources TEXT NOT NULL DEFAULT '';
    """,
    # 6: ``cells.sources`` joins a cell's logged digest (store/anchor.py CELL_COLUMNS), so an
    # edit of it is tampering that `trace --verify` sees; every cell is logged again by the
    # store's Python step for this version (anchor.relog), nothing changes in the tables.
    """
    SELECT 1;
    """,
    # 7: why an inactive workflow no longer holds its notebook (``workflows.released``):
    # 'finished' (its run completed or was cancelled), 'deleted' (DELETE, the panel's Delete)
    # or 'replaced' (a newer workflow started on its notebook); NULL while it holds it. Rows
    # released before are classified from what the table shows: a newer workflow on the same
    # notebook replaced it, else a finished run finished, else it was deleted.
    """
    ALTER TABLE workflows ADD COLUMN released TEXT;
    UPDATE workflows SET released = CASE
        WHEN EXISTS (
            SELECT 1 FROM workflows AS newer
            WHERE newer.notebook_path = workflows.notebook_path
              AND newer.created_at > workflows.created_at
        ) THEN 'replaced'
        WHEN run_status IN ('completed', 'cancelled') THEN 'finished'
        ELSE 'deleted' END
    WHERE active = 0;
    """,
)
"""Schema migrations in order; the database's ``PRAGMA user_version`` counts those applied."""

SCHEMA_VERSION = len(MIGRATIONS)

CHAINED_TABLES: dict[str, tuple[str, ...]] = {
    "history": (
        "seq",
        "workflow_id",
        "run_id",
        "from_state",
        "event",
        "to_state",
        "timestamp",
        "actor",
    ),
    "trace": (
        "seq",
        "workflow_id",
        "run_id",
        "actor",
        "action",
        "timestamp",
        "result",
        "metadata",
    ),
    "events": ("seq", "workflow_id", "version", "body"),
    "contract_log": ("seq", "workflow_id", "row_key", "state"),
    "cell_log": ("seq", "workflow_id", "row_key", "state"),
}
"""Each chained table and the columns its row hash covers (besides ``prev_hash``)."""

REQUIRED_TABLES: tuple[str, ...] = (
    "workflows",
    "snapshot_parts",
    "snapshot_items",
    "history",
    "trace",
    "events",
    "contracts",
    "cells",
    "commands",
    "chain_heads",
    "contract_log",
    "cell_log",
)
"""The tables every state database holds after its migrations (``trace --verify`` refuses a
file missing one: a dropped ``workflows`` table passed, while ``status`` crashed on it)."""
