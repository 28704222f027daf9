"""A rename or delete that lands while the workflow's notebook write is under way.

The contents manager moves the file on the server's loop while the writer's save of the old
path is in flight (its file I/O runs on a worker thread); that save then lands at the old
path and recreates the notebook the user just moved or deleted. Here the save is held at the
moment it reaches the real contents manager, the user's rename or delete goes through the
contents API, and the save is let go: the old path must end up free, and after a rename the
renamed notebook must hold every workflow cell once.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from notebook_bcc.server.app import NotebookBccApp
from notebook_bcc.server.writer import ContentsNotebookWriter
from tests.server.conftest import Api
from tests.server.test_coedit import cells_on_disk, until

pytestmark = pytest.mark.timeout(120)


class HeldSave:
    """Holds the writer's next save just before it reaches the contents manager."""

    def __init__(self, writer: ContentsNotebookWriter) -> None:
        self.reached = asyncio.Event()
        self.release = asyncio.Event()
        self.landed = asyncio.Event()
        self.hand_back = asyncio.Event()
        """Set by a test that holds the save also after it landed (the writer still busy)."""
        self.hand_back.set()
        self.paths: list[str] = []
        real = writer.contents.save_notebook

        async def held(path: str, content: dict[str, Any]) -> Any:
            self.paths.append(path)
            if len(self.paths) > 1:
                return await real(path, content)
            self.reached.set()
            await self.release.wait()
            stamp = await real(path, content)
            self.landed.set()
            await self.hand_back.wait()
            return stamp

        writer.contents.save_notebook = held  # type: ignore[method-assign]


async def _waiting_and_written(
    api: Api, bcc_app: NotebookBccApp, root: Path
) -> tuple[str, ContentsNotebookWriter]:
    """A confirm.yaml workflow on first.ipynb waiting, its cells in the file, no write going."""
    started = await api.start("first.ipynb", "blueprints/confirm.yaml")
    workflow_id = started["workflow_id"]
    await api.wait_status(workflow_id, "waiting")
    live = bcc_app.service.live(workflow_id)
    assert live is not None
    writer = live.engine.runtime.writer
    assert isinstance(writer, ContentsNotebookWriter)
    await until(lambda: "reviewed = True" in (root / "first.ipynb").read_text(), "the cells")
    await writer.settled()
    return workflow_id, writer


async def _waiting_with_a_save_in_flight(
    api: Api, bcc_app: NotebookBccApp, root: Path
) -> tuple[str, ContentsNotebookWriter, HeldSave, asyncio.Future[Any]]:
    workflow_id, writer = await _waiting_and_written(api, bcc_app, root)
    held = HeldSave(writer)
    writer.metadata_changed(writer.document.nb.metadata)  # something to write again
    flush = asyncio.ensure_future(writer.flush_async())
    await asyncio.wait_for(held.reached.wait(), 30)
    assert held.paths == ["first.ipynb"]
    return workflow_id, writer, held, flush


def _sources(path: Path) -> list[str]:
    return ["".join(cell["source"]) for cell in cells_on_disk(path)]


async def test_a_rename_during_a_write_leaves_the_old_name_free_and_the_new_one_whole(
    api: Api, bcc_app: NotebookBccApp, root: Path, jp_fetch: Any
) -> None:
    workflow_id, writer, held, flush = await _waiting_with_a_save_in_flight(api, bcc_app, root)
    await jp_fetch(
        "api", "contents", "first.ipynb", method="PATCH", body=json.dumps({"path": "second.ipynb"})
    )
    assert writer.api_path == "second.ipynb"
    held.release.set()
    await flush
    # the held save went where it was headed (the old path) and recreated it...
    assert held.paths[0] == "first.ipynb"
    # ... and is taken back, its cells written where the notebook is now
    await until(lambda: not (root / "first.ipynb").exists(), "the old name to be free again")
    await until(lambda: held.paths[-1] == "second.ipynb", "a write to the new name")
    await writer.settled()
    sources = _sources(root / "second.ipynb")
    assert sum("reviewed = True" in s for s in sources) == 1, sources
    moved = await api.wait(workflow_id, lambda s: s["notebook_path"] == "second.ipynb")
    assert moved["run"]["status"] == "waiting"

    code, answer = await api.command(
        workflow_id,
        decide=moved["run"]["pending"][0]["id"],
        decision="approve",
        expected_version=moved["version"],
    )
    assert code == 200, answer
    await api.wait_status(workflow_id, "completed")
    await until(lambda: "after = True" in (root / "second.ipynb").read_text(), "the last cell")
    assert not (root / "first.ipynb").exists()


async def test_a_delete_during_a_write_leaves_the_notebook_deleted(
    api: Api, bcc_app: NotebookBccApp, root: Path, jp_fetch: Any
) -> None:
    workflow_id, writer, held, flush = await _waiting_with_a_save_in_flight(api, bcc_app, root)
    # a second write, begun before the delete, waits behind the held one (a debounced write
    # that fired meanwhile): it must not land after the delete either
    writer.metadata_changed(writer.document.nb.metadata)
    queued = asyncio.ensure_future(writer.flush_async())
    await asyncio.sleep(0)
    await jp_fetch("api", "contents", "first.ipynb", method="DELETE")
    assert writer.gone
    held.release.set()
    await flush
    await queued
    await until(lambda: not (root / "first.ipynb").exists(), "the deleted notebook to stay gone")
    paused = await api.wait_status(workflow_id, "paused")
    assert "deleted" in (paused["run"]["reason"] or "")
    assert held.paths == ["first.ipynb"]
    # going on would write every later cell to no file and end "completed" with no notebook
    for action in ("run", "retry", "restart"):
        code, body = await api.command(
            workflow_id, action=action, expected_version=paused["version"]
        )
        assert code == 409, body
        assert body["code"] == "notebook_deleted", body
        assert "Cancel it and start a new workflow" in body["message"], body
    assert (await api.snapshot(workflow_id))["version"] == paused["version"]
    code, body = await api.command(workflow_id, event="CANCEL", expected_version=paused["version"])
    assert code == 200, body


async def test_a_notebook_the_user_puts_at_the_old_name_is_never_taken(
    api: Api, bcc_app: NotebookBccApp, root: Path, jp_fetch: Any
) -> None:
    """The writer removes only the very version it saved; the user's own file stays."""
    workflow_id, writer, held, flush = await _waiting_with_a_save_in_flight(api, bcc_app, root)
    held.hand_back.clear()
    await jp_fetch(
        "api", "contents", "first.ipynb", method="PATCH", body=json.dumps({"path": "second.ipynb"})
    )
    held.release.set()
    await asyncio.wait_for(held.landed.wait(), 30)
    # the held save landed at the old name; before the writer looks at it again, the user
    # saves a notebook of their own there
    mine = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    await jp_fetch(
        "api",
        "contents",
        "first.ipynb",
        method="PUT",
        body=json.dumps({"type": "notebook", "format": "json", "content": mine}),
    )
    held.hand_back.set()
    await flush
    await writer.settled()
    await asyncio.wait_for(writer.reclaimed(), 30)  # the writer looked at the old name
    assert (root / "first.ipynb").exists()
    assert cells_on_disk(root / "first.ipynb") == []
    moved = await api.wait(workflow_id, lambda s: s["notebook_path"] == "second.ipynb")
    assert moved["run"]["status"] == "waiting"


async def test_a_notebook_removed_between_the_save_and_its_read_back_pauses_and_never_fails(
    api: Api, bcc_app: NotebookBccApp, root: Path
) -> None:
    """The CI failure: a terminal ``rm`` landed inside the contents manager's save (after the
    file was written, before the manager read it back) and its FileNotFoundError stopped the
    run loop: "failed: the engine stopped unexpectedly". The save counts as not written and
    the run pauses as deleted, like any notebook removed outside Jupyter."""
    workflow_id, writer = await _waiting_and_written(api, bcc_app, root)
    manager = writer.contents.manager
    real_get, real_save = manager.get, manager.save
    removed: list[str] = []
    saving: list[str] = []

    async def get(path: str, *args: Any, **kwargs: Any) -> Any:
        if saving and kwargs.get("content") is False and not removed:
            removed.append(path)
            (root / path).unlink()  # the rm, between the save's write and its read-back
        return await real_get(path, *args, **kwargs)

    async def save(model: dict[str, Any], path: str) -> Any:
        saving.append(path)
        try:
            return await real_save(model, path)
        finally:
            saving.clear()

    manager.get, manager.save = get, save
    try:
        writer.metadata_changed(writer.document.nb.metadata)
        report = await writer.flush_async()
        # a later write (the run's final flush, say) does not bring the notebook back
        writer.metadata_changed(writer.document.nb.metadata)
        again = await writer.flush_async()
    finally:
        manager.get, manager.save = real_get, real_save
    assert not again.written
    assert removed == ["first.ipynb"]
    assert not report.written
    paused = await api.wait_status(workflow_id, "paused")
    assert "was deleted" in (paused["run"]["reason"] or ""), paused["run"]
    assert not (root / "first.ipynb").exists()
