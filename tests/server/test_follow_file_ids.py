"""A notebook renamed or deleted in a terminal (outside Jupyter) while its workflow waits, on a
real ``jupyter server`` process with collaboration (and the fileid extension) switched off:
the workflow follows its notebook by file id the next time it is looked up or writes, and a
new notebook created under the old name inherits nothing."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from time import monotonic
from types import SimpleNamespace
from typing import Any

import pytest

from notebook_bcc.server import file_ids as file_ids_module
from notebook_bcc.server.app import NotebookBccApp
from notebook_bcc.server.file_ids import (
    DB_NAME as FILE_IDS_DB,
)
from notebook_bcc.server.file_ids import (
    GONE_AFTER,
    FileIdFollower,
    crawled_file_ids,
    local_file_ids,
)
from notebook_bcc.server.handlers import FILE_IDS_SETTING
from notebook_bcc.server.service import LiveWorkflow
from notebook_bcc.store.file_ids import file_id
from tests.conftest import requires
from tests.server.conftest import SERVER_FIXTURES, Api, read_notebook
from tests.server.test_coedit import until
from tests.server.test_restart import JUPYTER_SERVER, JupyterServer

pytestmark = [
    requires(JUPYTER_SERVER.exists(), "jupyter-server not found"),
    pytest.mark.timeout(300),
]

EMPTY_NOTEBOOK = {
    "cells": [],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def _sources(path: Path) -> list[str]:
    return ["".join(cell["source"]) for cell in read_notebook(path)["cells"]]


def _waiting(server: JupyterServer, notebook: str) -> dict[str, Any]:
    """A confirm.yaml workflow on ``notebook`` waiting for its stage confirmation, its cell
    written to the file."""
    started = server.start(notebook, "blueprints/confirm.yaml", options={"auto_confirm": False})
    snapshot = server.wait(started["workflow_id"], lambda s: bool(s["run"]["pending"]))
    assert snapshot["run"]["status"] == "waiting", snapshot["run"]
    return snapshot


def _listed(server: JupyterServer, notebook: str) -> list[dict[str, Any]]:
    code, listing = server.api("GET", f"workflows?notebook_path={notebook}")
    assert code == 200, listing
    return [w for w in listing["workflows"] if w["notebook_path"] == notebook]


def test_a_terminal_mv_is_followed_and_rm_pauses_the_run(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(SERVER_FIXTURES, root / "blueprints")
    (root / "work").mkdir()
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    server = JupyterServer(root, home, f"--NotebookBccApp.store_path={tmp_path / 'store.sqlite'}")
    try:
        server.wait_ready()
        moved = _waiting(server, "work/a.ipynb")
        deleted = _waiting(server, "work/c.ipynb")
        deadline = time.monotonic() + 30
        # both notebooks on disk with their cells (and so their file ids recorded), as a
        # person sees them before typing mv / rm
        while not all(
            "reviewed = True" in _sources(root / "work" / name) for name in ("a.ipynb", "c.ipynb")
        ):
            assert time.monotonic() < deadline, server.tail()
            time.sleep(0.1)

        # a terminal: mv a b; rm c; then the user creates a new a.ipynb in Jupyter
        os.rename(root / "work" / "a.ipynb", root / "work" / "b.ipynb")
        os.remove(root / "work" / "c.ipynb")
        code, body = server.request(
            "PUT",
            "api/contents/work/a.ipynb",
            {"type": "notebook", "format": "json", "content": EMPTY_NOTEBOOK},
        )
        assert code == 201, body

        # looked up under the old name: nothing there any more
        assert _listed(server, "work/a.ipynb") == []
        followed = server.snapshot(moved["workflow_id"])
        assert followed["notebook_path"] == "work/b.ipynb"
        assert [w["workflow_id"] for w in _listed(server, "work/b.ipynb")] == [moved["workflow_id"]]
        paused = server.wait_status(deleted["workflow_id"], "paused")
        assert "was deleted" in paused["run"]["reason"], paused["run"]
        assert _listed(server, "work/c.ipynb") == []

        # approving the moved workflow writes into b.ipynb; the new a.ipynb stays empty
        pending = followed["run"]["pending"][0]
        code, body = server.command(
            moved["workflow_id"],
            decide=pending["id"],
            decision="approve",
            expected_version=followed["version"],
        )
        assert code == 200, body
        done = server.wait_status(moved["workflow_id"], "completed")
        assert done["notebook_path"] == "work/b.ipynb"
        deadline = time.monotonic() + 30
        while "after = True" not in _sources(root / "work" / "b.ipynb"):
            assert time.monotonic() < deadline, server.tail()
            time.sleep(0.1)
        assert _sources(root / "work" / "a.ipynb") == []
        # the old name is free: a workflow starts there
        fresh = server.start("work/a.ipynb", "blueprints/quick.yaml")
        assert fresh["workflow_id"] not in (moved["workflow_id"], deleted["workflow_id"])
        server.wait_status(fresh["workflow_id"], "completed")
    finally:
        server.stop()


# -- in process: a check that lands while a move is under way -----------------------------------


async def _waiting_in_process(api: Api, bcc_app: NotebookBccApp, root: Path) -> LiveWorkflow:
    """A confirm.yaml workflow on first.ipynb waiting, its cells (and file id) on disk."""
    started = await api.start("first.ipynb", "blueprints/confirm.yaml")
    await api.wait_status(started["workflow_id"], "waiting")
    live = bcc_app.service.live(started["workflow_id"])
    assert live is not None
    writer = live.engine.runtime.writer
    await until(lambda: "reviewed = True" in (root / "first.ipynb").read_text(), "the cells")
    await writer.settled()
    follower = bcc_app.service.file_ids
    assert isinstance(follower, FileIdFollower)
    await follower.check()  # the file id recorded, the check settled on the file
    return live


async def test_a_check_between_a_move_and_its_announcement_does_not_call_the_notebook_deleted(
    api: Api, bcc_app: NotebookBccApp, root: Path, tmp_path: Path
) -> None:
    """The CI failure: JupyterLab moved the notebook into a folder; the file left the old path on
    a worker thread and a check (a write, a panel request) ran before the rename event: the
    run paused, "the notebook ... was deleted"."""
    live = await _waiting_in_process(api, bcc_app, root)
    follower = bcc_app.service.file_ids
    # the file is nowhere under the root while the move is under way
    in_flight = tmp_path / "in-flight.ipynb"
    os.rename(root / "first.ipynb", in_flight)
    await follower.check()
    assert live.engine.snapshot.run.status == "waiting"
    # the move lands and is announced, well within the grace
    (root / "moved").mkdir()
    os.rename(in_flight, root / "moved" / "first.ipynb")
    await follower.follower.renamed("first.ipynb", "moved/first.ipynb")
    assert live.notebook_path == "moved/first.ipynb"
    # past the grace (the scheduled re-check has run): still waiting, in the moved notebook
    await asyncio.sleep(GONE_AFTER + 0.3)
    await follower.check()
    snapshot = await api.snapshot(live.workflow_id)
    assert snapshot["run"]["status"] == "waiting", snapshot["run"]
    assert snapshot["notebook_path"] == "moved/first.ipynb"


async def test_a_notebook_removed_in_a_terminal_pauses_its_run_after_the_grace_unasked(
    bcc_app: NotebookBccApp, api: Api, root: Path
) -> None:
    live = await _waiting_in_process(api, bcc_app, root)
    follower = bcc_app.service.file_ids
    (root / "first.ipynb").unlink()
    started = monotonic()
    await follower.check()
    assert live.engine.snapshot.run.status == "waiting"
    # nobody looks again: the re-check scheduled at the first miss pauses the run
    await until(lambda: live.engine.snapshot.run.status == "paused", "the pause")
    assert monotonic() - started >= GONE_AFTER
    assert "was deleted" in (live.engine.snapshot.run.reason or "")


def _held_crawl(
    bcc_app: NotebookBccApp, root: Path, db: Path
) -> tuple[FileIdFollower, threading.Event, threading.Event]:
    """A file-id follower whose crawl of ``root`` (into ``db``) waits for the returned
    ``crawl`` event; ``crawling`` is set once it began. The app's follower is closed."""
    crawl = threading.Event()
    crawling = threading.Event()

    def held_build() -> Any:
        crawling.set()
        assert crawl.wait(60), "the crawl was never let go"
        return crawled_file_ids(str(root), db)

    before = bcc_app.service.file_ids
    assert isinstance(before, FileIdFollower)
    before.close()
    follower = FileIdFollower(before.follower, build=held_build)
    bcc_app.service.file_ids = follower
    bcc_app.settings[FILE_IDS_SETTING] = follower
    return follower, crawl, crawling


async def test_the_root_is_crawled_beside_the_server_and_a_new_workflow_writes_meanwhile(
    bcc_app: NotebookBccApp, api: Api, root: Path, tmp_path: Path
) -> None:
    """The file-id manager crawls every folder under the root when it is made: seconds for
    a root of thousands of folders (this repository with its node_modules: 4.7 s), a minute
    for a home directory; made in the server's start, it held the server back that long.
    It is made on a worker thread now, and while it crawls requests are answered and a
    workflow started meanwhile runs and writes its cells (they waited for the crawl: a user
    saw none in the notebook for that minute); its file id is recorded once the crawl is
    over."""
    follower, crawl, crawling = _held_crawl(bcc_app, root, tmp_path / "ids.db")
    try:
        follower.start()
        await until(crawling.is_set, "the crawl to begin")
        started = await api.start("first.ipynb", "blueprints/confirm.yaml")
        workflow_id = started["workflow_id"]
        waiting = await api.wait_status(workflow_id, "waiting")
        assert waiting["run"]["pending"], waiting["run"]
        await until(
            lambda: (
                (root / "first.ipynb").exists()
                and "reviewed = True" in (root / "first.ipynb").read_text()
            ),
            "the cells written while the crawl goes on",
        )
        assert not crawl.is_set()
        store = await bcc_app.service.start()
        assert await store.call(lambda s: file_id(s, workflow_id)) is None
        crawl.set()
        await follower.check()  # after the crawl: the notebook's file id recorded
        recorded = [await store.call(lambda s: file_id(s, workflow_id))]
        assert recorded[-1] is not None
        assert follower.ids.get_path(recorded[-1]) == "first.ipynb"
    finally:
        crawl.set()
        follower.close()


async def test_a_notebook_moved_while_no_server_ran_is_written_where_it_went_after_the_crawl(
    bcc_app: NotebookBccApp, api: Api, root: Path, tmp_path: Path
) -> None:
    """What the crawl is waited for: a workflow whose notebook was moved in a terminal while
    no server ran (its file id recorded before) is not written again under the old name while
    the crawl goes on; once it is over, the workflow is found where its file id is and
    written there."""
    live = await _waiting_in_process(api, bcc_app, root)
    db = Path(bcc_app.store_path).parent / FILE_IDS_DB
    writer = live.engine.runtime.writer
    # the server stops (its file-id database closed), the notebook is moved, a server starts
    follower, crawl, crawling = _held_crawl(bcc_app, root, db)
    follower.attach(writer)
    (root / "elsewhere").mkdir()
    os.rename(root / "first.ipynb", root / "elsewhere" / "first.ipynb")
    try:
        follower.start()
        await until(crawling.is_set, "the crawl to begin")
        # the user approves: the run goes on to its end, its next cells wait for the crawl
        waiting = await api.snapshot(live.workflow_id)
        code, body = await api.command(
            live.workflow_id,
            decide=waiting["run"]["pending"][0]["id"],
            decision="approve",
            expected_version=waiting["version"],
        )
        assert code == 200, body
        await api.wait_status(live.workflow_id, "completed")
        assert not (root / "first.ipynb").exists(), "written again under the old name"
        crawl.set()
        await until(
            lambda: "after = True" in (root / "elsewhere" / "first.ipynb").read_text(),
            "the cells written where the notebook went",
        )
        assert live.notebook_path == "elsewhere/first.ipynb"
        assert not (root / "first.ipynb").exists(), "written again under the old name"
    finally:
        crawl.set()
        follower.close()


def _counted_lookups(follower: FileIdFollower) -> list[str]:
    """The file ids ``follower`` looks up by path from now on (each lookup crawls the root)."""
    looked_up: list[str] = []
    get_path = follower.ids.get_path

    def counted(file_id: str) -> str | None:
        looked_up.append(file_id)
        path: str | None = get_path(file_id)
        return path

    follower.ids.get_path = counted
    return looked_up


async def test_after_its_own_save_a_workflow_finds_its_notebook_without_crawling_the_root(
    bcc_app: NotebookBccApp, api: Api, root: Path
) -> None:
    """A workflow's save by rename gives its notebook a new inode every time; the check every
    panel request and every write makes must not crawl the server root for it afterwards
    (`make bench-server`: 295 crawls in a 5 s window of 20 workflows before, 65 after), and a
    terminal mv after that save is still followed."""
    live = await _waiting_in_process(api, bcc_app, root)
    follower = bcc_app.service.file_ids
    assert isinstance(follower, FileIdFollower)
    looked_up = _counted_lookups(follower)
    before = os.stat(root / "first.ipynb").st_ino
    report = await live.engine.runtime.writer.flush_async()
    assert report.written
    assert os.stat(root / "first.ipynb").st_ino != before  # saved by rename: a new inode
    await follower.check()
    await api.snapshot(live.workflow_id)  # a panel request checks too
    assert looked_up == []
    # mv in a terminal after the save: found by its file id, followed
    os.rename(root / "first.ipynb", root / "second.ipynb")
    await follower.check()
    assert looked_up, "the move was not looked up by file id"
    assert live.notebook_path == "second.ipynb"


async def test_a_request_during_a_workflows_own_save_does_not_look_it_up_by_file_id(
    bcc_app: NotebookBccApp, api: Api, root: Path
) -> None:
    """A panel request (or another workflow's write) that lands while a workflow saves its
    notebook found a new inode there, not yet settled by the save's own hook, and crawled the
    file ids and read the notebook for a file the workflow was writing itself (with 20
    workflows saving, about every request did: ``make bench-server``). It leaves that file to
    the hook; a terminal mv afterwards is still followed."""
    live = await _waiting_in_process(api, bcc_app, root)
    follower = bcc_app.service.file_ids
    assert isinstance(follower, FileIdFollower)
    looked_up = _counted_lookups(follower)
    writer = live.engine.runtime.writer
    settle = writer.after_write
    assert settle is not None
    during: list[bool] = []

    async def request_then_settle(w: Any) -> None:
        during.append(w.saving)
        await api.snapshot(live.workflow_id)  # a panel request between the save and its hook
        await settle(w)

    writer.after_write = request_then_settle
    before = os.stat(root / "first.ipynb").st_ino
    report = await writer.flush_async()
    assert report.written
    assert during == [True]
    assert os.stat(root / "first.ipynb").st_ino != before  # saved by rename: a new inode
    assert looked_up == []
    assert not writer.saving
    os.rename(root / "first.ipynb", root / "second.ipynb")
    await follower.check()
    assert looked_up, "the move was not looked up by file id"
    assert live.notebook_path == "second.ipynb"


def test_a_notebook_moved_into_a_folder_that_reused_a_deleted_files_inode_is_found(
    tmp_path: Path,
) -> None:
    """Linux gives no creation time, so the file-id manager matches a crawled entry to its
    records by inode alone; a new folder that got the inode of a deleted, indexed file was
    taken for that file "moved" and never crawled: a notebook moved into it had no path."""
    root = tmp_path / "root"
    root.mkdir()
    ids = local_file_ids(str(root), tmp_path / "ids.db")
    assert ids is not None
    (root / "saved-by-rename.tmp").write_text("{}")
    (root / "first.ipynb").write_text("{}")
    stale = ids.index("saved-by-rename.tmp")
    notebook = ids.index("first.ipynb")
    ids.get_path(notebook)  # the root crawled and recorded as it is now
    (root / "saved-by-rename.tmp").unlink()
    (root / "moved").mkdir()
    os.rename(root / "first.ipynb", root / "moved" / "first.ipynb")
    # the state inode reuse leaves (which inode the kernel hands out cannot be chosen here):
    # the deleted file's record holds the new folder's inode
    ids.con.execute(
        "UPDATE Files SET ino = ? WHERE id = ?", ((root / "moved").stat().st_ino, stale)
    )
    ids.con.commit()
    assert ids.get_path(notebook) == "moved/first.ipynb"
    assert ids.get_path(stale) is None
    ids.con.close()
    del ids.con  # closed here, not by the manager's __del__ on whichever thread collects it


def test_a_notebook_moved_into_a_new_folder_while_no_server_ran_is_found_by_the_next_crawl(
    tmp_path: Path,
) -> None:
    """The crawl that builds the manager records a folder it never saw as seen now, without
    looking inside; no later sync looks inside it until it changes, so a notebook moved
    into a folder made while no server ran had no path by its id (its run paused as
    deleted). A folder that existed before, and a first crawl with nothing to find, are
    crawled as they were."""
    root = tmp_path / "root"
    (root / "old").mkdir(parents=True)
    (root / "first.ipynb").write_text("{}")
    (root / "second.ipynb").write_text("{}")
    ids = local_file_ids(str(root), tmp_path / "ids.db")
    assert ids is not None
    first, second = ids.index("first.ipynb"), ids.index("second.ipynb")
    ids.con.commit()
    ids.con.close()
    del ids.con
    # no server: mkdir new; mv first.ipynb new/; mv second.ipynb old/
    (root / "new" / "deeper").mkdir(parents=True)
    os.rename(root / "first.ipynb", root / "new" / "deeper" / "first.ipynb")
    os.rename(root / "second.ipynb", root / "old" / "second.ipynb")
    ids = local_file_ids(str(root), tmp_path / "ids.db")
    assert ids is not None
    try:
        assert ids.get_path(first) == "new/deeper/first.ipynb"
        assert ids.get_path(second) == "old/second.ipynb"
    finally:
        ids.con.close()
        del ids.con


def test_a_notebook_moved_into_a_new_folder_while_the_server_was_killed_gets_the_runs_cells(
    tmp_path: Path,
) -> None:
    """The journey: a run waits for its confirmation; the jupyter server is killed (-9); in a
    terminal the user files the notebook into a folder made for it; a server comes up again
    and the user approves. The run goes on in that notebook (it paused as "deleted": the
    crawl that builds the file-id manager never looked inside a folder made while no server
    ran), and nothing reappears under the old name."""
    root = tmp_path / "root"
    shutil.copytree(SERVER_FIXTURES, root / "blueprints")
    (root / "work").mkdir()
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    store = tmp_path / "store.sqlite"
    first = JupyterServer(root, home, f"--NotebookBccApp.store_path={store}", name="first")
    try:
        first.wait_ready()
        workflow_id = _waiting(first, "work/a.ipynb")["workflow_id"]

        def recorded() -> bool:
            with closing(sqlite3.connect(store)) as db:
                query = "SELECT 1 FROM notebook_file_ids WHERE workflow_id = ?"
                return db.execute(query, (workflow_id,)).fetchone() is not None

        first.wait(
            workflow_id,
            lambda _: recorded() and "reviewed = True" in _sources(root / "work" / "a.ipynb"),
        )
    finally:
        first.process.kill()
        first.process.wait()
        first.log.close()

    (root / "archive" / "2026").mkdir(parents=True)
    os.rename(root / "work" / "a.ipynb", root / "archive" / "2026" / "a.ipynb")

    second = JupyterServer(root, home, f"--NotebookBccApp.store_path={store}", name="second")
    try:
        second.wait_ready()
        # found where it went once the new server's crawl is over (the panel's next look)
        waiting = second.wait(
            workflow_id,
            lambda s: s["notebook_path"] == "archive/2026/a.ipynb" and bool(s["run"]["pending"]),
        )
        assert waiting["run"]["status"] == "waiting", waiting["run"]
        for _ in range(3):  # the move is committed beside the look that found it: reload
            code, body = second.command(
                workflow_id,
                decide=waiting["run"]["pending"][0]["id"],
                decision="approve",
                expected_version=waiting["version"],
            )
            if code != 409:
                break
            waiting = second.snapshot(workflow_id)
        assert code == 200, body
        done = second.wait_status(workflow_id, "completed", "paused", "failed")
        assert done["run"]["status"] == "completed", done["run"]
        assert done["notebook_path"] == "archive/2026/a.ipynb"
        deadline = time.monotonic() + 30
        while "after = True" not in _sources(root / "archive" / "2026" / "a.ipynb"):
            assert time.monotonic() < deadline, second.tail()
            time.sleep(0.1)
        assert not (root / "work" / "a.ipynb").exists(), "written again under the old name"
    finally:
        assert second.stop() is not None


async def test_a_rooms_late_save_of_the_earlier_runs_record_does_not_call_the_notebook_deleted(
    bcc_app: NotebookBccApp, api: Api, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CI failure (collaborative JupyterLab, "New workflow…" on a notebook whose run had
    completed): a collaboration room saves the shared notebook on its own clock, and a save
    made before the new run's record reached the room put the file back by rename with the
    earlier run's ``workflow_id``. A check found a new inode, no file id, and "another
    workflow's notebook" at the path; a second look past the grace called the notebook
    deleted: the new run paused and every workflow of the notebook lost its path (the new run
    was listed nowhere). The earlier run's record is the notebook's own past, not another
    notebook: the check waits for the room's next save."""
    earlier = await api.start("first.ipynb", "blueprints/quick.yaml")
    await api.wait_status(earlier["workflow_id"], "completed")
    notebook = root / "first.ipynb"
    await until(lambda: "answer = 40 + 2" in notebook.read_text(), "the earlier run's cells")
    stale = read_notebook(notebook)
    assert stale["metadata"]["notebook_bcc"]["workflow_id"] == earlier["workflow_id"]
    live = await _waiting_in_process(api, bcc_app, root)
    follower = bcc_app.service.file_ids
    assert isinstance(follower, FileIdFollower)
    # the room's late save: the file replaced by rename (a new inode), the earlier record in it
    late = root / ".first.late.ipynb"
    late.write_text(json.dumps(stale))
    os.replace(late, notebook)
    await follower.check()
    # a look past the grace (the clock of the grace moved on; the event loop's is untouched)
    real = time.monotonic
    monkeypatch.setattr(file_ids_module, "time", SimpleNamespace(monotonic=lambda: real() + 60))
    await follower.check()
    assert live.engine.snapshot.run.status == "waiting", live.engine.snapshot.run
    listing = await api.ok("GET", "workflows", params={"notebook_path": "first.ipynb"})
    listed = {w["workflow_id"] for w in listing["workflows"]}
    assert listed == {earlier["workflow_id"], live.workflow_id}
    # the room's next save carries the new run's record: the check settles on it
    report = await live.engine.runtime.writer.flush_async()
    assert report.written
    assert read_notebook(notebook)["metadata"]["notebook_bcc"]["workflow_id"] == live.workflow_id
    await follower.check()
    snapshot = await api.snapshot(live.workflow_id)
    assert snapshot["run"]["status"] == "waiting", snapshot["run"]
    assert snapshot["notebook_path"] == "first.ipynb"
