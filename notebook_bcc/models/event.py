"""The one event model (D4): CLI ``--json`` lines, websocket messages and the panel timeline."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from notebook_bcc.models.base import WireModel
from notebook_bcc.models.snapshot import RunStatus

EventKind = Literal["transition", "contract", "run", "cell", "decision"]


class WorkflowEvent(WireModel):
    """Something that happened to a workflow, in order (``seq``) and at a snapshot ``version``."""

    workflow_id: str
    seq: int = Field(ge=0)
    version: int = Field(ge=0)
    at: str
    kind: EventKind
    from_: str | None = Field(default=None, alias="from")
    event: str | None = None
    to: str | None = None
    actor: str = "client"
    run_status: RunStatus
    detail: dict[str, Any] = Field(default_factory=dict)


class EventList(WireModel):
    """``GET /workflows/{id}/events``: stored events, oldest first.

    The newest ``limit`` events with ``seq > after``: a panel opened or reconnected mid-run
    shows what happened before it connected (the stream only carries what happens next).
    """

    workflow_id: str
    after: int = Field(default=0, ge=0, description="Only events with a larger seq.")
    events: list[WorkflowEvent] = Field(default_factory=list)
    truncated: bool = Field(
        default=False, description="Older events after `after` were left out (the limit)."
    )
