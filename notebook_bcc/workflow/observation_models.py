"""The observation's shape as pydantic models: what :func:`.observation.build_observation`
returns, for the JSON Schema registry (``notebook-bcc schema observation``) and typed readers."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from notebook_bcc.models.base import WireModel
from notebook_bcc.models.snapshot import AcceptanceResult, CurrentLocation


class ExpectedView(WireModel):
    """One expected artifact: its name and description (the artifact specification)."""

    name: str
    description: str = ""


class OutputsView(WireModel):
    """``current_outputs`` in an observation."""

    expected: list[ExpectedView] = Field(default_factory=list)
    produced: list[str] = Field(default_factory=list)
    in_progress: list[str] = Field(default_factory=list)


class LevelView(WireModel):
    """One level of progress in an observation."""

    completed: list[dict[str, Any]] = Field(default_factory=list)
    completed_omitted: int | None = None
    current: dict[str, Any] | None = None
    remaining: list[dict[str, Any]] = Field(default_factory=list)
    remaining_omitted: int | None = None
    focus: str | None = None
    current_outputs: OutputsView = Field(default_factory=OutputsView)
    iteration: int | None = None


class ProgressView(WireModel):
    """``location.progress`` in an observation."""

    stages: LevelView
    steps: LevelView
    behaviors: LevelView


class OutputsTrackingView(WireModel):
    """What ``context_filter.outputs_tracking`` asked to track, and what is missing."""

    expected_variables: list[str] = Field(default_factory=list)
    validation_required: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)


class LocationView(WireModel):
    """``observation.location``."""

    current: CurrentLocation
    progress: ProgressView
    goals: str | None = None
    workflow_goals: str | None = None
    outputs_tracking: OutputsTrackingView | None = None


class EffectsView(WireModel):
    """``effects``: current outputs (plus WARN lines) and the history tail."""

    current: list[str] = Field(default_factory=list)
    history: list[str] = Field(default_factory=list)


class DigestView(WireModel):
    """The notebook digest: title, headings, code first lines, how many cells not shown."""

    title: str | None = None
    cell_count: int = 0
    headings: list[str] = Field(default_factory=list)
    code: list[str] = Field(default_factory=list)
    more: str | None = None


class NotebookView(WireModel):
    """``state.notebook``."""

    notebook_id: str | None = None
    title: str | None = None
    cell_count: int = 0
    execution_count: int = 0
    last_cell_type: str | None = None
    last_output: Any = None
    cells: list[dict[str, Any]] | None = None
    cells_omitted: int | None = None
    digest: DigestView | None = None


class FsmHistoryView(WireModel):
    """One FSM history row in an observation (context form)."""

    from_state: str = Field(alias="from")
    event: str
    to: str
    timestamp: str


class FsmView(WireModel):
    """``state.FSM``."""

    state: str
    last_transition: str | None = None
    timestamp: str | None = None
    history: list[FsmHistoryView] | None = None


class GapView(WireModel):
    """A missing required variable."""

    variable: str
    level: str
    owner_id: str


class StateView(WireModel):
    """The state block (``state`` by default, ``observation.context`` in the context form)."""

    variables: dict[str, Any] = Field(default_factory=dict)
    effects: EffectsView
    notebook: NotebookView
    fsm: FsmView = Field(alias="FSM")
    acceptance: dict[str, dict[str, AcceptanceResult]] = Field(default_factory=dict)
    gaps: list[GapView] = Field(default_factory=list)
    deprecated_variables: list[str] | None = None


class ObservationPart(WireModel):
    """``observation``: the location, and the state block in the context form."""

    location: LocationView
    context: StateView | None = None


class Observation(WireModel):
    """An observation as :func:`build_observation` returns it (either form, D21)."""

    observation: ObservationPart
    state: StateView | None = None


__all__ = [
    "DigestView",
    "EffectsView",
    "ExpectedView",
    "FsmHistoryView",
    "FsmView",
    "GapView",
    "LevelView",
    "LocationView",
    "NotebookView",
    "Observation",
    "ObservationPart",
    "OutputsTrackingView",
    "OutputsView",
    "ProgressView",
    "StateView",
]
