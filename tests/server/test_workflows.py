"""Workflows over REST on real kernels: the housing run with its live stream, decisions,
one active workflow per notebook, two notebooks at once, the user's session kernel reused."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
from pathlib import Path
from time import monotonic
from typing import Any

from notebook_bcc.server.app import NotebookBccApp
from tests.server.conftest import Api, Fetch, WsFetch, read_notebook, read_stream


def _completed(message: dict[str, Any]) -> bool:
    if message.get("type") == "snapshot":
        return bool(message["snapshot"]["run"]["status"] == "completed")
    return message["kind"] == "run" and message["to"] == "completed"


async def _sessions(fetch: Fetch, path: str) -> list[dict[str, Any]]:
    response = await fetch("api", "sessions")
    return [s for s in json.loads(response.body) if s["path"] == path]


async def test_housing_runs_over_rest_with_a_live_stream(
    api: Api, housing: Path, jp_fetch: Fetch, jp_ws_fetch: WsFetch, bcc_app: NotebookBccApp
) -> None:
    handlers = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    first = await api.start(
        "housing/housing.ipynb",
        "housing/workflow.yaml",
        problem="Predict house prices",
        options={"auto_confirm": True},
    )
    workflow_id = first["workflow_id"]
    assert first["notebook_path"] == "housing/housing.ipynb"
    assert first["files"] == ["data/housing.csv"], "relative to the notebook's folder"
    assert first["planner"]["kind"] == "blueprint"

    ws = await jp_ws_fetch("notebook-bcc", "api", "workflows", workflow_id, "stream")
    messages = await read_stream(ws, _completed)
    ws.close()

    hello = messages[0]
    assert hello["type"] == "snapshot"
    assert hello["reason"] == "hello"
    events = [m for m in messages[1:] if "type" not in m]
    assert events, "events were pushed while the workflow ran"
    assert all(e["workflow_id"] == workflow_id for e in events)
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)
    assert all(e["version"] > hello["snapshot"]["version"] for e in events)
    kinds = {e["kind"] for e in events}
    if hello["snapshot"]["version"] < 5:
        assert {"transition", "cell", "contract", "run"} <= kinds

    final = await api.snapshot(workflow_id)
    assert final["run"]["status"] == "completed"
    assert final["fsm"]["state"] == "workflow_completed"
    assert final["stage_machine"]["visits"]["modelling"] == 2, "the RMSE loop ran"

    notebook = read_notebook(housing / "housing.ipynb")
    assert len(notebook["cells"]) == final["notebook"]["cell_count"] == 21
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"
    assert notebook["metadata"]["language_info"]["name"] == "python"
    assert notebook["metadata"]["notebook_bcc"]["workflow_id"] == workflow_id
    assert "Predict house prices" in "".join(notebook["cells"][0]["source"])
    assert any(cell.get("outputs") for cell in notebook["cells"])
    assert (housing / "housing_model.pkl").exists(), "the kernel ran in the notebook's folder"

    (session,) = await _sessions(jp_fetch, "housing/housing.ipynb")
    kernels = json.loads((await jp_fetch("api", "kernels")).body)
    assert session["kernel"]["id"] in {k["id"] for k in kernels}, "shows in the Running panel"

    trace = await api.ok("GET", "workflows", workflow_id, "trace")
    assert trace["history"][0]["from"] == "idle"
    assert trace["history"][-1]["to"] == "workflow_completed"
    assert any(r["action"].startswith("create_contract:") for r in trace["trace"])

    fsm = await api.ok("GET", "workflows", workflow_id, "diagram")
    assert fsm["machine"] == "fsm"
    assert fsm["current"] == "workflow_completed"
    assert "class workflow_completed current" in fsm["mermaid"]
    stages = await api.ok("GET", "workflows", workflow_id, "diagram", params={"machine": "stages"})
    assert stages["mermaid"].startswith("stateDiagram-v2")
    assert "feature_engineering" in stages["mermaid"]
    assert f"class {stages['current']} current" in stages["mermaid"]
    code, body = await api.call(
        "GET", "workflows", workflow_id, "diagram", params={"machine": "gantt"}
    )
    assert code == 400
    assert body["code"] == "bad_request"

    (row,) = (await api.ok("GET", "workflows", params={"notebook_path": "housing/housing.ipynb"}))[
        "workflows"
    ]
    assert row["workflow_id"] == workflow_id
    assert (row["active"], row["live"], row["running"]) == (False, True, False), (
        "a completed workflow no longer holds its notebook"
    )
    assert row["kernel_id"] == session["kernel"]["id"]
    assert Path(final["planner"]["settings"]["path"]) == housing / "workflow.yaml"
    assert bcc_app.current_activity() is None
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers, (
        "D22: nothing replaced the server's signal handlers"
    )


async def test_decisions_over_rest(api: Api, root: Path) -> None:
    started = await api.start("work/confirm.ipynb", "blueprints/confirm.yaml")
    workflow_id = started["workflow_id"]
    waiting = await api.wait_status(workflow_id, "waiting", "failed", "completed")
    assert waiting["run"]["status"] == "waiting"
    (pending,) = waiting["run"]["pending"]
    assert pending["kind"] == "stage_confirmation"
    version = waiting["version"]

    code, body = await api.command(
        workflow_id, decide=pending["id"], decision="approve", expected_version=version - 1
    )
    assert code == 409
    assert body["code"] == "conflict"
    assert body["details"]["snapshot"]["version"] == version
    assert body["details"]["snapshot"]["run"]["pending"][0]["id"] == pending["id"]

    code, body = await api.command(
        workflow_id, event="UPDATE_STEP_CONFIRMED", expected_version=version
    )
    assert code == 400
    assert "no pending step_update" in body["message"]

    code, body = await api.command(workflow_id, event="START_BEHAVIOR", expected_version=version)
    assert code == 400
    assert "START_BEHAVIOR" in body["message"], body

    code, body = await api.command(
        workflow_id, decide="no-such-decision", decision="approve", expected_version=version
    )
    assert code == 409, "issue 19: a decision that is not pending is a conflict"
    assert body["code"] == "decision_gone"
    assert "no pending decision" in body["message"]
    assert body["details"]["snapshot"]["version"] == version

    for bad in ({}, {"action": "pause"}, {"event": "JUMP", "expected_version": version}):
        code, body = await api.call("POST", "workflows", workflow_id, "commands", body=bad)
        assert code == 400, bad
        assert body["code"] == "bad_command"
    code, body = await api.call("POST", "workflows", workflow_id, "commands", body=[1])
    assert code == 400
    assert (await api.snapshot(workflow_id))["version"] == version, "refusals changed nothing"

    code, after = await api.command(
        workflow_id, decide=pending["id"], decision="approve", expected_version=version
    )
    assert code == 200
    assert after["version"] > version
    assert after["run"]["pending"] == []
    done = await api.wait_status(workflow_id, "completed", "failed", "waiting")
    assert done["run"]["status"] == "completed"
    assert done["variables"]["after"]["value"] is True


async def test_one_active_workflow_per_notebook(
    api: Api, root: Path, jp_fetch: Fetch, bcc_app: NotebookBccApp
) -> None:
    notebook = "work/shared.ipynb"
    first = await api.start(notebook, "blueprints/slow.yaml")
    workflow_id = first["workflow_id"]

    code, body = await api.call(
        "POST",
        "workflows",
        body={
            "notebook_path": notebook,
            "planner": {"kind": "blueprint", "path": "blueprints/quick.yaml"},
        },
    )
    assert code == 409
    assert body["code"] == "conflict"
    assert body["details"]["workflow_id"] == workflow_id

    await api.wait(workflow_id, lambda s: s["notebook"]["execution_count"] >= 1)
    assert bcc_app.current_activity() == [
        {"workflow_id": workflow_id, "notebook_path": notebook, "run_status": "running"}
    ]
    (session,) = await _sessions(jp_fetch, notebook)
    deleted = await api.ok("DELETE", "workflows", workflow_id)
    assert deleted["workflow_id"] == workflow_id
    assert deleted["run"]["status"] == "interrupted", "stopped at the next safe point"
    assert deleted["run"]["reason"] == "stopped: the workflow was deleted from this server"
    assert (root / "work" / "shared.ipynb").exists(), "DELETE keeps the notebook"
    kernel = json.loads((await jp_fetch("api", "kernels", session["kernel"]["id"])).body)
    assert kernel["id"] == session["kernel"]["id"], "DELETE keeps the session kernel"
    (row,) = (await api.ok("GET", "workflows"))["workflows"]
    assert (row["active"], row["live"], row["running"]) == (False, False, False)
    code, body = await api.command(workflow_id, action="run", expected_version=deleted["version"])
    assert code == 409
    assert body["code"] == "not_running"
    again_deleted = await api.ok("DELETE", "workflows", workflow_id)
    assert again_deleted["version"] == deleted["version"], "deleting twice changes nothing"

    second = await api.start(notebook, "blueprints/quick.yaml")
    assert (await api.wait_status(second["workflow_id"], "completed", "failed"))["run"][
        "status"
    ] == "completed"
    (again,) = await _sessions(jp_fetch, notebook)
    assert again["kernel"]["id"] == session["kernel"]["id"], "the session kernel was reused"

    third = await api.start(notebook, "blueprints/quick.yaml")
    assert third["workflow_id"] != second["workflow_id"], "a completed workflow yields"
    await api.wait_status(third["workflow_id"], "completed", "failed")
    rows = (await api.ok("GET", "workflows", params={"notebook_path": notebook}))["workflows"]
    assert [r["live"] for r in rows] == [False, False, True], "earlier ones were retired"
    assert not any(r["active"] for r in rows)
    cells = read_notebook(root / "work" / "shared.ipynb")["cells"]
    assert len(cells) == len({c["id"] for c in cells}), "no duplicated cell ids"


async def test_delete_stops_a_cell_that_ignores_interrupts_and_says_interrupted(
    api: Api, root: Path
) -> None:
    """The cell ignores SIGINT, so the run loop never reaches its safe point: DELETE cancels
    it, and the workflow it reports (and stores) is interrupted, not still running."""
    started = await api.start("work/deaf.ipynb", "blueprints/deaf.yaml")
    workflow_id = started["workflow_id"]
    flag = root / "work" / "deaf.flag"
    deadline = monotonic() + 60
    while not flag.exists():
        assert monotonic() < deadline, "the deaf cell never started"
        await asyncio.sleep(0.05)
    deleted = await api.ok("DELETE", "workflows", workflow_id)
    assert (deleted["run"]["status"], deleted["run"]["reason"]) == (
        "interrupted",
        "stopped: the workflow was deleted from this server",
    )
    stored = await api.snapshot(workflow_id)
    assert stored["run"]["status"] == "interrupted"
    assert stored["version"] == deleted["version"]


async def test_two_notebooks_run_at_once(api: Api, root: Path) -> None:
    one = await api.start("a/one.ipynb", "blueprints/slow.yaml")
    two = await api.start("b/two.ipynb", "blueprints/slow.yaml")
    finals = [
        await api.wait_status(w["workflow_id"], "completed", "failed", timeout=60)
        for w in (one, two)
    ]
    assert [f["run"]["status"] for f in finals] == ["completed", "completed"]
    (a, b) = ({k: f["variables"][k]["value"] for k in ("started", "finished")} for f in finals)
    assert a["started"] < b["finished"]
    assert b["started"] < a["finished"], "their cells ran at the same time"
    assert (root / "a" / "one.ipynb").exists()
    assert (root / "b" / "two.ipynb").exists()


async def test_pause_and_run(api: Api, root: Path, bcc_app: NotebookBccApp) -> None:
    started = await api.start("work/paused.ipynb", "blueprints/slow.yaml")
    workflow_id = started["workflow_id"]
    version = started["version"]
    for _attempt in range(20):
        code, body = await api.command(workflow_id, action="pause", expected_version=version)
        if code == 200:
            break
        assert code == 409
        version = body["details"]["snapshot"]["version"]
    assert code == 200
    assert body["run"]["status"] == "paused"
    for _tick in range(100):
        if bcc_app.current_activity() is None:
            break
        await asyncio.sleep(0.05)
    assert bcc_app.current_activity() is None, "the run loop stopped"
    paused = await api.snapshot(workflow_id)
    assert paused["run"]["status"] == "paused"
    live = bcc_app.service.live(workflow_id)
    assert live is not None
    assert not live.running, "no run loop drives the paused workflow: nothing can run"
    assert (await api.snapshot(workflow_id))["version"] == paused["version"], "nothing ran"
    code, body = await api.command(workflow_id, action="run", expected_version=paused["version"])
    assert code == 200
    assert body["run"]["status"] == "running"
    done = await api.wait_status(workflow_id, "completed", "failed")
    assert done["run"]["status"] == "completed"


async def test_the_users_session_kernel_is_reused(
    api: Api, root: Path, jp_fetch: Fetch, jp_serverapp: Any
) -> None:
    notebook = "mine/user.ipynb"
    (root / "mine").mkdir()
    user_cell = {
        "cell_type": "code",
        "id": "users-own-cell",
        "metadata": {},
        "source": "print('written by the user')",
        "outputs": [],
        "execution_count": None,
    }
    (root / "mine" / "user.ipynb").write_text(
        json.dumps({"cells": [user_cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    response = await jp_fetch(
        "api",
        "sessions",
        method="POST",
        body=json.dumps(
            {"path": notebook, "type": "notebook", "name": "", "kernel": {"name": "python3"}}
        ),
    )
    kernel_id = json.loads(response.body)["kernel"]["id"]
    client = jp_serverapp.kernel_manager.get_kernel(kernel_id).client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=30)
        reply = await client.execute_interactive("user_var = 41", timeout=30)
        assert reply["content"]["status"] == "ok"
    finally:
        client.stop_channels()

    started = await api.start(notebook, "blueprints/uses_user_variable.yaml")
    done = await api.wait_status(started["workflow_id"], "completed", "failed")
    assert done["run"]["status"] == "completed", done["run"]
    assert done["variables"]["from_user"]["value"] == 42, "the user's variables were visible"
    (session,) = await _sessions(jp_fetch, notebook)
    assert session["kernel"]["id"] == kernel_id
    cells = read_notebook(root / "mine" / "user.ipynb")["cells"]
    assert cells[0]["id"] == "users-own-cell"
    assert cells[0]["execution_count"] is None, "D19: the user's cells are not executed"
    assert len(cells) > 1


async def test_a_kernel_culled_while_waiting_is_replaced_and_the_run_completes(
    api: Api, root: Path, jp_fetch: Fetch, jp_serverapp: Any
) -> None:
    started = await api.start("work/culled.ipynb", "blueprints/confirm.yaml")
    workflow_id = started["workflow_id"]
    waiting = await api.wait_status(workflow_id, "waiting", "failed", "completed")
    (pending,) = waiting["run"]["pending"]
    (session,) = await _sessions(jp_fetch, "work/culled.ipynb")
    await jp_serverapp.kernel_manager.shutdown_kernel(session["kernel"]["id"])

    code, _ = await api.command(
        workflow_id, decide=pending["id"], decision="approve", expected_version=waiting["version"]
    )
    assert code == 200
    done = await api.wait_status(workflow_id, "failed", "completed", timeout=60)
    assert done["run"]["status"] == "completed", "issue 19: the kernel is replaced, the run goes on"
    assert done["kernel"]["kernel_id"] != session["kernel"]["id"], "a new session kernel"
    (replaced,) = await _sessions(jp_fetch, "work/culled.ipynb")
    assert replaced["kernel"]["id"] == done["kernel"]["kernel_id"], "one the server manages"


async def test_a_damaged_stored_snapshot_is_503_naming_where_and_the_list_goes_on(
    api: Api, root: Path, bcc_app: NotebookBccApp
) -> None:
    notebook = "work/damaged.ipynb"
    first = (await api.start(notebook, "blueprints/quick.yaml"))["workflow_id"]
    await api.wait_status(first, "completed", "failed")
    second = (await api.start(notebook, "blueprints/quick.yaml"))["workflow_id"]
    await api.wait_status(second, "completed", "failed")  # the first one is no longer live
    with contextlib.closing(sqlite3.connect(bcc_app.store_path)) as db:
        changed = db.execute(
            "UPDATE snapshot_items SET body = '{\"id\": 5}' WHERE workflow_id = ?"
            " AND path = 'location.progress.stages.completed'",
            (first,),
        ).rowcount
        db.commit()
    assert changed >= 1

    code, body = await api.call("GET", "workflows", first)
    assert code == 503, body
    assert body["code"] == "corrupt_state"
    assert body["details"]["where"].startswith("location.progress.stages.completed.0.")
    assert first in body["message"]

    rows = (await api.ok("GET", "workflows"))["workflows"]
    assert [row["workflow_id"] for row in rows] == [second], "the damaged one alone is left out"
    assert (await api.snapshot(second))["run"]["status"] == "completed"


async def test_the_list_says_why_each_workflow_no_longer_holds_its_notebook(
    api: Api, root: Path
) -> None:
    """A run that completed finished (it was neither deleted nor replaced); a deleted one says
    deleted; a finished one a newer workflow started on its notebook after says replaced."""
    done = await api.start("why/done.ipynb", "blueprints/quick.yaml")
    await api.wait_status(done["workflow_id"], "completed")
    gone = await api.start("why/gone.ipynb", "blueprints/slow.yaml")
    await api.ok("DELETE", "workflows", gone["workflow_id"])
    older = await api.start("why/twice.ipynb", "blueprints/quick.yaml")
    await api.wait_status(older["workflow_id"], "completed")
    newer = await api.start("why/twice.ipynb", "blueprints/quick.yaml")
    await api.wait_status(newer["workflow_id"], "completed")

    rows = {r["workflow_id"]: r for r in (await api.ok("GET", "workflows"))["workflows"]}
    why = {wid: (r["active"], r["released"]) for wid, r in rows.items()}
    assert why == {
        done["workflow_id"]: (False, "finished"),
        gone["workflow_id"]: (False, "deleted"),
        older["workflow_id"]: (False, "replaced"),
        newer["workflow_id"]: (False, "finished"),
    }
    # a finished workflow deleted from the list says deleted from then on
    await api.ok("DELETE", "workflows", done["workflow_id"])
    (row,) = (await api.ok("GET", "workflows", params={"notebook_path": "why/done.ipynb"}))[
        "workflows"
    ]
    assert (row["active"], row["live"], row["released"]) == (False, False, "deleted")
    # a running workflow holds its notebook: nothing released
    running = await api.start("why/running.ipynb", "blueprints/slow.yaml")
    (row,) = (await api.ok("GET", "workflows", params={"notebook_path": "why/running.ipynb"}))[
        "workflows"
    ]
    assert (row["active"], row["released"]) == (True, None)
    await api.ok("DELETE", "workflows", running["workflow_id"])
