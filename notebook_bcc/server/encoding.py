"""JSON text of snapshots and events, made once and shared by every reader.

A live workflow's snapshot is read by every ``GET /workflows/{id}`` and its events are sent to
every connected client; serialising the same object again for each reader is work the event
loop does not need to do. :class:`SnapshotTexts` keeps the text of each live workflow's latest
snapshot (keyed by the object itself: the engine replaces its snapshot on every change, it
never edits one in place); :func:`event_text` keeps the text of recent events (keyed by
workflow, ``seq`` and version), so a second, third, ... client of a workflow gets the text the
first one got.
"""

from __future__ import annotations

from collections import OrderedDict

from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.models.snapshot import WorkflowSnapshot

EVENT_TEXTS = 2048
"""Recent event texts kept (all workflows together)."""


class SnapshotTexts:
    """The JSON text of each live workflow's latest snapshot, made once per snapshot object."""

    def __init__(self) -> None:
        self._latest: dict[str, tuple[WorkflowSnapshot, str]] = {}

    def text(self, snapshot: WorkflowSnapshot) -> str:
        """``snapshot`` as JSON (aliases on), from the cache when it is the one cached."""
        hit = self._latest.get(snapshot.workflow_id)
        if hit is not None and hit[0] is snapshot:
            return hit[1]
        text = snapshot.model_dump_json(by_alias=True)
        self._latest[snapshot.workflow_id] = (snapshot, text)
        return text

    def forget(self, workflow_id: str) -> None:
        """Drop a workflow's entry (it is no longer live here)."""
        self._latest.pop(workflow_id, None)


_events: OrderedDict[tuple[str, int, int], str] = OrderedDict()


def event_text(event: WorkflowEvent) -> str:
    """``event`` as JSON (aliases on); recent ones are serialised once for every client."""
    key = (event.workflow_id, event.seq, event.version)
    text = _events.get(key)
    if text is None:
        text = event.model_dump_json(by_alias=True)
        _events[key] = text
        if len(_events) > EVENT_TEXTS:
            _events.popitem(last=False)
    return text


__all__ = ["EVENT_TEXTS", "SnapshotTexts", "event_text"]
