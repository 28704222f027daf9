"""Co-editing over REST with a real server and kernel: a held notebook is not written by the
server, its cells come as a merge plan, a release lets the server write the file again; bad
input is a typed 4xx; a rename through the contents API moves the workflow with it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from time import monotonic
from typing import Any

import pytest

from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.server import create as create_module
from notebook_bcc.server.app import NotebookBccApp
from tests.server.conftest import Api

pytestmark = pytest.mark.timeout(120)

HOLDER = "browser-tab-0001"


def cells_on_disk(path: Path) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text())["cells"]) if path.exists() else []


async def until(condition: Any, what: str, timeout: float = 30.0) -> None:
    deadline = monotonic() + timeout
    while not condition():
        if monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def test_a_held_notebook_gets_its_cells_as_a_plan_not_as_a_file_write(
    api: Api, root: Path
) -> None:
    notebook = "held/one.ipynb"
    (root / "held").mkdir()
    (root / notebook).write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    before = (root / notebook).read_text()
    await api.ok("POST", "documents", body={"holder": HOLDER, "paths": [notebook]})
    started = await api.start(notebook, "blueprints/confirm.yaml")
    await api.wait_status(started["workflow_id"], "waiting")
    assert (root / notebook).read_text() == before  # held: the server did not write

    held = await api.ok("POST", "documents", body={"holder": HOLDER, "paths": [notebook]})
    (doc,) = held["documents"]
    assert doc["workflow_id"] == started["workflow_id"]
    plan = await api.ok(
        "POST",
        "documents",
        "merge",
        body={"holder": HOLDER, "path": notebook, "cells": [], "document_modified": None},
    )
    ops = plan["ops"]
    assert ops, plan
    assert [op["op"] for op in ops] == ["insert"] * len(ops)
    assert [op["index"] for op in ops] == list(range(len(ops)))
    assert all(op["cell"]["metadata"].get("notebook_bcc") for op in ops)
    # a plan nobody applied (the tab closed before saving) is not taken as written
    bogus = await api.ok(
        "POST", "documents", "ack", body={"path": notebook, "token": "not-a-plan", "saved": None}
    )
    assert bogus == {"acknowledged": False}

    # released (the tab closed): the server writes the file itself again, merged
    await api.ok("POST", "documents", body={"holder": HOLDER, "paths": []})
    ids = {op["cell_id"] for op in ops}
    await until(lambda: ids <= {c["id"] for c in cells_on_disk(root / notebook)}, "the file write")


async def test_documents_refuse_bad_input_with_typed_errors(api: Api, root: Path) -> None:
    code, body = await api.call("POST", "documents", body={"holder": "x", "paths": []})
    assert code == 400
    assert body["code"] == "bad_request"
    code, body = await api.call(
        "POST", "documents", body={"holder": HOLDER, "paths": ["../out.ipynb"]}
    )
    assert code == 400
    assert body["code"] == "bad_path"
    code, body = await api.call(
        "POST", "documents", "merge", body={"holder": HOLDER, "path": "none.ipynb", "cells": []}
    )
    assert code == 404
    code, _ = await api.call("POST", "documents", raw=b"{not json")
    assert code == 400
    code, _ = await api.call(
        "POST", "documents", body={"holder": HOLDER, "paths": []}, headers={"Authorization": ""}
    )
    assert code == 403


async def test_a_rename_through_the_contents_api_moves_the_workflow(
    api: Api, root: Path, jp_fetch: Any, bcc_app: NotebookBccApp
) -> None:
    started = await api.start("first.ipynb", "blueprints/confirm.yaml")
    workflow_id = started["workflow_id"]
    await api.wait_status(workflow_id, "waiting")
    (live,) = bcc_app.service.live_workflows()
    heard: list[WorkflowEvent] = []
    live.engine.subscribe(heard.append)
    await jp_fetch(
        "api", "contents", "first.ipynb", method="PATCH", body=json.dumps({"path": "second.ipynb"})
    )
    moved = await api.wait(workflow_id, lambda s: s["notebook_path"] == "second.ipynb")
    # the commit that records the new path publishes an event (a panel refreshes on events;
    # without one its next answer went out against the version before the rename: a 409)
    await until(lambda: any(e.event == "notebook_moved" for e in heard), "the move event")
    (event,) = [e for e in heard if e.event == "notebook_moved"]
    assert event.kind == "run"
    assert event.detail == {"from": "first.ipynb", "notebook_path": "second.ipynb"}
    assert event.version == (await api.snapshot(workflow_id))["version"]
    assert moved["run"]["status"] == "waiting"
    old = await api.ok("GET", "workflows", params={"notebook_path": "first.ipynb"})
    assert old == {"workflows": []}
    new = await api.ok("GET", "workflows", params={"notebook_path": "second.ipynb"})
    assert [w["workflow_id"] for w in new["workflows"]] == [workflow_id]
    # the run goes on into the renamed notebook, and nothing recreates the old one
    # (following the rename may commit once more after the path changed: a 409 carries the
    # fresh version, and the same decision is still the one pending)
    version = moved["version"]
    for _ in range(5):
        code, answer = await api.command(
            workflow_id,
            decide=moved["run"]["pending"][0]["id"],
            decision="approve",
            expected_version=version,
        )
        if code != 409:
            break
        version = answer["details"]["snapshot"]["version"]
    assert code == 200, answer
    await api.wait_status(workflow_id, "completed")
    await until(lambda: "after = True" in (root / "second.ipynb").read_text(), "the last cell")
    assert not (root / "first.ipynb").exists()


async def test_a_document_reverted_to_an_older_file_gets_the_later_workflow_cells_back(
    api: Api, root: Path
) -> None:
    """Lab's Revert to Checkpoint puts an older file (with its own older time) in place and
    reloads the document from it: the workflow cells the browser had acknowledged are gone
    from it, but the user did not delete them. A merge that says the document was reloaded
    inserts them again (and updates those it holds); the same view without the word counts
    them as deleted by the user, as a deletion in the document is."""
    notebook = "reverted/one.ipynb"
    (root / "reverted").mkdir()
    (root / notebook).write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    await api.ok("POST", "documents", body={"holder": HOLDER, "paths": [notebook]})
    started = await api.start(notebook, "blueprints/confirm.yaml")
    await api.wait_status(started["workflow_id"], "waiting")
    merge = {"holder": HOLDER, "path": notebook, "cells": [], "document_modified": None}
    plan = await api.ok("POST", "documents", "merge", body=merge)
    placed = [op["cell_id"] for op in plan["ops"]]
    assert placed, plan
    acked = await api.ok(
        "POST",
        "documents",
        "ack",
        body={"path": notebook, "token": plan["token"], "saved": "2026-11-29T10:00:00Z"},
    )
    assert acked == {"acknowledged": True}

    checkpoint = {**merge, "cells": [["blank-1", ""]], "document_modified": "2026-11-29T09:00:00Z"}
    deleted = await api.ok("POST", "documents", "merge", body=checkpoint)
    assert deleted["ops"] == [], deleted
    assert sorted(deleted["deleted"]) == sorted(placed), deleted

    back = await api.ok("POST", "documents", "merge", body={**checkpoint, "reloaded": True})
    assert back["deleted"] == [], back
    assert [op["cell_id"] for op in back["ops"]] == placed
    assert [op["op"] for op in back["ops"]] == ["replace"] + ["insert"] * (len(placed) - 1)

    # reloaded from the file as it is now (Reload from Disk): it has every cell; those it
    # holds are brought up to date, none is inserted twice
    disk = [[op["cell_id"], "".join(op["cell"]["source"])] for op in plan["ops"]]
    now = await api.ok(
        "POST",
        "documents",
        "merge",
        body={
            **merge,
            "cells": disk,
            "document_modified": "2026-11-29T10:00:00Z",
            "reloaded": True,
        },
    )
    assert {op["op"] for op in now["ops"]} <= {"update"}, now
    assert now["deleted"] == [], now


async def _held_run_completed(
    api: Api, root: Path, notebook: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A new ``notebook`` held by :data:`HOLDER`, a quick.yaml run on it completed, its code
    cell saved by the browser as it was while it ran: the heartbeat body, the run's first
    snapshot."""
    (root / notebook).write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    hold = {"holder": HOLDER, "paths": [notebook]}
    await api.ok("POST", "documents", body=hold)
    first = await api.start(notebook, "blueprints/quick.yaml")
    await api.wait_status(first["workflow_id"], "completed")
    # the browser had saved one of the run's cells in an earlier state (it writes the file)
    ran = {"notebook_bcc": {"workflow_id": first["workflow_id"], "status": "running"}}
    cell = {"cell_type": "code", "id": "c1", "metadata": ran, "source": "answer = 40 + 2"}
    (root / notebook).write_text(
        json.dumps(
            {
                "cells": [{**cell, "outputs": [], "execution_count": None}],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )
    return hold, first


async def test_a_new_workflow_waits_for_the_browser_to_take_the_earlier_runs_last_cells(
    api: Api, root: Path
) -> None:
    """The CI failure (single-user Lab, "New workflow…" right after a run completed): the
    browser holding the notebook had not yet asked for the run's last plan (a heartbeat
    later), the new workflow took the notebook's writer over, and that plan was never asked
    for: Lab kept the earlier run's code cell running (``[*]``, no outputs) and saved it so.
    The start now waits until the browser has taken those cells."""
    notebook = "again.ipynb"
    hold, first = await _held_run_completed(api, root, notebook)
    second = asyncio.ensure_future(api.start(notebook, "blueprints/quick.yaml"))
    done, _ = await asyncio.wait({second}, timeout=1.5)
    assert not done, "started before the browser had taken the earlier run's last cells"
    # the browser's next heartbeat: the plan is still the earlier run's, with its last states
    (doc,) = (await api.ok("POST", "documents", body=hold))["documents"]
    assert doc["workflow_id"] == first["workflow_id"]
    merge = {"holder": HOLDER, "path": notebook, "cells": [], "document_modified": None}
    plan = await api.ok("POST", "documents", "merge", body=merge)
    (code,) = [op["cell"] for op in plan["ops"] if "answer = 40 + 2" in op["cell"]["source"]]
    assert code["metadata"]["notebook_bcc"]["status"] != "running", code["metadata"]
    assert code["execution_count"] is not None
    ack = {"path": notebook, "token": plan["token"], "saved": None}
    assert await api.ok("POST", "documents", "ack", body=ack) == {"acknowledged": True}
    started = await asyncio.wait_for(second, 30)
    assert started["workflow_id"] != first["workflow_id"]
    (doc,) = (await api.ok("POST", "documents", body=hold))["documents"]
    assert doc["workflow_id"] == started["workflow_id"]


async def test_a_browser_that_never_takes_the_cells_delays_a_new_workflow_only_briefly(
    api: Api, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A browser that holds the notebook but never merges (a frozen tab) does not keep a new
    workflow from starting: it starts once the bounded wait is over."""
    monkeypatch.setattr(create_module, "DELIVERY_WAIT", 0.5)
    notebook = "frozen.ipynb"
    _, first = await _held_run_completed(api, root, notebook)
    began = monotonic()
    started = await api.start(notebook, "blueprints/quick.yaml")
    assert started["workflow_id"] != first["workflow_id"]
    assert monotonic() - began >= 0.5


async def test_once_the_browser_took_its_cells_a_replaced_run_writes_the_notebook_no_more(
    api: Api, root: Path, bcc_app: NotebookBccApp
) -> None:
    """The earlier run's writer, closed while the browser held the notebook, used to stay
    registered until the hold lapsed and then write the file once more, its own notebook
    record (``metadata.notebook_bcc``) over the new run's. Once the browser has taken its
    cells, nothing of it is left to write: the file keeps the new run's record."""
    notebook = "twice.ipynb"
    _, first = await _held_run_completed(api, root, notebook)
    merge = {"holder": HOLDER, "path": notebook, "cells": [], "document_modified": None}
    plan = await api.ok("POST", "documents", "merge", body=merge)
    ack = {"path": notebook, "token": plan["token"], "saved": None}
    assert await api.ok("POST", "documents", "ack", body=ack) == {"acknowledged": True}
    second = await api.start(notebook, "blueprints/quick.yaml")
    coedit = bcc_app.service.coedit
    assert coedit is not None
    # still held: the earlier run's writer has nothing left to write, and is gone
    registered = dict(coedit.writers())
    assert first["workflow_id"] not in registered, "the earlier run's writer waits to write"
    assert second["workflow_id"] in registered
    await api.wait_status(second["workflow_id"], "completed")
    # the tab closes: the server writes the file itself, with the new run's record
    await api.ok("POST", "documents", body={"holder": HOLDER, "paths": []})

    def owner() -> Any:
        return json.loads((root / notebook).read_text())["metadata"].get("notebook_bcc", {})

    await until(lambda: owner().get("workflow_id") == second["workflow_id"], "the new record")


async def test_a_run_whose_cells_the_user_removed_is_not_waited_for_nor_put_back(
    api: Api, root: Path, bcc_app: NotebookBccApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "New workflow…" with "Remove the earlier run's cells" checked removes them from Lab's
    document and saves before it starts. The earlier run's last plan (never asked for) would
    only put a removed cell back (seen in the failed-run journey: its failing cell came back
    at the top): the start does not wait for it, and that writer writes nothing more."""
    monkeypatch.setattr(create_module, "DELIVERY_WAIT", 60.0)
    notebook = "removed.ipynb"
    _, first = await _held_run_completed(api, root, notebook)
    # the browser removed the run's cells and saved (the file has none of them)
    (root / notebook).write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    second = await asyncio.wait_for(api.start(notebook, "blueprints/quick.yaml"), 30)
    coedit = bcc_app.service.coedit
    assert coedit is not None
    registered = dict(coedit.writers())
    assert first["workflow_id"] not in registered
    assert second["workflow_id"] in registered
