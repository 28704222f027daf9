"""Which payload kind is legal in which FSM state — checked before anything is applied.

The reference client picks transitions from the shape of a response alone; here a payload that
arrives in a state where it means nothing is refused with :class:`IllegalPayloadError` and
changes nothing.

| kind | legal in | event(s) |
|---|---|---|
| ``stages`` | idle, error (restart) | START_WORKFLOW |
| ``workflow`` | idle, error | START_WORKFLOW |
| ``workflow`` | a running state (stage_running ... stage_completed) | none: parked (D18) |
| ``steps`` | stage_running | START_STEP |
| ``behavior`` | step_running | START_BEHAVIOR |
| ``behavior`` | behavior_running before its first action | none: re-plans the iteration |
| ``actions`` / ``json-actions`` | behavior_running | START_ACTION (COMPLETE_BEHAVIOR if empty) |
| ``actions`` / ``json-actions`` | action_completed | NEXT_ACTION or COMPLETE_BEHAVIOR |
| ``reflection`` | behavior_completed | NEXT_BEHAVIOR or COMPLETE_STEP |
| ``stage_reflection`` | step_completed | NEXT_STEP or COMPLETE_STAGE |
| ``signals`` | behavior_completed, step_completed, stage_completed | seed 003 mapping |
| ``planning`` (decision) | stage_running ... stage_completed but action_running | seed 003 |
| ``planning`` (streamed plan) | idle/error, stage_running, step_running | START_* |
"""

from __future__ import annotations

from collections.abc import Iterable

from notebook_bcc.models.names import State
from notebook_bcc.workflow.errors import IllegalPayloadError

S = State

RUNNING_STATES: frozenset[State] = frozenset(
    {
        S.STAGE_RUNNING,
        S.STEP_RUNNING,
        S.BEHAVIOR_RUNNING,
        S.ACTION_RUNNING,
        S.ACTION_COMPLETED,
        S.BEHAVIOR_COMPLETED,
        S.STEP_COMPLETED,
        S.STAGE_COMPLETED,
    }
)
"""States of a run in progress: where a plan update may be proposed (and parked, D18)."""

PLANNING_DECISION_STATES: frozenset[State] = frozenset(
    {
        S.STAGE_RUNNING,
        S.STEP_RUNNING,
        S.BEHAVIOR_RUNNING,
        S.ACTION_COMPLETED,
        S.BEHAVIOR_COMPLETED,
        S.STEP_COMPLETED,
        S.STAGE_COMPLETED,
    }
)
"""States where a planning JSON decision (targetAchieved / continue_behaviors) means something."""

PLANNING_STREAM_STATES: frozenset[State] = frozenset(
    {S.IDLE, S.ERROR, S.STAGE_RUNNING, S.STEP_RUNNING}
)
"""States where streamed planning actions (plan_stage, plan_step, delegate_task) apply."""

LEGAL_STATES: dict[str, frozenset[State]] = {
    "stages": frozenset({S.IDLE, S.ERROR}),
    "workflow": frozenset({S.IDLE, S.ERROR}) | RUNNING_STATES,
    "steps": frozenset({S.STAGE_RUNNING}),
    "behavior": frozenset({S.STEP_RUNNING, S.BEHAVIOR_RUNNING}),
    "actions": frozenset({S.BEHAVIOR_RUNNING, S.ACTION_COMPLETED}),
    "json-actions": frozenset({S.BEHAVIOR_RUNNING, S.ACTION_COMPLETED}),
    "reflection": frozenset({S.BEHAVIOR_COMPLETED}),
    "stage_reflection": frozenset({S.STEP_COMPLETED}),
    "signals": frozenset({S.BEHAVIOR_COMPLETED, S.STEP_COMPLETED, S.STAGE_COMPLETED}),
    "planning": PLANNING_DECISION_STATES | PLANNING_STREAM_STATES,
    "navigate": frozenset({S.ACTION_COMPLETED, S.STEP_COMPLETED, S.STAGE_COMPLETED}),
    "complete_action": frozenset({S.ACTION_RUNNING}),
}
"""Payload kind (and client move) -> the FSM states it may arrive in."""

_ORDER = {state: index for index, state in enumerate(State)}


def ordered(states: Iterable[State]) -> list[str]:
    """State names in the FSM's declaration order."""
    return [state.value for state in sorted(states, key=_ORDER.__getitem__)]


def require_state(kind: str, state: State, allowed: frozenset[State] | None = None) -> None:
    """Raise :class:`IllegalPayloadError` unless ``state`` is legal for ``kind``."""
    legal = LEGAL_STATES[kind] if allowed is None else allowed
    if state not in legal:
        raise IllegalPayloadError(kind, state, ordered(legal))


def legal_states(kind: str) -> list[str]:
    """The states a payload ``kind`` is legal in (FSM order); empty for an unknown kind."""
    return ordered(LEGAL_STATES.get(kind, frozenset()))
