"""Dynamic plan updates (DESIGN §9 D18): parked as pending decisions, applied on approval.

A workflow update (``context_update.workflow_update``, or a ``<workflow>`` arriving mid-run) or
a step update (``context_update.stage_steps_update``) is never applied when it arrives: it
becomes a :class:`PendingDecision` whose ``details`` hold the proposal and a preview diff. The
engine fires UPDATE_WORKFLOW / UPDATE_STEP from the next ``action_running`` and waits;
:func:`approve_update` applies the proposal (stages/steps added, removed, replaced, the diff
returned and kept in a trace row for the panel), :func:`reject_update` drops it. Neither fires an
FSM event: CONFIRMED / REJECTED are the engine's.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from notebook_bcc.models.records import TraceRecord
from notebook_bcc.models.snapshot import PendingDecision, PlanItem, WorkflowSnapshot
from notebook_bcc.workflow.errors import ContradictoryPayloadError, PendingNotFoundError
from notebook_bcc.workflow.items import Positioned
from notebook_bcc.workflow.positioning import PlanConflict, all_items, arrange, split
from notebook_bcc.workflow.result import (
    HUMAN_OPTIONS,
    Applied,
    ApplyOptions,
    Draft,
    PlanDiff,
    epoch_seconds,
)

UpdateKind = Literal["workflow_update", "step_update"]


class Proposal:
    """A proposed plan change, as kept in a pending decision's ``details``."""

    def __init__(
        self,
        *,
        level: Literal["stages", "steps"],
        items: list[Positioned],
        replace_all: bool,
        source: str,
        stage_id: str | None = None,
        next_stage_id: str | None = None,
        name: str | None = None,
    ) -> None:
        self.level = level
        self.items = items
        self.replace_all = replace_all
        self.source = source
        self.stage_id = stage_id
        self.next_stage_id = next_stage_id
        self.name = name

    @property
    def kind(self) -> UpdateKind:
        """``workflow_update`` for stages, ``step_update`` for steps."""
        return "workflow_update" if self.level == "stages" else "step_update"

    def to_json(self) -> dict[str, Any]:
        """The proposal as JSON data."""
        return {
            "level": self.level,
            "source": self.source,
            "replace_all": self.replace_all,
            "stage_id": self.stage_id,
            "next_stage_id": self.next_stage_id,
            "name": self.name,
            "items": [entry.to_json() for entry in self.items],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Proposal:
        """The inverse of :meth:`to_json`."""
        return cls(
            level=data["level"],
            items=[Positioned.from_json(entry) for entry in data["items"]],
            replace_all=bool(data["replace_all"]),
            source=str(data.get("source", "planning")),
            stage_id=data.get("stage_id"),
            next_stage_id=data.get("next_stage_id"),
            name=data.get("name"),
        )


def _pending_id(kind: str, proposal: dict[str, Any]) -> str:
    digest = hashlib.sha256(
        json.dumps(proposal, sort_keys=True, separators=(",", ":")).encode("utf-8")
    ).hexdigest()
    return f"{kind}-{digest[:12]}"


def _summary(diff: PlanDiff) -> str:
    parts: list[str] = []
    if diff.added:
        parts.append("add " + ", ".join(diff.added))
    if diff.removed:
        parts.append("remove " + ", ".join(diff.removed))
    if diff.replaced:
        parts.append("replace " + ", ".join(f"{r.old} by {r.new}" for r in diff.replaced))
    if diff.moved:
        parts.append("move " + ", ".join(diff.moved))
    if diff.changed:
        parts.append("change " + ", ".join(diff.changed))
    return "; ".join(parts) or "no change"


def _steps_target(snapshot: WorkflowSnapshot, stage_id: str | None) -> tuple[str, PlanItem | None]:
    """Where a step update goes: ``("current", None)`` or ``("remaining", stage)``."""
    stages = snapshot.location.progress.stages
    current = stages.current
    if stage_id is None or (current is not None and current.id == stage_id):
        return "current", None
    for stage in stages.remaining:
        if stage.id == stage_id:
            return "remaining", stage
    if any(stage.id == stage_id for stage in stages.completed):
        raise PlanConflict(f"stage {stage_id!r} is already completed; its steps cannot change")
    raise PlanConflict(f"stage {stage_id!r} is not in the plan")


def _planned_steps(stage: PlanItem) -> list[PlanItem]:
    raw = stage.extra.get("steps")
    if not isinstance(raw, list):
        return []
    return [PlanItem.model_validate(entry) for entry in raw if isinstance(entry, dict)]


def _arranged(snapshot: WorkflowSnapshot, proposal: Proposal) -> tuple[list[PlanItem], PlanDiff]:
    if proposal.level == "stages":
        base = all_items(snapshot.location.progress.stages)
    else:
        where, stage = _steps_target(snapshot, proposal.stage_id)
        base = (
            all_items(snapshot.location.progress.steps)
            if where == "current" or stage is None
            else _planned_steps(stage)
        )
    plan, diff = arrange(base, proposal.items, proposal.level, replace_all=proposal.replace_all)
    if proposal.next_stage_id is not None and all(
        item.id != proposal.next_stage_id for item in plan
    ):
        raise PlanConflict(f"nextStageId {proposal.next_stage_id!r} is not a stage of the update")
    return plan, diff


def park(draft: Draft, proposal: Proposal) -> PendingDecision:
    """Park ``proposal`` as a pending decision (D18); a conflict is refused now, not later.

    The id is derived from the proposal, so the same proposal sent twice is parked once.
    """
    try:
        _, diff = _arranged(draft.snapshot, proposal)
    except PlanConflict as exc:
        raise draft.fail(ContradictoryPayloadError, str(exc)) from None
    body = proposal.to_json()
    pending_id = _pending_id(proposal.kind, body)
    noun = "workflow" if proposal.level == "stages" else "step"
    pending = PendingDecision(
        id=pending_id,
        kind=proposal.kind,
        message=f"planner proposes a {noun} update: {_summary(diff)}",
        details={"proposal": body, "diff": diff.model_dump(mode="json")},
        created_at=draft.at,
    )
    run = draft.snapshot.run
    if any(entry.id == pending_id for entry in run.pending):
        draft.warn(f"update {pending_id} is already pending")
        return pending
    draft.set(run=run.model_copy(update={"pending": [*run.pending, pending]}))
    draft.pending.append(pending)
    draft.warn(f"{noun} update parked as pending decision {pending_id} (D18)")
    return pending


def _take_pending(draft: Draft, pending_id: str) -> PendingDecision:
    run = draft.snapshot.run
    for entry in run.pending:
        if entry.id == pending_id:
            if entry.kind not in ("workflow_update", "step_update"):
                raise draft.fail(
                    PendingNotFoundError,
                    f"pending decision {pending_id} is a {entry.kind}, not a plan update",
                )
            rest = [other for other in run.pending if other.id != pending_id]
            draft.set(run=run.model_copy(update={"pending": rest}))
            return entry
    known = ", ".join(entry.id for entry in run.pending) or "none"
    raise draft.fail(PendingNotFoundError, f"no pending decision {pending_id!r} (pending: {known})")


def _apply_stages(draft: Draft, proposal: Proposal, plan: list[PlanItem]) -> None:
    result = split(draft.level("stages"), plan, "stages")
    for note in result.notes:
        draft.warn(note)
    stages = result.progress
    target = proposal.next_stage_id
    if target is not None:
        first = [item for item in stages.remaining if item.id == target]
        if first:
            rest = [item for item in stages.remaining if item.id != target]
            stages = stages.model_copy(update={"remaining": [*first, *rest]})
        else:
            draft.warn(f"nextStageId {target!r} is not a remaining stage; order kept")
    draft.set_level("stages", stages)


def _apply_steps(draft: Draft, proposal: Proposal, plan: list[PlanItem]) -> None:
    where, stage = _steps_target(draft.snapshot, proposal.stage_id)
    if where == "current" or stage is None:
        result = split(draft.level("steps"), plan, "steps")
        for note in result.notes:
            draft.warn(note)
        draft.set_level("steps", result.progress)
        return
    stages = draft.level("stages")
    steps_json = [item.model_dump(mode="json", exclude_defaults=True) for item in plan]
    remaining = [
        item.model_copy(update={"extra": {**item.extra, "steps": steps_json}})
        if item.id == stage.id
        else item
        for item in stages.remaining
    ]
    draft.update_level("stages", remaining=remaining)


def approve_update(
    snapshot: WorkflowSnapshot, pending_id: str, *, options: ApplyOptions = HUMAN_OPTIONS
) -> Applied:
    """Apply the parked update ``pending_id``: the plan changes, the pending decision goes.

    Completed items stay completed and the running item finishes first (see ``split``). The
    diff is recomputed against the plan as it is now, returned in :attr:`Applied.diff` and kept
    in a trace row. No FSM event is fired (UPDATE_*_CONFIRMED is the engine's).
    """
    draft = Draft(snapshot, "approve_update", options)
    pending = _take_pending(draft, pending_id)
    proposal = Proposal.from_json(pending.details["proposal"])
    try:
        plan, diff = _arranged(draft.snapshot, proposal)
    except PlanConflict as exc:
        raise draft.fail(ContradictoryPayloadError, f"update {pending_id}: {exc}") from None
    if proposal.level == "stages":
        _apply_stages(draft, proposal, plan)
    else:
        _apply_steps(draft, proposal, plan)
    draft.diff = diff
    draft.records.append(
        TraceRecord(
            actor=options.actor,
            action=f"approve_update:{pending_id}",
            timestamp=epoch_seconds(draft.at),
            result="applied",
            metadata={"kind": pending.kind, "diff": diff.model_dump(mode="json")},
        )
    )
    return draft.finish()


def reject_update(
    snapshot: WorkflowSnapshot, pending_id: str, *, options: ApplyOptions = HUMAN_OPTIONS
) -> Applied:
    """Drop the parked update ``pending_id``; the plan is unchanged. No FSM event is fired."""
    draft = Draft(snapshot, "reject_update", options)
    pending = _take_pending(draft, pending_id)
    draft.records.append(
        TraceRecord(
            actor=options.actor,
            action=f"reject_update:{pending_id}",
            timestamp=epoch_seconds(draft.at),
            result="rejected",
            metadata={"kind": pending.kind},
        )
    )
    return draft.finish()


def pending_updates(snapshot: WorkflowSnapshot) -> list[PendingDecision]:
    """The plan updates waiting for a decision, oldest first."""
    return [
        entry for entry in snapshot.run.pending if entry.kind in ("workflow_update", "step_update")
    ]
