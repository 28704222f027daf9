"""Seed 003's transition table, all 45 rows grouped as the seed groups them, then the rows
beyond the seed (:data:`BEYOND_SEED`, each with why)."""

from __future__ import annotations

from typing import NamedTuple

from notebook_bcc.models.names import Event as E
from notebook_bcc.models.names import State as S


class Row(NamedTuple):
    """One row of the table: in ``source`` the event ``event`` leads to ``target``."""

    source: S
    event: E
    target: S
    group: str


def _rows(group: str, *rows: tuple[S, E, S]) -> tuple[Row, ...]:
    return tuple(Row(s, e, t, group) for s, e, t in rows)


CORE = _rows(
    "core",
    (S.IDLE, E.START_WORKFLOW, S.STAGE_RUNNING),
    (S.STAGE_RUNNING, E.START_STEP, S.STEP_RUNNING),
    (S.STAGE_RUNNING, E.COMPLETE_STAGE, S.STAGE_COMPLETED),
    (S.STEP_RUNNING, E.START_BEHAVIOR, S.BEHAVIOR_RUNNING),
    (S.STEP_RUNNING, E.COMPLETE_STEP, S.STEP_COMPLETED),
    (S.BEHAVIOR_RUNNING, E.START_ACTION, S.ACTION_RUNNING),
    (S.BEHAVIOR_RUNNING, E.COMPLETE_BEHAVIOR, S.BEHAVIOR_COMPLETED),
    (S.ACTION_RUNNING, E.COMPLETE_ACTION, S.ACTION_COMPLETED),
    (S.ACTION_COMPLETED, E.NEXT_ACTION, S.ACTION_RUNNING),
    (S.ACTION_COMPLETED, E.COMPLETE_BEHAVIOR, S.BEHAVIOR_COMPLETED),
    (S.BEHAVIOR_COMPLETED, E.NEXT_BEHAVIOR, S.BEHAVIOR_RUNNING),
    (S.BEHAVIOR_COMPLETED, E.COMPLETE_STEP, S.STEP_COMPLETED),
    (S.STEP_COMPLETED, E.NEXT_STEP, S.STEP_RUNNING),
    (S.STEP_COMPLETED, E.COMPLETE_STAGE, S.STAGE_COMPLETED),
    (S.STAGE_COMPLETED, E.NEXT_STAGE, S.STAGE_RUNNING),
    (S.STAGE_COMPLETED, E.COMPLETE_WORKFLOW, S.WORKFLOW_COMPLETED),
    (S.WORKFLOW_COMPLETED, E.RESET, S.IDLE),
)

UPDATE = _rows(
    "update",
    (S.ACTION_RUNNING, E.UPDATE_WORKFLOW, S.WORKFLOW_UPDATE_PENDING),
    (S.ACTION_RUNNING, E.UPDATE_STEP, S.STEP_UPDATE_PENDING),
    (S.WORKFLOW_UPDATE_PENDING, E.UPDATE_WORKFLOW_CONFIRMED, S.ACTION_COMPLETED),
    (S.WORKFLOW_UPDATE_PENDING, E.UPDATE_WORKFLOW_REJECTED, S.ACTION_COMPLETED),
    (S.WORKFLOW_UPDATE_PENDING, E.COMPLETE_ACTION, S.WORKFLOW_UPDATE_PENDING),
    (S.STEP_UPDATE_PENDING, E.UPDATE_STEP_CONFIRMED, S.ACTION_COMPLETED),
    (S.STEP_UPDATE_PENDING, E.UPDATE_STEP_REJECTED, S.ERROR),
)

ERROR_CANCEL = _rows(
    "error_cancel",
    (S.STAGE_RUNNING, E.FAIL, S.ERROR),
    (S.STAGE_RUNNING, E.CANCEL, S.CANCELLED),
    (S.STEP_RUNNING, E.FAIL, S.ERROR),
    (S.STEP_RUNNING, E.CANCEL, S.CANCELLED),
    (S.BEHAVIOR_RUNNING, E.FAIL, S.ERROR),
    (S.BEHAVIOR_RUNNING, E.CANCEL, S.CANCELLED),
    (S.ACTION_RUNNING, E.FAIL, S.ERROR),
    (S.ACTION_RUNNING, E.CANCEL, S.CANCELLED),
    (S.ACTION_COMPLETED, E.FAIL, S.ERROR),
    (S.ACTION_COMPLETED, E.CANCEL, S.CANCELLED),
    (S.BEHAVIOR_COMPLETED, E.FAIL, S.ERROR),
    (S.BEHAVIOR_COMPLETED, E.CANCEL, S.CANCELLED),
    (S.STEP_COMPLETED, E.FAIL, S.ERROR),
    (S.STEP_COMPLETED, E.CANCEL, S.CANCELLED),
    (S.STAGE_COMPLETED, E.CANCEL, S.CANCELLED),
    (S.WORKFLOW_UPDATE_PENDING, E.CANCEL, S.CANCELLED),
    (S.STEP_UPDATE_PENDING, E.CANCEL, S.CANCELLED),
)

RECOVERY = _rows(
    "recovery",
    (S.ERROR, E.RESET, S.IDLE),
    (S.ERROR, E.START_WORKFLOW, S.STAGE_RUNNING),
    (S.ERROR, E.START_BEHAVIOR, S.BEHAVIOR_RUNNING),
    (S.CANCELLED, E.RESET, S.IDLE),
)

BEYOND_SEED = _rows(
    "beyond_seed",
    (S.IDLE, E.CANCEL, S.CANCELLED),
)
"""Rows seed 003 lacks. ``idle --CANCEL--> cancelled``: a started workflow sits in ``idle``
while its planner plans the stages, and the seed gave a human no way to cancel it then (a
slow or stuck first planner call could only be waited out); every other live state allows
CANCEL."""

TRANSITIONS: tuple[Row, ...] = CORE + UPDATE + ERROR_CANCEL + RECOVERY + BEYOND_SEED
"""The whole table in seed order, then the rows beyond the seed."""

NEXT_STATE: dict[tuple[S, E], S] = {(r.source, r.event): r.target for r in TRANSITIONS}
"""Lookup ``(state, event) -> next state``; a missing key is an illegal event."""

ALLOWED_EVENTS: dict[S, tuple[E, ...]] = {
    state: tuple(r.event for r in TRANSITIONS if r.source is state) for state in S
}
"""For each state, the events the table allows, in seed order."""

TERMINAL_STATES = frozenset({S.WORKFLOW_COMPLETED, S.ERROR, S.CANCELLED})
"""States a run stops in; each leaves only by a human or recovery event."""


def table_rows() -> list[dict[str, str]]:
    """The table as JSON rows ``{"from", "event", "to"}`` (CLI ``fsm table``, ``GET /fsm``)."""
    return [
        {"from": r.source.value, "event": r.event.value, "to": r.target.value} for r in TRANSITIONS
    ]
