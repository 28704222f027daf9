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
import contextlib
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from time import monotonic
from typing import Any, Literal

from notebook_bcc.engine.actions import ActionExecutor
from notebook_bcc.engine.budget import stop_for_budget
from notebook_bcc.engine.commands import Commands
from notebook_bcc.engine.committing import Committer, Listener, Staged
from notebook_bcc.engine.exchanges import UNLOGGED_KINDS, log_exchanges
from notebook_bcc.engine.host import StepEnded
from notebook_bcc.engine.moves import Moves
from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.engine.recovery import Recovery
from notebook_bcc.engine.routing import (
    fire_event,
    with_run,
)
from notebook_bcc.engine.runtime import KernelRuntime
from notebook_bcc.fsm.expressions import WhenEvaluationError
from notebook_bcc.fsm.workflow import can_fire
from notebook_bcc.kernel.errors import NotebookWriteError
from notebook_bcc.models.base import utc_now_iso
from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.models.names import Event, State
from notebook_bcc.models.records import TraceRecord
from notebook_bcc.models.snapshot import (
    UsageTotals,
    WorkflowSnapshot,
)
from notebook_bcc.planners.base import (
    DecisionPoint,
    Planner,
    PlannerError,
    PlannerReply,
    PlannerRequest,
)
from notebook_bcc.protocol.errors import ProtocolError
from notebook_bcc.store.async_store import AsyncStore
from notebook_bcc.workflow import (
    Applied,
    ApplyError,
    ApplyOptions,
    apply_payload,
    build_observation,
)

log = logging.getLogger(__name__)


STOP_STATUSES = frozenset({"waiting", "paused", "failed", "completed", "cancelled", "interrupted"})
"""Run statuses at which the loop stops and hands back to its caller."""


@dataclass(frozen=True)
class RunResult:
    """How a call to :meth:`Engine.run` ended."""

    snapshot: WorkflowSnapshot
    exit_code: int
    cells: int
    duration_s: float
    raised: int = 0
    """Workflow code cells of the notebook whose outputs hold an error (an AI planner may go
    on past a cell that raised, and the run still completes)."""


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


class Engine(Moves, Commands, Committer):
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
        self.snapshot: WorkflowSnapshot = snapshot
        self.runtime = runtime
        self.options = options
        self.listeners: list[Listener] = []
        self.holding_stops = False
        self.held_events: list[WorkflowEvent] | None = None
        """Events of a stop held back until the run's notebook write (see :meth:`run`)."""
        self.stops_released = asyncio.Event()
        """Set while no stop is held back (see :meth:`stop_published`)."""
        self.stops_released.set()
        self.staged: Staged | None = None
        """Moves applied but not committed yet (see :mod:`.committing`)."""
        self.folds_boundaries = planner.kind in UNLOGGED_KINDS
        """Whether a boundary's automatic transitions may share one commit: the planner's
        answers are re-derivable from the snapshot (see :mod:`.committing`)."""
        self.actions = ActionExecutor(self)
        self.recovery = Recovery(self)
        self.kernel_started = False
        self._interrupt_requested = False
        self._interrupt_reason = "interrupted by a signal"
        self._stop_asking = asyncio.Event()
        self.lock = asyncio.Lock()
        """Held by the loop for each step and by each command: one writer at a time."""
        self._next_inbox_poll: float = 0.0
        self.resend_grace_until = 0.0
        """Until when the loop waits between steps after a stale command (commands.py)."""
        self._commands_waiting = 0
        """Commands waiting for :attr:`lock` (the loop then ends its step at a commit)."""

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

    # -- the loop -------------------------------------------------------------------------

    def request_interrupt(self, reason: str = "interrupted by a signal") -> None:
        """Ctrl-C / SIGTERM, a server shutting down or a workflow deleted: stop at the next
        safe point, the run ``interrupted`` (D1) with ``reason``."""
        self._interrupt_reason = reason
        self._interrupt_requested = True
        self._stop_asking.set()

    @property
    def interrupt_requested(self) -> bool:
        """Whether Ctrl-C / SIGTERM asked the loop to stop at its next safe point."""
        return self._interrupt_requested

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
        self.hold_stop_events()
        try:
            if self.snapshot.run.status != "running" and not self.snapshot.run.pending:
                await self.commit(with_run(self.snapshot, "running"))
            async with self.lock:
                await self._ensure_kernel()
            while True:
                grace = self.resend_grace_until - monotonic()
                if grace > 0:  # a stale command's sender resends (see commands.RESEND_GRACE_S)
                    await asyncio.sleep(grace)
                async with self.lock:
                    await self.take_commands()
                    if self._interrupt_requested:
                        await self.commit(
                            with_run(self.snapshot, "interrupted", self._interrupt_reason)
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
                await self.commit_staged()
                await self.flush_notebook()
            except NotebookWriteError as exc:
                write_error = exc
            finally:
                self.release_held_events()
            await self.store.call(lambda s: s.set_owner(self.snapshot.workflow_id, None))
        if write_error is not None and self.snapshot.run.status != "failed":
            # D1: a notebook write error fails the run, the FSM stays; resume writes it again
            await self.fail_run(notebook_write_failure(write_error))
        document = self.runtime.document.cells
        raised = sum(
            1
            for cell in document
            if cell.get("cell_type") == "code"
            and (cell.get("metadata") or {}).get("notebook_bcc")
            and any(o.get("output_type") == "error" for o in cell.get("outputs") or [])
        )
        return RunResult(
            self.snapshot, exit_code_for(self.snapshot), len(document), monotonic() - began, raised
        )

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
        try:
            await handler()
        except StepEnded:
            return  # the failure is committed; the loop looks at the run status next

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

    def observation(self, snapshot: WorkflowSnapshot | None = None) -> dict[str, Any]:
        """The observation planners receive (D21; the engine keeps the notebook digest), of
        ``snapshot`` (default: the current one)."""
        fmt: Literal["state", "context"] = (
            "context" if self.options.observation_format == "context" else "state"
        )
        return build_observation(
            snapshot or self.snapshot, fmt=fmt, cells=self.runtime.collector.digest
        )

    async def ask(
        self,
        point: DecisionPoint,
        call: Callable[[PlannerRequest], Awaitable[PlannerReply | None]],
        *,
        feedback: dict[str, Any] | None = None,
    ) -> PlannerReply | None:
        """Ask the planner; its reply, or None when it had no answer here.

        Raises :class:`StepEnded` when the step cannot go on: the planner failed (the run is
        then failed or FAILed) or a budget stopped it (the run is then waiting).
        """
        if await stop_for_budget(self, point):
            raise StepEnded(f"{point}: stopped by the planner budget")
        snapshot = self.snapshot
        request = PlannerRequest(point, snapshot, lambda: self.observation(snapshot), feedback)
        began = monotonic()
        try:
            reply = await self._unless_stopped(point, call(request))
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
            raise StepEnded(f"{point}: the step ended") from exc
        except PlannerError as exc:
            if exc.usage is not None:  # the unusable replies were paid for: count them
                self._usage(exc.usage, (monotonic() - began) * 1000)
            await self.fail_run(f"{point}: planner failed: {exc.message}")
            raise StepEnded(f"{point}: the step ended") from exc
        except WhenEvaluationError as exc:
            await self.fail_run(f"{point}: {exc.message}")
            raise StepEnded(f"{point}: the step ended") from exc
        except StepEnded:
            raise
        except Exception as exc:
            # not a planner error the planner meant (a transport's odd failure, a bug): the
            # run fails with what happened instead of staying 'running' with no one driving it
            log.exception("%s: the planner raised", point)
            await self.fail_run(
                f"{point}: planner failed unexpectedly: {type(exc).__name__}: {exc}"
            )
            raise StepEnded(f"{point}: the step ended") from exc
        self._usage(reply.usage if reply else None, (monotonic() - began) * 1000)
        return reply

    async def _unless_stopped(
        self, point: DecisionPoint, asking: Awaitable[PlannerReply | None]
    ) -> PlannerReply | None:
        """``asking``'s reply, or :class:`StepEnded` when a stop comes first (Ctrl-C /
        SIGTERM, or a ``pause`` or CANCEL command): a planner call is a safe point (nothing
        of its turn is committed yet), so it is dropped; the loop then records the run
        ``interrupted`` (or the command applies), and the next run asks again. A slow or
        rate-limited planner no longer holds a stop for minutes."""
        task = asyncio.ensure_future(asking)
        if not self._stop_asking.is_set():
            stop = asyncio.ensure_future(self._stop_asking.wait())
            try:
                await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
            except BaseException:  # the run itself was cancelled: leave no call behind
                task.cancel()
                raise
            finally:
                stop.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
                raise StepEnded(f"{point}: stopped while the planner was answering")
        return await task

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
    ) -> Applied:
        """Apply a planner's payload; a payload illegal here is a protocol failure (D1),
        committed, then :class:`StepEnded` is raised."""
        try:
            return apply_payload(
                self.snapshot,
                reply.payload,
                max_iterations=max_iterations or self.options.max_iterations,
                effects_history_cap=self.options.effects_history_cap,
            )
        except ApplyError as exc:
            await self.protocol_failure(exc.message)
            raise StepEnded(exc.message) from exc


__all__ = ["Engine", "RunResult", "exit_code_for", "owner_tag", "utc_now_iso"]
