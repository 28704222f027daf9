"""Executing the action queue: every action as an ExecutionContract, written ahead (D7-D10).

For each action at ``action_running``:
- a notebook action that runs nothing (markdown, headings, titles, markers) is applied and its
  contract created, started and completed in the same commit as its cell;
- ``exec`` of a code cell: irreversibility is decided (D8), the idempotency rule checked (D7)
  and a human asked first when required (D9); then the contract goes RUNNING *and is committed
  with the cell's source* before the cell runs; the outputs, the contract's terminal status
  and COMPLETE_ACTION are committed together afterwards.
An ``add`` of a code cell followed by the ``exec`` of that cell (the way planners send code)
is not committed on its own: it rides in the exec's RUNNING commit, so a code action costs two
commits (issue 23); an irreversible exec commits the add first, as before.
A failed execution ends the behavior's run early (the remaining actions are skipped with an
effect): the reflection decides what happens next.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from notebook_bcc.engine import kernel_loss
from notebook_bcc.engine.action_state import (
    Carried,
    cell_row,
    cell_source,
    failure_text,
    notebook_summary,
    with_queue,
)
from notebook_bcc.engine.confirmations import (
    IN_DOUBT_RAN,
    Confirmations,
    IrreversibleExec,
    ran_in_doubt,
)
from notebook_bcc.engine.irreversible import is_irreversible
from notebook_bcc.engine.parameters import (
    INPUTS_PATH,
    INPUTS_TAG,
    inputs_cell,
    inputs_done,
    portable_path,
)
from notebook_bcc.engine.routing import fire_event, with_run
from notebook_bcc.engine.skips import Skips, code_key
from notebook_bcc.fsm.contract import fire
from notebook_bcc.kernel.cell_ids import ActionPath
from notebook_bcc.kernel.results import ActionOutcome
from notebook_bcc.models.actions import (
    LAST_ADDED_CELL,
    AddAction,
    ExecAction,
    NewChapterAction,
    NewSectionAction,
    NewStepAction,
    PlannerAction,
)
from notebook_bcc.models.contract import ExecutionContract, ExecutionStatus
from notebook_bcc.models.names import Event, State
from notebook_bcc.models.records import HistoryEntry, TraceRecord
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.workflow import Applied, complete_action, navigate

__all__ = [
    "INPUTS_PATH",
    "INPUTS_TAG",
    "IN_DOUBT_RAN",
    "ActionExecutor",
    "Carried",
    "portable_path",
    "ran_in_doubt",
]

if TYPE_CHECKING:
    from notebook_bcc.engine.host import EngineHost

HEADING_ACTIONS = (NewChapterAction, NewSectionAction, NewStepAction)


class ActionExecutor(Confirmations, Skips):
    """The engine's hands: turns queued actions into contracts, cells and commits."""

    def __init__(self, engine: EngineHost) -> None:
        self.engine = engine

    # -- helpers --------------------------------------------------------------------------

    def path(
        self, index: int, *, suffix: str = "", snapshot: WorkflowSnapshot | None = None
    ) -> ActionPath:
        """The action path of queue entry ``index`` in the current behavior run (D10)."""
        snap = snapshot or self.engine.snapshot
        current = snap.location.current
        stage_id = current.stage_id or "_workflow"
        visit = snap.stage_machine.visits.get(stage_id, 1)
        return ActionPath(
            stage_id,
            visit,
            current.step_id or "_step",
            (current.behavior_id or "_behavior") + suffix,
            max(current.behavior_iteration, 1),
            index,
            snap.workflow_id,
        )

    async def _finish(
        self,
        applied: Applied,
        snapshot: WorkflowSnapshot,
        *,
        records: list[HistoryEntry | TraceRecord],
        contracts: list[ExecutionContract],
        kinds: frozenset[str],
        chain: bool = False,
        ahead: Carried | None = None,
    ) -> Carried | None:
        """Commit an action's outcome; the next action's NEXT_ACTION rides along (one commit).

        With ``chain`` (the loop's own action run), when the next action is a code cell's
        ``add`` + ``exec`` and :meth:`~.host.EngineHost.may_carry_on` allows it, nothing is
        committed: the outcome is returned to ride in the next cell's RUNNING commit, so a
        code action in a run of them costs one commit (issue 23). The behavior's last code
        cell's outcome rides the same way with a folded boundary (a blueprint's) when
        :meth:`_may_ride_the_boundary`.
        """
        extra: list[HistoryEntry | TraceRecord] = []
        queue = snapshot.action_queue
        moved_on = False
        if snapshot.fsm.state is State.ACTION_COMPLETED and queue.index < len(queue.actions):
            moved = navigate(snapshot, options=self.engine.client_options())
            snapshot = moved.snapshot
            extra = list(moved.records)
            moved_on = True
        outcome = (ahead or Carried.nothing(snapshot)).then(
            Carried(
                snapshot,
                [*records, *applied.records, *extra],
                contracts,
                self.engine.runtime.collector.drain(),
                list(applied.warnings),
                kinds,
            )
        )
        if chain and moved_on and self._may_chain(snapshot):
            return outcome
        if chain and not moved_on and self._may_ride_the_boundary(snapshot):
            self.engine.stage_outcome(
                outcome.snapshot,
                records=outcome.records,
                contracts=outcome.contracts,
                cells=outcome.cells,
                kinds=outcome.kinds,
                warnings=outcome.warnings,
            )
            return None
        await self._flush(outcome)
        return None

    def _may_ride_the_boundary(self, snapshot: WorkflowSnapshot) -> bool:
        """Whether the outcome of the behavior's last code cell may ride with the folded
        boundary after it (a blueprint's) into the next commit: the queue is done, the
        kernel is the one the cell ran in, and nothing waits for a safe point."""
        queue = snapshot.action_queue
        if snapshot.fsm.state is not State.ACTION_COMPLETED or queue.index < len(queue.actions):
            return False
        return kernel_loss.unchanged(self.engine.runtime) and self.engine.may_stage(snapshot)

    def _may_chain(self, snapshot: WorkflowSnapshot) -> bool:
        """Whether the action now at ``snapshot``'s queue index may run before the outcome
        before it is committed (see :meth:`_finish`)."""
        if snapshot.fsm.state is not State.ACTION_RUNNING or snapshot.run.pending:
            return False
        if snapshot.run.status != "running" or not self.engine.may_carry_on():
            return False
        if not kernel_loss.unchanged(self.engine.runtime):
            return False
        queue = snapshot.action_queue
        return self._exec_follows(queue.actions[queue.index], snapshot) is not None

    # -- the setup cells (engine/parameters.py) -------------------------------------------

    async def inputs_done(self) -> bool:
        """True once this workflow's inputs cell was started under a contract (any status)."""
        return await inputs_done(self.engine)

    async def inputs_cell(self) -> None:
        """The inputs cell, then the parameters cell (see :func:`.parameters.inputs_cell`)."""
        await inputs_cell(self)

    async def run_setup(self, action: ExecAction, path: ActionPath, cell_id: str) -> None:
        """Execute a setup cell (inputs, parameters) under its own contract, outside the
        behavior's queue: no COMPLETE_ACTION, a failure fails the run."""
        await self._execute(
            action, path, cell_id=cell_id, irreversible=False, reason=None, complete=False
        )

    # -- action_running -------------------------------------------------------------------

    async def at_action_running(self) -> None:
        """Run the action at ``action_queue.index`` (after parking any pending update, D18),
        and the code actions after it while each may ride in the next one's commit."""
        engine = self.engine
        if await engine.park_updates():
            return
        carry: Carried | None = None
        while True:
            carry = await self._action_at_index(carry)
            if carry is None:
                return

    async def _action_at_index(self, carry: Carried | None) -> Carried | None:
        engine = self.engine
        snap = engine.snapshot if carry is None else carry.snapshot
        queue = snap.action_queue
        if carry is None and queue.index >= len(queue.actions):
            applied = complete_action(snap, options=engine.client_options())
            await engine.commit_applied(applied)
            return None
        action = queue.actions[queue.index]
        path = self.path(queue.index, snapshot=snap)
        if isinstance(action, ExecAction):
            if carry is not None:
                await self._flush(carry)
            await self._exec(action, path)
            return None
        return await self._plain(action, path, incoming=carry)

    def _exec_follows(self, action: PlannerAction, snapshot: WorkflowSnapshot) -> ExecAction | None:
        """The queued ``exec`` right after ``action`` when it runs the cell ``action`` adds."""
        if not isinstance(action, AddAction) or not action.is_code or action.truncated:
            return None
        if self.engine.interrupt_requested:
            return None
        queue = snapshot.action_queue
        if queue.index + 1 >= len(queue.actions):
            return None
        following = queue.actions[queue.index + 1]
        if isinstance(following, ExecAction) and following.codecell_id == LAST_ADDED_CELL:
            return following
        return None

    async def _plain(
        self, action: PlannerAction, path: ActionPath, *, incoming: Carried | None = None
    ) -> Carried | None:
        """A notebook action that runs nothing; a code ``add`` rides in its ``exec``'s
        RUNNING commit, with ``incoming`` (the previous code action's outcome) when given."""
        engine = self.engine
        base = engine.snapshot if incoming is None else incoming.snapshot
        following = self._exec_follows(action, base)
        if following is not None and isinstance(action, AddAction):
            refusal = await self._refused_add(action, following)
            if refusal is not None:
                if incoming is not None:
                    await self._flush(incoming)
                await self._skip_add_and_exec(path, *refusal)
                return None
        if incoming is not None and following is None:
            await self._flush(incoming)
            incoming, base = None, engine.snapshot
        if following is not None and incoming is None:
            version = engine.snapshot.version
            await kernel_loss.before_cell(engine)
            if engine.snapshot.version != version:
                return None  # the kernel was rebuilt (committed): the loop comes back here
        contract, records = engine.new_contract(
            "cell_execution",
            {"type": action.type, "path": path.key},
            metadata={"path": path.key},
        )
        started, more = fire(contract, "start", actor="engine")
        records += more
        outcome = engine.runtime.runner.apply(action, path, contract_id=contract.execution_id)
        effects: list[str] = []
        if outcome.refused:
            done, more = fire(started, "fail", actor="engine", error_message=outcome.refused)
            effects.append(f"WARN: {action.type} refused: {outcome.refused}")
        else:
            done, more = fire(started, "succeed", actor="engine", result=outcome.cell_id)
        records += more
        snap = self._kernel_events(base, outcome)
        if isinstance(action, HEADING_ACTIONS) and not outcome.refused:
            snap = with_queue(snap, sections_added=snap.action_queue.sections_added + 1)
        applied = complete_action(snap, effects=effects, options=engine.client_options())
        after = notebook_summary(self.engine.runtime.document, applied.snapshot, None)
        if following is not None and not outcome.refused:
            queue = after.action_queue
            if after.fsm.state is State.ACTION_COMPLETED and queue.index < len(queue.actions):
                moved = navigate(after, options=engine.client_options())
                carry = (incoming or Carried.nothing(base)).then(
                    Carried(
                        moved.snapshot,
                        [*records, *applied.records, *moved.records],
                        [done],
                        engine.runtime.collector.drain(),
                        list(applied.warnings),
                        frozenset({"action"}),
                    )
                )
                path = self.path(queue.index, snapshot=moved.snapshot)
                return await self._exec(following, path, carry=carry, chain=True)
        await self._finish(
            applied,
            after,
            records=list(records),
            contracts=[done],
            kinds=frozenset({"action"}),
            ahead=incoming,
        )
        return None

    def _kernel_events(
        self, snapshot: WorkflowSnapshot, outcome: ActionOutcome
    ) -> WorkflowSnapshot:
        for event in outcome.events:
            if event.kind == "comment_result":
                snapshot = self.engine.archive_effects(snapshot)
        return snapshot

    def _flagged(self, action: ExecAction, cell_id: str, snapshot: WorkflowSnapshot) -> bool:
        """Whether the planner marked the code irreversible (on the exec or its add action)."""
        if action.irreversible:
            return True
        queue = snapshot.action_queue
        for earlier in reversed(queue.actions[: queue.index]):
            if isinstance(earlier, AddAction):
                return earlier.irreversible
        cell: Any = self.engine.runtime.document.get(cell_id)
        meta = cell.get("metadata", {}).get("notebook_bcc", {}) if cell is not None else {}
        return bool(meta.get("irreversible"))

    async def _flush(self, carry: Carried) -> None:
        """Commit what is carried on its own."""
        await self.engine.commit(
            carry.snapshot,
            records=carry.records,
            contracts=carry.contracts,
            cells=carry.cells,
            kinds=carry.kinds or frozenset({"action"}),
            warnings=carry.warnings,
        )

    async def _exec(
        self,
        action: ExecAction,
        path: ActionPath,
        *,
        carry: Carried | None = None,
        chain: bool = False,
    ) -> Carried | None:
        engine = self.engine
        document = engine.runtime.document
        target = (
            document.last_added_id if action.codecell_id == LAST_ADDED_CELL else action.codecell_id
        )
        cell = document.get(target) if target else None
        if cell is None or target is None:
            return await self._execute(
                action, path, cell_id=None, irreversible=False, reason=None, carry=carry
            )
        source = cell_source(cell)
        irreversible, reason = is_irreversible(
            source,
            flagged=self._flagged(
                action, target, engine.snapshot if carry is None else carry.snapshot
            ),
            patterns=engine.options.irreversible_patterns,
        )
        key: str | None = None
        if irreversible and carry is not None:
            await self._flush(carry)
            carry = None
        if irreversible:
            key = code_key(source)
            verdict = await self._verdict(key)
            snap = engine.snapshot
            if verdict.outcome == "refuse":
                await self._skip(path, f"WARN: {verdict.reason}", key)
                return None
            approved = any(
                c.action_type == "confirmation"
                and c.status is ExecutionStatus.COMPLETED
                and c.run_id == snap.run_id
                and c.metadata.get("path") == path.key
                for c in await engine.store.call(
                    lambda s: s.contracts(snap.workflow_id, run_id=snap.run_id)
                )
            )
            needs = verdict.outcome == "confirm" or engine.options.confirm_irreversible
            if needs and not approved:
                facts = IrreversibleExec(path, target, source, key, verdict, reason)
                if engine.options.auto_confirm:
                    await self._auto_confirmation(facts)
                else:
                    await self._ask_irreversible(facts)
                    return None
        return await self._execute(
            action,
            path,
            cell_id=target,
            irreversible=irreversible,
            reason=reason,
            key=key,
            carry=carry,
            chain=chain and not irreversible,
        )

    async def _execute(
        self,
        action: ExecAction,
        path: ActionPath,
        *,
        cell_id: str | None,
        irreversible: bool,
        reason: str | None,
        key: str | None = None,
        complete: bool = True,
        resumed: ExecutionContract | None = None,
        carry: Carried | None = None,
        chain: bool = False,
    ) -> Carried | None:
        """Write ahead, run the cell once, commit the outcome (see the module docstring).

        ``resumed`` is a contract already RUNNING and committed (an in-doubt action a human
        said never happened): the cell runs under it instead of a new one. ``carry`` (the
        cell's ``add``, its kernel check done) rides in the RUNNING commit. With ``chain``
        the outcome may be returned uncommitted, to ride in the next cell's (see _finish).
        """
        engine = self.engine
        runtime = engine.runtime
        ready = carry is not None or await kernel_loss.before_cell(engine)
        if not ready and resumed is None and complete:
            return None  # a lost_state decision first; the action runs once it is answered
        source = cell_source(runtime.document.get(cell_id)) if cell_id else ""
        if resumed is not None:
            running = resumed
        else:
            contract, records = engine.new_contract(
                "cell_execution",
                {"type": "code", "code": source, "path": path.key, "cell_id": cell_id},
                irreversible=irreversible,
                key=key,
                metadata={"path": path.key, "cell_id": cell_id, "irreversible_reason": reason},
            )
            running, more = fire(contract, "start", actor="engine")
            records += more
            if cell_id:
                # a cell run again (its kernel lost, a crash, an in-doubt action) is written
                # ahead empty: the first attempt's outputs are not the new run's
                runtime.runner.clear_run(cell_id)
            row = cell_row(runtime.document, cell_id, contract.execution_id) if cell_id else None
            drained = runtime.collector.drain()
            cells = [*(c for c in drained if row is None or c.cell_id != row.cell_id)]
            cells += [row] if row else []
            if carry is None:
                await engine.commit(
                    engine.snapshot,
                    records=list(records),
                    contracts=[running],
                    cells=cells,
                    kinds=frozenset({"contract_running"}),
                )
            else:
                ahead = [c for c in carry.cells if row is None or c.cell_id != row.cell_id]
                await engine.commit(
                    carry.snapshot,
                    records=[*carry.records, *records],
                    contracts=[*carry.contracts, running],
                    cells=[*ahead, *cells],
                    kinds=carry.kinds | {"action", "contract_running"},
                    warnings=carry.warnings,
                )
        outcome = await runtime.runner.run(
            action, path, contract_id=running.execution_id, timeout=engine.options.cell_timeout
        )
        result = outcome.execution
        if (
            complete
            and result is not None
            and result.status == "dead_kernel"
            and await kernel_loss.after_death(engine, running, path, why=result.message)
        ):
            return None
        ok = outcome.refused is None and result is not None and result.ok
        if ok and result is not None:
            summary = "".join(result.effects).strip()[:200] or "ok"
            done, records = fire(running, "succeed", actor="kernel", result=summary)
            effects = list(result.effects)
        else:
            why = outcome.refused or failure_text(result)
            done, records = fire(running, "fail", actor="kernel", error_message=why)
            effects = list(result.effects) if result is not None else [f"WARN: exec refused: {why}"]
        snap = engine.note_code(source, engine.snapshot)
        snap = notebook_summary(self.engine.runtime.document, snap, result)
        if not complete:
            await engine.commit(
                snap,
                records=list(records),
                contracts=[done],
                cells=runtime.collector.drain(),
                kinds=frozenset({"contract_terminal"}),
            )
            if not ok:
                await engine.fail_run(f"the inputs cell failed: {failure_text(result)}")
            return None
        queue = snap.action_queue
        snap = with_queue(
            snap,
            executed=queue.executed + 1,
            succeeded=queue.succeeded + (1 if ok else 0),
            last_result=result.status if result is not None else "refused",
        )
        skipped = len(queue.actions) - queue.index - 1
        if not ok and skipped > 0:
            effects.append(
                f"WARN: skipped the {skipped} remaining action(s) of this behavior after the "
                "failed execution"
            )
        applied = complete_action(snap, effects=effects, options=engine.client_options())
        after = applied.snapshot
        if not ok and skipped > 0:
            after = with_queue(after, index=len(after.action_queue.actions))
        history: list[HistoryEntry | TraceRecord] = [*records]
        if result is not None and result.status == "dead_kernel":
            failed = fire_event(after, Event.FAIL, options=engine.client_options())
            history += failed.records
            after = with_run(failed.snapshot, "failed", f"the kernel died while running {path.key}")
        return await self._finish(
            applied,
            after,
            records=history,
            contracts=[done],
            kinds=frozenset({"contract_terminal"}),
            chain=chain and ok,
        )

    # -- actions carried by reflections ---------------------------------------------------

    async def run_reply_actions(self, applied: Applied) -> None:
        """Commit a reflection's result, adding the notebook text its stream carried."""
        engine = self.engine
        runtime = engine.runtime
        effects: list[str] = []
        for number, action in enumerate(applied.actions):
            if isinstance(action, ExecAction):
                effects.append("WARN: a reflection cannot execute code; exec ignored")
                continue
            outcome = runtime.runner.apply(action, self.path(number, suffix="-reflection"))
            if outcome.refused:
                effects.append(f"WARN: {action.type} refused: {outcome.refused}")
        snap = applied.snapshot
        if effects:
            snap = snap.model_copy(
                update={
                    "effects": snap.effects.model_copy(
                        update={"current": [*snap.effects.current, *effects]}
                    )
                }
            )
        await engine.commit_applied(
            applied,
            snapshot=notebook_summary(self.engine.runtime.document, snap, None),
            cells=runtime.collector.drain(),
            stage=True,
        )
