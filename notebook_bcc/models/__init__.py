"""The vocabulary every layer shares: names, the snapshot, contracts, commands and events."""

from notebook_bcc.models.command import (
    HUMAN_EVENTS,
    ActionCommand,
    Command,
    DecideCommand,
    EventCommand,
    parse_command,
)
from notebook_bcc.models.contract import (
    ContractTransition,
    ExecutionContract,
    ExecutionStatus,
    Trigger,
)
from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.models.names import Event, State, parse_event, parse_state
from notebook_bcc.models.records import HistoryEntry, Record, TraceRecord
from notebook_bcc.models.snapshot import (
    HISTORY_TAIL,
    PendingDecision,
    PlanItem,
    RunBlock,
    WorkflowSnapshot,
    new_snapshot,
)

__all__ = [
    "HISTORY_TAIL",
    "HUMAN_EVENTS",
    "ActionCommand",
    "Command",
    "ContractTransition",
    "DecideCommand",
    "Event",
    "EventCommand",
    "ExecutionContract",
    "ExecutionStatus",
    "HistoryEntry",
    "PendingDecision",
    "PlanItem",
    "Record",
    "RunBlock",
    "State",
    "TraceRecord",
    "Trigger",
    "WorkflowEvent",
    "WorkflowSnapshot",
    "new_snapshot",
    "parse_command",
    "parse_event",
    "parse_state",
]
