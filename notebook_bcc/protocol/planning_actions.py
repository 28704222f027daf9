"""The newer streamed planning and reflecting actions of the reference's successor UI.

Accepted for compatibility (PROTOCOL-NOTES "Newer streamed planning actions"): only the keys
the notes name are typed, all optional except the ids they hinge on; other keys are kept.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, JsonValue

from notebook_bcc.models.actions import PlannerAction


class PlanStageAction(PlannerAction):
    """``plan_stage``: one stage of the workflow plan (idle -> stage_running)."""

    type: Literal["plan_stage"] = "plan_stage"
    stage_id: str
    title: str | None = None
    task: str | None = None
    acceptance: JsonValue = None


class CompleteWorkflowPlanningAction(PlannerAction):
    """``complete_workflow_planning``: the stage plan is complete."""

    type: Literal["complete_workflow_planning"] = "complete_workflow_planning"
    total_stages: int | None = Field(default=None, ge=0)


class PlanStepAction(PlannerAction):
    """``plan_step``: one step of the current stage (-> step_running)."""

    type: Literal["plan_step"] = "plan_step"
    step_id: str | None = None
    title: str | None = None
    task: str | None = None
    acceptance: JsonValue = None


class UpdateStageContextAction(PlannerAction):
    """``update_stage_context``: context for the stage being planned."""

    type: Literal["update_stage_context"] = "update_stage_context"
    stage_id: str | None = None


class CompleteStagePlanningAction(PlannerAction):
    """``complete_stage_planning``: the step plan of the stage is complete."""

    type: Literal["complete_stage_planning"] = "complete_stage_planning"
    stage_id: str | None = None


class DelegateTaskAction(PlannerAction):
    """``delegate_task``: hand a step's task to an agent (-> behavior_running)."""

    type: Literal["delegate_task"] = "delegate_task"
    step_id: str | None = None
    agent: str | None = None
    task_description: str | None = None
    acceptance: JsonValue = None


class CompleteStepPlanningAction(PlannerAction):
    """``complete_step_planning``: the behaviors of the step are planned."""

    type: Literal["complete_step_planning"] = "complete_step_planning"
    step_id: str | None = None


class CompleteBehaviorAction(PlannerAction):
    """``complete_behavior``: the behavior's actions are all sent."""

    type: Literal["complete_behavior"] = "complete_behavior"


class BugAnalysisAction(PlannerAction):
    """``bug_analysis``: the reflector's analysis of a failure."""

    type: Literal["bug_analysis"] = "bug_analysis"
    content: str | None = None


class UpdateCodeAction(PlannerAction):
    """``update_code``: a corrected version of a code cell."""

    type: Literal["update_code"] = "update_code"
    codecell_id: str | None = None
    content: str | None = None


class ExecNewVersionAction(PlannerAction):
    """``exec_new_version``: run the corrected code cell."""

    type: Literal["exec_new_version"] = "exec_new_version"
    codecell_id: str | None = None


class UpdateStepFocusAction(PlannerAction):
    """``update_step_focus``: new focus text for the current step."""

    type: Literal["update_step_focus"] = "update_step_focus"
    focus: str | None = None


class ClearEffectCurrentAction(PlannerAction):
    """``clear_effect_current``: empty ``effects.current``."""

    type: Literal["clear_effect_current"] = "clear_effect_current"


class ClearEffectHistoryAction(PlannerAction):
    """``clear_effect_history``: empty ``effects.history``."""

    type: Literal["clear_effect_history"] = "clear_effect_history"
