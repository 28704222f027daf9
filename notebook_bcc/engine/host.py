"""What the engine's helpers may use of it: narrow typing protocols, no runtime import.

:class:`EngineHost` is all the action executor, recovery and the other helpers (budget,
retry, kernel loss, parameters) need of an engine; :class:`EngineRooms` adds what the engine's
own rooms (moves, commands, committing) call on each other. Both are satisfied by
:class:`~notebook_bcc.engine.engine.Engine`; neither imports it, so there is no import circle.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from notebook_bcc.engine.actions import ActionExecutor
    from notebook_bcc.engine.options import EngineOptions
    from notebook_bcc.engine.recovery import Recovery
    from notebook_bcc.engine.runtime import KernelRuntime
    from notebook_bcc.models.contract import ExecutionContract
    from notebook_bcc.models.event import WorkflowEvent
    from notebook_bcc.models.records import HistoryEntry, TraceRecord
    from notebook_bcc.models.snapshot import PendingDecision, PlanItem, WorkflowSnapshot
    from notebook_bcc.planners.base import (
        DecisionPoint,
        Planner,
        PlannerReply,
        PlannerRequest,
        StageRoute,
    )
    from notebook_bcc.store.async_store import AsyncStore
    from notebook_bcc.store.sqlite import CellRow, EventDraft
    from notebook_bcc.workflow import Applied, ApplyOptions


class StepEnded(Exception):
    """A step that cannot go on: its failure (run failed / FAILed / waiting) is committed.

    Raised by a planner turn that failed or was stopped by a budget; the loop catches it and
    goes on with the next step (which sees the committed run status).
    """


class EngineHost(Protocol):
    """The engine as its helpers see it (state, store, kernel, commits, contracts)."""

    snapshot: WorkflowSnapshot
    store: AsyncStore
    runtime: KernelRuntime
    options: EngineOptions
    planner: Planner
    actions: ActionExecutor
    recovery: Recovery
    kernel_started: bool

    @property
    def interrupt_requested(self) -> bool:
        """Whether the loop was asked to stop at its next safe point."""
        ...

    def client_options(self) -> ApplyOptions:
        """Options for the client's own moves."""
        ...

    def may_carry_on(self) -> bool:
        """Whether the next action may run before this one's outcome is committed alone."""
        ...

    async def commit(
        self,
        snapshot: WorkflowSnapshot,
        *,
        records: Sequence[HistoryEntry | TraceRecord] = (),
        contracts: Sequence[ExecutionContract] = (),
        cells: Sequence[CellRow] = (),
        events: Sequence[EventDraft] = (),
        kinds: frozenset[str] = frozenset(),
        warnings: Sequence[str] = (),
    ) -> WorkflowSnapshot:
        """Make one change durable and publish its events."""
        ...

    def may_stage(self, snapshot: WorkflowSnapshot) -> bool:
        """Whether a move to ``snapshot`` may ride in the next commit (a folded boundary)."""
        ...

    def stage_outcome(
        self,
        snapshot: WorkflowSnapshot,
        *,
        records: Sequence[HistoryEntry | TraceRecord],
        contracts: Sequence[ExecutionContract],
        cells: Sequence[CellRow],
        kinds: frozenset[str],
        warnings: Sequence[str],
    ) -> None:
        """Let a behavior's last reversible code cell's outcome ride in the next commit."""
        ...

    async def commit_staged(self) -> None:
        """Commit what is staged, if anything."""
        ...

    async def commit_applied(
        self,
        applied: Applied,
        *,
        contracts: Sequence[ExecutionContract] = (),
        cells: Sequence[CellRow] = (),
        events: Sequence[EventDraft] = (),
        kinds: frozenset[str] = frozenset(),
        snapshot: WorkflowSnapshot | None = None,
        stage: bool = False,
    ) -> WorkflowSnapshot:
        """Commit an :class:`Applied` (its records, warnings and parked decisions), or with
        ``stage`` let it ride in the next commit when it may."""
        ...

    async def fail_run(self, reason: str) -> None:
        """An operational failure: the run ``failed`` with its reason."""
        ...

    async def protocol_failure(self, reason: str) -> None:
        """A response not legal here: FAIL where the table has a row, else the run fails."""
        ...

    async def park_updates(self) -> bool:
        """D18: park a pending update at action_running; True if one was."""
        ...

    def new_decision(
        self, kind: str, message: str, details: dict[str, Any]
    ) -> tuple[WorkflowSnapshot, PendingDecision]:
        """A pending decision added to the current snapshot (not committed)."""
        ...

    def new_contract(
        self,
        action_type: Literal["cell_execution", "confirmation", "replay"],
        detail: dict[str, Any],
        *,
        irreversible: bool = False,
        key: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> tuple[ExecutionContract, list[TraceRecord]]:
        """A PENDING contract scoped to this workflow and run."""
        ...

    def note_code(self, source: str, snapshot: WorkflowSnapshot) -> WorkflowSnapshot:
        """D20 PCS signals from executed code."""
        ...

    def archive_effects(self, snapshot: WorkflowSnapshot) -> WorkflowSnapshot:
        """D12: ``comment_result`` moves current effects to history."""
        ...

    async def ask(
        self,
        point: DecisionPoint,
        call: Callable[[PlannerRequest], Awaitable[PlannerReply | None]],
        *,
        feedback: dict[str, Any] | None = None,
    ) -> PlannerReply | None:
        """Ask the planner; raises :class:`StepEnded` when the step cannot go on."""
        ...

    async def apply_reply(
        self, reply: PlannerReply, *, max_iterations: int | None = None
    ) -> Applied:
        """Apply a planner's payload; raises :class:`StepEnded` when it is illegal here."""
        ...

    async def entered_stage(self, applied: Applied) -> None:
        """A stage was entered: count the hop, commit."""
        ...

    async def follow_route(self, route: StageRoute) -> None:
        """Act on a stage route."""
        ...


class EngineRooms(EngineHost, Protocol):
    """What the engine's rooms (moves, commands, committing) use of each other."""

    listeners: list[Callable[[WorkflowEvent], None]]
    holding_stops: bool
    held_events: list[WorkflowEvent] | None
    stops_released: asyncio.Event
    lock: asyncio.Lock
    metrics_commit_ms: float
    _next_inbox_poll: float

    def observation(self) -> dict[str, Any]:
        """The observation planners receive."""
        ...

    async def decide(
        self, decision_id: str, decision: Literal["approve", "reject"], *, actor: str = "human"
    ) -> None:
        """Answer a pending decision."""
        ...

    async def flush_notebook(self, *, wait: bool = True) -> None:
        """Write the notebook (in the background with ``wait=False``)."""
        ...

    def _stage_item(self, stage_id: str) -> PlanItem | None: ...
