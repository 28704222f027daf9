"""Action-Generator payloads and the action queue (seed 000 T4, seed 003 START_ACTION).

Executing actions is the engine's business; this module keeps the queue in the snapshot:
- :func:`apply_actions` at ``behavior_running`` queues the actions and fires START_ACTION (an
  empty answer fires COMPLETE_BEHAVIOR: the generator had nothing left to do); at
  ``action_completed`` it appends more actions and fires NEXT_ACTION (or COMPLETE_BEHAVIOR when
  nothing is left to run).
- :func:`complete_action` at ``action_running``: the action at ``index`` is done; its text
  outputs join ``effects.current``; COMPLETE_ACTION.

Control signals or planning actions inside a generating payload are refused: a reflection is
not an action.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from notebook_bcc.models.actions import NotebookAction
from notebook_bcc.models.names import Event, State
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.protocol.json_actions import JsonAction
from notebook_bcc.protocol.payloads import JsonActionsPayload
from notebook_bcc.protocol.signals import SIGNAL_TYPES
from notebook_bcc.protocol.xml_actions import ActionsPayload
from notebook_bcc.workflow.effects import add_current
from notebook_bcc.workflow.errors import ContradictoryPayloadError
from notebook_bcc.workflow.legal import require_state
from notebook_bcc.workflow.result import (
    CLIENT_OPTIONS,
    DEFAULT_OPTIONS,
    Applied,
    ApplyOptions,
    Draft,
)

NOTEBOOK_ACTION_TYPES = frozenset(
    {
        "add",
        "add-text",
        "new_chapter",
        "new_section",
        "new_step",
        "exec",
        "comment_result",
        "update_title",
        "update_last_text",
        "is_thinking",
        "finish_thinking",
        "set_effect_as_thinking",
        "communication",
        "bug_analysis",
        "update_code",
        "exec_new_version",
        "clear_effect_current",
        "clear_effect_history",
        "update_step_focus",
    }
)
"""Action types an Action-Generator may send (notebook and effect actions)."""


def queue_actions(draft: Draft, actions: Sequence[JsonAction]) -> None:
    """Queue ``actions`` for the current behavior and fire the matching event."""
    bad = [action.type for action in actions if action.type not in NOTEBOOK_ACTION_TYPES]
    if bad:
        what = "control signal" if any(kind in SIGNAL_TYPES for kind in bad) else "planning action"
        raise draft.fail(
            ContradictoryPayloadError,
            f"{what} {bad[0]!r} in an actions payload; only notebook actions are queued here",
        )
    queue = draft.snapshot.action_queue
    behavior = draft.level("behaviors").current
    iteration = draft.level("behaviors").iteration or queue.iteration
    queued = cast("list[NotebookAction]", list(actions))  # every type checked just above
    draft.actions.extend(actions)
    if draft.state is State.BEHAVIOR_RUNNING:
        draft.set(
            action_queue=queue.model_copy(
                update={
                    "behavior_id": behavior.id if behavior is not None else queue.behavior_id,
                    "iteration": iteration,
                    "actions": queued,
                    "index": 0,
                }
            )
        )
        if queued:
            draft.fire(Event.START_ACTION)
        else:
            draft.warn("the generator sent no action; the behavior completes")
            draft.fire(Event.COMPLETE_BEHAVIOR)
        return
    queue = queue.model_copy(update={"actions": [*queue.actions, *queued]})
    draft.set(action_queue=queue)
    if queue.index < len(queue.actions):
        draft.fire(Event.NEXT_ACTION)
    else:
        draft.fire(Event.COMPLETE_BEHAVIOR)


def apply_actions(
    snapshot: WorkflowSnapshot,
    payload: ActionsPayload | JsonActionsPayload,
    *,
    options: ApplyOptions = DEFAULT_OPTIONS,
) -> Applied:
    """Queue an ``<actions>`` / JSON actions payload (see the module docstring)."""
    draft = Draft(snapshot, payload.kind, options)
    require_state(payload.kind, draft.state)
    actions = payload.json_actions if isinstance(payload, ActionsPayload) else payload.actions
    queue_actions(draft, actions)
    return draft.finish()


def complete_action(
    snapshot: WorkflowSnapshot,
    *,
    effects: Sequence[str] = (),
    options: ApplyOptions = CLIENT_OPTIONS,
) -> Applied:
    """The engine finished the action at ``action_queue.index``: index + 1, COMPLETE_ACTION.

    ``effects`` are the action's text outputs (D12: they join ``effects.current``).
    """
    draft = Draft(snapshot, "complete_action", options)
    require_state("complete_action", draft.state)
    queue = draft.snapshot.action_queue
    draft.set(
        action_queue=queue.model_copy(update={"index": min(queue.index + 1, len(queue.actions))}),
        effects=add_current(draft.snapshot.effects, effects),
    )
    draft.fire(Event.COMPLETE_ACTION)
    return draft.finish()
