"""The engine's commits: one store transaction per change, its events published (D10).

Every change of a workflow goes through :meth:`Committer.commit`: the snapshot by
compare-and-set, FSM history, trace rows, contracts and cells together; the events it makes are
published to the listeners once the store has them.

One exception in time, not in content: while the run loop holds stops
(:meth:`Committer.hold_stop_events`), the events of the commit that stops the run (waiting,
paused, completed, failed...) and of every commit after it are published only once the run has
written its notebook (:meth:`Committer.release_held_events`). Whoever acts on "the run
stopped" -- a panel, a REST client reading the file, ``notebook-bcc resume`` -- then finds
every cell in the file; nothing is lost if the write fails (the store has it all, D10).

Folded boundaries (issue 23): when the planner's answers are a pure function of the snapshot
(a blueprint: nothing to log, the same answer when asked again), the automatic transitions of
a boundary -- COMPLETE_BEHAVIOR, the reflections, NEXT_STAGE, START_STEP, START_BEHAVIOR, the
queued actions -- are *staged* (:meth:`Committer.commit_applied` with ``stage=True``) instead of
committed one by one: they ride in the next commit, which is at the latest the next code cell's
RUNNING commit, still made before that cell runs (D10). A staged change opens no decision and
never changes the run's status, so a process killed before it is committed resumes at the last
commit and makes the same moves again. The one contract and cell it may carry are the outcome
of the behavior's last code cell when that cell was reversible and succeeded
(:meth:`Committer.stage_outcome`): killed before the commit, the run re-runs that cell on
resume, as any interrupted reversible cell. Any commit -- a command's, a failure's, a stop's,
a kernel rebuild's -- carries what is staged first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from time import monotonic
from typing import TYPE_CHECKING, Any

from notebook_bcc.models.contract import ExecutionContract
from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.models.records import HistoryEntry, TraceRecord
from notebook_bcc.models.snapshot import (
    PendingDecision,
    WorkflowSnapshot,
)
from notebook_bcc.store.errors import VersionConflictError
from notebook_bcc.store.sqlite import CellRow, Commit, EventDraft
from notebook_bcc.workflow import (
    Applied,
)

if TYPE_CHECKING:
    from notebook_bcc.engine.host import EngineRooms

    _Rooms = EngineRooms
else:
    _Rooms = object

log = logging.getLogger(__name__)

Listener = Callable[[WorkflowEvent], None]


@dataclass
class Staged:
    """Changes applied to ``Committer.snapshot`` but not committed yet (see the module doc)."""

    records: list[HistoryEntry | TraceRecord] = field(default_factory=list)
    events: list[EventDraft] = field(default_factory=list)
    kinds: frozenset[str] = frozenset()
    warnings: list[str] = field(default_factory=list)
    contracts: list[ExecutionContract] = field(default_factory=list)
    """Only the terminal contract of a behavior's last reversible code cell (see
    :meth:`Committer.stage_outcome`)."""
    cells: list[CellRow] = field(default_factory=list)


class Committer(_Rooms):
    """Commits and event listeners (a room of :class:`~notebook_bcc.engine.engine.Engine`)."""

    snapshot: WorkflowSnapshot
    metrics_commit_ms: float
    holding_stops: bool
    held_events: list[WorkflowEvent] | None
    stops_released: asyncio.Event
    staged: Staged | None
    folds_boundaries: bool

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener`` with every event the engine publishes, in order."""
        self.listeners.append(listener)

    def hold_stop_events(self) -> None:
        """From now on, hold the events of a commit that stops the run, and all after it."""
        self.holding_stops = True

    def release_held_events(self) -> None:
        """Stop holding; publish what was held, in order."""
        self.holding_stops = False
        held = self.held_events or []
        self.held_events = None
        self.stops_released.set()
        self._publish(held)

    def may_stage(self, snapshot: WorkflowSnapshot) -> bool:
        """Whether a move to ``snapshot`` may wait for the next commit: the planner's answers
        are re-derivable, the run goes on unchanged (running, no decision open) and nothing
        waits for a safe point (a command, the inbox poll, Ctrl-C)."""
        before = self.snapshot
        return (
            self.folds_boundaries
            and snapshot.run.status == "running"
            and before.run.status == "running"
            and snapshot.run.reason == before.run.reason
            and not snapshot.run.pending
            and snapshot.version == before.version
            and self.may_carry_on()
        )

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
        """Stage the outcome of a behavior's last code cell (reversible, succeeded) to ride
        with the folded boundary into the next commit; the caller checked :meth:`may_stage`.

        Until then the store holds that cell RUNNING: a process killed at the boundary
        re-runs it on resume, as any interrupted reversible cell, and the next cell still
        runs only after the commit that holds its outputs (D10)."""
        staged = self.staged or Staged()
        staged.records.extend(records)
        staged.contracts.extend(contracts)
        staged.cells.extend(cells)
        staged.kinds |= kinds
        staged.warnings.extend(warnings)
        self.staged = staged
        self.snapshot = snapshot

    async def commit_staged(self) -> None:
        """Commit what is staged, if anything (the run loop's last word)."""
        if self.staged is not None:
            await self.commit(self.snapshot)

    async def stop_published(self, timeout: float) -> None:
        """Return once no stop is held back (the run's notebook holds what its snapshot says),
        or after ``timeout`` seconds (a notebook write that hangs never hangs a reader)."""
        if self.held_events is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stops_released.wait(), timeout)

    def _publish(self, events: Sequence[WorkflowEvent]) -> None:
        if self.held_events is not None:
            self.held_events.extend(events)
            return
        for event in events:
            for listener in list(self.listeners):
                listener(event)

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
        """Make one change durable (with what is staged) and publish its events."""
        staged = self.staged
        if staged is not None:
            records = [*staged.records, *records]
            events = [*staged.events, *events]
            kinds = kinds | staged.kinds
            warnings = [*staged.warnings, *warnings]
            contracts = [*staged.contracts, *contracts]
            newer = {cell.cell_id for cell in cells}
            cells = [*(c for c in staged.cells if c.cell_id not in newer), *cells]
        before = self.snapshot
        history = [r for r in records if isinstance(r, HistoryEntry)]
        trace = [r for r in records if isinstance(r, TraceRecord)]
        now = monotonic()
        for message in warnings:
            trace.append(
                TraceRecord(
                    actor="engine",
                    action="warning",
                    timestamp=time.time(),
                    metadata={"message": message},
                )
            )
        drafts: list[EventDraft] = []
        for entry in history:
            drafts.append(
                EventDraft(
                    "transition",
                    entry.from_state.value,
                    entry.event.value,
                    entry.to.value,
                    actor=entry.actor,
                )
            )
        for record in trace:
            if record.action.startswith(("transition:", "create_contract:")):
                drafts.append(
                    EventDraft(
                        "contract",
                        event=record.metadata.get("trigger") or "create",
                        actor=record.actor,
                        detail={"action": record.action, **_short(record.metadata)},
                    )
                )
        for cell in cells:
            drafts.append(
                EventDraft(
                    "cell",
                    actor="kernel",
                    detail={
                        "cell_id": cell.cell_id,
                        "position": cell.position,
                        "cell_type": cell.cell.get("cell_type"),
                        "contract_id": cell.contract_id,
                    },
                )
            )
        drafts.extend(events)
        if snapshot.run.status != before.run.status or snapshot.run.reason != before.run.reason:
            drafts.append(
                EventDraft(
                    "run",
                    before.run.status,
                    None,
                    snapshot.run.status,
                    actor="engine",
                    detail={"reason": snapshot.run.reason} if snapshot.run.reason else {},
                )
            )
        kinds = (
            kinds
            | ({"transition"} if history else frozenset())
            | ({"cell"} if cells else frozenset())
        )
        open_ids = {c.execution_id for c in contracts}
        if contracts:
            kept = [c for c in snapshot.open_contracts if c.execution_id not in open_ids]
            still_open = [c for c in contracts if not c.status.terminal]
            snapshot = snapshot.model_copy(update={"open_contracts": [*kept, *still_open]})
        try:
            result = await self.store.commit(
                Commit(
                    snapshot=snapshot,
                    expected_version=before.version,
                    history=history,
                    trace=trace,
                    contracts=contracts,
                    cells=cells,
                    events=drafts,
                    kinds=kinds,
                )
            )
        except VersionConflictError:
            self.staged = None
            self.snapshot = await self.store.load(before.workflow_id)
            raise
        self.staged = None
        self.snapshot = result.snapshot
        self.metrics_commit_ms = (monotonic() - now) * 1000
        stops = before.run.status == "running" and snapshot.run.status != "running"
        if stops and self.held_events is None and self.holding_stops:
            self.held_events = []
            self.stops_released.clear()
        self._publish(result.events)
        return self.snapshot

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
        """Commit an :class:`Applied` (its records, warnings and parked decisions); with
        ``stage``, stage it instead when it may wait for the next commit (:meth:`may_stage`)."""
        drafts = list(events)
        for pending in applied.pending:
            drafts.append(_decision_event(pending, "created"))
        target = snapshot or applied.snapshot
        if stage and not contracts and not cells and not applied.pending and self.may_stage(target):
            staged = self.staged or Staged()
            staged.records.extend(applied.records)
            staged.events.extend(drafts)
            staged.kinds |= kinds
            staged.warnings.extend(applied.warnings)
            self.staged = staged
            self.snapshot = target
            return target
        return await self.commit(
            target,
            records=applied.records,
            contracts=contracts,
            cells=cells,
            events=drafts,
            kinds=kinds | ({"decision"} if applied.pending else frozenset()),
            warnings=applied.warnings,
        )


def _short(metadata: dict[str, Any]) -> dict[str, Any]:
    keep = ("contract_id", "trigger", "irreversible", "action_type", "error_message")
    return {k: metadata[k] for k in keep if k in metadata}


def _decision_event(
    pending: PendingDecision,
    what: str,
    *,
    actor: str = "engine",
    diff: Any = None,
) -> EventDraft:
    detail: dict[str, Any] = {"id": pending.id, "kind": pending.kind, "message": pending.message}
    if diff is not None:
        detail["diff"] = diff.model_dump(mode="json")
    return EventDraft("decision", event=what, actor=actor, detail=detail)
