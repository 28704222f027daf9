"""The ``planner_exchanges`` table: one bounded row per AI-planner call (see
:mod:`notebook_bcc.models.exchanges`).

The table is a side table beside the versioned schema: it is created if missing when a store
opens (:func:`ensure_table`), so it adds no migration step and an older database gains it
without a schema bump. Rows are append-only, written in their own short transaction as soon
as the reply arrives -- before the engine applies it -- so the reply behind a behavior's cells
is durable even when the run dies right after. They are not part of the tamper-evident chains
(they hold no state the engine replays from; the trace and snapshots do).
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

from notebook_bcc.models.exchanges import PlannerExchange
from notebook_bcc.store.errors import StoreUnavailableError

if TYPE_CHECKING:
    from notebook_bcc.store.sqlite import SqliteStore

DDL = """
CREATE TABLE IF NOT EXISTS planner_exchanges (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id TEXT NOT NULL,
    behavior_id TEXT,
    point       TEXT NOT NULL,
    body        TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS planner_exchanges_by_workflow
    ON planner_exchanges(workflow_id, behavior_id, seq)
"""

MAX_ROWS_LISTED = 500
"""Most exchanges one listing returns (the newest when more match)."""


def ensure_table(db: sqlite3.Connection) -> None:
    """Create the table and its index when missing (idempotent, own transaction)."""
    for statement in DDL.split(";"):
        if statement.strip():
            db.execute(statement)


def append_exchange(store: SqliteStore, exchange: PlannerExchange) -> PlannerExchange:
    """Store one exchange; returns it with its ``seq`` (1-based within the workflow)."""
    db = store.connection
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute(
                "SELECT COUNT(*) FROM planner_exchanges WHERE workflow_id = ?",
                (exchange.workflow_id,),
            ).fetchone()
            stored = exchange.model_copy(update={"seq": int(row[0]) + 1})
            db.execute(
                "INSERT INTO planner_exchanges (workflow_id, behavior_id, point, body)"
                " VALUES (?, ?, ?, ?)",
                (
                    stored.workflow_id,
                    stored.behavior_id,
                    stored.point,
                    stored.model_dump_json(),
                ),
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        raise StoreUnavailableError(
            f"state database {store.path} could not record a planner exchange: {exc}"
        ) from exc
    return stored


def list_exchanges(
    store: SqliteStore,
    workflow_id: str,
    *,
    behavior: str | None = None,
    limit: int = MAX_ROWS_LISTED,
) -> tuple[list[PlannerExchange], bool]:
    """The workflow's exchanges (only ``behavior``'s when given), oldest first, at most
    ``limit`` (the newest ones); the flag says whether more matched."""
    query = "SELECT body FROM planner_exchanges WHERE workflow_id = ?"
    params: list[object] = [workflow_id]
    if behavior is not None:
        query += " AND behavior_id = ?"
        params.append(behavior)
    query += " ORDER BY seq DESC LIMIT ?"
    params.append(limit + 1)
    rows = store.connection.execute(query, params).fetchall()
    more = len(rows) > limit
    found = [PlannerExchange.model_validate(json.loads(r[0])) for r in rows[:limit]]
    found.reverse()
    return found, more


__all__ = ["MAX_ROWS_LISTED", "append_exchange", "ensure_table", "list_exchanges"]
