"""The progress moves behind each FSM event, shared by every payload kind and by navigation.

Each move checks nothing about *which* payload asked for it; it updates ``location`` the way
seed 000's state schema describes and fires the event through the FSM (so history is recorded
and an event the table refuses raises). Callers decide the move; these functions perform it.
"""

from __future__ import annotations

from typing import Literal

from notebook_bcc.models.names import Event
from notebook_bcc.models.snapshot import ActionQueue, LevelProgress, Outputs, PlanItem
from notebook_bcc.workflow.context import check_required
from notebook_bcc.workflow.effects import archive_current
from notebook_bcc.workflow.metrics import RETRIES_KEY, behavior_retries
from notebook_bcc.workflow.positioning import start_first
from notebook_bcc.workflow.result import Draft

Status = Literal["success", "failed", "unverified", "skipped"]


def start_workflow(
    draft: Draft, plan: list[PlanItem], *, focus: str | None, goals: str | None
) -> None:
    """START_WORKFLOW: ``plan`` becomes the stages, the first one current; lower levels reset."""
    stages = start_first(LevelProgress(remaining=plan, focus=focus))
    draft.set_level("stages", stages)
    draft.set_level("steps", LevelProgress())
    draft.set_level("behaviors", LevelProgress())
    current = stages.current
    draft.set_location(
        stage_id=None if current is None else current.id,
        step_id=None,
        behavior_id=None,
        behavior_iteration=0,
    )
    draft.set_goals(goals)
    draft.set(action_queue=ActionQueue())
    draft.fire(Event.START_WORKFLOW)
    check_required(draft, current, "stage")


def start_steps(draft: Draft, steps: LevelProgress, *, goals: str | None) -> None:
    """START_STEP: the arranged ``steps`` (first remaining made current); behaviors reset.

    ``goals`` (the Step-Planner's updated stage goals) are kept on the stage as ``goals``.
    """
    stage = draft.level("stages").current
    if goals and stage is not None:
        draft.update_level(
            "stages", current=stage.model_copy(update={"extra": {**stage.extra, "goals": goals}})
        )
    steps = start_first(steps)
    draft.set_level("steps", steps)
    draft.set_level("behaviors", LevelProgress())
    current = steps.current
    draft.set_location(
        step_id=None if current is None else current.id, behavior_id=None, behavior_iteration=0
    )
    draft.fire(Event.START_STEP)
    check_required(draft, current, "step")


def begin_behavior(draft: Draft, behavior: PlanItem, iteration: int) -> None:
    """Make ``behavior`` the current one at ``iteration`` (no event; see the callers)."""
    behavior = behavior.model_copy(update={"iteration": iteration})
    draft.update_level(
        "behaviors",
        current=behavior,
        iteration=iteration,
        focus=behavior.focus or behavior.task,
        current_outputs=Outputs(
            expected=list(behavior.outputs),
            descriptions={name: text for name, text in behavior.outputs.items() if text},
        ),
    )
    draft.set_location(behavior_id=behavior.id, behavior_iteration=iteration)
    draft.set(action_queue=ActionQueue(behavior_id=behavior.id, iteration=iteration))


def start_behavior(draft: Draft, behavior: PlanItem) -> None:
    """START_BEHAVIOR: a new behavior for the current step (D12: current effects archived)."""
    iteration = (draft.level("behaviors").iteration or 0) + 1
    draft.set(effects=archive_current(draft.snapshot.effects, draft.options.effects_history_cap))
    begin_behavior(draft, behavior, iteration)
    draft.fire(Event.START_BEHAVIOR)


def close_behavior(
    draft: Draft, status: Status, *, artifacts: list[str], whathappened: str | None
) -> None:
    """The current behavior moves to ``completed`` with its status and artifacts."""
    behaviors = draft.level("behaviors")
    current = behaviors.current
    if current is None:
        draft.warn("no behavior is current; nothing moved to completed")
        return
    done = current.model_copy(
        update={
            "completion_status": status,
            "artifacts_produced": artifacts,
            "whathappened": whathappened or current.whathappened,
        }
    )
    draft.update_level("behaviors", completed=[*behaviors.completed, done], current=None)


def next_behavior(draft: Draft, previous: PlanItem | None) -> None:
    """NEXT_BEHAVIOR: the same behavior again at iteration + 1 (seed 000 "Behavior Retry").

    D12: the effects of the finished iteration move to history as the next one starts. A
    ``<behavior>`` payload arriving now may re-plan it (see ``apply_behavior``).
    """
    iteration = (draft.level("behaviors").iteration or 1) + 1
    draft.set(effects=archive_current(draft.snapshot.effects, draft.options.effects_history_cap))
    if previous is not None:
        fresh = previous.model_copy(
            update={"completion_status": None, "artifacts_produced": [], "whathappened": None}
        )
        begin_behavior(draft, fresh, iteration)
    draft.fire(Event.NEXT_BEHAVIOR)


def complete_step(draft: Draft, status: Status) -> None:
    """COMPLETE_STEP: the current step records its status and how many behaviors it took."""
    steps = draft.level("steps")
    behaviors = draft.level("behaviors")
    if steps.current is not None:
        runs = behaviors.iteration or len(behaviors.completed) or None
        produced = list(steps.current_outputs.produced)
        step = steps.current.model_copy(
            update={
                "completion_status": status,
                "iteration": runs,
                "artifacts_produced": produced or steps.current.artifacts_produced,
                "extra": {**steps.current.extra, RETRIES_KEY: behavior_retries(behaviors)},
            }
        )
        draft.update_level("steps", current=step)
    draft.set_location(behavior_id=None, behavior_iteration=0)
    draft.fire(Event.COMPLETE_STEP)


def _retire(draft: Draft, level: Literal["steps", "stages"]) -> None:
    """The level's current item moves to ``completed`` (success unless it says otherwise)."""
    progress = draft.level(level)
    if progress.current is None:
        return
    item = progress.current
    if item.completion_status is None:
        item = item.model_copy(update={"completion_status": "success"})
    draft.update_level(level, completed=[*progress.completed, item], current=None)


def advance_step(draft: Draft, *, focus: str | None = None) -> None:
    """NEXT_STEP: the finished step completed, the next remaining step current."""
    _retire(draft, "steps")
    steps = start_first(draft.level("steps"))
    if focus:
        steps = steps.model_copy(update={"focus": focus})
    draft.set_level("steps", steps)
    draft.set_level("behaviors", LevelProgress())
    current = steps.current
    draft.set_location(
        step_id=None if current is None else current.id, behavior_id=None, behavior_iteration=0
    )
    draft.fire(Event.NEXT_STEP)
    check_required(draft, current, "step")


def _stage_status(draft: Draft, goal_status: str | None) -> Status:
    failed_step = any(item.completion_status == "failed" for item in draft.level("steps").completed)
    word = (goal_status or "").strip().lower().replace(" ", "_")
    if failed_step or word in ("not_achieved", "failed", "failure"):
        return "failed"
    return "success"


def complete_stage(draft: Draft, *, goal_status: str | None = None) -> None:
    """COMPLETE_STAGE: steps closed (unrun ones ``skipped``), the stage records its outcome."""
    _retire(draft, "steps")
    steps = draft.level("steps")
    if steps.remaining:
        skipped = [
            item.model_copy(update={"completion_status": "skipped"}) for item in steps.remaining
        ]
        draft.warn(
            "stage completed with steps never run (marked skipped): "
            + ", ".join(item.id for item in steps.remaining)
        )
        draft.update_level("steps", completed=[*steps.completed, *skipped], remaining=[])
        steps = draft.level("steps")
    stages = draft.level("stages")
    if stages.current is not None:
        results = [
            {
                "id": item.id,
                "completion_status": item.completion_status,
                "iteration": item.iteration,
            }
            for item in steps.completed
        ]
        stage = stages.current.model_copy(
            update={
                "completion_status": _stage_status(draft, goal_status),
                "artifacts_produced": list(stages.current_outputs.produced),
                "extra": {**stages.current.extra, "step_results": results},
            }
        )
        draft.update_level("stages", current=stage)
    draft.set_location(step_id=None, behavior_id=None)
    draft.fire(Event.COMPLETE_STAGE)


def advance_stage(draft: Draft) -> None:
    """NEXT_STAGE: the finished stage completed, the next one current; lower levels reset."""
    _retire(draft, "stages")
    stages = start_first(draft.level("stages"))
    draft.set_level("stages", stages)
    draft.set_level("steps", LevelProgress())
    draft.set_level("behaviors", LevelProgress())
    current = stages.current
    draft.set_location(
        stage_id=None if current is None else current.id,
        step_id=None,
        behavior_id=None,
        behavior_iteration=0,
    )
    draft.fire(Event.NEXT_STAGE)
    check_required(draft, current, "stage")


def complete_workflow(draft: Draft) -> None:
    """COMPLETE_WORKFLOW: the last stage completed; stages never run are marked ``skipped``."""
    _retire(draft, "stages")
    stages = draft.level("stages")
    if stages.remaining:
        skipped = [
            item.model_copy(update={"completion_status": "skipped"}) for item in stages.remaining
        ]
        draft.warn(
            "workflow completed with stages never run (marked skipped): "
            + ", ".join(item.id for item in stages.remaining)
        )
        draft.update_level("stages", completed=[*stages.completed, *skipped], remaining=[])
    draft.set_location(stage_id=None, step_id=None, behavior_id=None)
    draft.fire(Event.COMPLETE_WORKFLOW)
