"""``trace --verify`` catches tampering to the last row (issue 19.5), on a real run's database.

Tail deletion (the last row, the last 3, every row) of each hash chain; deletion, insertion,
reorder and edits of ``contracts`` and ``cells`` (checked against their change logs); a
deleted chain head; and, with ``--anchor FILE`` exported earlier, a tail deletion whose chain
head was rewritten to match. Each is exit 1 naming the table.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest

from notebook_bcc.cli import main
from notebook_bcc.models.records import TraceRecord
from notebook_bcc.store.anchor import CELL_COLUMNS, CONTRACT_COLUMNS
from notebook_bcc.store.schema import CHAINED_TABLES, SCHEMA_VERSION
from notebook_bcc.store.sqlite import Commit, SqliteStore
from tests.durability.test_trace_cli import recorded, rows, state_db, trace

__all__ = ["recorded", "state_db"]  # fixtures shared with test_trace_cli (one real run each)

Capsys = pytest.CaptureFixture[str]


def _sql(state_db: Path, *statements: str) -> None:
    with contextlib.closing(sqlite3.connect(state_db)) as db:
        for statement in statements:
            db.execute(statement)
        db.commit()


def _value(state_db: Path, table: str, column: str, where: str) -> object:
    with contextlib.closing(sqlite3.connect(state_db)) as db:
        return db.execute(f"SELECT {column} FROM {table} WHERE {where}").fetchone()[0]


def _refused(state_db: Path, capsys: Capsys, fragment: str, *flags: str) -> str:
    code, out, err = trace(state_db, capsys, "--verify", *flags)
    assert code == 1, (out, err)
    assert fragment in err, err
    assert "Traceback" not in err
    return err


def test_the_recorded_run_has_rows_in_every_chain_and_table(state_db: Path) -> None:
    for table in (*CHAINED_TABLES, "contracts", "cells"):
        assert rows(state_db, table) >= 4, table


@pytest.mark.parametrize("table", list(CHAINED_TABLES))
@pytest.mark.parametrize("count", [1, 3, "all"])
def test_tail_deletion_is_caught(
    state_db: Path, capsys: Capsys, table: str, count: int | str
) -> None:
    total = rows(state_db, table)
    keep = 0 if count == "all" else total - int(count)
    _sql(state_db, f"DELETE FROM {table} WHERE seq > (SELECT MIN(seq) - 1 + {keep} FROM {table})")
    assert rows(state_db, table) == keep
    err = _refused(state_db, capsys, f"{table}: the chain holds {keep} rows")
    assert f"its head records {total} rows" in err
    assert "deleted from the end" in err


def test_emptying_every_chain_and_its_heads_is_caught(state_db: Path, capsys: Capsys) -> None:
    _sql(state_db, *(f"DELETE FROM {table}" for table in CHAINED_TABLES), "DELETE FROM chain_heads")
    _refused(state_db, capsys, "no chain head in chain_heads")


@pytest.mark.parametrize("table", list(CHAINED_TABLES))
def test_swapping_two_rows_is_caught(state_db: Path, capsys: Capsys, table: str) -> None:
    columns = [*CHAINED_TABLES[table][1:], "prev_hash", "hash"]
    seq = rows(state_db, table) // 2
    with contextlib.closing(sqlite3.connect(state_db)) as db:
        first = db.execute(
            f"SELECT {', '.join(columns)} FROM {table} WHERE seq = ?", (seq,)
        ).fetchone()
        second = db.execute(
            f"SELECT {', '.join(columns)} FROM {table} WHERE seq = ?", (seq + 1,)
        ).fetchone()
        assignments = ", ".join(f"{c} = ?" for c in columns)
        db.execute(f"UPDATE {table} SET {assignments} WHERE seq = ?", (*second, seq))
        db.execute(f"UPDATE {table} SET {assignments} WHERE seq = ?", (*first, seq + 1))
        db.commit()
    _refused(state_db, capsys, f"{table} row seq={seq} does not match its hash chain")


MUTABLE_EDITS = [("contracts", c) for c in CONTRACT_COLUMNS if c != "execution_id"] + [
    ("cells", c) for c in CELL_COLUMNS if c not in ("workflow_id", "cell_id")
]


@pytest.mark.parametrize(("table", "column"), MUTABLE_EDITS)
def test_an_edit_of_contracts_or_cells_is_caught(
    state_db: Path, capsys: Capsys, table: str, column: str
) -> None:
    # A REAL column (contracts.updated_at) gets a number added: text appended to one is
    # converted back to REAL and, when the 16th digit was already a "1", to the same value.
    row = f"rowid = (SELECT rowid FROM {table} ORDER BY rowid LIMIT 1 OFFSET 1)"
    before = _value(state_db, table, column, row)
    _sql(
        state_db,
        f"UPDATE {table} SET {column} = CASE WHEN typeof({column}) IN ('real', 'integer')"
        f" THEN {column} + 1 ELSE COALESCE({column}, '') || '1' END WHERE {row}",
    )
    assert _value(state_db, table, column, row) != before
    _refused(state_db, capsys, f"{table} row ")
    _refused(state_db, capsys, "was edited after it was written")


@pytest.mark.parametrize("table", ["contracts", "cells"])
@pytest.mark.parametrize("which", ["first", "last", "last3", "all"])
def test_a_deletion_from_contracts_or_cells_is_caught(
    state_db: Path, capsys: Capsys, table: str, which: str
) -> None:
    where = {
        "first": f"rowid = (SELECT MIN(rowid) FROM {table})",
        "last": f"rowid = (SELECT MAX(rowid) FROM {table})",
        "last3": f"rowid IN (SELECT rowid FROM {table} ORDER BY rowid DESC LIMIT 3)",
        "all": "1 = 1",
    }[which]
    before = rows(state_db, table)
    _sql(state_db, f"DELETE FROM {table} WHERE {where}")
    missing = {"first": 1, "last": 1, "last3": 3, "all": before}[which]
    _refused(state_db, capsys, f"{table}: {missing} logged row(s) missing")


@pytest.mark.parametrize("table", ["contracts", "cells"])
def test_an_inserted_contract_or_cell_is_caught(state_db: Path, capsys: Capsys, table: str) -> None:
    key = "execution_id" if table == "contracts" else "cell_id"
    columns = CONTRACT_COLUMNS if table == "contracts" else CELL_COLUMNS
    listed = ", ".join(columns)
    copied = ", ".join(f"'forged' || {c}" if c == key else c for c in columns)
    _sql(state_db, f"INSERT INTO {table} ({listed}) SELECT {copied} FROM {table} LIMIT 1")
    _refused(state_db, capsys, "was inserted outside the store")


@pytest.mark.parametrize("table", ["contracts", "cells"])
def test_a_reordered_contract_or_cell_is_caught(state_db: Path, capsys: Capsys, table: str) -> None:
    """The first row deleted and re-inserted unchanged: same content, another position."""
    columns = ", ".join(CONTRACT_COLUMNS if table == "contracts" else CELL_COLUMNS)
    _sql(
        state_db,
        f"CREATE TEMP TABLE moved AS SELECT {columns} FROM {table} ORDER BY rowid LIMIT 1",
        f"DELETE FROM {table} WHERE rowid = (SELECT MIN(rowid) FROM {table})",
        f"INSERT INTO {table} ({columns}) SELECT {columns} FROM moved",
    )
    _refused(state_db, capsys, f"{table}: rows are not in the order they were written")


def test_a_deleted_chain_head_is_caught(state_db: Path, capsys: Capsys) -> None:
    _sql(state_db, "DELETE FROM chain_heads WHERE chain = 'events'")
    _refused(state_db, capsys, "events: ")


def test_a_dropped_anchor_table_is_exit_1_not_a_traceback(state_db: Path, capsys: Capsys) -> None:
    _sql(state_db, "DROP TABLE chain_heads")
    _refused(state_db, capsys, "the store's table(s) chain_heads are missing")


# -- the anchor outside the database ----------------------------------------------------------


def test_an_exported_anchor_catches_a_tail_deletion_with_a_rewritten_head(
    state_db: Path, capsys: Capsys, tmp_path: Path
) -> None:
    anchor = tmp_path / "anchor.json"
    code, _, err = trace(state_db, capsys, "--export-anchor", str(anchor))
    assert code == 0, err
    document = json.loads(anchor.read_text())
    assert document["format"] == "notebook-bcc-anchor"
    assert document["chains"]["history"]["rows"] == rows(state_db, "history")
    # the attacker deletes the last 3 history rows and rewrites the head to match
    _sql(
        state_db,
        "DELETE FROM history WHERE seq > (SELECT MAX(seq) - 3 FROM history)",
        "UPDATE chain_heads SET rows = rows - 3, last_seq = last_seq - 3,"
        " head_hash = (SELECT hash FROM history ORDER BY seq DESC LIMIT 1)"
        " WHERE chain = 'history'",
    )
    code, _, err = trace(state_db, capsys, "--verify")
    assert code == 0, f"out of reach without the external anchor: {err}"
    err = _refused(state_db, capsys, "history: the anchor records", "--anchor", str(anchor))
    assert "anchored rows were deleted" in err


def test_an_exported_anchor_still_verifies_after_the_run_goes_on(
    state_db: Path, capsys: Capsys, tmp_path: Path
) -> None:
    anchor = tmp_path / "anchor.json"
    assert trace(state_db, capsys, "--export-anchor", str(anchor))[0] == 0
    store = SqliteStore(state_db)
    try:
        (workflow_id,) = store.workflow_ids()
        snap = store.load(workflow_id)
        record = TraceRecord(actor="test", action="later", timestamp=1.0)
        store.commit(Commit(snapshot=snap, expected_version=snap.version, trace=[record]))
    finally:
        store.close()
    code, out, err = trace(state_db, capsys, "--verify", "--anchor", str(anchor))
    assert code == 0, err
    assert "anchored prefix" in out


def test_an_exported_anchor_catches_a_rewritten_history(
    state_db: Path, capsys: Capsys, tmp_path: Path
) -> None:
    anchor = tmp_path / "anchor.json"
    assert trace(state_db, capsys, "--export-anchor", str(anchor))[0] == 0
    document = json.loads(anchor.read_text())
    document["chains"]["trace"]["hash"] = "f" * 64  # as if the file were rewritten since
    anchor.write_text(json.dumps(document))
    _refused(state_db, capsys, "the anchored history was rewritten", "--anchor", str(anchor))


def test_an_unreadable_anchor_is_exit_2(state_db: Path, capsys: Capsys, tmp_path: Path) -> None:
    code, _, err = trace(state_db, capsys, "--verify", "--anchor", str(tmp_path / "none.json"))
    assert code == 2
    assert "cannot read the anchor" in err


# -- a database written before the anchors ------------------------------------------------------


def _downgrade(state_db: Path) -> None:
    """Make the database what schema 2 wrote: each snapshot whole in ``workflows.snapshot``,
    no release reasons (schema 7), no cell source digests (schema 5), no snapshot parts
    (schema 4), no chain heads or contract/cell logs (schema 3)."""
    with contextlib.closing(SqliteStore(state_db)) as store:
        whole = {i: store.load(i).model_dump_json(by_alias=True) for i in store.workflow_ids()}
    with contextlib.closing(sqlite3.connect(state_db)) as db:
        for workflow_id, text in whole.items():
            db.execute(
                "UPDATE workflows SET snapshot = ? WHERE workflow_id = ?", (text, workflow_id)
            )
        db.commit()
    _sql(
        state_db,
        "DROP TABLE snapshot_parts",
        "DROP TABLE snapshot_items",
        "DROP TABLE chain_heads",
        "DROP TABLE contract_log",
        "DROP TABLE cell_log",
        "ALTER TABLE cells DROP COLUMN sources",
        "ALTER TABLE workflows DROP COLUMN released",
        "PRAGMA user_version = 2",
    )


def test_an_old_database_is_migrated_and_anchored(state_db: Path, capsys: Capsys) -> None:
    _downgrade(state_db)
    code, _, err = trace(state_db, capsys, "--verify")
    assert code == 0, err
    with contextlib.closing(SqliteStore(state_db)) as store:
        assert store.schema_version == SCHEMA_VERSION
    _sql(state_db, "DELETE FROM events WHERE seq = (SELECT MAX(seq) FROM events)")
    _refused(state_db, capsys, "events: the chain holds")


def test_an_old_database_catches_cell_source_digest_edits_after_migration(
    state_db: Path, capsys: Capsys
) -> None:
    # migrated from schema 2: logged at 3 without the column, which 5 adds and 6 logs
    _downgrade(state_db)
    assert trace(state_db, capsys, "--verify")[0] == 0
    _sql(state_db, "UPDATE cells SET sources = 'deadbeefdeadbeef' WHERE rowid = 2")
    _refused(state_db, capsys, "cells row workflow_id=")


def test_an_old_database_catches_contract_edits_after_migration(
    state_db: Path, capsys: Capsys
) -> None:
    _downgrade(state_db)
    assert trace(state_db, capsys, "--verify")[0] == 0
    _sql(state_db, "UPDATE contracts SET status = 'PENDING' WHERE rowid = 1")
    _refused(state_db, capsys, "contracts row execution_id=")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ('{"id": 5}', "location.progress.stages.completed.0."),
        ("{not json", "its stored parts: JSONDecodeError"),
    ],
)
@pytest.mark.parametrize("command", ["status", "resume"])
def test_an_edited_snapshot_is_exit_1_naming_where_not_a_traceback(
    state_db: Path, capsys: Capsys, body: str, fragment: str, command: str
) -> None:
    path = "location.progress.stages.completed"
    assert int(str(_value(state_db, "snapshot_items", "COUNT(*)", f"path = '{path}'"))) >= 1
    before = {table: rows(state_db, table) for table in CHAINED_TABLES}
    _sql(state_db, f"UPDATE snapshot_items SET body = '{body}' WHERE path = '{path}' AND seq = 0")
    capsys.readouterr()
    code = main([command, "--state-db", str(state_db)])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "the stored snapshot of workflow" in err, err
    assert fragment in err, err
    assert "Traceback" not in err
    assert {table: rows(state_db, table) for table in CHAINED_TABLES} == before  # nothing written
    code, out, _ = trace(state_db, capsys, "--verify")  # the chained record is intact
    assert code == 0
    assert "chain verified" in out


# -- tampering that verify once let through or crashed on -------------------------------------


@pytest.mark.parametrize(
    ("statement", "fragment"),
    [
        (
            "UPDATE history SET actor = CAST(actor AS BLOB) WHERE seq = 7",
            "history row seq=7 holds a value of a type the store never writes",
        ),
        (
            "UPDATE contracts SET body = CAST(body AS BLOB) WHERE rowid = 1",
            "contracts row execution_id=",
        ),
        (
            "UPDATE chain_heads SET rows = 'abc' WHERE chain = 'events'",
            "chain_heads row 'events' holds a value of a type the store never writes",
        ),
        ("DROP TABLE workflows", "the store's table(s) workflows are missing"),
        ("DROP TABLE snapshot_parts", "the store's table(s) snapshot_parts are missing"),
    ],
)
def test_odd_types_and_dropped_tables_are_exit_1_naming_where(
    state_db: Path, capsys: Capsys, statement: str, fragment: str
) -> None:
    _sql(state_db, statement)
    _refused(state_db, capsys, fragment)


@pytest.mark.parametrize(
    ("anchor", "fragment"),
    [
        ({"format": "notebook-bcc-anchor", "chains": {}}, "the anchor names no chain"),
        (
            {"format": "notebook-bcc-anchor", "chains": {"events": {"rows": "9", "last_seq": 9}}},
            "the anchor's entry for events is malformed",
        ),
        (
            {
                "format": "notebook-bcc-anchor",
                "chains": {"events": {"rows": -1, "last_seq": 9, "hash": "x"}},
            },
            "the anchor's entry for events is malformed",
        ),
    ],
)
def test_a_malformed_anchor_is_never_intact(
    state_db: Path, capsys: Capsys, tmp_path: Path, anchor: dict[str, object], fragment: str
) -> None:
    path = tmp_path / "anchor.json"
    path.write_text(json.dumps(anchor), encoding="utf-8")
    _refused(state_db, capsys, fragment, "--anchor", str(path))


def test_status_on_a_store_missing_a_table_is_exit_1_not_a_traceback(
    state_db: Path, capsys: Capsys
) -> None:
    _sql(state_db, "DROP TABLE contracts")
    capsys.readouterr()
    code = main(["status", "--state-db", str(state_db)])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "no such table: contracts" in err
    assert "it was altered or damaged after it was written" in err
    assert f"trace --verify --state-db {state_db}" in err


@pytest.mark.parametrize(
    ("statement", "fragment"),
    [
        ("UPDATE trace SET timestamp = 'abc' WHERE seq = 3", "trace row seq=3 cannot be read"),
        ("UPDATE history SET event = 'TELEPORT' WHERE seq = 2", "history row seq=2 cannot be"),
    ],
)
def test_reading_an_edited_row_is_exit_1_naming_it_not_a_traceback(
    state_db: Path, capsys: Capsys, statement: str, fragment: str
) -> None:
    _sql(state_db, statement)
    code, _, err = trace(state_db, capsys)
    assert code == 1, err
    assert fragment in err
    assert "edited or damaged after it was written" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("version", [2, 4])
def test_a_lowered_schema_version_says_so_not_only_what_sqlite_said(
    state_db: Path, capsys: Capsys, version: int
) -> None:
    _sql(state_db, f"PRAGMA user_version = {version}")
    code, _, err = trace(state_db, capsys, "--verify")
    assert code == 1, err
    assert f"upgrading its schema from version {version} to {version + 1} failed" in err
    assert "its schema version (PRAGMA user_version) was altered" in err
    with contextlib.closing(sqlite3.connect(state_db)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == version, "nothing changed"
