"""The decisions that end a behavior or a step, shared by reflections, signals and planning JSON.

- :func:`conclude_behavior` at ``behavior_completed``: ``continue`` -> NEXT_BEHAVIOR, unless the
  behavior did not reach its goal and the step already used ``max_iterations`` behaviors: then
  D15 escalates (COMPLETE_STEP with the step ``failed``, a warning says so). ``complete`` ->
  COMPLETE_STEP (``success``); ``unverified`` -> COMPLETE_STEP with ``completion_status:
  unverified`` (the D17 fallback).
- :func:`conclude_step` at ``step_completed``: ``next_step`` -> NEXT_STEP, a protocol error when
  no step remains (D17); ``complete_stage`` -> COMPLETE_STAGE.
"""

from __future__ import annotations

from typing import Literal

from notebook_bcc.models.snapshot import PlanItem
from notebook_bcc.workflow.errors import ContradictoryPayloadError
from notebook_bcc.workflow.moves import (
    Status,
    advance_step,
    close_behavior,
    complete_stage,
    complete_step,
    next_behavior,
)
from notebook_bcc.workflow.result import Draft

BehaviorOutcome = Literal["continue", "complete", "unverified"]
StepOutcome = Literal["next_step", "complete_stage"]


def conclude_behavior(
    draft: Draft,
    outcome: BehaviorOutcome,
    *,
    artifacts: list[str] | None = None,
    whathappened: str | None = None,
    continue_status: Status = "failed",
) -> None:
    """End the current behavior and fire NEXT_BEHAVIOR or COMPLETE_STEP (see module docstring).

    ``continue_status`` is the finished behavior's status when the step continues (``success``
    when the reflection says its goal was achieved and more behaviors are still needed).
    """
    produced = list(artifacts or [])
    behaviors = draft.level("behaviors")
    previous: PlanItem | None = behaviors.current
    if outcome == "continue":
        iteration = behaviors.iteration or 1
        cap = draft.options.max_iterations
        # D15 caps retries: a behavior that reached its goal, the step going on with its next
        # behavior (a blueprint step lists several), is no retry (the planner-call budget
        # bounds a planner that keeps going on)
        if iteration >= cap and continue_status != "success":
            draft.warn(
                f"behavior iterations exhausted ({iteration} of {cap}): the step completes as "
                "failed and the stage reflection decides (D15)"
            )
            close_behavior(draft, "failed", artifacts=produced, whathappened=whathappened)
            complete_step(draft, "failed")
            return
        close_behavior(draft, continue_status, artifacts=produced, whathappened=whathappened)
        next_behavior(draft, previous)
        return
    status: Status = "success" if outcome == "complete" else "unverified"
    close_behavior(draft, status, artifacts=produced, whathappened=whathappened)
    complete_step(draft, status)


def route_step(draft: Draft, step_id: str) -> None:
    """Move the remaining step ``step_id`` to the front (the others keep their order)."""
    steps = draft.level("steps")
    chosen = [item for item in steps.remaining if item.id == step_id]
    if not chosen:
        done = {item.id for item in steps.completed}
        if steps.current is not None:
            done.add(steps.current.id)
        why = "has already run" if step_id in done else "is not a step of this stage"
        remaining = ", ".join(item.id for item in steps.remaining)
        raise draft.fail(
            ContradictoryPayloadError,
            f"next_step_id {step_id!r} {why}; the remaining steps are: {remaining}",
        )
    others = [item for item in steps.remaining if item.id != step_id]
    if steps.remaining[0].id != step_id:
        draft.warn(f"next_step_id {step_id!r}: entered before {steps.remaining[0].id!r}")
    draft.update_level("steps", remaining=[chosen[0], *others])


def conclude_step(
    draft: Draft,
    outcome: StepOutcome,
    *,
    focus: str | None = None,
    goal_status: str | None = None,
    next_step_id: str | None = None,
) -> None:
    """Fire NEXT_STEP or COMPLETE_STAGE at ``step_completed`` (see module docstring).

    ``next_step_id`` (a stage reflection's routing) names the remaining step entered next;
    a step that is not remaining (unknown, current or completed) is a protocol error.
    """
    if outcome == "next_step":
        steps = draft.level("steps")
        if not steps.remaining:
            raise draft.fail(
                ContradictoryPayloadError,
                "asks for the next step but no step remains in the stage (D17 protocol error)",
            )
        if next_step_id is not None:
            route_step(draft, next_step_id)
        advance_step(draft, focus=focus)
        return
    complete_stage(draft, goal_status=goal_status)
