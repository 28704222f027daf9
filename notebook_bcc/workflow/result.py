"""What every apply function returns (:class:`Applied`), its options, and the working draft.

Apply functions never mutate their input: a :class:`Draft` holds the snapshot being built (every
change is a shallow ``model_copy``), fires FSM events through :func:`fsm.workflow.transition` so
history is recorded, and collects warnings. An error raised half-way leaves the caller's snapshot
exactly as it was, because nothing was ever written into it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pydantic import Field

from notebook_bcc.fsm.workflow import can_fire, transition
from notebook_bcc.models.base import WireModel, utc_now_iso
from notebook_bcc.models.names import Event, State
from notebook_bcc.models.records import HistoryEntry, TraceRecord
from notebook_bcc.models.snapshot import LevelProgress, PendingDecision, WorkflowSnapshot
from notebook_bcc.protocol.json_actions import JsonAction
from notebook_bcc.workflow.errors import ApplyError

DEFAULT_MAX_ITERATIONS = 3
"""Behavior iterations per step before D15 escalates the step to the stage reflection."""

DEFAULT_EFFECTS_HISTORY_CAP = 50
"""How many effect entries ``effects.history`` keeps (D12: history is capped)."""


@dataclass(frozen=True)
class ApplyOptions:
    """Knobs shared by every apply function.

    ``actor`` goes into each FSM history row; ``at`` (ISO 8601) stamps every row, gap and
    pending decision of one apply (the current time when None); ``max_iterations`` is D15's cap
    on behavior iterations per step; ``effects_history_cap`` caps ``effects.history`` (D12).
    """

    actor: str = "planner"
    at: str | None = None
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    effects_history_cap: int = DEFAULT_EFFECTS_HISTORY_CAP


DEFAULT_OPTIONS = ApplyOptions()
CLIENT_OPTIONS = ApplyOptions(actor="client")
"""Defaults of the client's own moves (navigation, action bookkeeping)."""
HUMAN_OPTIONS = ApplyOptions(actor="human")
"""Defaults of human decisions (approving or rejecting an update)."""


class Replacement(WireModel):
    """One item replaced by another (``replaces="old"``)."""

    old: str
    new: str


class PlanDiff(WireModel):
    """How a plan (stages or steps) changed: the panel shows this for an update (D18)."""

    level: str = Field(description="stages or steps")
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    replaced: list[Replacement] = Field(default_factory=list)
    moved: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when nothing changed."""
        return not (self.added or self.removed or self.replaced or self.moved or self.changed)


class Applied(WireModel):
    """The outcome of applying one payload (or one client decision) to a snapshot.

    ``snapshot`` already has every event in ``events`` fired (in order) and ``records`` are the
    rows the store appends (FSM history entries, plus trace rows for approved/rejected updates).
    ``pending`` lists decisions parked by this apply (D18); ``actions`` are notebook actions the
    payload carried for the engine to execute (the action queue, or the ``add-text`` lines of a
    reflecting stream); ``diff`` is set when a plan update was applied.
    """

    snapshot: WorkflowSnapshot
    events: list[Event] = Field(default_factory=list)
    records: list[HistoryEntry | TraceRecord] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    pending: list[PendingDecision] = Field(default_factory=list)
    actions: list[JsonAction] = Field(default_factory=list)
    diff: PlanDiff | None = None
    repairs: list[str] = Field(
        default_factory=list, description="what the parser repaired in the payload, one a line"
    )

    @property
    def event(self) -> Event | None:
        """The last event fired (the one that decided the resulting state), if any."""
        return self.events[-1] if self.events else None

    def to_json(self) -> dict[str, Any]:
        """``{"event", "events", "warnings", "pending", "actions", "diff", "repairs", "snapshot"}``.

        ``records`` are left out: the FSM rows are the snapshot's history tail already.
        """
        body = self.model_dump(mode="json", by_alias=True, exclude={"records"})
        return {"event": None if self.event is None else self.event.value, **body}


def innermost_goal(snapshot: WorkflowSnapshot) -> str | None:
    """The goal of the innermost active level, as the reference sets ``location.goals``.

    The running behavior's task; else the current step's goal; else the current stage's
    (its updated ``goals`` first); else the workflow's goals.
    """
    progress = snapshot.location.progress
    behavior = progress.behaviors.current
    if behavior is not None and (behavior.task or behavior.goal):
        return behavior.task or behavior.goal
    step = progress.steps.current
    if step is not None and step.goal:
        return step.goal
    stage = progress.stages.current
    if stage is not None:
        goals = stage.extra.get("goals")
        if isinstance(goals, str) and goals:
            return goals
        if stage.goal:
            return stage.goal
    return snapshot.location.workflow_goals or snapshot.location.goals


def follow_goals(snapshot: WorkflowSnapshot) -> WorkflowSnapshot:
    """``snapshot`` with ``location.goals`` set to :func:`innermost_goal`."""
    goal = innermost_goal(snapshot)
    if goal == snapshot.location.goals:
        return snapshot
    location = snapshot.location.model_copy(update={"goals": goal})
    return snapshot.model_copy(update={"location": location})


def epoch_seconds(at: str) -> float:
    """Seconds since the epoch of an ISO 8601 timestamp (trace rows store floats); 0 if bad."""
    try:
        moment = datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


LEVELS = ("stages", "steps", "behaviors")


class Draft:
    """The snapshot being built by one apply, with the events, records and warnings so far."""

    def __init__(self, snapshot: WorkflowSnapshot, kind: str, options: ApplyOptions) -> None:
        self.original = snapshot
        self.snapshot = snapshot
        self.kind = kind
        self.options = options
        self.at = options.at or utc_now_iso()
        self.events: list[Event] = []
        self.records: list[HistoryEntry | TraceRecord] = []
        self.warnings: list[str] = []
        self.pending: list[PendingDecision] = []
        self.actions: list[JsonAction] = []
        self.diff: PlanDiff | None = None

    @property
    def state(self) -> State:
        """The FSM state of the snapshot being built."""
        return self.snapshot.fsm.state

    def fail(self, error_type: type[ApplyError], message: str) -> ApplyError:
        """An error of ``error_type`` naming this payload kind and the state it arrived in."""
        return error_type(self.kind, self.original.fsm.state, message)

    def fire(self, event: Event) -> None:
        """Fire ``event`` through the FSM (recording history); refused when the table says no."""
        if not can_fire(self.snapshot.fsm.state, event):
            raise ApplyError(
                self.kind,
                self.original.fsm.state,
                f"would need {event.value} from {self.snapshot.fsm.state.value}, "
                "which the FSM table does not allow",
            )
        self.snapshot, rows = transition(self.snapshot, event, actor=self.options.actor, at=self.at)
        self.events.append(event)
        self.records.extend(rows)

    def set(self, **update: Any) -> None:
        """Replace top-level snapshot fields."""
        self.snapshot = self.snapshot.model_copy(update=update)

    def level(self, name: str) -> LevelProgress:
        """The progress of one level (``stages``, ``steps`` or ``behaviors``)."""
        progress: LevelProgress = getattr(self.snapshot.location.progress, name)
        return progress

    def set_level(self, name: str, progress: LevelProgress) -> None:
        """Replace the progress of one level."""
        location = self.snapshot.location
        new_progress = location.progress.model_copy(update={name: progress})
        self.set(location=location.model_copy(update={"progress": new_progress}))

    def update_level(self, name: str, **update: Any) -> None:
        """Replace fields of one level's progress."""
        self.set_level(name, self.level(name).model_copy(update=update))

    def set_location(self, **update: Any) -> None:
        """Replace fields of ``location.current``."""
        location = self.snapshot.location
        current = location.current.model_copy(update=update)
        self.set(location=location.model_copy(update={"current": current}))

    def set_goals(self, goals: str | None) -> None:
        """Keep a stage plan's workflow-wide goals (``location.workflow_goals``) when given."""
        if goals:
            location = self.snapshot.location.model_copy(update={"workflow_goals": goals})
            self.set(location=location)

    def warn(self, message: str) -> None:
        """Record a trace warning (returned in :attr:`Applied.warnings`)."""
        if message not in self.warnings:
            self.warnings.append(message)

    def finish(self) -> Applied:
        """The :class:`Applied` result, with progress metrics refreshed (D20)."""
        from notebook_bcc.workflow.metrics import refresh_metrics

        snap, original = self.snapshot, self.original
        if snap is not original and (
            snap.location is not original.location
            or snap.variables is not original.variables
            or snap.problem != original.problem
            or snap.files != original.files
            or snap.metrics is not original.metrics
        ):  # the metrics and the goal depend on nothing else (an action's moves skip this)
            self.snapshot = follow_goals(refresh_metrics(snap))
        return Applied(
            snapshot=self.snapshot,
            events=self.events,
            records=self.records,
            warnings=self.warnings,
            pending=self.pending,
            actions=self.actions,
            diff=self.diff,
        )
