"""Opening a state database: refuse one notebook-bcc did not make, then migrate its schema.

Both run before the store writes anything: a foreign SQLite file (tables of its own, no
schema version) is left exactly as it was, and a migration that fails (a schema version
altered by hand) changes nothing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from notebook_bcc.store import anchor
from notebook_bcc.store.errors import NotAStateDatabaseError, StoreUnavailableError
from notebook_bcc.store.schema import MIGRATIONS, SCHEMA_VERSION

ANCHOR_SCHEMA = 3
"""The schema version that added chain heads and change logs (older files are backfilled)."""

SOURCES_LOGGED_SCHEMA = 6
"""The schema version whose cell digests cover ``cells.sources`` (every cell logged again)."""


def check_ours(db: sqlite3.Connection, path: Path, *, existing: bool) -> None:
    """Refuse a database notebook-bcc did not make, before anything is written to it."""
    if int(db.execute("PRAGMA user_version").fetchone()[0]) != 0:
        return
    tables = [
        str(row[0])
        for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
            " AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    ]
    if tables:
        shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        ours = {"workflows", "chain_heads"} <= set(tables)
        why = (
            "its tables are notebook-bcc's but its schema version (PRAGMA user_version) "
            "was set to 0 after it was written"
            if ours
            else f"it holds tables of its own ({shown}) and no notebook-bcc schema version"
        )
        db.close()
        raise NotAStateDatabaseError(
            f"{path} is not a state database: {why}; it was left as it is",
            details={"path": str(path), "tables": tables[:20]},
        )
    if existing:
        db.close()
        raise NotAStateDatabaseError(
            f"{path} is not a state database: it is empty (no notebook-bcc schema; "
            "was it emptied or replaced?); it was left as it is",
            details={"path": str(path)},
        )


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Apply the schema migrations the database lacks, each in its own transaction."""
    current = int(db.execute("PRAGMA user_version").fetchone()[0])
    if current > SCHEMA_VERSION:
        raise StoreUnavailableError(
            f"{path} has schema version {current}; this notebook-bcc knows up to "
            f"{SCHEMA_VERSION}: upgrade notebook-bcc"
        )
    for version in range(current, SCHEMA_VERSION):
        db.execute("BEGIN IMMEDIATE")
        try:
            if int(db.execute("PRAGMA user_version").fetchone()[0]) != version:
                db.execute("ROLLBACK")
                continue
            for statement in MIGRATIONS[version].split(";"):
                if statement.strip():
                    db.execute(statement)
            if version + 1 == ANCHOR_SCHEMA:
                anchor.backfill(db)
            if version + 1 == SOURCES_LOGGED_SCHEMA:
                anchor.relog(db, "cells")
            db.execute(f"PRAGMA user_version = {version + 1}")
            db.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            db.execute("ROLLBACK")
            raise StoreUnavailableError(
                f"state database {path}: upgrading its schema from version {version} "
                f"to {version + 1} failed ({exc}): its tables are not what version {version} "
                "had, so its schema version (PRAGMA user_version) was altered or the file "
                "was damaged; nothing was changed",
                details={"path": str(path), "version": version, "cause": str(exc)},
            ) from exc
        except BaseException:
            db.execute("ROLLBACK")
            raise


__all__ = ["ANCHOR_SCHEMA", "SOURCES_LOGGED_SCHEMA", "check_ours", "migrate"]
