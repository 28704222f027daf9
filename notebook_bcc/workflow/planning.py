"""Planning JSON and reflecting control signals applied (seed 003's event mapping, D17, D18).

Planning decision (``targetAchieved`` = ta, ``transition.continue_behaviors`` = cb). The root
``targetAchieved`` wins over ``transition.target_achieved`` (a disagreement is a warning); when
only cb is given, a missing ta counts as false (the reference client's reading). ta and cb both
true is a contradiction. ``(false, false)`` is the fallback (D17).

| state | decision | events |
|---|---|---|
| stage_running | ta | COMPLETE_STAGE |
| step_running | ta | COMPLETE_STEP |
| step_running | not ta (fallback included) | START_BEHAVIOR |
| behavior_running, action_completed | not the fallback | COMPLETE_BEHAVIOR, then as below |
| behavior_completed | cb (or ta false) | NEXT_BEHAVIOR (D15 may escalate) |
| behavior_completed | ta | COMPLETE_STEP |
| behavior_completed | fallback | COMPLETE_STEP, step ``unverified`` |
| step_completed | ta | COMPLETE_STAGE |
| step_completed | not ta | NEXT_STEP (an error when none remains) |
| stage_completed | ta | COMPLETE_WORKFLOW (stages left are skipped) |
| stage_completed | not ta | NEXT_STAGE (an error when none remains) |

Elsewhere, or the fallback outside step_running / behavior_completed, is refused (D17, the run
fails per D1). A response with no decision fires nothing. In every legal state,
``context_update.variables`` / ``progress_update`` / ``effects_update`` are merged,
``workflow_update`` / ``stage_steps_update`` are parked (D18) and ``context_filter`` is kept for
the following observations.

Control signals (at the reflecting states): at behavior_completed ``mark_step_complete`` ->
COMPLETE_STEP, ``mark_stage_complete`` -> COMPLETE_STEP then COMPLETE_STAGE,
``complete_reflection`` alone -> NEXT_BEHAVIOR; at step_completed ``mark_stage_complete`` ->
COMPLETE_STAGE, otherwise NEXT_STEP; at stage_completed -> NEXT_STAGE or COMPLETE_WORKFLOW by
the remaining stages. Ordinary actions in the stream are returned for the engine to run.

Streamed planning actions (the reference's successor UI, a compatibility bonus): ``plan_stage``
at idle/error -> START_WORKFLOW, ``plan_step`` at stage_running -> START_STEP,
``delegate_task`` at step_running -> START_BEHAVIOR.
"""

from __future__ import annotations

import json
from typing import Any

from notebook_bcc.models.actions import PlannerAction
from notebook_bcc.models.names import Event, State
from notebook_bcc.models.snapshot import PlanItem, WorkflowSnapshot
from notebook_bcc.protocol.payloads import PlanningPayload, SignalsPayload
from notebook_bcc.protocol.planning import ContextUpdate, PlanningResponse
from notebook_bcc.protocol.planning_actions import (
    CompleteWorkflowPlanningAction,
    DelegateTaskAction,
    PlanStageAction,
    PlanStepAction,
)
from notebook_bcc.protocol.signals import SIGNAL_TYPES
from notebook_bcc.workflow.context import (
    declared_from_json,
    merge_declared,
    merge_values,
    propagate_produced,
    track,
    unique,
)
from notebook_bcc.workflow.decide import conclude_behavior, conclude_step
from notebook_bcc.workflow.effects import cap_history
from notebook_bcc.workflow.errors import ApplyError, ContradictoryPayloadError
from notebook_bcc.workflow.items import (
    Positioned,
    criteria,
    json_text,
    template_stage_item,
    template_step_item,
)
from notebook_bcc.workflow.legal import (
    PLANNING_DECISION_STATES,
    PLANNING_STREAM_STATES,
    require_state,
)
from notebook_bcc.workflow.moves import (
    advance_stage,
    complete_stage,
    complete_step,
    complete_workflow,
)
from notebook_bcc.workflow.plans import plan_behavior, plan_stages, plan_steps
from notebook_bcc.workflow.result import DEFAULT_OPTIONS, Applied, ApplyOptions, Draft
from notebook_bcc.workflow.updates import Proposal, park

S = State


def _effect_text(value: Any) -> str:
    return (
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    )


def merge_context_update(draft: Draft, update: ContextUpdate | None) -> None:
    """Merge variables, progress focus and effects; park workflow / step updates (D18)."""
    if update is None:
        return
    merge_values(draft, update.variables)
    progress = update.progress_update
    if progress is not None and progress.focus:
        draft.update_level(progress.level or "behaviors", focus=progress.focus)
    effects_update = update.effects_update
    if effects_update is not None:
        given = effects_update.model_fields_set
        effects = draft.snapshot.effects
        changes: dict[str, list[str]] = {}
        if "current" in given:
            changes["current"] = [_effect_text(value) for value in effects_update.current]
        if "history" in given:
            changes["history"] = [_effect_text(value) for value in effects_update.history]
        if changes:
            draft.set(
                effects=cap_history(
                    effects.model_copy(update=changes), draft.options.effects_history_cap
                )
            )
    workflow = update.workflow_update
    if workflow is not None:
        template = workflow.workflow_template
        stages = [] if template is None else template.stages
        if not stages:
            raise draft.fail(ContradictoryPayloadError, "workflow_update has no stage")
        park(
            draft,
            Proposal(
                level="stages",
                items=[Positioned(item=template_stage_item(stage)) for stage in stages],
                replace_all=True,
                source="planning",
                next_stage_id=workflow.next_stage_id,
                name=None if template is None else template.name,
            ),
        )
    steps_update = update.stage_steps_update
    if steps_update is not None:
        if not steps_update.steps:
            raise draft.fail(ContradictoryPayloadError, "stage_steps_update has no step")
        park(
            draft,
            Proposal(
                level="steps",
                items=[Positioned(item=template_step_item(step)) for step in steps_update.steps],
                replace_all=True,
                source="planning",
                stage_id=steps_update.stage_id,
            ),
        )


def _flags(draft: Draft, response: PlanningResponse) -> tuple[bool | None, bool | None]:
    transition = response.transition
    root = response.target_achieved
    nested = None if transition is None else transition.target_achieved
    cb = None if transition is None else transition.continue_behaviors
    if root is not None and nested is not None and root != nested:
        draft.warn(
            f"targetAchieved={str(root).lower()} wins over "
            f"transition.target_achieved={str(nested).lower()}"
        )
    ta = root if root is not None else nested
    if ta is None and cb is not None:
        ta = False
    if ta and cb:
        raise draft.fail(
            ContradictoryPayloadError,
            "targetAchieved and continue_behaviors are both true: the target cannot be reached "
            "and still need more behaviors",
        )
    return ta, cb


def _fallback_refused(draft: Draft) -> ApplyError:
    return draft.fail(
        ContradictoryPayloadError,
        "the fallback decision (targetAchieved false, continue_behaviors false) only applies "
        "at step_running and behavior_completed (D17)",
    )


def _after_behavior(draft: Draft, ta: bool, cb: bool | None) -> None:
    if cb:
        conclude_behavior(draft, "continue")
    elif ta:
        conclude_behavior(draft, "complete")
    elif cb is False:
        conclude_behavior(draft, "unverified")
    else:
        conclude_behavior(draft, "continue")


def decide(draft: Draft, response: PlanningResponse) -> None:
    """Fire the events a planning decision means in the current state (module table)."""
    ta, cb = _flags(draft, response)
    if ta is None:
        draft.warn("the planning response carries no decision; no event fired")
        return
    fallback = ta is False and cb is False
    state = draft.state
    if state is S.STEP_RUNNING:
        if ta:
            complete_step(draft, "success")
        else:
            focus = draft.level("behaviors").focus
            plan_behavior(draft, _generic_behavior(draft, focus), None)
        return
    if state is S.BEHAVIOR_COMPLETED:
        _after_behavior(draft, ta, cb)
        return
    if fallback:
        raise _fallback_refused(draft)
    if state in (S.BEHAVIOR_RUNNING, S.ACTION_COMPLETED):
        queue = draft.snapshot.action_queue
        left = len(queue.actions) - queue.index
        if state is S.ACTION_COMPLETED and left > 0:
            draft.warn(f"the behavior completes with {left} queued action(s) not run")
        draft.fire(Event.COMPLETE_BEHAVIOR)
        _after_behavior(draft, ta, cb)
    elif state is S.STAGE_RUNNING:
        if not ta:
            raise draft.fail(
                ContradictoryPayloadError,
                "at stage_running only targetAchieved true (COMPLETE_STAGE) is a decision; "
                "steps come from a <steps> plan",
            )
        complete_stage(draft)
    elif state is S.STEP_COMPLETED:
        conclude_step(draft, "complete_stage" if ta else "next_step")
    elif ta:
        complete_workflow(draft)
    elif draft.level("stages").remaining:
        advance_stage(draft)
    else:
        raise draft.fail(
            ContradictoryPayloadError,
            "asks for the next stage but no stage remains (targetAchieved false)",
        )


def _generic_behavior(draft: Draft, focus: str | None) -> PlanItem:
    step = draft.level("steps").current
    step_id = step.id if step is not None else "step"
    number = len(draft.level("behaviors").completed) + 1
    return PlanItem(
        id=f"{step_id}_b{number}",
        task=focus or (None if step is None else step.goal),
        focus=focus,
        outputs=dict.fromkeys([] if step is None else step.verified_artifacts, ""),
        extra={"planned_by": "planning_response"},
    )


def _stream(draft: Draft, actions: list[Any]) -> None:
    planning_types = (PlanStageAction, PlanStepAction, DelegateTaskAction)
    others = [action for action in actions if not isinstance(action, planning_types)]
    state = draft.state
    if state in (S.IDLE, S.ERROR):
        stages = [a for a in actions if isinstance(a, PlanStageAction)]
        if not stages:
            raise draft.fail(ContradictoryPayloadError, "no plan_stage action to start from")
        totals = [a.total_stages for a in actions if isinstance(a, CompleteWorkflowPlanningAction)]
        if totals and totals[-1] is not None and totals[-1] != len(stages):
            draft.warn(f"complete_workflow_planning says {totals[-1]} stages, {len(stages)} sent")
        entries = [
            Positioned(
                item=PlanItem(
                    id=a.stage_id, title=a.title, goal=a.task, acceptance=criteria(a.acceptance)
                )
            )
            for a in stages
        ]
        plan_stages(draft, entries, focus=None, goals=None)
    elif state is S.STAGE_RUNNING:
        steps = [a for a in actions if isinstance(a, PlanStepAction)]
        if not steps:
            raise draft.fail(ContradictoryPayloadError, "no plan_step action to start from")
        entries = [
            Positioned(
                item=PlanItem(
                    id=a.step_id or f"step_{index}",
                    title=a.title,
                    goal=a.task,
                    acceptance=criteria(a.acceptance),
                )
            )
            for index, a in enumerate(steps, start=1)
        ]
        plan_steps(draft, entries, stage_id=None, focus=None, goals=None)
    else:
        tasks = [a for a in actions if isinstance(a, DelegateTaskAction)]
        if not tasks:
            raise draft.fail(ContradictoryPayloadError, "no delegate_task action to start from")
        task = tasks[0]
        behavior = _generic_behavior(draft, task.task_description).model_copy(
            update={
                "agent": task.agent,
                "task": task.task_description,
                "acceptance": criteria(task.acceptance),
            }
        )
        plan_behavior(draft, behavior, task.step_id)
    draft.actions.extend(others)


def apply_planning(
    snapshot: WorkflowSnapshot, payload: PlanningPayload, *, options: ApplyOptions = DEFAULT_OPTIONS
) -> Applied:
    """Apply a Planning API answer: a decision object or streamed planning actions."""
    draft = Draft(snapshot, payload.kind, options)
    response = payload.response
    if response is None:
        require_state(payload.kind, draft.state, PLANNING_STREAM_STATES)
        _stream(draft, list(payload.actions))
        return draft.finish()
    require_state(payload.kind, draft.state, PLANNING_DECISION_STATES)
    merge_context_update(draft, response.context_update)
    context_filter = response.context_filter
    stored = None if context_filter is None else context_filter.model_dump(mode="json")
    if stored != draft.snapshot.context_filter:
        draft.set(context_filter=stored)
    decide(draft, response)
    return draft.finish()


def _signal_extras(draft: Draft, signals: list[PlannerAction]) -> None:
    for signal in signals:
        produced = getattr(signal, "variables_produced", None)
        merge_declared(draft, declared_from_json(produced))
        tracking = getattr(signal, "outputs_tracking", None)
        if isinstance(tracking, dict):
            level = "steps" if draft.state is not S.STAGE_COMPLETED else "stages"
            progress = draft.level(level)

            def listed(key: str, tracking: dict[str, Any] = tracking) -> list[str]:
                value = tracking.get(key)
                return [str(v) for v in value] if isinstance(value, list) else []

            in_progress = listed("in_progress") if "in_progress" in tracking else None
            draft.update_level(
                level,
                current_outputs=track(
                    progress.current_outputs,
                    produced=listed("produced"),
                    in_progress=in_progress,
                    expected=listed("expected"),
                    remaining=listed("remaining"),
                ),
            )
            propagate_produced(draft, listed("produced"))


def apply_signals(
    snapshot: WorkflowSnapshot, payload: SignalsPayload, *, options: ApplyOptions = DEFAULT_OPTIONS
) -> Applied:
    """Apply a reflecting stream of control signals (see the module docstring)."""
    draft = Draft(snapshot, payload.kind, options)
    require_state(payload.kind, draft.state)
    signals: list[PlannerAction] = [a for a in payload.actions if a.type in SIGNAL_TYPES]
    draft.actions.extend(a for a in payload.actions if a.type not in SIGNAL_TYPES)
    kinds = {signal.type for signal in signals}
    _signal_extras(draft, signals)
    if not kinds:
        draft.warn("the stream carries no control signal; no event fired")
        return draft.finish()
    state = draft.state
    whathappened = unique(
        text for text in (json_text(getattr(s, "whathappened", None)) for s in signals) if text
    )
    if state is S.BEHAVIOR_COMPLETED:
        behavior = draft.level("behaviors").current
        expected = set(behavior.outputs) if behavior is not None else set()
        produced = draft.level("steps").current_outputs.produced
        artifacts = [name for name in produced if name in expected]
        story = "\n".join(whathappened) or None
        if kinds & {"mark_step_complete", "mark_stage_complete"}:
            conclude_behavior(draft, "complete", artifacts=artifacts, whathappened=story)
            if "mark_stage_complete" in kinds:
                complete_stage(draft)
        else:
            conclude_behavior(
                draft,
                "continue",
                artifacts=artifacts,
                whathappened=story,
                continue_status="success",
            )
    elif state is S.STEP_COMPLETED:
        conclude_step(draft, "complete_stage" if "mark_stage_complete" in kinds else "next_step")
    elif draft.level("stages").remaining:
        advance_stage(draft)
    else:
        complete_workflow(draft)
    return draft.finish()
