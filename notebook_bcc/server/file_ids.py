"""Follow a workflow's notebook by its stable file id, so a rename done outside Jupyter
(``mv a.ipynb b.ipynb`` in a terminal) is followed too.

:mod:`.follow` sees what the contents manager announces. A terminal ``mv`` announces nothing,
so each workflow is also keyed to its notebook's file id from jupyter-server-fileid's
:class:`~jupyter_server_fileid.manager.LocalFileIdManager` (a file keeps its id across moves
because the manager tracks it by inode; it is the manager the fileid extension offers for
local files, used here as a library with its own database beside the store, whichever
manager the server's own fileid extension runs). :meth:`FileIdFollower.check` runs before
each write of a workflow's notebook and before each request of the panel or REST client (the
next time the workflow writes or is looked up), and for every live workflow asks where its
file id is now:

- the same path: nothing to do;
- another path holding this workflow's notebook (its ``metadata.notebook_bcc.workflow_id``;
  an inode freed by a save can be reused by an unrelated file): the notebook moved, the
  workflow follows it (:meth:`NotebookFollower.renamed`:
  the writer, the store, the snapshot); the old path is free, so a notebook created there
  later inherits nothing;
- nowhere: either the notebook was deleted, or it was re-saved by rename (a save by rename
  -- notebook-bcc's own ``replace_on_save``, an editor -- gives the file a new inode, and a
  new id). The file at the workflow's path decides: when it carries this workflow's id in
  ``metadata.notebook_bcc.workflow_id`` it is the notebook, and the workflow takes its new
  file id; when it carries the id of an earlier workflow of the same notebook, a
  collaboration room saved the shared document before this workflow's record reached it, and
  the room's next save tells; otherwise (no file, or another notebook created under the old
  name) the notebook is gone and the run pauses (:meth:`NotebookFollower.deleted`) -- but
  only when it is still gone :data:`GONE_AFTER` seconds after a check first missed it. A
  rename or move through Jupyter moves the file on a worker thread and announces it
  afterwards: a check landing in between sees no file at the old path yet no event, and
  pausing then would call a moved notebook deleted. The announcement re-keys the workflow
  within that grace; a re-check is scheduled for its end, so a terminal ``rm`` pauses the run
  without anyone looking.

A check never concludes from a path the workflow has left meanwhile (a contents event may
re-key it while the check waits on the store or the disk).

After each of its own writes the workflow records the file id of what it wrote, so a terminal
``mv`` right after a workflow save is found by inode.

The manager indexes every folder under the root when it is made (seconds for thousands of
folders, a minute for a home directory), so the server's start does not make it:
:meth:`FileIdFollower.start` builds it on a worker thread. Meanwhile a request is answered
without a check, and a workflow's write goes ahead when its notebook needs no file id to be
found: the workflow never recorded one (it started in this server: a move since is announced,
or found once the crawl is over), or the file at its path carries its id in its metadata. Only
a workflow whose notebook is not where it was left (moved while no server ran) waits for the
crawl, and is then written where its file id is.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Coroutine
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from notebook_bcc.server.handlers import FILE_IDS_SETTING
from notebook_bcc.store.file_ids import file_id, set_file_id

if TYPE_CHECKING:
    from notebook_bcc.server.follow import NotebookFollower
    from notebook_bcc.server.service import LiveWorkflow
    from notebook_bcc.server.writer import ContentsNotebookWriter

log = logging.getLogger(__name__)


DB_NAME = "notebook_bcc_file_ids.db"
"""The file-id database's name, beside the store."""

GONE_AFTER = 1.0
"""Seconds a notebook must stay missing (its file id nowhere) before its run pauses: longer
than a rename through Jupyter takes to be announced after the file moved."""


def local_file_ids(root_dir: str, db_path: Path) -> Any | None:
    """A jupyter-server-fileid ``LocalFileIdManager`` on ``root_dir`` (None when the package
    is missing or the database cannot be opened: renames outside Jupyter are then not seen)."""
    try:
        from jupyter_server_fileid.manager import LocalFileIdManager
    except ImportError:
        log.warning(
            "notebook-bcc: jupyter-server-fileid is not installed: a notebook renamed outside "
            "Jupyter is not followed"
        )
        return None
    try:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        manager = _crawl_fixed(LocalFileIdManager)
        return manager(root_dir=str(Path(root_dir).resolve()), db_path=str(db_path))
    except Exception as exc:
        log.warning("notebook-bcc: no file ids (%s): renames outside Jupyter are not followed", exc)
        return None


def crawled_file_ids(root_dir: str, db_path: Path) -> Any | None:
    """:func:`local_file_ids`, built on the calling (worker) thread and handed over with no
    connection: the manager crawls every folder under the root when it is made (seconds for a
    root of thousands of folders, a minute for a home directory), and SQLite refuses a
    connection on any thread but the one that opened it. :meth:`FileIdFollower.start` reopens
    it on the event loop's thread."""
    ids = local_file_ids(root_dir, db_path)
    if ids is None:
        return None
    con = ids.con
    try:
        con.commit()
        con.close()
    finally:
        del ids.con
    return ids


def _crawl_fixed(base: type) -> type:
    """``base`` with two fixes to how its crawls match what they find to its records.

    - **A folder for a file.** Where a file system gives no creation time (Linux), the
      manager matches a file seen in a crawl to its records by inode alone. An inode freed by
      a deleted file -- every save by rename frees one -- is soon reused, often by the next
      folder made: the manager then takes that new folder for the old file "moved", records it
      under the folder's path and never looks inside it, so a notebook moved into a new folder
      has no path by its id. A file does not turn into a folder, so a record whose kind
      differs from the entry's is dropped first: the folder is then indexed as new and its
      contents crawled.
    - **A folder made while no server ran.** The crawl that builds the manager records every
      folder it has no record of as seen now, without looking at the files in it; no later
      sync looks inside such a folder again until it changes, so a notebook moved into a new
      folder while no server ran was never found by its id (and its run paused as deleted).
      The files of such a folder are matched to the records first (only when there are
      records of files to find: a first crawl does not stat every file under the root).
    """

    class CrawlFixedFileIdManager(base):  # type: ignore[misc]
        _find_moved = False

        def _sync_file(self, path: str, stat_info: Any) -> Any:
            if not stat_info.is_symlink:
                row = self.con.execute(
                    "SELECT id, is_dir FROM Files WHERE ino = ?", (stat_info.ino,)
                ).fetchone()
                if row is not None and bool(row[1]) != bool(stat_info.is_dir):
                    self.con.execute("DELETE FROM Files WHERE id = ?", (row[0],))
            return super()._sync_file(path, stat_info)

        def _index_all(self) -> None:
            files = self.con.execute("SELECT 1 FROM Files WHERE is_dir = 0 LIMIT 1").fetchone()
            self._find_moved = files is not None
            try:
                super()._index_all()
            finally:
                self._find_moved = False

        def _index_dir_recursively(self, dir_path: str, stat_info: Any) -> None:
            if self._find_moved:
                row = self.con.execute(
                    "SELECT is_dir FROM Files WHERE ino = ?", (stat_info.ino,)
                ).fetchone()
                if row is None or not row[0]:
                    with os.scandir(dir_path) as entries:
                        for entry in entries:
                            if entry.is_dir(follow_symlinks=False):
                                continue  # crawled on its own, next
                            found = self._stat(entry.path)
                            if found is not None:
                                self._sync_file(entry.path, found)
            super()._index_dir_recursively(dir_path, stat_info)

    return CrawlFixedFileIdManager


class FileIdFollower:
    """Keys each live workflow to its notebook's file id (see the module docstring)."""

    def __init__(
        self,
        follower: NotebookFollower,
        ids: Any = None,
        *,
        build: Callable[[], Any] | None = None,
    ) -> None:
        self.follower = follower
        self.ids = ids
        self._build = build
        """Builds the manager on a worker thread (:meth:`start`) when ``ids`` is not given."""
        self._opening: asyncio.Future[None] | None = None
        self._ready = asyncio.Event()
        """Set once :attr:`ids` is what it will be (given here, or built by :meth:`start`)."""
        if ids is not None or build is None:
            self._ready.set()
        self._closed = False
        self._lock = asyncio.Lock()
        self._known: dict[str, str | None] = {}
        """File ids by workflow, as stored (read once per workflow: a check stays cheap)."""
        self._settled: dict[str, tuple[str, tuple[int, int, int]]] = {}
        """Per workflow, its path and the file's (inode, mtime, size) when a check last found
        its file id there: while the file is unchanged, a check is one ``stat``."""
        self._found: dict[str, tuple[str, tuple[int, int, int]]] = {}
        """Before the crawl is over: per workflow, its path and the file's (inode, mtime, size)
        when the file there was found to carry its id (see :meth:`before_write`)."""
        self._missing: dict[str, tuple[str, float]] = {}
        """Per workflow, the path and the (monotonic) time a check first found it gone."""
        self._recheck: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def _open(self, build: Callable[[], Any]) -> None:
        """Build the file-id manager on a worker thread (:func:`crawled_file_ids`: its crawl
        of the root must not hold up the server's start) and connect it on this thread.
        Checks and writes wait for it; a workflow's notebook is never written before it is
        found by its file id (a notebook moved while no server ran)."""
        try:
            ids = await asyncio.to_thread(build)
            if ids is not None and not self._closed:
                ids.con = sqlite3.connect(ids.db_path)
                self.ids = ids
        except Exception as exc:  # following is best effort: the server runs on without it
            log.warning(
                "notebook-bcc: no file ids (%s): renames outside Jupyter are not followed", exc
            )
        finally:
            self._ready.set()

    def start(self) -> None:
        """Start building the manager (once; the server's start calls this, and so does the
        first check if nothing did)."""
        build = self._build
        if self._opening is None and not self._ready.is_set() and build is not None:
            self._opening = asyncio.ensure_future(self._open(build))

    async def _usable(self) -> bool:
        """Wait until the manager is built; whether there is one (and this is not closed)."""
        self.start()
        await self._ready.wait()
        return self.ids is not None and not self._closed

    def close(self) -> None:
        """Close the file-id database on this (the event loop's) thread; the manager's own
        ``__del__`` would close it on whichever thread collects it, which SQLite refuses."""
        self._closed = True
        self._ready.set()
        if self._opening is not None and not self._opening.done():
            self._opening.cancel()  # a crawl still under way: its thread ends on its own
        if self._recheck is not None:
            self._recheck.cancel()
            self._recheck = None
        for task in list(self._tasks):
            task.cancel()
        con = getattr(self.ids, "con", None)
        if con is None:
            return
        try:
            con.commit()
            con.close()
        finally:
            with suppress(AttributeError):
                del self.ids.con

    # -- hooks ----------------------------------------------------------------------------

    def attach(self, writer: ContentsNotebookWriter) -> None:
        """Check before each write of ``writer`` and record the file id after it."""

        async def before() -> None:
            await self.before_write(writer)

        writer.before_write = before
        writer.after_write = self.written

    async def before_write(self, writer: ContentsNotebookWriter) -> None:
        """Bring the workflows to where their notebooks are before ``writer`` writes.

        Once the crawl is over, that is :meth:`check`. While it goes on, the write waits for
        it only when its workflow's notebook cannot be found without file ids (see the module
        docstring): a workflow started a minute after a server came up on a home directory
        showed no cell in its notebook until the crawl was over."""
        if not self._ready.is_set():
            self.start()
            live = self._live(writer)
            if live is not None and await self._found_without_ids(live):
                return
        await self.check()

    def _live(self, writer: ContentsNotebookWriter) -> LiveWorkflow | None:
        """The live workflow ``writer`` writes for (None once it is gone)."""
        for live in self.follower.service.live_workflows():
            if getattr(live.engine.runtime, "writer", None) is writer:
                return live
        return None

    async def _found_without_ids(self, live: LiveWorkflow) -> bool:
        """Whether ``live``'s notebook is where it was left, as far as can be told without
        the file-id manager: it never recorded a file id, or its file carries its id."""
        if await self._stored(live.workflow_id) is None:
            return True
        path = live.notebook_path
        stamp = self._stamp_under(self.follower.service.contents.root_dir, path)
        if stamp is not None and self._found.get(live.workflow_id) == (path, stamp):
            return True
        if await self._holds_workflow(path, live.workflow_id) and live.notebook_path == path:
            if stamp is not None:
                self._found[live.workflow_id] = (path, stamp)
            return True
        return False

    async def check(self, *, wait: bool = True) -> None:
        """Bring every live workflow to where its notebook's file id is now.

        Before a write it waits for the manager's crawl (``wait``); a request does not (it
        is answered at once, and follows a rename done outside Jupyter once the crawl is
        over)."""
        if not self.follower.service.live_workflows():
            return
        if not wait and not self._ready.is_set():
            self.start()
            return
        if not await self._usable():
            return
        async with self._lock:
            for live in list(self.follower.service.live_workflows()):
                try:
                    await self._check_one(live)
                except Exception as exc:  # following is best effort: never fail the caller
                    log.warning(
                        "notebook-bcc: following %s by file id failed: %s", live.notebook_path, exc
                    )

    async def written(self, writer: ContentsNotebookWriter) -> None:
        """The workflow just wrote ``writer.api_path``: record that file's id, and settle the
        workflow there (the file is where its id says: the next check is one ``stat`` until
        someone else changes the file; a save by rename gives it a new inode each time, and
        without this every check after a workflow write would crawl the root)."""
        path = writer.api_path
        live = self._live(writer)
        if not self._ready.is_set():
            # the crawl goes on: the file now carries the workflow's id; its file id is
            # recorded once the manager can tell it (the write does not wait for that)
            stamp = self._stamp_under(self.follower.service.contents.root_dir, path)
            if live is not None and stamp is not None and live.notebook_path == path:
                self._found[live.workflow_id] = (path, stamp)
            self._spawn(self._written_later(writer))
            return
        if live is None or not await self._usable():
            return
        await self._record(live.workflow_id, self.ids.index(path))
        stamp = self._stamp(path)
        if stamp is not None and live.notebook_path == path:
            self._missing.pop(live.workflow_id, None)
            self._settled[live.workflow_id] = (path, stamp)

    # -- the decision -----------------------------------------------------------------------

    async def _stored(self, workflow_id: str) -> str | None:
        if workflow_id not in self._known:
            store = await self.follower.service.start()
            stored = await store.call(lambda s: file_id(s, workflow_id))
            # a write may have recorded a newer id while the store was read
            self._known.setdefault(workflow_id, stored)
        return self._known[workflow_id]

    async def _record(self, workflow_id: str, value: str | None) -> None:
        if value is None or self._known.get(workflow_id) == value:
            return
        store = await self.follower.service.start()
        await store.call(lambda s: set_file_id(s, workflow_id, value))
        self._known[workflow_id] = value

    async def _written_later(self, writer: ContentsNotebookWriter) -> None:
        await self._ready.wait()
        await self.written(writer)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _stamp(self, path: str) -> tuple[int, int, int] | None:
        return self._stamp_under(getattr(self.ids, "root_dir", None), path)

    @staticmethod
    def _stamp_under(root: Any, path: str) -> tuple[int, int, int] | None:
        if not isinstance(root, str):
            return None
        try:
            st = os.stat(Path(root) / path)
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    async def _check_one(self, live: LiveWorkflow) -> None:
        if getattr(getattr(live.engine.runtime, "writer", None), "saving", False):
            # the workflow's own save is under way: the file there changes (a save by rename
            # gives it a new inode) and :meth:`written` settles it once the save is over;
            # looking now would crawl the file ids, and read the notebook, for a file the
            # workflow is writing itself (a request during any of 20 workflows' saves did)
            return
        path = live.notebook_path
        stamp = self._stamp(path)
        # a mv, rm or re-save changes the inode (or the file is gone): then look again
        if stamp is not None and self._settled.get(live.workflow_id) == (path, stamp):
            return
        self._settled.pop(live.workflow_id, None)
        known = await self._stored(live.workflow_id)
        if known is None:
            if await self.follower.service.contents.exists(path):
                await self._record(live.workflow_id, self.ids.index(path))
            return
        now = self.ids.get_path(known)
        if now == path:
            self._missing.pop(live.workflow_id, None)
            if stamp is not None:
                self._settled[live.workflow_id] = (path, stamp)
            return
        if now is not None:
            # a freed inode can be reused by another file (a new notebook with no workflow's
            # record, say): follow only to this workflow's notebook
            moved = await self._holds_workflow(now, live.workflow_id)
            if live.notebook_path != path:
                return
            if moved:
                self._missing.pop(live.workflow_id, None)
                log.info("notebook-bcc: %s was moved outside Jupyter to %s", path, now)
                await self.follower.renamed(path, now)
                return
        mine = await self._holds_workflow(path, live.workflow_id)
        if mine is None or live.notebook_path != path:
            return  # unreadable right now (mid-write), or re-keyed meanwhile: check again later
        if mine:
            self._missing.pop(live.workflow_id, None)
            await self._record(live.workflow_id, self.ids.index(path))
            return
        if not self._gone_long_enough(live.workflow_id, path):
            return
        log.info("notebook-bcc: %s is gone (its file id is nowhere under the root)", path)
        store = await self.follower.service.start()
        await store.call(lambda s: set_file_id(s, live.workflow_id, None))
        self._known[live.workflow_id] = None
        self._missing.pop(live.workflow_id, None)
        await self.follower.deleted(path)

    def _gone_long_enough(self, workflow_id: str, path: str) -> bool:
        """Whether ``path`` was already missing :data:`GONE_AFTER` seconds ago; the first miss
        is remembered and a re-check scheduled for when the grace ends."""
        now = time.monotonic()
        first = self._missing.get(workflow_id)
        if first is None or first[0] != path:
            self._missing[workflow_id] = (path, now)
            self._schedule_recheck(GONE_AFTER)
            return False
        waited = now - first[1]
        if waited < GONE_AFTER:
            self._schedule_recheck(GONE_AFTER - waited)
            return False
        return True

    def _schedule_recheck(self, delay: float) -> None:
        if self._recheck is not None:
            return
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self._recheck = None
            self._spawn(self.check())

        # a hair past the grace, so the re-check does not land a microsecond early
        self._recheck = loop.call_later(delay + 0.05, fire)

    async def _holds_workflow(self, path: str, workflow_id: str) -> bool | None:
        """Whether the notebook at ``path`` is this workflow's (None: cannot tell now)."""
        contents = self.follower.service.contents
        if not await contents.exists(path):
            return False
        try:
            content, _ = await contents.read_notebook(path)
        except Exception:
            return None
        metadata = content.get("metadata")
        own = metadata.get("notebook_bcc") if isinstance(metadata, dict) else None
        if not isinstance(own, dict) or not own.get("workflow_id"):
            # no workflow's record in the file yet: someone else saved it before the
            # workflow's metadata reached it (a collaboration room saves the shared document
            # on its own clock), so whose notebook it is cannot be told from it now
            return None
        owner = own.get("workflow_id")
        if owner == workflow_id:
            return True
        if await self._of_notebook(str(owner), path):
            # an earlier run of this very notebook: a collaboration room saved the shared
            # document before this workflow's record reached it (it saves on its own clock,
            # a second or more after a change), so the file is the notebook's own past, not
            # another notebook; its next save carries this workflow's record
            return None
        return False

    async def _of_notebook(self, workflow_id: str, path: str) -> bool:
        """Whether the store keeps ``workflow_id`` as a workflow of the notebook ``path``."""
        store = await self.follower.service.start()
        return await store.call(lambda s: workflow_id in s.workflow_ids(notebook_path=path))


__all__ = [
    "DB_NAME",
    "FILE_IDS_SETTING",
    "GONE_AFTER",
    "FileIdFollower",
    "crawled_file_ids",
    "local_file_ids",
]
