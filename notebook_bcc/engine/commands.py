"""Human commands and decisions (D2, D3): the inbox, D3 commands, pending decisions.

Commands apply between transitions, never inside one; each decision is answered the way D3
says for its kind, and committed like any other change.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from functools import partial
from time import monotonic
from typing import TYPE_CHECKING, Any, Literal

from notebook_bcc.engine import lost_state
from notebook_bcc.engine.budget import answer_budget
from notebook_bcc.engine.committing import _decision_event
from notebook_bcc.engine.decisions import DecisionGoneError
from notebook_bcc.engine.host import StepEnded
from notebook_bcc.engine.retry import restart_run, retry
from notebook_bcc.engine.routing import (
    add_pending,
    drop_pending,
    fire_event,
    with_run,
)
from notebook_bcc.errors import NotebookBccError
from notebook_bcc.fsm.contract import create_contract, fire
from notebook_bcc.fsm.workflow import can_fire
from notebook_bcc.models.command import ActionCommand, DecideCommand, EventCommand, parse_command
from notebook_bcc.models.contract import ExecutionContract
from notebook_bcc.models.names import Event, State
from notebook_bcc.models.records import HistoryEntry, TraceRecord
from notebook_bcc.models.snapshot import (
    PendingDecision,
    RunStatus,
    VariableInfo,
    WorkflowSnapshot,
)
from notebook_bcc.store.errors import VersionConflictError
from notebook_bcc.store.sqlite import SqliteStore
from notebook_bcc.workflow import (
    ApplyOptions,
    approve_update,
    reject_update,
)
from notebook_bcc.workflow.effects import archive_current
from notebook_bcc.workflow.result import HUMAN_OPTIONS

if TYPE_CHECKING:
    from notebook_bcc.engine.host import EngineRooms

    _Rooms = EngineRooms
else:
    _Rooms = object

INBOX_POLL_S = 0.2
"""How often the loop looks for commands queued by other processes (seconds)."""

RESEND_GRACE_S = 0.5
"""After a command is refused for a stale version, how long the run loop waits (lock free)
before its next step, so that the sender's resend against the current state lands."""

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


class Commands(_Rooms):
    """Commands and decisions (a room of :class:`~notebook_bcc.engine.engine.Engine`)."""

    _next_inbox_poll: float
    resend_grace_until: float
    _commands_waiting: int
    _stop_asking: asyncio.Event
    """Set while a stop (Ctrl-C, ``pause``, CANCEL) waits: a planner call in flight is then
    dropped at once (a safe point) instead of holding the stop until it answers."""

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
        cancel = isinstance(command, EventCommand) and command.event is Event.CANCEL
        pause = isinstance(command, ActionCommand) and command.action == "pause"
        # a stop that will apply drops a planner call in flight; a refused one must not (the
        # call would be asked, and paid for, again)
        stops = (cancel and can_fire(self.snapshot.fsm.state, Event.CANCEL)) or pause
        if stops:
            self._stop_asking.set()
        self._commands_waiting += 1
        try:
            await self.lock.acquire()
        finally:
            self._commands_waiting -= 1
        try:
            loose = cancel or (isinstance(command, ActionCommand) and command.action == "run")
            if check_version and not (loose or stops):
                self._check_version(command.expected_version)
            await self._apply_command(command)
            return self.snapshot
        finally:
            if stops and not self.interrupt_requested:
                self._stop_asking.clear()
            self.lock.release()

    def may_carry_on(self) -> bool:
        """Whether the loop may go on to the next action with no safe point in between (its
        commit then carries this one's outcome): no command waits, no inbox poll is due, no
        Ctrl-C was asked for, no stale command's sender is about to resend. Otherwise the step
        ends at a commit, and commands apply."""
        now = monotonic()
        return (
            not self.interrupt_requested
            and self._commands_waiting == 0
            and now < self._next_inbox_poll
            and now >= self.resend_grace_until
        )

    def _check_version(self, expected: int) -> None:
        if expected != self.snapshot.version:
            # the sender saw an older state (typically: it acted while a cell ran, and the
            # cell's outcome was committed first); give its resend against the state it gets
            # back a moment to land before the loop moves on (a cancel of the last cell
            # must not lose the race against the end of the workflow)
            self.resend_grace_until = monotonic() + RESEND_GRACE_S
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
                await restart_run(self, actor="human", fresh_kernel=True)
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
        lost = lost_state.pending_decision(self)
        if lost is not None and pending.kind not in (lost_state.KIND, "in_doubt", "kernel_rebuild"):
            raise NotebookBccError(
                f"answer {lost.id} first: the kernel lacks an irreversible cell's state",
                details={"blocked_by": lost.id, "decision": decision_id},
            )
        try:
            await self._answer_kind(pending, decision, actor)
        except StepEnded:
            return  # the run failed and says why (a store altered behind its back)

    async def answer_delegated(self) -> int:
        """With ``auto_confirm``: answer the decisions already pending the way auto-confirm
        answers them when they arise (a run started without it, or stopped before it could):
        approve what a human may delegate (D3); the lost state of an irreversible cell is
        answered "continue without"; an in-doubt action and a budget are left to a human.
        Returns how many were answered."""
        if not self.options.auto_confirm:
            return 0
        # each decision pending now, once (one that arises meanwhile is answered by the engine
        # as it arises; a rebuild that fails again asks anew and must not loop here)
        asked = {p.id for p in self.snapshot.run.pending}
        answered = 0
        while True:
            pending = [p for p in self.snapshot.run.pending if p.id in asked]
            if any(p.kind == "in_doubt" for p in self.snapshot.run.pending) and not any(
                p.kind == lost_state.KIND for p in pending
            ):
                return answered  # the other decisions build on what a human says there
            lost = [p for p in pending if p.kind == lost_state.KIND]
            rebuild = [p for p in pending if p.kind == "kernel_rebuild"]
            delegable = [p for p in pending if p.kind in AUTO_CONFIRMABLE]
            if lost:
                chosen, answer = lost[0], "reject"
            elif delegable:
                chosen, answer = (rebuild or delegable)[0], "approve"
            else:
                return answered
            asked.discard(chosen.id)
            await self.decide(chosen.id, answer, actor="auto-confirm")  # type: ignore[arg-type]
            answered += 1

    async def _answer_kind(
        self, pending: PendingDecision, decision: Literal["approve", "reject"], actor: str
    ) -> None:
        """:meth:`decide` once the decision may be answered: per its kind."""
        decision_id = pending.id
        rebuild = next((p for p in self.snapshot.run.pending if p.kind == "kernel_rebuild"), None)
        if rebuild is not None and pending.kind not in (
            "kernel_rebuild",
            "in_doubt",
            lost_state.KIND,
        ):
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
        elif pending.kind == lost_state.KIND:
            await lost_state.answer(self, pending, decision, actor)
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
