"""The WorkflowSnapshot: the single source of truth for one workflow (DESIGN §9 D5).

The store persists it, the server serves it, the panel renders it and planners receive a
projection of it. It stays small as a run grows: the full FSM history, completed contracts and
the trace are store rows; the snapshot keeps a bounded tail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from notebook_bcc.models.actions import NotebookAction
from notebook_bcc.models.base import WireModel
from notebook_bcc.models.contract import ExecutionContract
from notebook_bcc.models.names import Event, State
from notebook_bcc.models.records import HistoryEntry

SCHEMA_VERSION = 1
HISTORY_TAIL = 50
"""How many FSM history entries the snapshot keeps (seed 002 suggests 50)."""

JsonScalar = str | int | float | bool | None


def name_map(value: Any) -> Any:
    """``name -> description`` from any of the shapes stored or sent over the years.

    Accepts a mapping (kept), a list of names (descriptions empty: snapshots stored before
    descriptions were kept), a list of ``{name, description}`` objects (the reference's
    ``current_outputs.expected``), or ``None``. Anything else is left for pydantic to refuse.
    """
    if value is None:
        return {}
    if isinstance(value, list):
        result: dict[str, Any] = {}
        for entry in value:
            if isinstance(entry, str):
                result.setdefault(entry, "")
            elif isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
                result[entry["name"]] = entry.get("description") or ""
            else:
                return value
        return result
    return value


NameMap = Annotated[dict[str, str], BeforeValidator(name_map)]
"""Artifact / variable names with their descriptions (the artifact specification)."""


class FsmBlock(WireModel):
    """The protocol position (seed 003 ``state.FSM``) with a bounded history tail.

    ``last_transition_name`` keeps the reference's spelling of a last transition that is not
    one of our events (``TRANSITION_TO_STEP_COMPLETED``): informational, shown to planners.
    """

    state: State = State.IDLE
    last_transition: Event | None = None
    last_transition_name: str | None = None
    timestamp: str | None = None
    history: list[HistoryEntry] = Field(
        default_factory=list, description=f"The last {HISTORY_TAIL} transitions."
    )


RunStatus = Literal[
    "running", "paused", "waiting", "interrupted", "failed", "completed", "cancelled"
]
PendingKind = Literal[
    "workflow_update",
    "step_update",
    "stage_confirmation",
    "irreversible_confirmation",
    "in_doubt",
    "kernel_rebuild",
    "budget",
    "lost_state",
]


class PendingDecision(WireModel):
    """A human decision the run waits for (D2)."""

    id: str
    kind: PendingKind
    message: str
    details: dict[str, Any] = Field(default_factory=dict)
    created_at: str


class RunBlock(WireModel):
    """The operational life of the run beside the FSM (D1)."""

    status: RunStatus = "running"
    reason: str | None = None
    since: str | None = None
    pending: list[PendingDecision] = Field(default_factory=list)


class CurrentLocation(WireModel):
    """``observation.location.current`` of seed 000."""

    stage_id: str | None = None
    step_id: str | None = None
    behavior_id: str | None = None
    behavior_iteration: int = 0


class Outputs(WireModel):
    """Artifacts tracking at one level: expected, produced, in progress.

    ``expected`` stays a list of names (the panel reads it); ``descriptions`` holds the
    description of each expected artifact, so planners see ``{name, description}`` items.
    """

    expected: list[str] = Field(default_factory=list)
    produced: list[str] = Field(default_factory=list)
    in_progress: list[str] = Field(default_factory=list)
    descriptions: dict[str, str] = Field(default_factory=dict)


class PcsConsiderations(WireModel):
    """Predictability / computability / stability notes of a step (seed 000, PCS)."""

    predictability: str | None = None
    computability: str | None = None
    stability: str | None = None


class PlanItem(WireModel):
    """A stage, step or behavior as planned, with what happened to it.

    One model for the three levels keeps progress handling uniform; fields that do not apply
    at a level stay empty. ``extra`` keeps planner elements we do not act on (never dropped).
    """

    id: str
    title: str | None = None
    goal: str | None = None
    verified_artifacts: NameMap = Field(
        default_factory=dict, description="artifact name -> description (a list of names loads)"
    )
    required_variables: NameMap = Field(
        default_factory=dict, description="variable name -> description (a list of names loads)"
    )
    acceptance: list[str] = Field(default_factory=list)
    focus: str | None = None
    optional: bool = False
    pcs_considerations: PcsConsiderations | None = None
    agent: str | None = None
    task: str | None = None
    inputs: dict[str, str] = Field(default_factory=dict)
    outputs: dict[str, str] = Field(default_factory=dict)
    iteration: int | None = None
    visits: int = 0
    completion_status: Literal["success", "failed", "unverified", "skipped"] | None = None
    artifacts_produced: list[str] = Field(default_factory=list)
    whathappened: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class LevelProgress(WireModel):
    """Progress at one level (stages, steps or behaviors) as seed 000's schema lists it."""

    completed: list[PlanItem] = Field(default_factory=list)
    current: PlanItem | None = None
    remaining: list[PlanItem] = Field(default_factory=list)
    focus: str | None = None
    current_outputs: Outputs = Field(default_factory=Outputs)
    iteration: int | None = Field(default=None, description="Behaviors only: the iteration.")


class Progress(WireModel):
    """``observation.location.progress``."""

    stages: LevelProgress = Field(default_factory=LevelProgress)
    steps: LevelProgress = Field(default_factory=LevelProgress)
    behaviors: LevelProgress = Field(default_factory=LevelProgress)


class Location(WireModel):
    """``observation.location``: where the workflow is, how far it got, what it aims for."""

    current: CurrentLocation = Field(default_factory=CurrentLocation)
    progress: Progress = Field(default_factory=Progress)
    goals: str | None = Field(
        default=None, description="The goal of the innermost active level (reference client)."
    )
    workflow_goals: str | None = Field(
        default=None, description="The goals a stage plan gave for the whole workflow."
    )


class VariableInfo(WireModel):
    """What the workflow knows of one variable (D13: JSON scalars carry their value)."""

    type: str
    value: Any = Field(default=None, description="JSON value for scalars and planner-set values.")
    shape: list[int] | None = None
    dtypes: dict[str, str] | None = None
    length: int | None = None
    repr: str | None = None
    source: Literal["kernel", "planner", "user"] = "kernel"


class Effects(WireModel):
    """Outputs of the running behavior and a capped history (D12)."""

    current: list[str] = Field(default_factory=list)
    history: list[str] = Field(default_factory=list)


class NotebookSummary(WireModel):
    """``state.notebook`` of seed 000."""

    notebook_id: str | None = None
    title: str | None = None
    cell_count: int = 0
    execution_count: int = 0
    last_cell_type: Literal["code", "markdown", "raw"] | None = None
    last_output: Any = Field(
        default=None, description="text, or the output object a reference state recorded"
    )
    cells: list[dict[str, Any]] = Field(
        default_factory=list,
        description="cells an imported reference state carried (the observation trims them)",
    )


class ActionQueue(WireModel):
    """The current behavior's actions and how far execution reached."""

    behavior_id: str | None = None
    iteration: int = 0
    actions: list[NotebookAction] = Field(
        default_factory=list,
        description="The behavior's notebook actions, as typed models (queued as parsed).",
    )
    index: int = 0
    executed: int = Field(default=0, description="Code executions in this behavior run.")
    succeeded: int = Field(default=0, description="Executions that ended ok.")
    sections_added: int = Field(default=0, description="Heading cells added.")
    last_result: str | None = Field(default=None, description="Status of the last execution.")


class AcceptanceResult(WireModel):
    """One acceptance criterion's outcome, as evaluated in the kernel."""

    status: Literal["passed", "failed", "error"]
    message: str | None = None


class Gap(WireModel):
    """A required variable that was missing when a level was about to start (D15)."""

    variable: str
    level: Literal["stage", "step", "behavior"]
    owner_id: str
    detected_at: str


class StageMachineState(WireModel):
    """Where a blueprint's stage machine (seed 004 rules) stands."""

    current_state: str | None = None
    visits: dict[str, int] = Field(default_factory=dict)
    hops: int = 0
    max_hops: int | None = None
    resume_state: str | None = Field(
        default=None, description="Set by an `on: pause` rule: the stage to resume in."
    )
    decided: Literal["success", "failure"] | None = Field(
        default=None, description="A human's answer to the current stage's confirmation."
    )


class PcsSignals(WireModel):
    """PCS signals the kernel can observe cheaply (D20)."""

    seeds_set: bool | None = None
    library_versions_recorded: bool | None = None
    holdout_split: bool | None = None


class Metrics(WireModel):
    """Seed 000 "Metrics and Monitoring" (D20); ratios in [0, 1], None when undefined."""

    stage_progress: float | None = None
    overall_progress: float | None = None
    artifact_completion: float | None = None
    acceptance_pass_rate: float | None = None
    retry_rate: float | None = None
    variable_coverage: float | None = None
    pcs: PcsSignals = Field(default_factory=PcsSignals)


class UsageTotals(WireModel):
    """Planner calls, tokens and latency."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0


class Usage(UsageTotals):
    """Planner usage in total and per stage."""

    per_stage: dict[str, UsageTotals] = Field(default_factory=dict)


class Budget(WireModel):
    """Caps on planner usage (``--max-tokens`` / ``--max-planner-calls``); None = no cap.

    Before a planner call that would pass a cap the run stops ``waiting`` on a ``budget``
    decision; approving raises each cap by its ``*_step`` (the amount first granted).
    """

    max_tokens: int | None = Field(default=None, ge=1)
    max_planner_calls: int | None = Field(default=None, ge=1)
    tokens_step: int | None = Field(default=None, ge=1)
    calls_step: int | None = Field(default=None, ge=1)


class PlannerSettings(WireModel):
    """Which planner answers and how; never secrets."""

    kind: Literal["blueprint", "replay", "http", "llm"] = "blueprint"
    settings: dict[str, Any] = Field(default_factory=dict)


class KernelRecord(WireModel):
    """The kernel a server process drives the workflow on, recorded so that the next server
    finds it if this one dies: an orphan is shut down before anything is decided."""

    kernel_id: str
    session_id: str | None = None
    connection_file: str | None = None
    pid: int | None = Field(default=None, description="Local kernel process id, if known.")
    host: str | None = None
    server_pid: int | None = Field(default=None, description="The server process driving it.")


class WorkflowSnapshot(WireModel):
    """Everything about one workflow, in one model (D5)."""

    workflow_id: str
    run_id: str
    notebook_path: str | None = None
    schema_version: int = SCHEMA_VERSION
    version: int = Field(default=0, description="Bumped by the store on every committed change.")
    fsm: FsmBlock = Field(default_factory=FsmBlock)
    run: RunBlock = Field(default_factory=RunBlock)
    location: Location = Field(default_factory=Location)
    variables: dict[str, VariableInfo] = Field(default_factory=dict)
    effects: Effects = Field(default_factory=Effects)
    notebook: NotebookSummary = Field(default_factory=NotebookSummary)
    open_contracts: list[ExecutionContract] = Field(default_factory=list)
    action_queue: ActionQueue = Field(default_factory=ActionQueue)
    acceptance: dict[str, dict[str, AcceptanceResult]] = Field(default_factory=dict)
    gaps: list[Gap] = Field(default_factory=list)
    stage_machine: StageMachineState = Field(default_factory=StageMachineState)
    metrics: Metrics = Field(default_factory=Metrics)
    usage: Usage = Field(default_factory=Usage)
    planner: PlannerSettings = Field(default_factory=PlannerSettings)
    budget: Budget = Field(default_factory=Budget)
    problem: str | None = Field(default=None, description="The user's problem text.")
    files: list[str] = Field(default_factory=list, description="User input files.")
    parameters: dict[str, Any] = Field(
        default_factory=dict,
        description="Run parameters (`-p NAME VALUE`, papermill style): plain JSON values, "
        "injected into the `injected-parameters` cell before the first action.",
    )
    deprecated_variables: list[str] = Field(
        default_factory=list,
        description="Variables a stage reflection deprecated: still in the kernel, hidden from "
        "planners unless a context_filter includes them.",
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="The run options this workflow was started with (auto_confirm, "
        "confirm_irreversible, max_hops, cell_timeout, ...): a server restores them after a "
        "restart instead of its own defaults.",
    )
    kernel: KernelRecord | None = Field(
        default=None, description="The kernel a server drives this workflow on (server only)."
    )
    context_filter: dict[str, Any] | None = Field(
        default=None,
        description="The last planning response's context_filter (normalized JSON), applied "
        "to the observations that follow until the next planning response.",
    )


def new_snapshot(
    workflow_id: str,
    run_id: str,
    *,
    notebook_path: str | None = None,
    problem: str | None = None,
    files: list[str] | None = None,
    planner: PlannerSettings | None = None,
    parameters: dict[str, Any] | None = None,
    budget: Budget | None = None,
) -> WorkflowSnapshot:
    """A fresh snapshot in ``idle`` with the user's inputs recorded."""
    return WorkflowSnapshot(
        workflow_id=workflow_id,
        run_id=run_id,
        notebook_path=notebook_path,
        problem=problem,
        files=list(files or []),
        parameters=dict(parameters or {}),
        planner=planner or PlannerSettings(),
        budget=budget or Budget(),
    )
