"""``notebook-bcc trace [--verify] [--json]`` on a real run's database (issue 7 §1).

Each chained row's hash covers all of its columns and the previous row's hash; only chained
tables carry ``hash`` columns; ``--verify`` checks every chained table and exits 1 naming the
first bad row — after an edit of any column, a forged hash, or a deleted row.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from notebook_bcc.cli import main
from notebook_bcc.store.schema import CHAINED_TABLES
from notebook_bcc.store.sqlite import SqliteStore
from tests.conftest import FIXTURES


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The state database of one real ``notebook-bcc run`` (its process output dropped)."""
    root = tmp_path_factory.mktemp("trace")
    argv = [
        "run",
        str(FIXTURES / "durability" / "faults.yaml"),
        "--notebook",
        str(root / "run" / "faults.ipynb"),
        "--state-db",
        str(root / "run" / "state.sqlite"),
        "--auto-confirm",
    ]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(argv) == 0
    return root / "run" / "state.sqlite"


@pytest.fixture
def state_db(recorded: Path, tmp_path: Path) -> Path:
    """A private copy of the recorded database (tests may tamper with it)."""
    copy = tmp_path / "state.sqlite"
    shutil.copyfile(recorded, copy)
    wal = recorded.with_name(recorded.name + "-wal")
    if wal.exists():
        shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
    return copy


def trace(state_db: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str, str]:
    """Run ``notebook-bcc trace``; exit code, stdout, stderr."""
    capsys.readouterr()
    code = main(["trace", "--state-db", str(state_db), *flags])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def rows(state_db: Path, table: str) -> int:
    """How many rows a table holds."""
    with contextlib.closing(sqlite3.connect(state_db)) as db:
        count: int = db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    return count


def test_trace_prints_the_full_history_and_contract_trace(
    state_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = trace(state_db, capsys)
    assert code == 0
    store = SqliteStore(state_db)
    try:
        (workflow_id,) = store.workflow_ids()
        history = store.history(workflow_id)
        records = store.trace(workflow_id)
    finally:
        store.close()
    assert len(history) == rows(state_db, "history") > 20
    assert len(records) == rows(state_db, "trace") > 20
    assert f"FSM history of {workflow_id} ({len(history)} transitions):" in out
    assert f"trace ({len(records)} rows):" in out
    assert "--START_WORKFLOW--> stage_running" in out
    assert "--COMPLETE_WORKFLOW--> workflow_completed" in out
    assert "transition:start" in out or "create_contract" in out


def test_trace_json_lines_parse(state_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = trace(state_db, capsys, "--json")
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    tables = [line["table"] for line in lines]
    assert tables.count("history") == rows(state_db, "history")
    assert tables.count("trace") == rows(state_db, "trace")
    history = [line for line in lines if line["table"] == "history"]
    assert {"from", "event", "to", "actor", "timestamp"} <= set(history[0])
    assert history[0]["event"] == "START_WORKFLOW"
    assert history[-1]["to"] == "workflow_completed"
    records = [line for line in lines if line["table"] == "trace"]
    assert all({"actor", "action", "timestamp"} <= set(r) for r in records)


def test_verify_passes_on_a_real_run(state_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = trace(state_db, capsys, "--verify")
    assert code == 0, err
    total = sum(rows(state_db, table) for table in CHAINED_TABLES)
    assert out.startswith(f"chain verified: {total} rows in 5 chains (history ")
    assert "every chain ends at its anchored head" in out


def test_only_chained_tables_carry_hashes(state_db: Path) -> None:
    with contextlib.closing(sqlite3.connect(state_db)) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        hashed = {
            table
            for table in tables
            if "hash" in {col[1] for col in db.execute(f"PRAGMA table_info({table})")}
        }
    assert hashed == set(CHAINED_TABLES)


def _edits() -> list[tuple[str, str]]:
    edits = [(table, column) for table, columns in CHAINED_TABLES.items() for column in columns[1:]]
    edits += [(table, "hash") for table in CHAINED_TABLES]
    edits += [(table, "prev_hash") for table in CHAINED_TABLES]
    return edits


@pytest.mark.parametrize(("table", "column"), _edits())
def test_verify_names_the_row_after_any_column_is_edited(
    state_db: Path, capsys: pytest.CaptureFixture[str], table: str, column: str
) -> None:
    seq = rows(state_db, table) // 2
    with contextlib.closing(sqlite3.connect(state_db)) as db:
        changed = db.execute(
            f"UPDATE {table} SET {column} = {column} || 'x' WHERE seq = ?", (seq,)
        ).rowcount
        db.commit()
    assert changed == 1
    code, _, err = trace(state_db, capsys, "--verify")
    assert code == 1
    assert f"{table} row seq={seq} does not match its hash chain" in err


@pytest.mark.parametrize("table", list(CHAINED_TABLES))
def test_verify_names_the_row_after_a_deleted_one(
    state_db: Path, capsys: pytest.CaptureFixture[str], table: str
) -> None:
    seq = rows(state_db, table) // 2
    with contextlib.closing(sqlite3.connect(state_db)) as db:
        db.execute(f"DELETE FROM {table} WHERE seq = ?", (seq,))
        db.commit()
    code, _, err = trace(state_db, capsys, "--verify")
    assert code == 1
    assert f"{table} row seq={seq + 1} does not match its hash chain" in err


def test_verify_catches_a_renumbered_row(
    state_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seq = rows(state_db, "trace") // 2
    with contextlib.closing(sqlite3.connect(state_db)) as db:
        db.execute("UPDATE trace SET seq = seq + 100000 WHERE seq = ?", (seq,))
        db.commit()
    code, _, err = trace(state_db, capsys, "--verify")
    assert code == 1
    assert "trace row seq=" in err


@pytest.mark.parametrize("flags", [(), ("--verify",), ("--json",)])
def test_missing_database_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...]
) -> None:
    missing = tmp_path / "nope.sqlite"
    code, _, err = trace(missing, capsys, *flags)
    assert code == 2
    assert f"{missing}: no such state database" in err
    assert not missing.exists(), "never created by a read"
