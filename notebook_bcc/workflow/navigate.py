"""Client-side navigation (seed 003 "Client 触发"): the events decided by the remaining lists.

:func:`navigate` is what the engine calls when no planner needs to be asked:

| state | condition | event |
|---|---|---|
| action_completed | actions left in the queue | NEXT_ACTION |
| action_completed | queue exhausted | COMPLETE_BEHAVIOR |
| step_completed | steps remain | NEXT_STEP |
| step_completed | no step remains | COMPLETE_STAGE |
| stage_completed | stages remain | NEXT_STAGE |
| stage_completed | no stage remains | COMPLETE_WORKFLOW |

Anywhere else it raises :class:`IllegalPayloadError` (a planner must decide there).
"""

from __future__ import annotations

from notebook_bcc.models.names import Event, State
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.workflow.legal import require_state
from notebook_bcc.workflow.moves import (
    advance_stage,
    advance_step,
    complete_stage,
    complete_workflow,
)
from notebook_bcc.workflow.result import CLIENT_OPTIONS, Applied, ApplyOptions, Draft


def navigate(snapshot: WorkflowSnapshot, *, options: ApplyOptions = CLIENT_OPTIONS) -> Applied:
    """Fire the client event the snapshot's queue / remaining lists call for (see the table)."""
    draft = Draft(snapshot, "navigate", options)
    require_state("navigate", draft.state)
    if draft.state is State.ACTION_COMPLETED:
        queue = draft.snapshot.action_queue
        draft.fire(
            Event.NEXT_ACTION if queue.index < len(queue.actions) else Event.COMPLETE_BEHAVIOR
        )
    elif draft.state is State.STEP_COMPLETED:
        if draft.level("steps").remaining:
            advance_step(draft)
        else:
            complete_stage(draft)
    elif draft.level("stages").remaining:
        advance_stage(draft)
    else:
        complete_workflow(draft)
    return draft.finish()
