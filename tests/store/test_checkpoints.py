"""WAL checkpoints on their own thread (store/checkpoints.py), on real database files."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from pathlib import Path

from notebook_bcc.models import new_snapshot
from notebook_bcc.store import AsyncStore, CellRow, Commit, SqliteStore
from notebook_bcc.store.checkpoints import BACKSTOP_PAGES, Checkpointer


def _commits(store: SqliteStore, count: int) -> None:
    """``count`` commits of one workflow, each writing a cell of about 8 KB."""
    snap = store.create(new_snapshot("wf-1", "run-1", notebook_path="nb.ipynb"))
    for n in range(count):
        cell = {"cell_type": "code", "source": f"x = {n}\n" + "#" * 8000, "outputs": []}
        snap = store.commit(
            Commit(snap, snap.version, cells=[CellRow(f"cell-{n}", n, cell)])
        ).snapshot


def _threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "notebook-bcc-checkpoint"]


def test_a_long_lived_writer_checkpoints_beside_its_commits_and_not_in_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.sqlite"
    store = SqliteStore(path)
    store.checkpoint_in_background()
    checkpointer = store.checkpointer
    assert checkpointer is not None
    try:
        # the writer itself only checkpoints as a backstop, far beyond what a run writes
        pragma = store.connection.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        assert pragma == BACKSTOP_PAGES
        commits = 5 * Checkpointer.every
        _commits(store, commits)
        assert checkpointer.wait(3, timeout=30), checkpointer.checkpoints
        assert checkpointer.failures == []
        # the checkpoints moved the log into the database file: that file alone (no WAL)
        # already holds cells of the commits made before the last checkpoint
        alone = tmp_path / "alone.sqlite"
        shutil.copyfile(path, alone)
        db = sqlite3.connect(alone)
        try:
            cells = db.execute("SELECT count(*) FROM cells").fetchone()[0]
        finally:
            db.close()
        assert cells >= 2 * Checkpointer.every
    finally:
        store.close()
    assert _threads() == []
    # and nothing was lost: the closed file holds every commit
    reopened = SqliteStore(path, existing=True)
    try:
        assert reopened.load("wf-1").version == commits
    finally:
        reopened.close()


def test_the_log_of_a_writer_that_never_pauses_stays_bounded(tmp_path: Path) -> None:
    """A passive checkpoint beside a busy writer moves the log into the database but never
    lets SQLite start the log over (the writer has always appended more by the time it is
    done): the log file grew to the backstop, 80 MB beside a 7 MB database in a 300-cell run,
    and a run on a small disk stopped with "database or disk is full". The writer's own
    checkpoint at :data:`BACKSTOP_PAGES` starts the log over, and the file is cut back."""
    path = tmp_path / "state.sqlite"
    wal = tmp_path / "state.sqlite-wal"
    store = SqliteStore(path)
    store.checkpoint_in_background()
    checkpointer = store.checkpointer
    assert checkpointer is not None
    largest = 0
    try:
        snap = store.create(new_snapshot("wf-1", "run-1", notebook_path="nb.ipynb"))
        for n in range(120 * Checkpointer.every):
            cell = {"cell_type": "code", "source": f"x = {n}\n" + "#" * 8000, "outputs": []}
            snap = store.commit(
                Commit(snap, snap.version, cells=[CellRow(f"cell-{n}", n, cell)])
            ).snapshot
            largest = max(largest, wal.stat().st_size)
        assert checkpointer.failures == []
    finally:
        store.close()
    # the backstop and the commit that crossed it (a few pages): never much more
    assert largest < BACKSTOP_PAGES * 4096 + 2**20, f"the log reached {largest / 2**20:.1f} MB"
    reopened = SqliteStore(path, existing=True)
    try:
        assert reopened.load("wf-1").version == 120 * Checkpointer.every
    finally:
        reopened.close()


def test_a_store_opened_for_one_command_never_starts_the_thread(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state.sqlite")
    try:
        _commits(store, 3 * Checkpointer.every)
        assert store.checkpointer is None
        assert _threads() == []
        pragma = store.connection.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        assert pragma == 1000  # SQLite's own default: checkpoints inside commits
    finally:
        store.close()


async def test_the_engine_and_server_store_checkpoints_in_the_background(
    tmp_path: Path,
) -> None:
    for inline in (True, False):
        store = await AsyncStore.open(tmp_path / f"state-{inline}.sqlite", inline=inline)
        try:
            checkpointer = await store.call(lambda s: s.checkpointer)
            assert checkpointer is not None
            await store.call(lambda s: _commits(s, 2 * Checkpointer.every))
            assert checkpointer.wait(1, timeout=30)
        finally:
            await store.close()
        assert _threads() == []
