"""``GET /workflows/{id}/events``: what a panel reloaded mid-run (or opened late) missed.

The stream carries events from the moment a client connects; the store keeps the same events
with the same ``seq``. A reloaded panel asks for the newest ones, a reconnected one for those
after the last ``seq`` it saw, and merges them with the live ones by ``seq``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import Api, WsFetch, read_stream


def _is_run_end(message: dict[str, Any]) -> bool:
    """The run's end event, or a snapshot (a resync of a slow client) showing it ended."""
    if message.get("type") == "snapshot":
        return bool(message["snapshot"]["run"]["status"] in ("completed", "failed"))
    return message.get("kind") == "run" and message.get("to") in ("completed", "failed")


async def test_a_panel_connecting_mid_run_gets_what_it_missed_with_the_streams_seq(
    api: Api, root: Path, jp_ws_fetch: WsFetch
) -> None:
    started = await api.start("review/events.ipynb", "blueprints/confirm.yaml")
    workflow_id = started["workflow_id"]
    waiting = await api.wait_status(workflow_id, "waiting", "failed")
    assert waiting["run"]["status"] == "waiting", waiting["run"]
    (decision,) = waiting["run"]["pending"]

    # A page reloaded while the run waits: the stream starts with a snapshot, no past events.
    ws = await jp_ws_fetch("notebook-bcc", "api", "workflows", workflow_id, "stream")
    hello = json.loads(await asyncio.wait_for(ws.read_message(), timeout=30))
    assert (hello["type"], hello["reason"]) == ("snapshot", "hello")
    before = await api.ok("GET", "workflows", workflow_id, "events")
    assert before["workflow_id"] == workflow_id
    assert before["truncated"] is False
    past = before["events"]
    seqs = [e["seq"] for e in past]
    assert seqs == sorted(set(seqs)), "oldest first, each once"
    trace = await api.ok("GET", "workflows", workflow_id, "trace")
    assert [(e["from"], e["event"], e["to"]) for e in past if e["kind"] == "transition"] == [
        (h["from"], h["event"], h["to"]) for h in trace["history"]
    ], "every FSM transition so far, in order"
    kinds = {e["kind"] for e in past}
    assert {"transition", "contract", "cell", "run", "decision"} <= kinds, kinds
    cells = [e for e in past if e["kind"] == "cell"]
    assert cells
    assert cells[-1]["detail"]["cell_type"] == "code"
    assert all(e["version"] <= hello["snapshot"]["version"] for e in past)

    # What happens next arrives on the stream and is stored with the same seq and body.
    code, answered = await api.command(
        workflow_id, decide=decision["id"], decision="approve", expected_version=waiting["version"]
    )
    assert code == 200, answered
    streamed = [m for m in await read_stream(ws, _is_run_end) if m.get("type") != "snapshot"]
    ws.close()
    after = await api.ok("GET", "workflows", workflow_id, "events", params={"after": str(seqs[-1])})
    assert after["after"] == seqs[-1]
    stored = {e["seq"]: e for e in after["events"]}
    # every event the stream carried is stored with its seq and body (a slow client may get
    # a resync snapshot instead of some: the store still has those)
    assert streamed, "the stream carried the run's next events"
    assert all(stored.get(e["seq"]) == e for e in streamed), streamed
    assert all(e["seq"] > seqs[-1] for e in streamed)
    ends = [e for e in after["events"] if e["kind"] == "run" and e["to"] == "completed"]
    assert ends, "the stored events end with the run's completion"

    # The newest few, for a panel that keeps a bounded timeline.
    everything = (await api.ok("GET", "workflows", workflow_id, "events"))["events"]
    newest = await api.ok("GET", "workflows", workflow_id, "events", params={"limit": "3"})
    assert newest["events"] == everything[-3:]
    assert newest["truncated"] is True
    tail = await api.ok(
        "GET", "workflows", workflow_id, "events", params={"after": str(everything[-1]["seq"])}
    )
    assert (tail["events"], tail["truncated"]) == ([], False)


async def test_a_finished_workflow_no_engine_drives_still_has_its_events(
    api: Api, root: Path
) -> None:
    started = await api.start("nb/quick.ipynb", "blueprints/quick.yaml")
    workflow_id = started["workflow_id"]
    done = await api.wait_status(workflow_id, "completed", "failed")
    assert done["run"]["status"] == "completed", done["run"]
    await api.ok("DELETE", "workflows", workflow_id)
    listed = (await api.ok("GET", "workflows", workflow_id, "events"))["events"]
    assert listed, "a released workflow keeps its record"
    assert listed[-1]["kind"] == "run"
    assert listed[-1]["to"] == "completed"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"after": "-1"}, "after"),
        ({"after": "x"}, "after"),
        ({"after": "9" * 30}, "after"),
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"limit": "1e3"}, "limit"),
    ],
)
async def test_a_bad_query_is_a_400_naming_the_field(
    api: Api, root: Path, params: dict[str, str], field: str
) -> None:
    started = await api.start("nb/quick.ipynb", "blueprints/quick.yaml")
    code, body = await api.call("GET", "workflows", started["workflow_id"], "events", params=params)
    assert code == 400, body
    assert body["details"]["field"] == field
    assert body["message"].startswith(f"{field}:")


async def test_unknown_workflow_is_404_and_no_token_is_403(api: Api) -> None:
    code, body = await api.call("GET", "workflows", "nope", "events")
    assert code == 404, body
    assert body["code"] == "not_found"
    code, body = await api.call("GET", "workflows", "nope", "events", headers={"Authorization": ""})
    assert code == 403, body


async def test_the_events_of_a_commit_arrive_together_in_order_and_none_is_lost(
    api: Api, root: Path, jp_ws_fetch: WsFetch
) -> None:
    """A commit makes about a dozen events (a code cell's transitions, contracts, cell); the
    stream sends the events queued together as one JSON array (a frame each cost the server
    a write per event), in seq order, every one of them, with the bodies the store keeps."""
    started = await api.start("review/together.ipynb", "blueprints/confirm.yaml")
    workflow_id = started["workflow_id"]
    waiting = await api.wait_status(workflow_id, "waiting", "failed")
    assert waiting["run"]["status"] == "waiting", waiting["run"]
    ws = await jp_ws_fetch("notebook-bcc", "api", "workflows", workflow_id, "stream")
    hello = json.loads(await asyncio.wait_for(ws.read_message(), timeout=30))
    assert hello["type"] == "snapshot"
    (decision,) = waiting["run"]["pending"]
    code, answered = await api.command(
        workflow_id, decide=decision["id"], decision="approve", expected_version=waiting["version"]
    )
    assert code == 200, answered
    frames: list[Any] = []
    while not any(_is_run_end(e) for e in (frames[-1] if frames else [])):
        text = await asyncio.wait_for(ws.read_message(), timeout=60)
        assert text is not None, "the stream closed early"
        decoded = json.loads(text)
        if isinstance(decoded, dict):
            assert decoded.get("type") != "snapshot", decoded  # no resync: this client keeps up
        frames.append(decoded if isinstance(decoded, list) else [decoded])
    ws.close()
    assert any(len(frame) > 1 for frame in frames), [len(f) for f in frames]
    streamed = [event for frame in frames for event in frame]
    seqs = [e["seq"] for e in streamed]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs
    after = await api.ok(
        "GET", "workflows", workflow_id, "events", params={"after": str(seqs[0] - 1)}
    )
    assert after["events"][: len(streamed)] == streamed
