"""The workflow vocabulary of seed 003: 14 states and 22 events, with tolerant parsing.

On output every name has one canonical spelling (lowercase states, uppercase events). On input
any case is accepted, as are a ``STATE_`` prefix and ``_COMPLETE`` for ``_COMPLETED``, the
spellings seen in the wild (PROTOCOL-NOTES).
"""

from __future__ import annotations

from enum import Enum

from notebook_bcc.errors import UnknownNameError


class State(str, Enum):
    """The 14 workflow FSM states (seed 003)."""

    IDLE = "idle"
    STAGE_RUNNING = "stage_running"
    STEP_RUNNING = "step_running"
    BEHAVIOR_RUNNING = "behavior_running"
    ACTION_RUNNING = "action_running"
    ACTION_COMPLETED = "action_completed"
    BEHAVIOR_COMPLETED = "behavior_completed"
    STEP_COMPLETED = "step_completed"
    STAGE_COMPLETED = "stage_completed"
    WORKFLOW_COMPLETED = "workflow_completed"
    ERROR = "error"
    CANCELLED = "cancelled"
    WORKFLOW_UPDATE_PENDING = "workflow_update_pending"
    STEP_UPDATE_PENDING = "step_update_pending"

    def __str__(self) -> str:
        return self.value

    @property
    def wire_upper(self) -> str:
        """The UPPERCASE spelling DSLC servers expect (D21)."""
        return self.value.upper()


class Event(str, Enum):
    """The 22 workflow FSM events (seed 003)."""

    START_WORKFLOW = "START_WORKFLOW"
    START_STEP = "START_STEP"
    START_BEHAVIOR = "START_BEHAVIOR"
    START_ACTION = "START_ACTION"
    COMPLETE_ACTION = "COMPLETE_ACTION"
    NEXT_ACTION = "NEXT_ACTION"
    COMPLETE_BEHAVIOR = "COMPLETE_BEHAVIOR"
    NEXT_BEHAVIOR = "NEXT_BEHAVIOR"
    COMPLETE_STEP = "COMPLETE_STEP"
    NEXT_STEP = "NEXT_STEP"
    COMPLETE_STAGE = "COMPLETE_STAGE"
    NEXT_STAGE = "NEXT_STAGE"
    COMPLETE_WORKFLOW = "COMPLETE_WORKFLOW"
    UPDATE_WORKFLOW = "UPDATE_WORKFLOW"
    UPDATE_STEP = "UPDATE_STEP"
    UPDATE_WORKFLOW_CONFIRMED = "UPDATE_WORKFLOW_CONFIRMED"
    UPDATE_WORKFLOW_REJECTED = "UPDATE_WORKFLOW_REJECTED"
    UPDATE_STEP_CONFIRMED = "UPDATE_STEP_CONFIRMED"
    UPDATE_STEP_REJECTED = "UPDATE_STEP_REJECTED"
    FAIL = "FAIL"
    CANCEL = "CANCEL"
    RESET = "RESET"

    def __str__(self) -> str:
        return self.value


_STATES_BY_VALUE = {s.value: s for s in State}
_EVENTS_BY_VALUE = {e.value: e for e in Event}


def _squash(text: str) -> str:
    return "_".join(text.strip().replace("-", "_").replace(" ", "_").split("_")).strip("_")


def parse_state(value: object) -> State:
    """Parse a state name in any of the spellings seen on the wire into :class:`State`."""
    if isinstance(value, State):
        return value
    if not isinstance(value, str):
        raise UnknownNameError("state", value, sorted(_STATES_BY_VALUE))
    name = _squash(value).lower()
    if name.startswith("state_"):
        name = name[len("state_") :]
    if name.endswith("_complete"):
        name += "d"
    try:
        return _STATES_BY_VALUE[name]
    except KeyError:
        raise UnknownNameError("state", value, sorted(_STATES_BY_VALUE)) from None


def parse_event(value: object) -> Event:
    """Parse an event name in any case (``start_step``, ``Start-Step``) into :class:`Event`."""
    if isinstance(value, Event):
        return value
    if not isinstance(value, str):
        raise UnknownNameError("event", value, sorted(_EVENTS_BY_VALUE))
    name = _squash(value).upper()
    if name.startswith("EVENT_"):
        name = name[len("EVENT_") :]
    try:
        return _EVENTS_BY_VALUE[name]
    except KeyError:
        raise UnknownNameError("event", value, sorted(_EVENTS_BY_VALUE)) from None
