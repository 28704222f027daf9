"""The store for asyncio code: :class:`SqliteStore` behind one thread, or inline."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.store import parts
from notebook_bcc.store.sqlite import Commit, CommitResult, SqliteStore

T = TypeVar("T")


class AsyncStore:
    """:class:`SqliteStore` for asyncio code: every call runs on one dedicated thread, or on
    the event loop's own thread when opened ``inline`` (a process with one workflow)."""

    def __init__(self, executor: ThreadPoolExecutor | None, store: SqliteStore) -> None:
        self._executor = executor
        self._store = store

    @classmethod
    async def open(
        cls, path: str | Path, *, busy_timeout: float = 5.0, inline: bool = False
    ) -> AsyncStore:
        """Open (and migrate) the database on a new executor thread.

        ``inline``: no thread; each call runs on the loop's thread. A commit takes well under
        a millisecond and the caller awaits it anyway, so a headless run (one workflow, one
        loop) saves two thread hand-offs a commit; a server, where other requests share the
        loop, keeps the thread.
        """
        if inline:
            return cls(None, _opened(path, busy_timeout))
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="notebook-bcc-store")
        loop = asyncio.get_running_loop()
        try:
            store = await loop.run_in_executor(executor, _opened, path, busy_timeout)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(executor, store)

    @property
    def last_write(self) -> parts.WriteStats:
        """Snapshot rows and bytes the last commit wrote (read after it returned)."""
        return self._store.last_write

    async def call(self, fn: Callable[[SqliteStore], T]) -> T:
        """Run ``fn(store)`` on the store's thread (inline: now)."""
        if self._executor is None:
            return fn(self._store)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, fn, self._store)

    async def create(self, snapshot: WorkflowSnapshot) -> WorkflowSnapshot:
        """See :meth:`SqliteStore.create`."""
        return await self.call(lambda s: s.create(snapshot))

    async def load(self, workflow_id: str) -> WorkflowSnapshot:
        """See :meth:`SqliteStore.load`."""
        return await self.call(lambda s: s.load(workflow_id))

    async def commit(self, change: Commit) -> CommitResult:
        """See :meth:`SqliteStore.commit`."""
        return await self.call(lambda s: s.commit(change))

    async def close(self) -> None:
        """Close the connection on its thread and stop the thread."""
        await self.call(lambda s: s.close())
        if self._executor is not None:
            self._executor.shutdown(wait=True)


def _opened(path: str | Path, busy_timeout: float) -> SqliteStore:
    """A store for a long-lived writer: its WAL checkpoints run in the background."""
    store = SqliteStore(path, busy_timeout=busy_timeout)
    store.checkpoint_in_background()
    return store
