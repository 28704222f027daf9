"""Pure snapshot moves the engine makes beyond the protocol layer's apply functions.

Stage routing by a stage machine (re-entering a stage, ending the workflow early), failing a
step whose requirements are missing, firing a plain FSM event, the run block (D1), pending
decisions (D2) and the hop cap (D16). Every function returns an :class:`Applied` or a new
snapshot; none mutates its input.
"""

from __future__ import annotations

from typing import Any

from notebook_bcc.fsm.rules import HopAllowed, HopCapExceeded, check_hop
from notebook_bcc.models.base import utc_now_iso
from notebook_bcc.models.names import Event
from notebook_bcc.models.snapshot import (
    PendingDecision,
    PendingKind,
    PlanItem,
    RunStatus,
    WorkflowSnapshot,
)
from notebook_bcc.workflow.moves import advance_stage, complete_step, complete_workflow
from notebook_bcc.workflow.result import Applied, ApplyOptions, Draft


def _fresh(item: PlanItem, visits: int) -> PlanItem:
    return item.model_copy(
        update={
            "visits": visits,
            "completion_status": None,
            "artifacts_produced": [],
            "whathappened": None,
        }
    )


def enter_stage(
    snapshot: WorkflowSnapshot, item: PlanItem, *, visits: int, options: ApplyOptions
) -> Applied:
    """NEXT_STAGE into ``item`` (a re-entered stage gets ``visits``; D14), other plans kept."""
    draft = Draft(snapshot, "route", options)
    stages = draft.level("stages")
    others = [stage for stage in stages.remaining if stage.id != item.id]
    # start_first adds one visit as it makes the item current.
    draft.update_level("stages", remaining=[_fresh(item, visits - 1), *others])
    advance_stage(draft)
    return draft.finish()


def end_workflow(snapshot: WorkflowSnapshot, *, options: ApplyOptions) -> Applied:
    """COMPLETE_WORKFLOW now (stages never run are marked skipped)."""
    draft = Draft(snapshot, "route", options)
    complete_workflow(draft)
    return draft.finish()


def fail_step(snapshot: WorkflowSnapshot, reason: str, *, options: ApplyOptions) -> Applied:
    """COMPLETE_STEP with ``completion_status: failed`` from step_running (D15 gaps)."""
    draft = Draft(snapshot, "requirements", options)
    draft.warn(reason)
    complete_step(draft, "failed")
    return draft.finish()


def fire_event(snapshot: WorkflowSnapshot, event: Event, *, options: ApplyOptions) -> Applied:
    """A plain FSM event (FAIL, CANCEL, RESET, updates, ...); refused events raise."""
    draft = Draft(snapshot, "event", options)
    draft.fire(event)
    return draft.finish()


def with_run(
    snapshot: WorkflowSnapshot,
    status: RunStatus,
    reason: str | None = None,
    *,
    at: str | None = None,
) -> WorkflowSnapshot:
    """The snapshot with its run block set (D1); ``since`` moves only when the status does."""
    run = snapshot.run
    since = run.since if run.status == status and run.since else (at or utc_now_iso())
    return snapshot.model_copy(
        update={"run": run.model_copy(update={"status": status, "reason": reason, "since": since})}
    )


def add_pending(
    snapshot: WorkflowSnapshot,
    decision_id: str,
    kind: PendingKind,
    message: str,
    details: dict[str, Any] | None = None,
    *,
    at: str | None = None,
) -> tuple[WorkflowSnapshot, PendingDecision]:
    """The snapshot with one more pending decision (D2)."""
    decision = PendingDecision(
        id=decision_id,
        kind=kind,
        message=message,
        details=dict(details or {}),
        created_at=at or utc_now_iso(),
    )
    run = snapshot.run.model_copy(update={"pending": [*snapshot.run.pending, decision]})
    return snapshot.model_copy(update={"run": run}), decision


def drop_pending(snapshot: WorkflowSnapshot, decision_id: str) -> WorkflowSnapshot:
    """The snapshot without the pending decision ``decision_id``."""
    pending = [p for p in snapshot.run.pending if p.id != decision_id]
    return snapshot.model_copy(update={"run": snapshot.run.model_copy(update={"pending": pending})})


def count_stage_entry(
    snapshot: WorkflowSnapshot, stage_id: str, cap: int
) -> tuple[WorkflowSnapshot, HopAllowed | HopCapExceeded]:
    """Account one stage entry (D16): hops + 1 and the stage's visits + 1, or the cap hit."""
    machine = snapshot.stage_machine
    verdict = check_hop(machine.hops, cap)
    if isinstance(verdict, HopCapExceeded):
        return snapshot, verdict
    visits = {**machine.visits, stage_id: machine.visits.get(stage_id, 0) + 1}
    updated = machine.model_copy(
        update={"hops": verdict.hop, "visits": visits, "current_state": stage_id, "max_hops": cap}
    )
    return snapshot.model_copy(update={"stage_machine": updated}), verdict
