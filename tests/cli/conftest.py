"""Helpers the ``tests/cli`` files share: a completed run's state database and altering it
behind the store's back, as a user with the file could."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli


@pytest.fixture(scope="session")
def completed_state_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The state database of one completed ``notebook-bcc run`` (the ``chain`` blueprint, run
    once per session as a user runs it). Tests read it; one that changes it works on a
    :func:`copy_state_db`."""
    root = tmp_path_factory.mktemp("completed")
    blueprint = FIXTURES / "engine" / "chain.yaml"
    done = run_cli("run", blueprint, "--notebook", root / "chain.ipynb", "--auto-confirm")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    return root / "state.sqlite"


def copy_state_db(state_db: Path, folder: Path) -> Path:
    """A private copy of ``state_db`` (with its write-ahead log) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / state_db.name
    shutil.copyfile(state_db, copy)
    wal = state_db.with_name(state_db.name + "-wal")
    if wal.exists():
        shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
    return copy


def alter_history_row(state_db: Path, seq: int = 3) -> None:
    """Edit history row ``seq`` behind the store's back: the chain no longer verifies
    (``trace --verify`` names ``history`` row ``seq``)."""
    with contextlib.closing(sqlite3.connect(state_db)) as db:
        db.execute("UPDATE history SET actor = 'mallory' WHERE seq = ?", (seq,))
        db.commit()
