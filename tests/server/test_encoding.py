"""Snapshot and event JSON made once and shared: the text is the wire model's, never stale."""

from __future__ import annotations

import json
from pathlib import Path

from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.models.snapshot import new_snapshot
from notebook_bcc.server.app import NotebookBccApp
from notebook_bcc.server.encoding import EVENT_TEXTS, SnapshotTexts, event_text
from tests.server.conftest import Api


def test_a_snapshot_is_serialised_once_per_object_and_again_for_a_new_one() -> None:
    texts = SnapshotTexts()
    first = new_snapshot("wf-enc", "run-1", notebook_path="a.ipynb")
    text = texts.text(first)
    assert json.loads(text)["workflow_id"] == "wf-enc"
    assert texts.text(first) is text, "the same object: the cached text"
    second = first.model_copy(update={"version": first.version + 1})
    newer = texts.text(second)
    assert json.loads(newer)["version"] == first.version + 1
    assert texts.text(second) is newer
    texts.forget("wf-enc")
    assert texts.text(second) is not newer, "forgotten: serialised again"


def test_an_event_text_uses_the_wire_aliases_and_is_shared() -> None:
    event = WorkflowEvent.model_validate(
        {
            "workflow_id": "wf-ev",
            "seq": 7,
            "version": 3,
            "at": "2026-11-25T00:00:00Z",
            "kind": "transition",
            "from": "IDLE",
            "event": "START_WORKFLOW",
            "to": "STAGE_RUNNING",
            "run_status": "running",
        }
    )
    text = event_text(event)
    assert json.loads(text)["from"] == "IDLE"
    assert event_text(event.model_copy()) is text, "a second client gets the same text"
    for seq in range(100, 100 + EVENT_TEXTS + 1):
        event_text(event.model_copy(update={"seq": seq}))
    assert event_text(event) is not text, "the oldest text was dropped (bounded)"


async def test_a_live_snapshot_get_answers_the_current_version(
    api: Api, root: Path, bcc_app: NotebookBccApp
) -> None:
    started = await api.start("enc/q.ipynb", "blueprints/quick.yaml")
    workflow_id = started["workflow_id"]
    final = await api.wait_status(workflow_id, "completed", "failed")
    assert final["run"]["status"] == "completed"
    live = bcc_app.service.live(workflow_id)
    assert live is not None
    assert final["version"] == live.engine.snapshot.version
    assert final == json.loads(live.engine.snapshot.model_dump_json(by_alias=True))
    again = await api.snapshot(workflow_id)
    assert again == final
