"""Reflecting control signals and the ``behavior_feedback`` block (PROTOCOL-NOTES).

The reflecting stream interleaves these signals with ordinary actions such as ``add-text``:
``mark_step_complete`` and ``mark_stage_complete`` close a step or stage,
``complete_reflection`` ends a behavior's reflection while the step continues.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, JsonValue, RootModel

from notebook_bcc.models.actions import PlannerAction


class _Signal(PlannerAction):
    """Optional payload keys seen on control signals."""

    variables_produced: JsonValue = None
    outputs_tracking: JsonValue = None
    whathappened: JsonValue = None
    recommendations_for_next: JsonValue = None


class MarkStepCompleteSignal(_Signal):
    """``mark_step_complete``: the current step reached its goal."""

    type: Literal["mark_step_complete"] = "mark_step_complete"


class MarkStageCompleteSignal(_Signal):
    """``mark_stage_complete``: the current stage reached its goal."""

    type: Literal["mark_stage_complete"] = "mark_stage_complete"


class CompleteReflectionSignal(_Signal):
    """``complete_reflection``: the behavior is done, the step continues."""

    type: Literal["complete_reflection"] = "complete_reflection"


SIGNAL_TYPES: frozenset[str] = frozenset(
    {"mark_step_complete", "mark_stage_complete", "complete_reflection"}
)
"""Action types that are reflecting control signals."""


class BehaviorFeedback(BaseModel):
    """``behavior_feedback``: what a behavior's actions did, sent with the reflection request."""

    model_config = ConfigDict(extra="allow")

    behavior_id: str | None = None
    actions_executed: int = Field(default=0, ge=0)
    actions_succeeded: int = Field(default=0, ge=0)
    sections_added: int = Field(default=0, ge=0)
    last_action_result: JsonValue = None


ControlSignal = Annotated[
    Union[  # noqa: UP007 - a discriminated union needs the Union spelling on Python 3.10
        MarkStepCompleteSignal,
        MarkStageCompleteSignal,
        CompleteReflectionSignal,
    ],
    Field(discriminator="type"),
]
"""Any reflecting control signal."""


class ControlSignalModel(RootModel[ControlSignal]):
    """One reflecting control signal (for schema export)."""
