"""WAL checkpoints on a thread of their own, so that no commit waits for one.

In WAL mode SQLite moves the log back into the database file (a *checkpoint*) inside the
commit that crosses ``wal_autocheckpoint`` pages: with ``synchronous=NORMAL`` that commit
copies about a thousand pages and waits for two ``fsync`` calls. A workflow's commit writes
about 30 pages, so one code action in 35 paid several milliseconds for it (measured by
replaying a run's commits: median 0.16 ms per ``COMMIT``, mean 0.34 ms, slowest 6.9 ms), and
in the server every request queued behind that commit on the store's thread paid too.

:class:`Checkpointer` runs ``PRAGMA wal_checkpoint(PASSIVE)`` on its own connection and
thread once the writer has made :attr:`Checkpointer.every` commits since the last one. A
passive checkpoint takes no lock a writer or reader waits for, and SQLite releases the GIL
while it copies and syncs, so the commits go on beside it. The writer keeps a high
``wal_autocheckpoint`` as a backstop (a checkpointer that cannot keep up, or a process that
is not running one, still bounds the log).

A process killed mid-checkpoint loses nothing: the log stays valid and the next connection
finishes the copy.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path

BACKSTOP_PAGES = 8192
"""``wal_autocheckpoint`` of a writer whose checkpoints run in the background: the log pages
(32 MB with 4 KB pages) after which the writer checkpoints itself anyway.

It is also what bounds the log file. A passive checkpoint beside a busy writer moves the log
into the database but never lets SQLite start the log over: that happens when a write begins
with every frame already moved, and the writer has always appended more by the time a
checkpoint on another connection is done. The writer's own checkpoint runs between its
commits, so its next commit starts the log over. It waits for two ``fsync`` calls (a commit
in about 250 of a workflow's pays several milliseconds; at 2,048 pages one in 60 did, and the
commits' p99 went from 3.5 to 15.7 ms). At 20,000 pages, with a run's effects rewritten at
every commit, the log of a 300-cell run grew to 80 MB beside a 7 MB database, and a run on a
small disk stopped with "database or disk is full"."""

LOG_LIMIT_BYTES = 4 * 1024 * 1024
"""``journal_size_limit`` of such a writer: the log file is cut back to this when it starts
over (SQLite otherwise keeps reusing it at the largest size it ever reached)."""


class Checkpointer:
    """Passive WAL checkpoints of one database file, on a daemon thread of their own."""

    every = 24
    """Commits between two checkpoints (about 700 pages of a workflow's commits)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._wake = threading.Event()
        self._done = threading.Condition()
        self._stopping = False
        self._since = 0
        self.checkpoints = 0
        """Checkpoints run so far (tests and benchmarks read it)."""
        self.failures: list[str] = []
        """SQLite errors of checkpoints that could not run (a busy database is not one)."""
        self._thread: threading.Thread | None = None

    def committed(self) -> None:
        """Count one commit of the writer; wake the thread every :attr:`every` commits."""
        self._since += 1
        if self._since < self.every:
            return
        self._since = 0
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="notebook-bcc-checkpoint", daemon=True
            )
            self._thread.start()
        self._wake.set()

    def wait(self, count: int, timeout: float) -> bool:
        """Wait until :attr:`checkpoints` reaches ``count``; False after ``timeout`` seconds."""
        with self._done:
            return self._done.wait_for(lambda: self.checkpoints >= count, timeout)

    def close(self) -> None:
        """Stop the thread after the checkpoint it may be running (idempotent)."""
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        db = sqlite3.connect(str(self._path), timeout=0, isolation_level=None)
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.OperationalError as exc:
                    # another connection's checkpoint holds the checkpoint lock: it does the work
                    if "locked" not in str(exc) and "busy" not in str(exc):
                        self.failures.append(str(exc))
                    continue
                with self._done:
                    self.checkpoints += 1
                    self._done.notify_all()
        finally:
            with contextlib.suppress(sqlite3.Error):
                db.close()
