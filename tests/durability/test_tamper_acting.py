"""What acts on a store must not act on a tampered one, and checking it must not cry wolf.

- ``resume`` verifies the store before it replays a cell or runs an irreversible action: a
  forged cell source (the code a human approved was not the code that would run) or a forged
  contract column is refused with exit 1, nothing runs, and the evidence stays (a re-save
  would have logged the forged row as valid).
- ``trace --verify`` beside a run that is committing reads one consistent snapshot: a commit
  landing between a chain's walk and its head read is not "rows deleted from the end".
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from notebook_bcc.store.errors import ChainBrokenError
from notebook_bcc.store.sqlite import SqliteStore
from tests.conftest import FIXTURES
from tests.conftest import run_cli as cli

DURABILITY = FIXTURES / "durability"


def _waiting_on_the_irreversible_action(tmp_path: Path) -> tuple[Path, Path]:
    """The crash workflow stopped at its irreversible confirmation: (state db, notebook)."""
    notebook = tmp_path / "nb" / "crash.ipynb"
    db = tmp_path / "nb" / "state.sqlite"
    first = cli(
        "run",
        DURABILITY / "crash.yaml",
        "--notebook",
        notebook,
        "--state-db",
        db,
        "--problem",
        "crash",
    )
    assert first.returncode == 3, first.stdout + first.stderr
    approved = cli("resume", "--state-db", db, "--approve")
    assert approved.returncode == 3, approved.stdout + approved.stderr
    status = cli("status", "--state-db", db)
    assert "irreversible" in status.stdout, status.stdout
    return db, notebook


def _forge_the_irreversible_cell(db: Path) -> None:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        cell_id, text = conn.execute(
            "SELECT cell_id, cell FROM cells WHERE cell LIKE '%ledger.txt%'"
            " AND cell LIKE '%\"code\"%'"
        ).fetchone()
        cell = json.loads(text)
        cell["source"] = 'open("ledger.txt", "a").write("FORGED\\n")\n'
        conn.execute("UPDATE cells SET cell = ? WHERE cell_id = ?", (json.dumps(cell), cell_id))
        conn.commit()


def _forge_a_contract_column(db: Path) -> None:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("UPDATE contracts SET run_id = 'forged-run' WHERE status = 'WAITING'")
        assert conn.total_changes == 1
        conn.commit()


@pytest.mark.parametrize(
    ("forge", "named"),
    [
        (_forge_the_irreversible_cell, "cells row workflow_id="),
        (_forge_a_contract_column, "contracts row execution_id="),
    ],
)
def test_resume_refuses_a_tampered_store_and_runs_nothing(
    tmp_path: Path, forge: object, named: str
) -> None:
    db, notebook = _waiting_on_the_irreversible_action(tmp_path)
    ledger = notebook.parent / "ledger.txt"
    before = ledger.read_text() if ledger.exists() else ""
    assert callable(forge)
    forge(db)
    resumed = cli("resume", "--state-db", db, "--approve")
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert f"{db} was altered after it was written, so resume will not act on it" in (
        resumed.stderr
    )
    assert named in resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert (ledger.read_text() if ledger.exists() else "") == before, "nothing ran"
    # the evidence stays: nothing re-saved the forged row as valid
    verified = cli("trace", "--verify", "--state-db", db)
    assert verified.returncode == 1
    assert named in verified.stderr


def test_verify_beside_a_committing_run_never_reports_tampering(tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "notebook_bcc",
            "run",
            str(DURABILITY / "many_cells.yaml"),
            "--notebook",
            str(tmp_path / "many.ipynb"),
            "--state-db",
            str(db),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    checked_while_running = 0
    try:
        while run.poll() is None:
            if not db.exists():
                continue
            try:
                store = SqliteStore(db, existing=True)
            except Exception:
                continue
            try:
                store.verification()  # ChainBrokenError fails the test with its message
                if run.poll() is None:
                    checked_while_running += 1
            finally:
                store.close()
    finally:
        _, err = run.communicate(timeout=300)
    assert run.returncode == 0, err
    assert checked_while_running >= 5, "the checks overlapped the run's commits"
    with contextlib.closing(SqliteStore(db, existing=True)) as store:
        assert store.verification().total > 1000


def test_a_verification_outside_a_transaction_leaves_none_open(tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    done = cli(
        "run", DURABILITY / "many_cells.yaml", "--notebook", tmp_path / "m.ipynb", "--state-db", db
    )
    assert done.returncode == 0, done.stderr
    with contextlib.closing(SqliteStore(db, existing=True)) as store:
        store.verification()
        assert not store.connection.in_transaction
        with contextlib.closing(sqlite3.connect(db)) as conn:
            conn.execute("DELETE FROM cells WHERE rowid = (SELECT MAX(rowid) FROM cells)")
            conn.commit()
        with pytest.raises(ChainBrokenError, match="rows were deleted"):
            store.verification()


def test_status_says_a_store_whose_tail_was_deleted_is_altered_and_offers_no_resume(
    tmp_path: Path,
) -> None:
    """The last history row deleted behind the store's back: ``status`` (what a person types
    first) says the store was altered, exits 1 and offers no ``resume`` (which would refuse);
    ``--json`` still prints the snapshot, the error on stderr."""
    db = tmp_path / "state.sqlite"
    first = cli(
        "run",
        FIXTURES / "engine" / "confirm.yaml",
        "--notebook",
        tmp_path / "nb.ipynb",
        "--state-db",
        db,
    )
    assert first.returncode == 3, first.stdout + first.stderr
    clean = cli("status", "--state-db", db)
    assert clean.returncode == 0, clean.stderr
    assert "altered" not in clean.stdout
    assert "next: notebook-bcc resume" in clean.stdout
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("DELETE FROM history WHERE seq = (SELECT max(seq) FROM history)")
        conn.commit()
    status = cli("status", "--state-db", db)
    assert status.returncode == 1, status.stdout + status.stderr
    assert f"warning: {db} was altered after it was written: history:" in status.stdout
    assert "deleted from the end" in status.stdout
    assert "resume will not act on it" in status.stdout
    assert "next: notebook-bcc resume" not in status.stdout
    assert "run: waiting" in status.stdout  # what it holds is still shown
    as_json = cli("status", "--state-db", db, "--json")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["run"]["status"] == "waiting"
    assert "was altered after it was written" in as_json.stderr
    assert "Traceback" not in status.stderr + as_json.stderr


@pytest.mark.parametrize("command", ["run", "cancel"])
def test_run_and_cancel_do_not_write_onto_an_altered_store(tmp_path: Path, command: str) -> None:
    """The last events row deleted behind the store's back: running the same command again
    (a new run in the same store) or ``cancel`` refuses, exit 1, as resume does. Writing on
    would chain a new row to the altered ones, and ``trace --verify`` would then point at that
    new row instead of the deletion."""
    db = tmp_path / "state.sqlite"
    run = ["run", FIXTURES / "engine" / "confirm.yaml", "--notebook", tmp_path / "nb.ipynb"]
    first = cli(*run, "--state-db", db)
    assert first.returncode == 3, first.stdout + first.stderr
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("DELETE FROM events WHERE seq = (SELECT max(seq) FROM events)")
        conn.commit()
    before = cli("trace", "--verify", "--state-db", db)
    assert before.returncode == 1
    assert "deleted from the end" in before.stderr, before.stderr
    again = cli(*run, "--state-db", db) if command == "run" else cli("cancel", "--state-db", db)
    assert again.returncode == 1, again.stdout + again.stderr
    assert f"{db} was altered after it was written, so {command} will not write to it" in (
        again.stderr
    )
    assert "Traceback" not in again.stderr
    after = cli("trace", "--verify", "--state-db", db)
    assert after.stderr == before.stderr, "the evidence is as it was"
