"""Planning payloads applied: ``<stages>``/``<workflow>`` (T1), ``<steps>`` (T2), ``<behavior>``.

- stages / workflow at ``idle`` or ``error``: the plan (positioning honoured against the plan
  the snapshot already holds, if any) becomes ``progress.stages``, the first stage current, its
  ``verified_artifacts`` the expected outputs; START_WORKFLOW.
- workflow in a running state: a proposal, parked (D18); no event.
- steps at ``stage_running``: the same one level down (PCS considerations and goals kept);
  START_STEP. A ``stage_id`` naming another stage is a contradiction.
- behavior at ``step_running``: ``behaviors.current`` with iteration, inputs, outputs and
  acceptance; START_BEHAVIOR. At ``behavior_running`` before any action of the iteration ran
  (right after NEXT_BEHAVIOR) it re-plans that iteration without an event.
"""

from __future__ import annotations

from notebook_bcc.models.names import State
from notebook_bcc.models.snapshot import LevelProgress, PlanItem, WorkflowSnapshot
from notebook_bcc.protocol.plans import (
    BehaviorPayload,
    StagesPayload,
    StepsPayload,
    WorkflowPayload,
)
from notebook_bcc.workflow.errors import ContradictoryPayloadError
from notebook_bcc.workflow.items import Positioned, behavior_item, positioned
from notebook_bcc.workflow.legal import RUNNING_STATES, require_state
from notebook_bcc.workflow.moves import (
    begin_behavior,
    start_behavior,
    start_steps,
    start_workflow,
)
from notebook_bcc.workflow.positioning import PlanConflict, all_items, arrange
from notebook_bcc.workflow.result import DEFAULT_OPTIONS, Applied, ApplyOptions, Draft
from notebook_bcc.workflow.updates import Proposal, park


def plan_stages(
    draft: Draft, entries: list[Positioned], *, focus: str | None, goals: str | None
) -> None:
    """Arrange ``entries`` over the stages already planned and fire START_WORKFLOW."""
    if not entries:
        raise draft.fail(ContradictoryPayloadError, "the plan has no stage")
    base = all_items(draft.level("stages"))
    try:
        plan, diff = arrange(base, entries, "stages", replace_all=True)
    except PlanConflict as exc:
        raise draft.fail(ContradictoryPayloadError, str(exc)) from None
    if base and not diff.empty:
        draft.diff = diff
    fresh = [
        item.model_copy(update={"completion_status": None, "visits": 0, "artifacts_produced": []})
        for item in plan
    ]
    start_workflow(draft, fresh, focus=focus, goals=goals)


def plan_steps(
    draft: Draft,
    entries: list[Positioned],
    *,
    stage_id: str | None,
    focus: str | None,
    goals: str | None,
) -> None:
    """Arrange ``entries`` as the current stage's steps and fire START_STEP."""
    stage = draft.level("stages").current
    if stage is None:
        raise draft.fail(ContradictoryPayloadError, "no stage is current; plan stages first")
    if stage_id is not None and stage_id != stage.id:
        raise draft.fail(
            ContradictoryPayloadError,
            f"the steps are for stage {stage_id!r} but the current stage is {stage.id!r}",
        )
    if not entries:
        raise draft.fail(ContradictoryPayloadError, f"stage {stage.id!r} gets no step")
    steps = draft.level("steps")
    try:
        plan, _ = arrange(all_items(steps), entries, "steps", replace_all=True)
    except PlanConflict as exc:
        raise draft.fail(ContradictoryPayloadError, str(exc)) from None
    done = {item.id for item in steps.completed}
    remaining = [item for item in plan if item.id not in done]
    if not remaining:
        raise draft.fail(ContradictoryPayloadError, "every planned step is already completed")
    start_steps(
        draft,
        LevelProgress(
            completed=list(steps.completed), remaining=remaining, focus=focus or steps.focus
        ),
        goals=goals,
    )


def apply_stages(
    snapshot: WorkflowSnapshot,
    payload: StagesPayload | WorkflowPayload,
    *,
    options: ApplyOptions = DEFAULT_OPTIONS,
) -> Applied:
    """Apply a ``<stages>`` or ``<workflow>`` plan (see the module docstring for states)."""
    draft = Draft(snapshot, payload.kind, options)
    require_state(payload.kind, draft.state)
    entries = [positioned(stage) for stage in payload.stages]
    if isinstance(payload, WorkflowPayload) and draft.state in RUNNING_STATES:
        if not entries:
            raise draft.fail(ContradictoryPayloadError, "the workflow update has no stage")
        park(
            draft,
            Proposal(
                level="stages",
                items=entries,
                replace_all=True,
                source="workflow",
                name=payload.id or payload.title,
            ),
        )
        return draft.finish()
    plan_stages(draft, entries, focus=payload.focus, goals=payload.goals)
    return draft.finish()


def apply_workflow(
    snapshot: WorkflowSnapshot, payload: WorkflowPayload, *, options: ApplyOptions = DEFAULT_OPTIONS
) -> Applied:
    """Apply a ``<workflow>``: a plan at idle/error, a parked update in a running state."""
    return apply_stages(snapshot, payload, options=options)


def apply_steps(
    snapshot: WorkflowSnapshot, payload: StepsPayload, *, options: ApplyOptions = DEFAULT_OPTIONS
) -> Applied:
    """Apply a ``<steps>`` plan at ``stage_running``: START_STEP."""
    draft = Draft(snapshot, payload.kind, options)
    require_state(payload.kind, draft.state)
    plan_steps(
        draft,
        [positioned(step) for step in payload.steps],
        stage_id=payload.stage_id,
        focus=payload.focus,
        goals=payload.goals,
    )
    return draft.finish()


def _check_step(draft: Draft, step_id: str | None) -> None:
    step = draft.level("steps").current
    if step is None:
        raise draft.fail(ContradictoryPayloadError, "no step is current")
    if step_id is not None and step_id != step.id:
        raise draft.fail(
            ContradictoryPayloadError,
            f"the behavior is for step {step_id!r} but the current step is {step.id!r}",
        )


def plan_behavior(draft: Draft, behavior: PlanItem, step_id: str | None) -> None:
    """START_BEHAVIOR at step_running, or a re-plan of the fresh iteration at behavior_running."""
    _check_step(draft, step_id)
    if draft.state is State.STEP_RUNNING:
        start_behavior(draft, behavior)
        return
    behaviors = draft.level("behaviors")
    queue = draft.snapshot.action_queue
    iteration = behaviors.iteration or 1
    if queue.actions and queue.iteration == iteration:
        raise draft.fail(
            ContradictoryPayloadError,
            f"iteration {iteration} of behavior {queue.behavior_id!r} already has actions; "
            "a behavior can only be re-planned before its first action",
        )
    begin_behavior(draft, behavior, iteration)
    draft.warn(f"behavior {behavior.id!r} re-plans iteration {iteration} (no FSM event)")


def apply_behavior(
    snapshot: WorkflowSnapshot, payload: BehaviorPayload, *, options: ApplyOptions = DEFAULT_OPTIONS
) -> Applied:
    """Apply a ``<behavior>`` (see the module docstring for states and events)."""
    draft = Draft(snapshot, payload.kind, options)
    require_state(payload.kind, draft.state)
    iteration = (draft.level("behaviors").iteration or 0) + 1
    plan_behavior(draft, behavior_item(payload, iteration), payload.step_id)
    return draft.finish()
