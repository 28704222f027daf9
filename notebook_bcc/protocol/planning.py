"""The Planning API's JSON decision (seed 003 + PROTOCOL-NOTES "Planning JSON response").

``targetAchieved``, ``transition`` and ``context_update.workflow_update`` /
``stage_steps_update`` are seed 003's; the rest of ``context_update`` and the whole
``context_filter`` follow the reference client's protocol documents. CamelCase and snake_case
keys are both accepted; models dump in snake_case. Unknown keys are kept.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

SummarizeName = Literal["shape_only", "describe_only", "head_only", "last_N_only"]

DEFAULT_LAST_N = 5
"""N of ``last_N_only`` when the planner gives none (the protocol documents give no number)."""

_LAST_N_RE = re.compile(r"last_(\d+)_only\Z", re.IGNORECASE)


class PlanningModel(BaseModel):
    """Base of the planning models: extra keys kept, aliases and field names both accepted."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Transition(PlanningModel):
    """``transition``: whether more behaviors are needed, and the target flag again."""

    continue_behaviors: bool | None = None
    target_achieved: bool | None = None


class ProgressUpdate(PlanningModel):
    """``context_update.progress_update``: new focus text for one level."""

    level: Literal["stages", "steps", "behaviors"] | None = None
    focus: str | None = None

    @field_validator("level", mode="before")
    @classmethod
    def _plural(cls, value: Any) -> Any:
        if isinstance(value, str):
            word = value.strip().lower().replace("behaviour", "behavior")
            return word if word.endswith("s") else word + "s"
        return value


class TemplateStep(PlanningModel):
    """A step in a workflow template or a stage's step list."""

    id: str
    title: str | None = None
    description: str | None = None


class TemplateStage(PlanningModel):
    """A stage in a proposed workflow template."""

    id: str
    title: str | None = None
    description: str | None = None
    steps: list[TemplateStep] = Field(default_factory=list)


class WorkflowTemplate(PlanningModel):
    """``workflowTemplate``: the whole proposed workflow."""

    name: str | None = None
    stages: list[TemplateStage] = Field(default_factory=list)


class WorkflowUpdate(PlanningModel):
    """``context_update.workflow_update``: a proposed new workflow (fires UPDATE_WORKFLOW)."""

    workflow_template: WorkflowTemplate | None = Field(default=None, alias="workflowTemplate")
    next_stage_id: str | None = Field(default=None, alias="nextStageId")


class StageStepsUpdate(PlanningModel):
    """``context_update.stage_steps_update``: a proposed new step list (fires UPDATE_STEP)."""

    stage_id: str | None = Field(default=None, alias="stageId")
    steps: list[TemplateStep] = Field(default_factory=list)


class EffectsUpdate(PlanningModel):
    """``context_update.effects_update``: replacement effect lists."""

    current: list[JsonValue] = Field(default_factory=list)
    history: list[JsonValue] = Field(default_factory=list)


class ContextUpdate(PlanningModel):
    """``context_update``: what the planner wants changed in the context."""

    variables: dict[str, JsonValue] = Field(default_factory=dict)
    progress_update: ProgressUpdate | None = None
    workflow_update: WorkflowUpdate | None = None
    stage_steps_update: StageStepsUpdate | None = None
    effects_update: EffectsUpdate | None = None


class SummarizeStrategy(BaseModel):
    """How to summarize a variable: a strategy name, and N for ``last_N_only``.

    Accepts ``"shape_only"``, ``"last_N_only"`` (N = 5), ``"last_10_only"`` (N = 10) and
    ``{"strategy": "last_N_only", "n": 10}``.
    """

    model_config = ConfigDict(extra="allow")

    strategy: SummarizeName
    n: int | None = Field(default=None, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = {"strategy": value}
        if isinstance(value, dict) and isinstance(value.get("strategy"), str):
            name = value["strategy"].strip()
            match = _LAST_N_RE.match(name)
            if match and name.lower() != "last_n_only":
                value = {**value, "strategy": "last_N_only", "n": int(match.group(1))}
            elif name.lower() == "last_n_only":
                value = {**value, "strategy": "last_N_only"}
        return value

    @model_validator(mode="after")
    def _default_n(self) -> SummarizeStrategy:
        if self.strategy == "last_N_only" and self.n is None:
            self.n = DEFAULT_LAST_N
        if self.strategy != "last_N_only" and self.n is not None:
            raise ValueError(f"n only applies to last_N_only, not {self.strategy}")
        return self


class EffectPatterns(PlanningModel):
    """Regular expressions selecting effects to include or exclude."""

    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)

    @field_validator("include", "exclude")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
        return patterns


class EffectsConfig(PlanningModel):
    """``context_filter.effects_config``: which effects the next observation carries."""

    include_current: bool | None = None
    current_limit: int | None = Field(default=None, ge=0)
    include_history: bool | None = None
    history_limit: int | None = Field(default=None, ge=0)
    patterns: EffectPatterns | None = None


class OutputsTrackingFilter(PlanningModel):
    """``context_filter.outputs_tracking``: variables expected and to validate."""

    expected_variables: list[str] = Field(default_factory=list)
    validation_required: list[str] = Field(default_factory=list)


class ContextFilter(PlanningModel):
    """``context_filter``: how to shape the next observation."""

    variables_to_include: list[str] = Field(default_factory=list)
    variables_to_summarize: dict[str, SummarizeStrategy] = Field(default_factory=dict)
    effects_config: EffectsConfig | None = None
    focus_to_include: list[str] = Field(default_factory=list)
    outputs_tracking: OutputsTrackingFilter | None = None


class PlanningResponse(PlanningModel):
    """A Planning API decision: is the target achieved, what next, what context to change."""

    target_achieved: bool | None = Field(default=None, alias="targetAchieved")
    transition: Transition | None = None
    context_update: ContextUpdate | None = None
    context_filter: ContextFilter | None = None


PLANNING_KEYS: frozenset[str] = frozenset(
    {"targetAchieved", "target_achieved", "transition", "context_update", "context_filter"}
)
"""Top-level keys that mark a JSON object as a planning response."""
