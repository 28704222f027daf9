"""The pure workflow FSM transition function (D6).

``transition`` never mutates its input: it returns a new snapshot built with shallow
``model_copy(update=...)`` and the records the store appends. An event the table does not allow
raises :class:`IllegalTransitionError` and, by construction, changes nothing.
"""

from __future__ import annotations

from notebook_bcc.errors import IllegalTransitionError
from notebook_bcc.fsm.table import ALLOWED_EVENTS, NEXT_STATE
from notebook_bcc.models.base import utc_now_iso
from notebook_bcc.models.names import Event, State, parse_event, parse_state
from notebook_bcc.models.records import HistoryEntry
from notebook_bcc.models.snapshot import HISTORY_TAIL, WorkflowSnapshot


def next_state(state: State | str, event: Event | str) -> State:
    """The state ``event`` leads to from ``state``; raises when the table has no such row."""
    source = parse_state(state)
    ev = parse_event(event)
    try:
        return NEXT_STATE[(source, ev)]
    except KeyError:
        allowed = [e.value for e in ALLOWED_EVENTS[source]]
        raise IllegalTransitionError(source.value, ev.value, allowed) from None


def can_fire(state: State | str, event: Event | str) -> bool:
    """Whether the table has a row for ``(state, event)``."""
    return (parse_state(state), parse_event(event)) in NEXT_STATE


def transition(
    snapshot: WorkflowSnapshot,
    event: Event | str,
    *,
    actor: str = "client",
    at: str | None = None,
) -> tuple[WorkflowSnapshot, list[HistoryEntry]]:
    """Fire ``event`` on ``snapshot``: the next snapshot and the history row to append.

    The snapshot keeps the last :data:`HISTORY_TAIL` entries; the full history is the store's.
    """
    ev = parse_event(event)
    source = snapshot.fsm.state
    target = next_state(source, ev)
    timestamp = at or utc_now_iso()
    entry = HistoryEntry(from_state=source, event=ev, to=target, timestamp=timestamp, actor=actor)
    tail = [*snapshot.fsm.history[-(HISTORY_TAIL - 1) :], entry]
    fsm = snapshot.fsm.model_copy(
        update={"state": target, "last_transition": ev, "timestamp": timestamp, "history": tail}
    )
    return snapshot.model_copy(update={"fsm": fsm}), [entry]
