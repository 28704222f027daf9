"""Rows a pure transition hands to the store: FSM history entries and execution-trace entries."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from notebook_bcc.models.base import WireModel
from notebook_bcc.models.names import Event, State


class HistoryEntry(WireModel):
    """One workflow FSM transition ``{from, event, to, timestamp, actor}`` (seed 003 history)."""

    from_state: State = Field(alias="from")
    event: Event
    to: State
    timestamp: str
    actor: str = "client"


class TraceRecord(WireModel):
    """One execution-trace row (seed 001/002 ``ExecutionStep``): who did what, when."""

    actor: str
    action: str = Field(
        description="`create_contract:<id>` or `transition:<id>:<from>→<to>`, or a free label"
    )
    timestamp: float
    result: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


Record = HistoryEntry | TraceRecord
"""What a pure transition returns beside the new state, for the store to append."""
