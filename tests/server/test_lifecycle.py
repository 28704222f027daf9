"""The extension's lifecycle (shutdown interrupts, restart finds what was left) and the
contents-manager writer's merge with a user's edits."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from notebook_bcc.kernel.cells import BCC_KEY, node
from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.kernel.errors import NotebookWriteError
from notebook_bcc.server.app import NotebookBccApp
from notebook_bcc.server.contents import Contents
from notebook_bcc.server.kernels import Kernels
from notebook_bcc.server.service import WorkflowService
from notebook_bcc.server.writer import ContentsNotebookWriter
from notebook_bcc.store.sqlite import SqliteStore
from tests.server.conftest import Api, read_notebook


async def test_shutdown_interrupts_running_workflows_and_keeps_them_for_a_restart(
    api: Api, root: Path, bcc_app: NotebookBccApp, jp_serverapp: Any
) -> None:
    started = await api.start("work/long.ipynb", "blueprints/slow.yaml")
    workflow_id = started["workflow_id"]
    await api.wait(workflow_id, lambda s: s["notebook"]["execution_count"] >= 1)
    assert bcc_app.current_activity()

    await bcc_app.stop_extension()

    store = SqliteStore(bcc_app.store_path)
    try:
        snapshot = store.load(workflow_id)
        assert snapshot.run.status == "interrupted", "D1: the running cell finished first"
        assert snapshot.run.reason == "the server shut down", "not 'by a signal'"
        assert store.workflow_ids(active=True) == [workflow_id], "kept for a restart"
        assert store.owner(workflow_id) is None
    finally:
        store.close()
    cells = read_notebook(root / "work" / "long.ipynb")["cells"]
    assert len(cells) == snapshot.notebook.cell_count, "the notebook was written at shutdown"
    code, body = await api.call("GET", "workflows")
    assert code == 503
    assert body["code"] == "shutting_down"

    later = WorkflowService(
        dataclasses.replace(bcc_app.service_settings(), restart_policy="wait"),
        Contents(jp_serverapp.contents_manager),
        Kernels(jp_serverapp.session_manager, jp_serverapp.kernel_manager),
    )
    try:
        await later.start()
        assert later.recovered == [workflow_id]
        (row,) = (await later.list_workflows()).workflows
        assert (row.run_status, row.active) == ("interrupted", True), "waits for a human (wait)"
    finally:
        await later.close()


def _cell(cell_id: str, source: str, *, ours: bool = True) -> Any:
    metadata = {BCC_KEY: {"workflow_id": "wf-w"}} if ours else {}
    return node(
        {
            "cell_type": "markdown",
            "id": cell_id,
            "metadata": metadata,
            "source": source,
        }
    )


def _sources(path: Path) -> list[str]:
    return ["".join(cell["source"]) for cell in read_notebook(path)["cells"]]


async def test_the_writer_saves_through_the_contents_manager_and_keeps_user_edits(
    jp_serverapp: Any, jp_root_dir: Path
) -> None:
    contents = Contents(jp_serverapp.contents_manager)
    path = jp_root_dir / "edited.ipynb"
    document = NotebookDocument(workflow_id="wf-w")
    writer = ContentsNotebookWriter(contents, "edited.ipynb", document, debounce=-1)
    document.append(_cell("a", "first"))
    report = await writer.flush_async()
    assert report.written
    assert _sources(path) == ["first"]
    assert read_notebook(path)["metadata"][BCC_KEY]["workflow_id"] == "wf-w"

    def user_saves(cells: list[dict[str, Any]]) -> None:
        nb = read_notebook(path)
        nb["cells"] = cells
        path.write_text(json.dumps(nb))

    on_disk = read_notebook(path)["cells"]
    user_cell = {
        "cell_type": "markdown",
        "id": "user",
        "metadata": {},
        "source": "added by the user",
    }
    user_saves([user_cell, *on_disk])
    document.append(_cell("b", "second"))
    report = await writer.flush_async()
    assert report.external_change
    assert _sources(path) == ["added by the user", "first", "second"]

    user_saves([c for c in read_notebook(path)["cells"] if c["id"] != "a"])
    document.append(_cell("c", "third"))
    await writer.flush_async()
    assert _sources(path) == ["added by the user", "second", "third"], "a deletion stays"

    document.append(_cell("d", "fourth"))
    await writer.flush_async()
    assert _sources(path) == ["added by the user", "second", "third", "fourth"]

    path.write_text("{ this is no longer a notebook")
    document.append(_cell("e", "fifth"))
    with pytest.raises(NotebookWriteError, match="not overwriting"):
        await writer.flush_async()
    assert path.read_text() == "{ this is no longer a notebook"
    with pytest.raises(NotebookWriteError, match="flush_async"):
        writer.flush()
