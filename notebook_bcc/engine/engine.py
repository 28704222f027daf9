"""The engine: seed 003's Client loop over the FSM, a planner, the kernel and the store.

At each FSM state the engine either asks the planner (through the Planner protocol, with the
observation of D21) and applies the answer through the protocol layer, or makes the client's
own move (navigation, executing an action). Every change is one store commit: the snapshot by
compare-and-set, FSM history, trace rows, contracts and cells together (D10), and every commit
publishes :class:`~notebook_bcc.models.event.WorkflowEvent` s to the listeners.

What the FSM table cannot express lives in ``snapshot.run`` (D1): a planner that fails sets
the run ``failed`` and leaves the FSM where it is; a human decision sets it ``waiting``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from time import monotonic
from typing import Any, Literal

from notebook_bcc.engine.actions import ActionExecutor
from notebook_bcc.engine.budget import answer_budget, stop_for_budget
from notebook_bcc.engine.decisions import DecisionGoneError
from notebook_bcc.engine.exchanges import log_exchanges
from notebook_bcc.engine.failure import failure_cause
from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.engine.recovery import Recovery
from notebook_bcc.engine.retry import restart_run, retry
from notebook_bcc.engine.routing import (
    add_pending,
    count_stage_entry,
    drop_pending,
    end_workflow,
    enter_stage,
    fail_step,
    fire_event,
    with_run,
)
from notebook_bcc.engine.runtime import KernelRuntime
from notebook_bcc.errors import NotebookBccError
from notebook_bcc.fsm.contract import create_contract, fire
from notebook_bcc.fsm.expressions import WhenEvaluationError
from notebook_bcc.fsm.rules import HopCapExceeded
from notebook_bcc.fsm.workflow import can_fire
from notebook_bcc.kernel.errors import NotebookWriteError
from notebook_bcc.models.base import utc_now_iso
from notebook_bcc.models.command import ActionCommand, DecideCommand, EventCommand, parse_command
from notebook_bcc.models.contract import ExecutionContract
from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.models.names import Event, State
from notebook_bcc.models.records import HistoryEntry, TraceRecord
from notebook_bcc.models.snapshot import (
    AcceptanceResult,
    PendingDecision,
    PlanItem,
    RunStatus,
    UsageTotals,
    VariableInfo,
    WorkflowSnapshot,
)
from notebook_bcc.planners.base import (
    DecisionPoint,
    Planner,
    PlannerError,
    PlannerReply,
    PlannerRequest,
    StageRoute,
)
from notebook_bcc.protocol.errors import ProtocolError
from notebook_bcc.store.anchor import put_anchor
from notebook_bcc.store.errors import VersionConflictError
from notebook_bcc.store.sqlite import AsyncStore, CellRow, Commit, EventDraft, SqliteStore
from notebook_bcc.workflow import (
    Applied,
    ApplyError,
    ApplyOptions,
    apply_payload,
    approve_update,
    build_observation,
    navigate,
    reject_update,
)
from notebook_bcc.workflow.context import propagate_produced
from notebook_bcc.workflow.effects import add_current, archive_current
from notebook_bcc.workflow.result import HUMAN_OPTIONS, Draft

log = logging.getLogger(__name__)

Listener = Callable[[WorkflowEvent], None]

INBOX_POLL_S = 0.2
"""How often the loop looks for commands queued by other processes (seconds)."""

STOP_STATUSES = frozenset({"waiting", "paused", "failed", "completed", "cancelled", "interrupted"})
"""Run statuses at which the loop stops and hands back to its caller."""

UPDATE_EVENTS: dict[str, tuple[Event, Event, Event]] = {
    "workflow_update": (
        Event.UPDATE_WORKFLOW,
        Event.UPDATE_WORKFLOW_CONFIRMED,
        Event.UPDATE_WORKFLOW_REJECTED,
    ),
    "step_update": (Event.UPDATE_STEP, Event.UPDATE_STEP_CONFIRMED, Event.UPDATE_STEP_REJECTED),
}
"""For each update kind: the event that parks it, and those that confirm / reject it (D18)."""

AUTO_CONFIRMABLE = frozenset(
    {
        "workflow_update",
        "step_update",
        "stage_confirmation",
        "irreversible_confirmation",
        "kernel_rebuild",
    }
)
"""Decisions ``--auto-confirm`` approves as they arise; never ``in_doubt`` (D3)."""

_SEED_PATTERN = re.compile(
    r"random_state\s*=|np\.random\.seed\(|random\.seed\(|manual_seed\(|default_rng\(\s*\d"
)
_VERSION_PATTERN = re.compile(r"__version__|importlib\.metadata|pip\s+freeze|version\(")
_SPLIT_PATTERN = re.compile(r"train_test_split|KFold|cross_val|X_test|holdout|validation_split")


@dataclass(frozen=True)
class RunResult:
    """How a call to :meth:`Engine.run` ended."""

    snapshot: WorkflowSnapshot
    exit_code: int
    cells: int
    duration_s: float


def exit_code_for(snapshot: WorkflowSnapshot) -> int:
    """The CLI exit code of a snapshot (issue contract: 0 / 1 / 3 / 4 / 130)."""
    status = snapshot.run.status
    state = snapshot.fsm.state
    if status == "interrupted":
        return 130
    if status == "cancelled" or state is State.CANCELLED:
        return 4
    if status == "failed" or state is State.ERROR:
        return 1
    if status in ("waiting", "paused"):
        return 3
    if state is State.WORKFLOW_COMPLETED:
        return 0
    return 3


def notebook_write_failure(exc: NotebookWriteError) -> str:
    """The run's reason when the notebook file cannot be written (D1: the run fails)."""
    return f"the notebook could not be written: {exc.message}"


def owner_tag() -> str:
    """This process as a workflow owner: ``pid@host``."""
    return f"{os.getpid()}@{socket.gethostname()}"


class Engine:
    """Drives one workflow. Create with :meth:`start_new` or :meth:`attach`."""

    def __init__(
        self,
        *,
        store: AsyncStore,
        planner: Planner,
        snapshot: WorkflowSnapshot,
        runtime: KernelRuntime,
        options: EngineOptions,
    ) -> None:
        self.store = store
        self.planner = log_exchanges(planner, store)
        self.snapshot = snapshot
        self.runtime = runtime
        self.options = options
        self.listeners: list[Listener] = []
        self.actions = ActionExecutor(self)
        self.recovery = Recovery(self)
        self.kernel_started = False
        self._interrupt_requested = False
        self.lock = asyncio.Lock()
        self._next_inbox_poll = 0.0
        """Held by the loop for each step and by each command: one writer at a time."""

    # -- construction ---------------------------------------------------------------------

    @classmethod
    async def start_new(
        cls,
        *,
        store: AsyncStore,
        planner: Planner,
        runtime: KernelRuntime,
        snapshot: WorkflowSnapshot,
        options: EngineOptions,
    ) -> Engine:
        """Record a new workflow (idle) in the store and return its engine."""
        planner_settings = snapshot.planner.model_copy(
            update={"kind": planner.kind, "settings": planner.settings()}
        )
        machine = snapshot.stage_machine
        cap = options.max_hops or planner.settings().get("max_hops")
        if isinstance(cap, int):
            machine = machine.model_copy(update={"max_hops": cap})
        fresh = snapshot.model_copy(update={"planner": planner_settings, "stage_machine": machine})
        stored = await store.create(fresh)
        return cls(store=store, planner=planner, snapshot=stored, runtime=runtime, options=options)

    @classmethod
    async def attach(
        cls,
        *,
        store: AsyncStore,
        planner: Planner,
        runtime: KernelRuntime,
        workflow_id: str,
        options: EngineOptions,
    ) -> Engine:
        """The engine of a stored workflow (resume); call ``recovery.prepare()`` before run."""
        snapshot = await store.load(workflow_id)
        engine = cls(
            store=store, planner=planner, snapshot=snapshot, runtime=runtime, options=options
        )
        engine.kernel_started = True
        return engine

    # -- events ---------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener`` with every event the engine publishes, in order."""
        self.listeners.append(listener)

    def _publish(self, events: Sequence[WorkflowEvent]) -> None:
        for event in events:
            for listener in list(self.listeners):
                listener(event)

    @property
    def apply_options(self) -> ApplyOptions:
        """Options for the protocol layer's apply functions."""
        return ApplyOptions(
            actor="planner",
            max_iterations=self.options.max_iterations,
            effects_history_cap=self.options.effects_history_cap,
        )

    def client_options(self) -> ApplyOptions:
        """Options for the client's own moves."""
        return ApplyOptions(
            actor="client",
            max_iterations=self.options.max_iterations,
            effects_history_cap=self.options.effects_history_cap,
        )

    # -- commits --------------------------------------------------------------------------

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
        """Make one change durable and publish its events (see the module docstring)."""
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
            self.snapshot = await self.store.load(before.workflow_id)
            raise
        self.snapshot = result.snapshot
        self.metrics_commit_ms = (monotonic() - now) * 1000
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
    ) -> WorkflowSnapshot:
        """Commit an :class:`Applied` (its records, warnings and parked decisions)."""
        drafts = list(events)
        for pending in applied.pending:
            drafts.append(_decision_event(pending, "created"))
        return await self.commit(
            snapshot or applied.snapshot,
            records=applied.records,
            contracts=contracts,
            cells=cells,
            events=drafts,
            kinds=kinds | ({"decision"} if applied.pending else frozenset()),
            warnings=applied.warnings,
        )

    # -- the loop -------------------------------------------------------------------------

    def request_interrupt(self) -> None:
        """Ctrl-C / SIGTERM: stop at the next safe point, the run ``interrupted`` (D1)."""
        self._interrupt_requested = True

    def stopped(self) -> bool:
        """Whether the loop should hand back now."""
        snap = self.snapshot
        if snap.run.status in STOP_STATUSES:
            return True
        return snap.fsm.state in (State.WORKFLOW_COMPLETED, State.CANCELLED)

    async def run(self) -> RunResult:
        """Run until the workflow completes, fails, waits for a human, or is interrupted."""
        began = monotonic()
        await self.store.call(lambda s: s.set_owner(self.snapshot.workflow_id, owner_tag()))
        write_error: NotebookWriteError | None = None
        try:
            if self.snapshot.run.status != "running" and not self.snapshot.run.pending:
                await self.commit(with_run(self.snapshot, "running"))
            async with self.lock:
                await self._ensure_kernel()
            while True:
                async with self.lock:
                    await self.take_commands()
                    if self._interrupt_requested:
                        await self.commit(
                            with_run(self.snapshot, "interrupted", "interrupted by a signal")
                        )
                        break
                    if self.stopped():
                        break
                    try:
                        await self.step()
                    except NotebookWriteError as exc:
                        await self.fail_run(notebook_write_failure(exc))
                await asyncio.sleep(0)
            await self._finish_run()
        finally:
            try:
                await self.flush_notebook()
            except NotebookWriteError as exc:
                write_error = exc
            await self.store.call(lambda s: s.set_owner(self.snapshot.workflow_id, None))
        if write_error is not None and self.snapshot.run.status != "failed":
            # D1: a notebook write error fails the run, the FSM stays; resume writes it again
            await self.fail_run(notebook_write_failure(write_error))
        cells = len(self.runtime.document.cells)
        return RunResult(self.snapshot, exit_code_for(self.snapshot), cells, monotonic() - began)

    async def _finish_run(self) -> None:
        snap = self.snapshot
        if snap.fsm.state is State.WORKFLOW_COMPLETED and snap.run.status == "running":
            await self.commit(with_run(snap, "completed"))
        elif snap.fsm.state is State.CANCELLED and snap.run.status != "cancelled":
            await self.commit(with_run(snap, "cancelled", snap.run.reason or "cancelled"))
        elif snap.fsm.state is State.ERROR and snap.run.status == "running":
            await self.commit(with_run(snap, "failed", snap.run.reason or "the workflow failed"))

    async def _ensure_kernel(self) -> None:
        if self.kernel_started:
            return
        await self.runtime.start()
        self.kernel_started = True
        if not await self.actions.inputs_done():
            await self.actions.inputs_cell()

    async def step(self) -> None:
        """One move from the current FSM state (see the module docstring)."""
        state = self.snapshot.fsm.state
        handler = {
            State.IDLE: self._at_idle,
            State.STAGE_RUNNING: self._at_stage_running,
            State.STEP_RUNNING: self._at_step_running,
            State.BEHAVIOR_RUNNING: self._at_behavior_running,
            State.ACTION_RUNNING: self.actions.at_action_running,
            State.ACTION_COMPLETED: self._at_action_completed,
            State.BEHAVIOR_COMPLETED: self._at_behavior_completed,
            State.STEP_COMPLETED: self._at_step_completed,
            State.STAGE_COMPLETED: self._at_stage_completed,
            State.ERROR: self._at_error,
            State.WORKFLOW_UPDATE_PENDING: self._at_update_pending,
            State.STEP_UPDATE_PENDING: self._at_update_pending,
        }.get(state)
        if handler is None:
            await self.fail_run(f"nothing to do in state {state.value}")
            return
        await handler()

    # -- failures (D1) --------------------------------------------------------------------

    async def fail_run(self, reason: str) -> None:
        """An operational failure: the run ``failed`` with its reason, the FSM unchanged."""
        await self.commit(with_run(self.snapshot, "failed", reason))

    async def protocol_failure(self, reason: str) -> None:
        """A response not legal here: FAIL where the table has a row, else the run fails."""
        if can_fire(self.snapshot.fsm.state, Event.FAIL):
            applied = fire_event(self.snapshot, Event.FAIL, options=self.client_options())
            await self.commit_applied(
                applied, snapshot=with_run(applied.snapshot, "failed", reason)
            )
            return
        await self.fail_run(reason)

    # -- planner calls --------------------------------------------------------------------

    def observation(self) -> dict[str, Any]:
        """The observation planners receive (D21; the engine keeps the notebook digest)."""
        fmt: Literal["state", "context"] = (
            "context" if self.options.observation_format == "context" else "state"
        )
        return build_observation(self.snapshot, fmt=fmt, cells=self.runtime.collector.digest)

    async def ask(
        self,
        point: DecisionPoint,
        call: Callable[[PlannerRequest], Awaitable[PlannerReply | None]],
        *,
        feedback: dict[str, Any] | None = None,
    ) -> PlannerReply | Literal[False] | None:
        """Ask the planner; False when it failed (the run is then failed or FAILed) or a
        budget stopped it (the run is then waiting)."""
        if await stop_for_budget(self, point):
            return False
        request = PlannerRequest(point, self.snapshot, self.observation(), feedback)
        began = monotonic()
        try:
            reply = await call(request)
        except ProtocolError as exc:
            # The refused payload (``details["body"]`` when the planner kept it) goes to the
            # trace before the failure, so what the planner sent is never lost.
            await self.commit(
                self.snapshot,
                records=[
                    TraceRecord(
                        actor="planner",
                        action=f"protocol_error:{point}",
                        timestamp=time.time(),
                        result=exc.message,
                        metadata=dict(exc.details),
                    )
                ],
            )
            await self.protocol_failure(f"{point}: the planner's reply is malformed: {exc.message}")
            return False
        except PlannerError as exc:
            if exc.usage is not None:  # the unusable replies were paid for: count them
                self._usage(exc.usage, (monotonic() - began) * 1000)
            await self.fail_run(f"{point}: planner failed: {exc.message}")
            return False
        except WhenEvaluationError as exc:
            await self.fail_run(f"{point}: {exc.message}")
            return False
        self._usage(reply.usage if reply else None, (monotonic() - began) * 1000)
        return reply

    def _usage(self, usage: UsageTotals | None, latency_ms: float) -> None:
        snap = self.snapshot
        stage = snap.location.current.stage_id or "_workflow"
        add = usage or UsageTotals()
        total = snap.usage
        per = total.per_stage.get(stage, UsageTotals())

        def plus(base: UsageTotals) -> dict[str, Any]:
            return {
                "calls": base.calls + 1,
                "prompt_tokens": base.prompt_tokens + add.prompt_tokens,
                "completion_tokens": base.completion_tokens + add.completion_tokens,
                "latency_ms": round(base.latency_ms + latency_ms, 3),
            }

        updated = total.model_copy(
            update={
                **plus(total),
                "per_stage": {**total.per_stage, stage: UsageTotals(**plus(per))},
            }
        )
        self.snapshot = snap.model_copy(update={"usage": updated})

    async def apply_reply(
        self, reply: PlannerReply, *, max_iterations: int | None = None
    ) -> Applied | None:
        """Apply a planner's payload; a payload illegal here is a protocol failure (D1)."""
        try:
            return apply_payload(
                self.snapshot,
                reply.payload,
                max_iterations=max_iterations or self.options.max_iterations,
                effects_history_cap=self.options.effects_history_cap,
            )
        except ApplyError as exc:
            await self.protocol_failure(exc.message)
            return None

    # -- states ---------------------------------------------------------------------------

    async def _at_idle(self) -> None:
        reply = await self.ask("plan_stages", self.planner.plan_stages)
        if not reply:
            if reply is None:
                await self.fail_run("plan_stages: the planner gave no answer")
            return
        applied = await self.apply_reply(reply)
        if applied is None:
            return
        await self.entered_stage(applied)

    async def entered_stage(self, applied: Applied) -> None:
        """A stage was entered (START_WORKFLOW / NEXT_STAGE): count the hop (D16), commit."""
        snap = applied.snapshot
        stage = snap.location.progress.stages.current
        if stage is None:
            await self.commit_applied(applied)
            return
        cap = self._hop_cap(snap)
        counted, verdict = count_stage_entry(snap, stage.id, cap)
        if isinstance(verdict, HopCapExceeded):
            failed = fire_event(snap, Event.FAIL, options=self.client_options())
            reason = verdict.error().message
            await self.commit(
                with_run(failed.snapshot, "failed", reason),
                records=[*applied.records, *failed.records],
                warnings=applied.warnings,
            )
            return
        visits = counted.stage_machine.visits[stage.id]
        current = stage.model_copy(update={"visits": visits})
        progress = counted.location.progress
        stages = progress.stages.model_copy(update={"current": current})
        location = counted.location.model_copy(
            update={"progress": progress.model_copy(update={"stages": stages})}
        )
        await self.commit_applied(
            applied, snapshot=counted.model_copy(update={"location": location})
        )

    def _hop_cap(self, snapshot: WorkflowSnapshot) -> int:
        if self.options.max_hops:
            return self.options.max_hops
        if snapshot.stage_machine.max_hops:
            return snapshot.stage_machine.max_hops
        stages = snapshot.location.progress.stages
        total = len(stages.completed) + len(stages.remaining) + (1 if stages.current else 0)
        return 10 * max(total, 1)

    async def _at_stage_running(self) -> None:
        reply = await self.ask("plan_steps", self.planner.plan_steps)
        if not reply:
            if reply is None:
                await self.fail_run("plan_steps: the planner gave no answer")
            return
        applied = await self.apply_reply(reply)
        if applied is not None:
            await self.commit_applied(applied)

    def _step_gaps(self) -> list[str]:
        snap = self.snapshot
        step = snap.location.progress.steps.current
        if step is None:
            return []
        return [g.variable for g in snap.gaps if g.level == "step" and g.owner_id == step.id]

    async def _at_step_running(self) -> None:
        gaps = self._step_gaps()
        if gaps and getattr(self.planner, "fail_steps_on_gaps", False):
            step_id = self.snapshot.location.current.step_id
            failed = fail_step(
                self.snapshot,
                f"step {step_id} cannot start: required variable(s) missing: {', '.join(gaps)}",
                options=self.client_options(),
            )
            await self.commit_applied(failed)
            return
        reply = await self.ask("plan_behavior", self.planner.plan_behavior)
        if reply is False:
            return
        if reply is None:
            await self.fail_run("plan_behavior: the planner gave no behavior at step_running")
            return
        applied = await self.apply_reply(reply)
        if applied is not None:
            await self.commit_applied(applied)

    async def _at_behavior_running(self) -> None:
        snap = self.snapshot
        if not snap.action_queue.actions and (snap.location.current.behavior_iteration or 0) > 1:
            replan = await self.ask("plan_behavior", self.planner.plan_behavior)
            if replan is False:
                return
            if replan is not None:
                replanned = await self.apply_reply(replan)
                if replanned is None:
                    return
                await self.commit_applied(replanned)
        reply = await self.ask("generate_actions", self.planner.generate_actions)
        if not reply:
            if reply is None:
                await self.fail_run("generate_actions: the planner gave no answer")
            return
        applied = await self.apply_reply(reply)
        if applied is not None:
            await self.commit_applied(applied)

    async def _at_action_completed(self) -> None:
        snap = self.snapshot
        queue = snap.action_queue
        if queue.index < len(queue.actions):
            await self.commit_applied(navigate(snap, options=self.client_options()))
            return
        snap = await self._behavior_checks(snap)
        applied = navigate(snap, options=self.client_options())
        await self.commit_applied(applied, kinds=frozenset({"behavior_end"}))
        await self.flush_notebook()

    async def flush_notebook(self) -> None:
        """Write the notebook now, with the store's chain heads in its metadata.

        ``metadata.notebook_bcc.anchor`` mirrors the tamper-evidence anchor outside the
        database at every flush (``trace --verify --anchor`` reads the same document), so
        rows cut from the end of a chain are caught even if the chain heads are rewritten.
        """
        try:
            mirror = await self.store.call(lambda s: s.chain_anchor())
        except Exception as exc:  # an anchor is a mirror: never a reason not to write
            log.warning("notebook-bcc: no anchor for the notebook: %s", exc)
        else:
            put_anchor(self.runtime.document.nb.metadata, mirror)
            self.runtime.writer.metadata_changed(self.runtime.document.nb.metadata)
        await self.runtime.flush()

    async def _behavior_checks(self, snap: WorkflowSnapshot) -> WorkflowSnapshot:
        """Variables probe and acceptance of the finished behavior (before its reflection)."""
        behavior = snap.location.progress.behaviors.current
        step = snap.location.progress.steps.current
        stage = snap.location.progress.stages.current
        wanted: list[str] = []
        if behavior is not None:
            wanted += list(behavior.outputs)
        if step is not None:
            wanted += list(step.verified_artifacts)
        if stage is not None:
            wanted += list(stage.verified_artifacts)
        report = await self.runtime.runner.probe(list(dict.fromkeys(wanted)))
        effects = snap.effects
        if report.error:
            effects = add_current(effects, [f"WARN: variables probe failed: {report.error}"])
            variables = dict(snap.variables)
        else:
            variables = {
                name: info for name, info in snap.variables.items() if info.source != "kernel"
            }
            variables.update(report.variables)
        acceptance = dict(snap.acceptance)
        if behavior is not None:
            results = await self.runtime.runner.acceptance(list(behavior.acceptance))
            acceptance[behavior.id] = results
        produced = [name for name, where in report.present.items() if where is not None]
        draft = Draft(snap, "probe", self.client_options())
        propagate_produced(draft, produced)
        snap = draft.snapshot
        metrics = snap.metrics.model_copy(update={"acceptance_pass_rate": _pass_rate(acceptance)})
        return snap.model_copy(
            update={
                "variables": variables,
                "acceptance": acceptance,
                "effects": effects,
                "metrics": metrics,
            }
        )

    def behavior_feedback(self) -> dict[str, Any]:
        """``behavior_feedback`` of PROTOCOL-NOTES for the behavior that just finished."""
        queue = self.snapshot.action_queue
        return {
            "behavior_id": queue.behavior_id,
            "actions_executed": queue.executed,
            "actions_succeeded": queue.succeeded,
            "sections_added": queue.sections_added,
            "last_action_result": queue.last_result,
        }

    def _iteration_cap(self) -> int:
        """D15 cap for the current behavior: its own ``max_iterations`` when it has one."""
        behaviors = self.snapshot.location.progress.behaviors
        current = behaviors.current
        own = None
        if current is not None:
            own = (current.extra.get("attrs") or {}).get("max_iterations")
        if own is None or not str(own).isdigit() or current is None:
            return self.options.max_iterations
        attempts = 1 + sum(1 for done in behaviors.completed if done.id == current.id)
        base = (behaviors.iteration or 1) - attempts
        return base + int(str(own))

    async def _at_behavior_completed(self) -> None:
        reply = await self.ask(
            "reflect_behavior", self.planner.reflect_behavior, feedback=self.behavior_feedback()
        )
        if not reply:
            if reply is None:
                await self.fail_run("reflect_behavior: the planner gave no answer")
            return
        applied = await self.apply_reply(reply, max_iterations=self._iteration_cap())
        if applied is None:
            return
        await self.actions.run_reply_actions(applied)

    async def _at_step_completed(self) -> None:
        snap = self.snapshot
        steps = snap.location.progress.steps
        stage = snap.location.progress.stages.current
        if not steps.remaining and stage is not None and stage.acceptance:
            key = f"stage:{stage.id}"
            results = await self.runtime.runner.acceptance(list(stage.acceptance))
            acceptance = {**snap.acceptance, key: results}
            self.snapshot = snap.model_copy(update={"acceptance": acceptance})
        reply = await self.ask("reflect_stage", self.planner.reflect_stage)
        if not reply:
            if reply is None:
                await self.fail_run("reflect_stage: the planner gave no answer")
            return
        applied = await self.apply_reply(reply)
        if applied is None:
            return
        await self.actions.run_reply_actions(applied)

    async def _at_stage_completed(self) -> None:
        decided = self.snapshot.stage_machine.decided
        request = PlannerRequest("route_stage", self.snapshot, {}, None)
        try:
            route = await self.planner.route_stage(request, decided=decided)
        except (WhenEvaluationError, PlannerError) as exc:
            await self.fail_run(f"stage routing: {exc.message}")
            return
        if decided is not None:
            machine = self.snapshot.stage_machine.model_copy(update={"decided": None})
            self.snapshot = self.snapshot.model_copy(update={"stage_machine": machine})
        await self.follow_route(route)

    async def follow_route(self, route: StageRoute) -> None:
        """Act on a stage route: confirm (pause), end, or enter the next stage."""
        snap = self.snapshot
        warnings = list(route.warnings)
        stage = snap.location.progress.stages.current
        stage_id = stage.id if stage is not None else "?"
        if route.outcome == "pause":
            await self.actions.ask_stage_confirmation(stage_id, route)
            return
        detail = {"stage": stage_id, "outcome": route.outcome, "rule": route.rule}
        if route.target is None:
            if route.failed:
                end = f" in end state {route.end_state!r}" if route.end_state else ""
                cause = await failure_cause(self)
                because = f": {cause}" if cause else ""
                machine = snap.stage_machine.model_copy(
                    update={"current_state": route.end_state or "failed"}
                )
                snap = snap.model_copy(update={"stage_machine": machine})
                await self.commit(
                    with_run(
                        snap,
                        "failed",
                        f"stage {stage_id} failed{because}; the workflow ended{end}",
                    ),
                    events=[
                        EventDraft("run", event="route", detail={**detail, "end": route.end_state})
                    ],
                    warnings=warnings,
                )
                return
            applied = end_workflow(snap, options=self.client_options())
            machine = applied.snapshot.stage_machine.model_copy(
                update={"current_state": route.end_state}
            )
            await self.commit_applied(
                applied,
                snapshot=applied.snapshot.model_copy(update={"stage_machine": machine}),
                events=[
                    EventDraft("run", event="route", detail={**detail, "end": route.end_state})
                ],
            )
            return
        item = self._stage_item(route.target)
        if item is None:
            await self.fail_run(f"stage routing: no stage {route.target!r} in the plan")
            return
        visits = snap.stage_machine.visits.get(item.id, 0) + 1
        applied = enter_stage(snap, item, visits=visits, options=self.client_options())
        applied = applied.model_copy(update={"warnings": [*applied.warnings, *warnings]})
        self.snapshot = snap
        await self.entered_stage(applied)

    def _stage_item(self, stage_id: str) -> PlanItem | None:
        progress = self.snapshot.location.progress.stages
        for item in [
            *progress.remaining,
            *progress.completed,
            *([progress.current] if progress.current else []),
        ]:
            if item.id == stage_id:
                return item
        maker = getattr(self.planner, "stage_item", None)
        if maker is not None:
            made: PlanItem = maker(stage_id)
            return made
        return None

    async def _at_error(self) -> None:
        reason = self.snapshot.run.reason or "the workflow is in error"
        await self.fail_run(reason)

    async def _at_update_pending(self) -> None:
        pending = [p for p in self.snapshot.run.pending if p.kind in UPDATE_EVENTS]
        if pending and self.options.auto_confirm:
            await self.decide(pending[0].id, "approve", actor="auto-confirm")
            return
        await self.commit(
            with_run(self.snapshot, "waiting", "waiting for a human to confirm an update")
        )

    # -- human decisions and commands (D2, D3) --------------------------------------------

    async def take_commands(self) -> None:
        """Apply commands queued in the store by other processes (``notebook-bcc cancel``).

        Polled at most every :data:`INBOX_POLL_S` seconds: a safe point comes often, a query
        per transition would cost a store round trip each.
        """
        now = monotonic()
        if now < self._next_inbox_poll:
            return
        self._next_inbox_poll = now + INBOX_POLL_S
        queued = await self.store.call(lambda s: s.open_commands(self.snapshot.workflow_id))
        for command_id, body in queued:
            try:
                await self._apply_command(parse_command(body))
                outcome = "applied"
            except NotebookBccError as exc:
                outcome = f"refused: {exc.message}"
            await self.store.call(partial(_finish_command, command_id=command_id, outcome=outcome))

    async def command(
        self, body: dict[str, Any], *, check_version: bool = True
    ) -> WorkflowSnapshot:
        """Apply a D3 command; a stale ``expected_version`` raises VersionConflictError.

        Commands apply between transitions, never inside one: this waits for the step in
        progress (a running cell finishes first). The version is checked when the command
        arrives; decisions and FSM events are checked again once the step ended, while
        ``pause``, ``run`` and ``CANCEL`` — which mean "stop / go on with whatever you are
        doing" — are not, or they could never win against a running loop.
        """
        command = parse_command(body)
        if check_version:
            self._check_version(command.expected_version)
        async with self.lock:
            loose = (isinstance(command, ActionCommand) and command.action in ("run", "pause")) or (
                isinstance(command, EventCommand) and command.event is Event.CANCEL
            )
            if check_version and not loose:
                self._check_version(command.expected_version)
            await self._apply_command(command)
            return self.snapshot

    def _check_version(self, expected: int) -> None:
        if expected != self.snapshot.version:
            raise VersionConflictError(self.snapshot.workflow_id, expected, self.snapshot)

    async def _apply_command(self, command: EventCommand | DecideCommand | ActionCommand) -> None:
        if isinstance(command, DecideCommand):
            await self.decide(command.decide, command.decision, actor="human")
        elif isinstance(command, ActionCommand):
            state = self.snapshot.fsm.state
            if state in (State.WORKFLOW_COMPLETED, State.CANCELLED):
                raise NotebookBccError(
                    f"nothing to {command.action}: the workflow is {state.value}",
                    details={"state": state.value},
                )
            if command.action == "pause":
                await self.commit(with_run(self.snapshot, "paused", "paused by a human"))
            elif command.action == "retry":
                await retry(self, actor="human")
            elif command.action == "restart":
                await restart_run(self, actor="human")
            elif self.snapshot.run.pending:
                # Decisions still wait: ``run`` goes back to waiting on them, never past them
                # (the loop would otherwise ask the same question again, a second decision).
                if self.snapshot.run.status != "waiting":
                    first = self.snapshot.run.pending[0]
                    await self.commit(with_run(self.snapshot, "waiting", first.message))
            elif self.snapshot.run.status in ("paused", "interrupted", "failed"):
                await self.commit(with_run(self.snapshot, "running"))
        else:
            await self.human_event(command.event)

    async def human_event(self, event: Event) -> None:
        """A human FSM event (CANCEL, RESET, restart / retry from error, updates)."""
        snap = self.snapshot
        for kind, (_, confirm, reject) in UPDATE_EVENTS.items():
            if event in (confirm, reject):
                pending = [p for p in snap.run.pending if p.kind == kind]
                if not pending:
                    raise NotebookBccError(f"no pending {kind} to answer with {event.value}")
                await self.decide(pending[0].id, "approve" if event is confirm else "reject")
                return
        applied = fire_event(snap, event, options=HUMAN_OPTIONS)
        after = applied.snapshot
        if event is Event.CANCEL:
            after = with_run(after, "cancelled", "cancelled by a human")
            after = after.model_copy(update={"run": after.run.model_copy(update={"pending": []})})
        elif event is Event.RESET:
            machine = after.stage_machine.model_copy(
                update={"hops": 0, "decided": None, "resume_state": None, "current_state": None}
            )
            after = with_run(after, "running", None).model_copy(
                update={
                    "run_id": uuid.uuid4().hex[:12],
                    "action_queue": type(after.action_queue)(),
                    "stage_machine": machine,
                }
            )
            after = after.model_copy(update={"run": after.run.model_copy(update={"pending": []})})
        else:
            after = with_run(after, "running", None)
        await self.commit_applied(applied, snapshot=after, kinds=frozenset({"decision"}))

    async def decide(
        self, decision_id: str, decision: Literal["approve", "reject"], *, actor: str = "human"
    ) -> None:
        """Answer a pending decision (D2) the way D3 says for its kind."""
        pending = next((p for p in self.snapshot.run.pending if p.id == decision_id), None)
        if pending is None:
            raise DecisionGoneError(decision_id, self.snapshot)
        rebuild = next((p for p in self.snapshot.run.pending if p.kind == "kernel_rebuild"), None)
        if rebuild is not None and pending.kind not in ("kernel_rebuild", "in_doubt"):
            # D11 (revised): nothing is decided while the kernel lacks the state the decision
            # builds on. The replay is tried once more first (a human answering in a new
            # process never asked for an empty kernel); if it fails again, the human must
            # answer the kernel decision before this one.
            await self.recovery.answer_rebuild(rebuild, "approve", actor)
            again = next((p for p in self.snapshot.run.pending if p.kind == "kernel_rebuild"), None)
            if again is not None:
                raise NotebookBccError(
                    f"answer {again.id} first: the kernel has not been restored ({again.message})",
                    details={"blocked_by": again.id, "decision": decision_id},
                )
        if pending.kind in UPDATE_EVENTS:
            await self._decide_update(pending, decision, actor)
        elif pending.kind == "stage_confirmation":
            await self.actions.answer_stage_confirmation(pending, decision, actor)
        elif pending.kind == "irreversible_confirmation":
            await self.actions.answer_contract_decision(pending, decision, actor)
        elif pending.kind == "in_doubt":
            await self.actions.answer_in_doubt(pending, decision, actor)
        elif pending.kind == "kernel_rebuild":
            await self.recovery.answer_rebuild(pending, decision, actor)
        elif pending.kind == "budget":
            await answer_budget(self, pending, decision, actor)
        else:
            raise NotebookBccError(f"decisions of kind {pending.kind} are not supported here")

    async def _decide_update(
        self, pending: PendingDecision, decision: Literal["approve", "reject"], actor: str
    ) -> None:
        snap = self.snapshot
        _, confirm, reject = UPDATE_EVENTS[pending.kind]
        options = ApplyOptions(actor=actor)
        applied = (
            approve_update(snap, pending.id, options=options)
            if decision == "approve"
            else reject_update(snap, pending.id, options=options)
        )
        after = applied.snapshot
        records: list[HistoryEntry | TraceRecord] = list(applied.records)
        if after.fsm.state in (State.WORKFLOW_UPDATE_PENDING, State.STEP_UPDATE_PENDING):
            fired = fire_event(after, confirm if decision == "approve" else reject, options=options)
            after = fired.snapshot
            records += fired.records
        after = drop_pending(after, pending.id)
        status: RunStatus = "failed" if after.fsm.state is State.ERROR else "running"
        reason = f"{pending.kind} rejected" if status == "failed" else None
        await self.commit(
            with_run(after, status, reason),
            records=records,
            events=[_decision_event(pending, decision, actor=actor, diff=applied.diff)],
            kinds=frozenset({"decision"}),
            warnings=applied.warnings,
        )

    async def park_updates(self) -> bool:
        """D18: at action_running, fire the event that parks a pending update; True if one did."""
        snap = self.snapshot
        for pending in snap.run.pending:
            if pending.kind not in UPDATE_EVENTS:
                continue
            park, _, _ = UPDATE_EVENTS[pending.kind]
            applied = fire_event(snap, park, options=self.client_options())
            waiting = with_run(applied.snapshot, "waiting", pending.message)
            if self.options.auto_confirm:
                waiting = applied.snapshot
            await self.commit_applied(applied, snapshot=waiting, kinds=frozenset({"decision"}))
            return True
        return False

    def new_decision(
        self,
        kind: str,
        message: str,
        details: dict[str, Any],
    ) -> tuple[WorkflowSnapshot, PendingDecision]:
        """A pending decision added to the current snapshot (not committed)."""
        decision_id = f"{kind}-{uuid.uuid4().hex[:8]}"
        return add_pending(self.snapshot, decision_id, kind, message, details)  # type: ignore[arg-type]

    async def contract_step(
        self,
        contract: ExecutionContract,
        trigger: str,
        *,
        actor: str,
        result: str | None = None,
        error_message: str | None = None,
    ) -> tuple[ExecutionContract, list[TraceRecord]]:
        """One contract transition (pure; the caller commits)."""
        return fire(contract, trigger, actor=actor, result=result, error_message=error_message)

    def new_contract(
        self,
        action_type: Literal["cell_execution", "confirmation", "replay"],
        detail: dict[str, Any],
        *,
        irreversible: bool = False,
        key: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> tuple[ExecutionContract, list[TraceRecord]]:
        """A PENDING contract scoped to this workflow and run (pure; the caller commits)."""
        snap = self.snapshot
        return create_contract(
            f"c-{uuid.uuid4().hex[:12]}",
            action_type,
            detail,
            irreversible=irreversible,
            idempotency_key=key,
            timeout_seconds=self.options.cell_timeout,
            workflow_id=snap.workflow_id,
            run_id=snap.run_id,
            metadata=metadata,
        )

    def note_code(self, source: str, snapshot: WorkflowSnapshot) -> WorkflowSnapshot:
        """D20 PCS signals the kernel can observe cheaply, from executed code."""
        pcs = snapshot.metrics.pcs
        update: dict[str, bool] = {}
        if not pcs.seeds_set and _SEED_PATTERN.search(source):
            update["seeds_set"] = True
        if not pcs.library_versions_recorded and _VERSION_PATTERN.search(source):
            update["library_versions_recorded"] = True
        if not pcs.holdout_split and _SPLIT_PATTERN.search(source):
            update["holdout_split"] = True
        if not update:
            return snapshot
        metrics = snapshot.metrics.model_copy(update={"pcs": pcs.model_copy(update=update)})
        return snapshot.model_copy(update={"metrics": metrics})

    def archive_effects(self, snapshot: WorkflowSnapshot) -> WorkflowSnapshot:
        """D12: ``comment_result`` moves current effects to history."""
        effects = archive_current(snapshot.effects, self.options.effects_history_cap)
        return snapshot.model_copy(update={"effects": effects})

    def merge_variables(
        self, snapshot: WorkflowSnapshot, variables: dict[str, VariableInfo]
    ) -> WorkflowSnapshot:
        """Kernel variables merged into the snapshot."""
        return snapshot.model_copy(update={"variables": {**snapshot.variables, **variables}})


def _finish_command(store: SqliteStore, *, command_id: int, outcome: str) -> None:
    store.finish_command(command_id, outcome)


def _pass_rate(acceptance: dict[str, dict[str, AcceptanceResult]]) -> float | None:
    results = [r for group in acceptance.values() for r in group.values()]
    if not results:
        return None
    return round(sum(1 for r in results if r.status == "passed") / len(results), 4)


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


__all__ = ["Engine", "RunResult", "exit_code_for", "owner_tag", "utc_now_iso"]
