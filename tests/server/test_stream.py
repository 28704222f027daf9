"""The live channel's edges: a slow client resynchronized, a workflow leaving, disconnects."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest
from tornado.websocket import WebSocketClientConnection

from notebook_bcc.server.app import NotebookBccApp
from tests.server.conftest import Api, WsFetch, read_stream


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    """A one-event buffer per client: any commit with several events overflows it."""
    return {
        "ServerApp": {
            "jpserver_extensions": {"notebook_bcc": True, "jupyter_server_terminals": False},
            "allow_unauthenticated_access": False,
        },
        "NotebookBccApp": {"stream_buffer": 1, "write_debounce": 0.1},
    }


def _stream(ws_fetch: WsFetch, workflow_id: str) -> Awaitable[WebSocketClientConnection]:
    return ws_fetch("notebook-bcc", "api", "workflows", workflow_id, "stream")


async def test_a_client_that_falls_behind_gets_a_snapshot_and_the_stream_ends_on_delete(
    api: Api, root: Path, jp_ws_fetch: WsFetch, bcc_app: NotebookBccApp
) -> None:
    started = await api.start("work/s.ipynb", "blueprints/slow.yaml")
    workflow_id = started["workflow_id"]
    ws = await _stream(jp_ws_fetch, workflow_id)
    await api.wait(workflow_id, lambda s: s["notebook"]["execution_count"] >= 1)
    live = bcc_app.service.live(workflow_id)
    assert live is not None
    assert live.hub.clients == 1
    deleted = await api.ok("DELETE", "workflows", workflow_id)
    messages = await read_stream(ws)

    assert messages[0]["type"] == "snapshot"
    assert messages[0]["reason"] == "hello"
    resyncs = [m for m in messages if m.get("type") == "snapshot" and m["reason"] == "resync"]
    assert resyncs, "the one-event buffer overflowed and the client was resynchronized"
    last = messages[-1]
    assert (last["type"], last["reason"]) == ("snapshot", "closed")
    assert last["snapshot"]["version"] == deleted["version"]
    snapshot_version = 0
    for message in messages:
        if message.get("type") == "snapshot":
            snapshot_version = message["snapshot"]["version"]
        else:
            assert message["version"] > snapshot_version, "no event repeats a snapshot"


async def test_the_stream_of_a_workflow_not_running_here_sends_its_snapshot_and_closes(
    api: Api, root: Path, jp_ws_fetch: WsFetch
) -> None:
    started = await api.start("work/q.ipynb", "blueprints/quick.yaml")
    workflow_id = started["workflow_id"]
    await api.wait_status(workflow_id, "completed", "failed")
    await api.ok("DELETE", "workflows", workflow_id)
    messages = await read_stream(await _stream(jp_ws_fetch, workflow_id))
    assert [(m["type"], m["reason"]) for m in messages] == [("snapshot", "closed")]
    assert messages[0]["snapshot"]["run"]["status"] == "completed"


async def test_a_disconnect_releases_the_feed(
    api: Api, root: Path, jp_ws_fetch: WsFetch, bcc_app: NotebookBccApp
) -> None:
    started = await api.start("work/c.ipynb", "blueprints/confirm.yaml")
    workflow_id = started["workflow_id"]
    await api.wait_status(workflow_id, "waiting", "failed")
    live = bcc_app.service.live(workflow_id)
    assert live is not None
    ws = await _stream(jp_ws_fetch, workflow_id)
    hello = json.loads(await asyncio.wait_for(ws.read_message(), timeout=10) or "{}")
    assert hello["snapshot"]["run"]["status"] == "waiting"
    assert live.hub.clients == 1
    ws.close()
    for _tick in range(100):
        if live.hub.clients == 0:
            break
        await asyncio.sleep(0.02)
    assert live.hub.clients == 0


async def test_a_plain_get_on_the_stream_is_a_json_400(
    api: Api, root: Path, jp_fetch: Any, bcc_app: NotebookBccApp
) -> None:
    started = await api.start("work/p.ipynb", "blueprints/confirm.yaml")
    workflow_id = started["workflow_id"]
    code, body = await api.call("GET", "workflows", workflow_id, "stream")
    assert code == 400
    assert "websocket" in body["message"]
    live = bcc_app.service.live(workflow_id)
    assert live is not None
    assert live.hub.clients == 0, "no feed was left behind"
    await api.wait_status(workflow_id, "waiting", "failed")
