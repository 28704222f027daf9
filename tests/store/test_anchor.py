"""Chain heads and change logs move in the same transaction as the rows they anchor (19.5)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notebook_bcc.models.records import TraceRecord
from notebook_bcc.store import CellRow, ChainBrokenError, Commit, IdempotencyViolationError
from notebook_bcc.store.anchor import put_anchor
from notebook_bcc.store.sqlite import SqliteStore
from tests.store.test_sqlite_store import fresh, irreversible


def _heads(path: Path) -> dict[str, tuple[int, int, str]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return {
            r[0]: (r[1], r[2], r[3])
            for r in db.execute("SELECT chain, rows, last_seq, head_hash FROM chain_heads")
        }


def test_a_new_database_has_a_head_for_every_chain(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with contextlib.closing(SqliteStore(path)) as store:
        assert store.verify() == 0
        anchor = store.export_anchor()
    assert set(anchor["chains"]) == {"history", "trace", "events", "contract_log", "cell_log"}
    assert {head[0] for head in _heads(path).values()} == {0}


def test_a_refused_commit_leaves_heads_and_logs_untouched(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with contextlib.closing(SqliteStore(path)) as store:
        snap = fresh(store)
        store.commit(
            Commit(snapshot=snap, expected_version=0, contracts=[irreversible("a", "RUNNING")])
        )
        before = _heads(path)
        with pytest.raises(IdempotencyViolationError):
            store.commit(
                Commit(
                    snapshot=snap,
                    expected_version=1,
                    trace=[TraceRecord(actor="t", action="x", timestamp=1.0)],
                    cells=[CellRow("c", 0, {"cell_type": "code", "source": "export()"})],
                    contracts=[irreversible("b", "RUNNING")],
                )
            )
        assert _heads(path) == before
        assert store.verify() == before["contract_log"][0]


def test_every_upsert_is_logged_and_verified(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with contextlib.closing(SqliteStore(path)) as store:
        snap = fresh(store)
        for version, status in enumerate(("RUNNING", "COMPLETED")):
            cell = CellRow("c1", 0, {"cell_type": "code", "source": status}, contract_id="a")
            store.commit(
                Commit(
                    snapshot=snap,
                    expected_version=version,
                    contracts=[irreversible("a", status)],
                    cells=[cell],
                )
            )
        report = store.verification()
    assert report.tables == {"contracts": 1, "cells": 1}
    assert report.rows["contract_log"] == 2
    assert report.rows["cell_log"] == 2
    # the log's last state is what is stored: rolling the row back to its first state is caught
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("UPDATE contracts SET status = 'RUNNING'")
        db.commit()
    with contextlib.closing(SqliteStore(path)) as store, pytest.raises(ChainBrokenError) as info:
        store.verify()
    assert info.value.details["table"] == "contracts"


@given(st.lists(st.sampled_from(["trace", "cell", "contract"]), min_size=1, max_size=12))
def test_any_sequence_of_commits_verifies_and_any_tail_cut_does_not(kinds: list[str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.sqlite"
        with contextlib.closing(SqliteStore(path)) as store:
            snap = fresh(store)
            for version, kind in enumerate(kinds):
                change = Commit(snapshot=snap, expected_version=version)
                if kind == "trace":
                    record = TraceRecord(actor="t", action=f"a{version}", timestamp=1.0)
                    change = Commit(snapshot=snap, expected_version=version, trace=[record])
                elif kind == "cell":
                    cell = CellRow(f"c{version % 3}", version, {"source": str(version)})
                    change = Commit(snapshot=snap, expected_version=version, cells=[cell])
                else:
                    contract = irreversible(f"x{version % 2}", "FAILED", key=f"k{version}")
                    change = Commit(snapshot=snap, expected_version=version, contracts=[contract])
                store.commit(change)
            store.verify()
        table = {"trace": "trace", "cell": "cell_log", "contract": "contract_log"}[kinds[-1]]
        with contextlib.closing(sqlite3.connect(path)) as db:
            db.execute(f"DELETE FROM {table} WHERE seq = (SELECT MAX(seq) FROM {table})")
            db.commit()
        with contextlib.closing(SqliteStore(path)) as store, pytest.raises(ChainBrokenError):
            store.verify()


def test_put_anchor_sets_the_notebook_metadata_key() -> None:
    metadata: dict[str, object] = {"kernelspec": {"name": "python3"}, "notebook_bcc": {"v": 1}}
    put_anchor(metadata, {"format": "notebook-bcc-anchor", "chains": {}})
    assert metadata["notebook_bcc"] == {
        "v": 1,
        "anchor": {"format": "notebook-bcc-anchor", "chains": {}},
    }
