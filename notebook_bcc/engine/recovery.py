"""Resuming a stored workflow after a crash, a kill or a stop (D1, D7, D11).

Before the loop continues, :meth:`Recovery.prepare`:
1. settles contracts found RUNNING: a reversible one is FAILED (actor ``recovery``, reason
   "interrupted") and its action runs again under a new contract; an irreversible one is
   suspended to WAITING as an ``in_doubt`` decision — never re-run automatically;
2. restores kernel state: a live kernel is reattached; otherwise a ``kernel_rebuild``
   decision (approved at once with ``--auto-confirm``) re-executes the completed reversible code
   cells silently, in order, as ``replay`` contracts (outputs not written back, no effects);
   irreversible cells are never replayed: one that bound names raises a ``lost_state``
   decision (see :mod:`notebook_bcc.engine.lost_state`), others are skipped with a WARN effect;
3. an FSM in ``error`` retries the failed behavior (START_BEHAVIOR), or restarts the workflow
   with ``restart`` (the planner's stages again, a new run).
"""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING, Any, Literal

from notebook_bcc.engine import lost_state
from notebook_bcc.engine.actions import INPUTS_PATH
from notebook_bcc.engine.host import StepEnded
from notebook_bcc.engine.retry import can_retry, restart_run, retry
from notebook_bcc.engine.routing import add_pending, drop_pending, fire_event, with_run
from notebook_bcc.engine.store_trust import ensure_unaltered
from notebook_bcc.errors import NotebookBccError
from notebook_bcc.fsm.contract import fire
from notebook_bcc.models.contract import ExecutionContract, ExecutionStatus
from notebook_bcc.models.names import Event
from notebook_bcc.models.records import HistoryEntry, TraceRecord
from notebook_bcc.models.snapshot import ActionQueue, PendingDecision, WorkflowSnapshot
from notebook_bcc.store.sqlite import CellRow, EventDraft
from notebook_bcc.workflow.effects import add_current

if TYPE_CHECKING:
    from notebook_bcc.engine.host import EngineHost

REPLAY_TIMEOUT = 600.0
"""Seconds one replayed cell may take when no cell timeout is configured."""


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


class Recovery:
    """Brings a stored workflow back to a state the loop can continue from."""

    def __init__(self, engine: EngineHost) -> None:
        self.engine = engine
        self.replaying: tuple[int, int] | None = None
        """While :meth:`rebuild` replays cells: (cells replayed so far, cells to replay), so
        that what a Ctrl-C waits for can be said."""

    async def prepare(self, *, kernel_alive: bool = False, restart: bool = False) -> None:
        """Settle contracts, restore the kernel, leave error (see the module docstring)."""
        engine = self.engine
        await engine.runtime.start()
        engine.kernel_started = True
        inputs_ran = False
        if not await engine.actions.inputs_done():
            await engine.actions.inputs_cell()
            inputs_ran = True
        await self._settle_running()
        snap = engine.snapshot
        anew = restart and can_retry(snap) and not self._blocking(snap)
        if anew and not kernel_alive:
            # starting over in this process's new kernel: nothing of the failed attempt is
            # rebuilt into it (its counters and models would leak into the new run), only the
            # inputs the new run starts from
            if not inputs_ran:
                await engine.actions.inputs_cell()
        else:
            if not kernel_alive:
                await self._kernel_state()
            await self._inputs_again()
        snap = engine.snapshot
        if can_retry(snap) and not self._blocking(snap):
            if restart:
                await restart_run(engine, actor="human")
            else:
                await retry(engine, actor="human")

    async def _inputs_again(self) -> None:
        """An inputs cell started but never completed (killed mid-run): run it again (D11).

        It runs before the loop, outside the action queue, so settling its contract FAILED
        would otherwise leave ``user_problem`` / ``user_submit_files`` undefined for good.
        """
        engine = self.engine
        workflow_id = engine.snapshot.workflow_id
        key = INPUTS_PATH.key
        started = [
            c
            for c in await engine.store.call(lambda s: s.contracts(workflow_id))
            if c.action_type == "cell_execution" and c.metadata.get("path") == key
        ]
        if started and not any(c.status is ExecutionStatus.COMPLETED for c in started):
            await engine.actions.inputs_cell()

    @staticmethod
    def _blocking(snapshot: WorkflowSnapshot) -> bool:
        blocking = ("in_doubt", "kernel_rebuild", lost_state.KIND)
        return any(p.kind in blocking for p in snapshot.run.pending)

    async def _settle_running(self) -> None:
        engine = self.engine
        snap = engine.snapshot
        running = await engine.store.call(
            lambda s: s.contracts(snap.workflow_id, statuses=[ExecutionStatus.RUNNING])
        )
        if not running:
            return
        records: list[HistoryEntry | TraceRecord] = []
        settled: list[ExecutionContract] = []
        events: list[EventDraft] = []
        for contract in running:
            if contract.action_type == "cell_execution" and contract.irreversible:
                waiting, more = fire(contract, "suspend", actor="recovery")
                records += more
                settled.append(waiting)
                path = contract.metadata.get("path")
                snap, decision = add_pending(
                    snap,
                    f"in_doubt-{uuid.uuid4().hex[:8]}",
                    "in_doubt",
                    f"The irreversible action at {path} was running when the process stopped: "
                    "did it happen? Approve if it did NOT (it runs now); reject if it did "
                    "(it is not repeated).",
                    {
                        "contract_id": contract.execution_id,
                        "path": path,
                        "cell_id": contract.metadata.get("cell_id"),
                        "code": contract.action_detail.get("code"),
                    },
                )
                events.append(
                    EventDraft(
                        "decision",
                        event="created",
                        actor="recovery",
                        detail={"id": decision.id, "kind": "in_doubt", "path": path},
                    )
                )
            else:
                failed, more = fire(contract, "fail", actor="recovery", error_message="interrupted")
                records += more
                settled.append(failed)
        if any(p.kind == "in_doubt" for p in snap.run.pending):
            snap = with_run(snap, "waiting", "an irreversible action is in doubt")
        await engine.commit(
            snap,
            records=records,
            contracts=settled,
            events=events,
            kinds=frozenset({"decision", "contract_terminal"}),
        )

    async def _replayable(self) -> list[tuple[CellRow, ExecutionContract]]:
        engine = self.engine
        workflow_id = engine.snapshot.workflow_id
        cells = await engine.store.call(lambda s: s.cells(workflow_id))
        contracts = {
            c.execution_id: c for c in await engine.store.call(lambda s: s.contracts(workflow_id))
        }
        chosen: list[tuple[CellRow, ExecutionContract]] = []
        for row in cells:
            contract = contracts.get(row.contract_id or "")
            if (
                row.cell.get("cell_type") == "code"
                and contract is not None
                and contract.action_type == "cell_execution"
                and contract.action_detail.get("type") == "code"
                and contract.status is ExecutionStatus.COMPLETED
            ):
                chosen.append((row, contract))
        return chosen

    async def _kernel_state(self) -> None:
        """A new kernel gets the completed reversible cells replayed before anything runs.

        D11 (revised): the replay is automatic — a user answering a decision in a new
        process never asked for an empty kernel. A ``kernel_rebuild`` decision is created
        only when the user asked to be asked (``ask_before_rebuild``) or when the replay
        failed (naming the cell); stale ones from an earlier process are dropped, since that
        kernel is gone and this one is rebuilt now.
        """
        engine = self.engine
        snap = engine.snapshot
        for pending in [p for p in snap.run.pending if p.kind == "kernel_rebuild"]:
            snap = drop_pending(snap, pending.id)
        engine.snapshot = snap
        if not await self._replayable():
            if snap.run.status == "waiting" and not snap.run.pending:
                await engine.commit(with_run(snap, "running"))
            return
        if engine.options.ask_before_rebuild and not engine.options.auto_confirm:
            await self._ask_rebuild(
                "The kernel is new: re-execute the completed reversible code cells silently "
                "to restore its state? (irreversible cells are skipped)",
                {},
            )
            return
        actor = "auto-confirm" if engine.options.auto_confirm else "recovery"
        failed = await self.rebuild(actor=actor)
        if failed is not None and not engine.options.auto_confirm:
            cell_id, why = failed
            await self._ask_rebuild(
                f"Restoring the kernel failed at cell {cell_id} ({why}). Approve to replay the "
                "cells again (e.g. after fixing an input file), reject to go on without the "
                "missing state.",
                {"cell_id": cell_id, "error": why},
            )

    async def _ask_rebuild(self, message: str, details: dict[str, Any]) -> None:
        engine = self.engine
        snap, decision = add_pending(
            engine.snapshot,
            f"kernel_rebuild-{uuid.uuid4().hex[:8]}",
            "kernel_rebuild",
            message,
            details,
        )
        await engine.commit(
            with_run(snap, "waiting", message),
            events=[
                EventDraft(
                    "decision",
                    event="created",
                    actor="recovery",
                    detail={"id": decision.id, "kind": "kernel_rebuild", **details},
                )
            ],
            kinds=frozenset({"decision"}),
        )

    async def answer_rebuild(
        self, pending: PendingDecision, decision: Literal["approve", "reject"], actor: str
    ) -> None:
        """Approve: replay now (again). Reject: continue on the kernel as it is."""
        engine = self.engine
        engine.snapshot = drop_pending(engine.snapshot, pending.id)
        if decision == "approve":
            failed = await self.rebuild(actor=actor)
            if failed is not None:
                cell_id, why = failed
                await self._ask_rebuild(
                    f"Restoring the kernel failed again at cell {cell_id} ({why}). Approve to "
                    "replay again, reject to go on without the missing state.",
                    {"cell_id": cell_id, "error": why},
                )
            return
        snap = engine.snapshot
        effect = "WARN: kernel not rebuilt: variables of earlier cells are missing"
        snap = snap.model_copy(update={"effects": add_current(snap.effects, [effect])})
        await engine.commit(
            with_run(snap, "running") if not snap.run.pending else snap,
            events=[
                EventDraft(
                    "decision",
                    event="reject",
                    actor=actor,
                    detail={"id": pending.id, "kind": "kernel_rebuild"},
                )
            ],
            kinds=frozenset({"decision"}),
        )

    async def rebuild(self, *, actor: str) -> tuple[str, str] | None:
        """Re-execute completed reversible code cells silently, in notebook order (D11).

        Returns the first cell whose replay failed and why, or None when every one ran.
        Irreversible cells are never replayed: a warning effect names each one, and a
        ``lost_state`` decision asks the human about those whose variables are now missing.
        """
        engine = self.engine
        session = engine.runtime.session
        timeout = engine.options.cell_timeout or REPLAY_TIMEOUT
        records: list[HistoryEntry | TraceRecord] = []
        contracts: list[ExecutionContract] = []
        effects: list[str] = []
        replayed = skipped = 0
        lost: list[tuple[CellRow, ExecutionContract]] = []
        first_failure: tuple[str, str] | None = None
        await ensure_unaltered(engine, "the kernel is not rebuilt from it")
        replayable = await self._replayable()
        total = sum(1 for _, original in replayable if not original.irreversible)
        try:
            for row, original in replayable:
                self.replaying = (len(contracts), total)
                if original.irreversible:
                    skipped += 1
                    lost.append((row, original))
                    names = lost_state.bound_names(_source(row.cell))
                    effects.append(
                        f"WARN: the rebuilt kernel did not re-run irreversible cell {row.cell_id} "
                        "(it runs at most once): "
                        + (
                            f"what it set ({', '.join(names[: lost_state.NAMES_SHOWN])}) is not in "
                            "the new kernel"
                            if names
                            else "it set no variables, so nothing is missing"
                        )
                    )
                    continue
                source = _source(row.cell)
                replay, more = engine.new_contract(
                    "replay",
                    {"cell_id": row.cell_id, "of": original.execution_id},
                    metadata={"cell_id": row.cell_id},
                )
                started, start_records = fire(replay, "start", actor=actor)
                records += [*more, *start_records]
                try:
                    reply = await session.silent(source, timeout=timeout)
                    content = reply.content
                except NotebookBccError as exc:
                    content = {
                        "status": "error",
                        "ename": type(exc).__name__,
                        "evalue": exc.message,
                    }
                if content.get("status") == "ok":
                    done, last = fire(started, "succeed", actor=actor, result="replayed")
                    replayed += 1
                else:
                    why = f"{content.get('ename', 'error')}: {content.get('evalue', '')}"
                    done, last = fire(started, "fail", actor=actor, error_message=why)
                    effects.append(f"WARN: replaying cell {row.cell_id} failed: {why}")
                    if first_failure is None:
                        first_failure = (row.cell_id, why)
                records += last
                contracts.append(done)
        finally:
            self.replaying = None
        await self._continue_counting()
        snap = engine.snapshot
        snap = snap.model_copy(update={"effects": add_current(snap.effects, effects)})
        if not snap.run.pending and snap.run.status == "waiting":
            snap = with_run(snap, "running")
        await engine.commit(
            snap,
            records=records,
            contracts=contracts,
            events=[
                EventDraft(
                    "decision" if actor == "human" else "run",
                    event="approve" if actor == "human" else "kernel_restored",
                    actor=actor,
                    detail={
                        "kind": "kernel_rebuild",
                        "replayed": replayed,
                        "skipped": skipped,
                        "failed": first_failure[0] if first_failure else None,
                    },
                )
            ],
            kinds=frozenset({"replay"}),
        )
        if lost:
            await lost_state.ask(engine, lost)
        return first_failure

    async def _continue_counting(self) -> None:
        """Number the next cell after the run's highest execution count (IPython kernels).

        The rebuilt kernel replayed the earlier cells silently, which counts nothing: without
        this, a run answered one decision at a time read ``[8]`` then ``[1]`` where the same
        run auto-confirmed reads ``[8]`` then ``[9]``.
        """
        document = self.engine.runtime.document
        highest = max(
            (
                int(cell.get("execution_count") or 0)
                for cell in document.cells
                if cell.get("cell_type") == "code" and document.is_ours(str(cell.get("id")))
            ),
            default=0,
        )
        if highest <= 0:
            return
        code = (
            "try:\n"
            f"    get_ipython().execution_count = {highest + 1}\n"
            "except NameError:\n"
            "    pass\n"
        )
        with contextlib.suppress(NotebookBccError):  # a count is not worth failing a resume
            await self.engine.runtime.session.silent(code, timeout=10.0)

    async def retry_behavior(self) -> None:
        """D1: resume in ``error`` retries the failed behavior (START_BEHAVIOR), next iteration."""
        engine = self.engine
        snap = engine.snapshot
        applied = fire_event(snap, Event.START_BEHAVIOR, options=engine.client_options())
        after = applied.snapshot
        behaviors = after.location.progress.behaviors
        iteration = (behaviors.iteration or after.location.current.behavior_iteration or 0) + 1
        current = after.location.current.model_copy(update={"behavior_iteration": iteration})
        progress = after.location.progress.model_copy(
            update={"behaviors": behaviors.model_copy(update={"iteration": iteration})}
        )
        after = after.model_copy(
            update={
                "location": after.location.model_copy(
                    update={"current": current, "progress": progress}
                ),
                "action_queue": ActionQueue(behavior_id=current.behavior_id, iteration=iteration),
            }
        )
        await engine.commit_applied(applied, snapshot=with_run(after, "running"))

    async def restart(self) -> None:
        """``--restart``: a new run from the planner's stages (seed 003 error -> START_WORKFLOW)."""
        engine = self.engine
        snap = engine.snapshot
        fresh = snap.model_copy(
            update={
                "run_id": uuid.uuid4().hex[:12],
                "stage_machine": snap.stage_machine.model_copy(
                    update={"hops": 0, "decided": None, "resume_state": None}
                ),
            }
        )
        engine.snapshot = fresh
        try:
            reply = await engine.ask("plan_stages", engine.planner.plan_stages)
            if reply is None:
                return
            applied = await engine.apply_reply(reply)
        except StepEnded:
            return  # the planner's failure is committed
        applied = applied.model_copy(update={"snapshot": with_run(applied.snapshot, "running")})
        await engine.entered_stage(applied)
