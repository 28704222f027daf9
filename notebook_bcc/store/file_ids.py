"""The ``notebook_file_ids`` side table: the stable file id (jupyter-server-fileid) of each
server workflow's notebook, so the server finds the notebook again after a rename done
outside Jupyter (see :mod:`notebook_bcc.server.file_ids`).

Like :mod:`.exchanges`, it is created if missing when a store opens and holds no state the
engine replays from; a lost row only means the next lookup indexes the notebook afresh.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from notebook_bcc.store.errors import StoreUnavailableError

if TYPE_CHECKING:
    from notebook_bcc.store.sqlite import SqliteStore

DDL = """
CREATE TABLE IF NOT EXISTS notebook_file_ids (
    workflow_id TEXT PRIMARY KEY,
    file_id     TEXT NOT NULL
)
"""


def ensure_table(db: sqlite3.Connection) -> None:
    """Create the table when missing (idempotent)."""
    db.execute(DDL)


def file_id(store: SqliteStore, workflow_id: str) -> str | None:
    """The recorded file id of the workflow's notebook, if any."""
    row = store.connection.execute(
        "SELECT file_id FROM notebook_file_ids WHERE workflow_id = ?", (workflow_id,)
    ).fetchone()
    return None if row is None else str(row[0])


def set_file_id(store: SqliteStore, workflow_id: str, value: str | None) -> None:
    """Record (or, with None, forget) the file id of the workflow's notebook."""
    try:
        if value is None:
            store.connection.execute(
                "DELETE FROM notebook_file_ids WHERE workflow_id = ?", (workflow_id,)
            )
        else:
            store.connection.execute(
                "INSERT INTO notebook_file_ids (workflow_id, file_id) VALUES (?, ?)"
                " ON CONFLICT(workflow_id) DO UPDATE SET file_id = excluded.file_id",
                (workflow_id, value),
            )
    except sqlite3.Error as exc:
        raise StoreUnavailableError(
            f"state database {store.path} could not record a notebook file id: {exc}"
        ) from exc


__all__ = ["ensure_table", "file_id", "set_file_id"]
