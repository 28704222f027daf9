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

import dataclasses
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from notebook_bcc.engine import kernel_loss
from notebook_bcc.engine.irreversible import is_irreversible
from notebook_bcc.engine.parameters import inject_parameters
from notebook_bcc.engine.routing import drop_pending, fire_event, with_run
from notebook_bcc.errors import NotebookBccError
from notebook_bcc.fsm.contract import fire
from notebook_bcc.fsm.idempotency import IdempotencyVerdict, check_idempotency, idempotency_key
from notebook_bcc.kernel.cell_ids import ActionPath
from notebook_bcc.kernel.results import ActionOutcome, ExecResult
from notebook_bcc.models.contract import ExecutionContract, ExecutionStatus
from notebook_bcc.models.names import Event, State
from notebook_bcc.models.records import HistoryEntry, TraceRecord
from notebook_bcc.models.snapshot import PendingDecision, WorkflowSnapshot
from notebook_bcc.planners.base import StageRoute
from notebook_bcc.protocol.action_base import PlannerAction
from notebook_bcc.protocol.action_models import (
    LAST_ADDED_CELL,
    AddAction,
    ExecAction,
    NewChapterAction,
    NewSectionAction,
    NewStepAction,
)
from notebook_bcc.protocol.errors import ProtocolError
from notebook_bcc.protocol.json_actions import parse_action
from notebook_bcc.store.sqlite import CellRow, EventDraft
from notebook_bcc.workflow import Applied, complete_action, navigate

if TYPE_CHECKING:
    from notebook_bcc.engine.host import EngineHost

LAST_OUTPUT_CHARS = 500
HEADING_ACTIONS = (NewChapterAction, NewSectionAction, NewStepAction)
INPUTS_TAG = "notebook-bcc-inputs"
"""The tag of the inputs cell (papermill-style tools find cells by tag)."""
INPUTS_PATH = ActionPath("_inputs", 1, "_inputs", "inputs", 1, 0)
"""The path of the inputs cell (scoped to the workflow when used)."""


def portable_path(path: str, folder: Path) -> str:
    """``path`` relative to ``folder`` when it is absolute and on the same drive."""
    if not os.path.isabs(path):
        return path
    try:
        return os.path.relpath(path, folder)
    except ValueError:
        return path


def _source(cell: Any) -> str:
    source = cell.get("source", "") if cell is not None else ""
    return "".join(source) if isinstance(source, list) else str(source)


@dataclass(frozen=True)
class Carried:
    """An action applied but not yet committed: it rides in the next commit (issue 23)."""

    snapshot: WorkflowSnapshot
    records: list[HistoryEntry | TraceRecord]
    contracts: list[ExecutionContract]
    cells: list[CellRow]
    warnings: list[str]


class IrreversibleExec(NamedTuple):
    """An irreversible execution about to be confirmed: where, what, and why."""

    path: ActionPath
    cell_id: str
    source: str
    key: str
    verdict: IdempotencyVerdict
    reason: str | None


class ActionExecutor:
    """The engine's hands: turns queued actions into contracts, cells and commits."""

    def __init__(self, engine: EngineHost) -> None:
        self.engine = engine

    # -- helpers --------------------------------------------------------------------------

    def path(self, index: int, *, suffix: str = "") -> ActionPath:
        """The action path of queue entry ``index`` in the current behavior run (D10)."""
        snap = self.engine.snapshot
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

    def _notebook(self, snapshot: WorkflowSnapshot, result: ExecResult | None) -> WorkflowSnapshot:
        document = self.engine.runtime.document
        last = document.cells[-1] if document.cells else None
        summary = snapshot.notebook.model_copy(
            update={
                "title": document.title or snapshot.notebook.title,
                "cell_count": len(document.cells),
                "last_cell_type": None if last is None else last.get("cell_type"),
            }
        )
        if result is not None:
            text = "".join(result.effects)[-LAST_OUTPUT_CHARS:]
            summary = summary.model_copy(
                update={
                    "execution_count": result.execution_count or summary.execution_count,
                    "last_output": text or summary.last_output,
                }
            )
        return snapshot.model_copy(update={"notebook": summary})

    def _queue(self, snapshot: WorkflowSnapshot, **update: Any) -> WorkflowSnapshot:
        return snapshot.model_copy(
            update={"action_queue": snapshot.action_queue.model_copy(update=update)}
        )

    def _cell_row(self, cell_id: str, contract_id: str | None) -> CellRow | None:
        document = self.engine.runtime.document
        cell = document.get(cell_id)
        position = document.position(cell_id)
        if cell is None or position is None:
            return None
        return CellRow(cell_id, position, json.loads(json.dumps(cell)), contract_id)

    async def _finish(
        self,
        applied: Applied,
        snapshot: WorkflowSnapshot,
        *,
        records: list[HistoryEntry | TraceRecord],
        contracts: list[ExecutionContract],
        kinds: frozenset[str],
    ) -> None:
        """Commit an action's outcome; the next action's NEXT_ACTION rides along (one commit)."""
        extra: list[HistoryEntry | TraceRecord] = []
        queue = snapshot.action_queue
        if snapshot.fsm.state is State.ACTION_COMPLETED and queue.index < len(queue.actions):
            moved = navigate(snapshot, options=self.engine.client_options())
            snapshot = moved.snapshot
            extra = list(moved.records)
        await self.engine.commit(
            snapshot,
            records=[*records, *applied.records, *extra],
            contracts=contracts,
            cells=self.engine.runtime.collector.drain(),
            kinds=kinds,
            warnings=applied.warnings,
        )

    # -- the inputs cell ------------------------------------------------------------------

    async def inputs_done(self) -> bool:
        """True once this workflow's inputs cell was started under a contract (any status)."""
        workflow_id = self.engine.snapshot.workflow_id
        key = INPUTS_PATH.key
        contracts = await self.engine.store.call(lambda s: s.contracts(workflow_id))
        return any(
            c.action_type == "cell_execution" and c.metadata.get("path") == key for c in contracts
        )

    def inputs_source(self) -> str:
        """The inputs cell's code: the problem and the input files, relative to the notebook.

        Paths are relative to the kernel's working directory (the notebook's folder unless
        ``--cwd`` says otherwise), so the notebook stays portable: it runs again wherever the
        folder is copied. A file on another drive stays absolute.
        """
        snap = self.engine.snapshot
        runtime = self.engine.runtime
        folder = runtime.session.cwd or runtime.notebook_path.parent
        files = [portable_path(path, folder) for path in snap.files]
        return (
            "# notebook-bcc inputs: the problem to solve and the submitted files\n"
            f"user_problem = {snap.problem!r}\n"
            f"user_submit_files = {files!r}\n"
        )

    async def inputs_cell(self) -> None:
        """The inputs cell (``user_problem`` / ``user_submit_files``, seed 000), run first.

        Written on every start, whatever the notebook holds: after the user's cells, or in
        place of the blank cell JupyterLab puts in a new notebook. Tagged ``INPUTS_TAG`` so
        tools (and a parameters cell) can find it. Executed under its own contract like any
        action, so the notebook runs on its own later.
        """
        snap = self.engine.snapshot
        runtime = self.engine.runtime
        blank = runtime.document.blank_trailing_cell()
        if blank is not None:
            runtime.document.remove(blank)
            runtime.writer.absorb(blank)
        add = AddAction(
            content=self.inputs_source(), shot_type="action", metadata={"tags": [INPUTS_TAG]}
        )
        inputs_path = dataclasses.replace(INPUTS_PATH, scope=snap.workflow_id)
        outcome = runtime.runner.apply(add, inputs_path)
        if outcome.cell_id is None:
            await self.engine.fail_run(f"could not add the inputs cell: {outcome.refused}")
            return
        await self._execute(
            ExecAction(codecell_id=outcome.cell_id),
            inputs_path,
            cell_id=outcome.cell_id,
            irreversible=False,
            reason=None,
            complete=False,
        )
        await inject_parameters(self)

    # -- action_running -------------------------------------------------------------------

    async def at_action_running(self) -> None:
        """Run the action at ``action_queue.index`` (after parking any pending update, D18)."""
        engine = self.engine
        if await engine.park_updates():
            return
        snap = engine.snapshot
        queue = snap.action_queue
        if queue.index >= len(queue.actions):
            applied = complete_action(snap, options=engine.client_options())
            await engine.commit_applied(applied)
            return
        raw = queue.actions[queue.index]
        try:
            (action,) = parse_action(raw)
        except (ProtocolError, ValueError) as exc:
            message = exc.message if isinstance(exc, ProtocolError) else str(exc)
            await engine.protocol_failure(f"queued action {queue.index} is malformed: {message}")
            return
        path = self.path(queue.index)
        if isinstance(action, ExecAction):
            await self._exec(action, path)
        else:
            await self._plain(action, path)

    def _exec_follows(self, action: PlannerAction) -> ExecAction | None:
        """The queued ``exec`` right after ``action`` when it runs the cell ``action`` adds."""
        if not isinstance(action, AddAction) or not action.is_code or action.truncated:
            return None
        if self.engine.interrupt_requested:
            return None
        queue = self.engine.snapshot.action_queue
        if queue.index + 1 >= len(queue.actions):
            return None
        try:
            (following,) = parse_action(queue.actions[queue.index + 1])
        except (ProtocolError, ValueError):
            return None
        if isinstance(following, ExecAction) and following.codecell_id == LAST_ADDED_CELL:
            return following
        return None

    async def _plain(self, action: PlannerAction, path: ActionPath) -> None:
        engine = self.engine
        following = self._exec_follows(action)
        if following is not None:
            version = engine.snapshot.version
            await kernel_loss.before_cell(engine)
            if engine.snapshot.version != version:
                return  # the kernel was rebuilt (committed): the loop comes back here
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
        snap = self._kernel_events(engine.snapshot, outcome)
        if isinstance(action, HEADING_ACTIONS) and not outcome.refused:
            snap = self._queue(snap, sections_added=snap.action_queue.sections_added + 1)
        applied = complete_action(snap, effects=effects, options=engine.client_options())
        after = self._notebook(applied.snapshot, None)
        if following is not None and not outcome.refused:
            queue = after.action_queue
            if after.fsm.state is State.ACTION_COMPLETED and queue.index < len(queue.actions):
                moved = navigate(after, options=engine.client_options())
                carry = Carried(
                    moved.snapshot,
                    [*records, *applied.records, *moved.records],
                    [done],
                    engine.runtime.collector.drain(),
                    list(applied.warnings),
                )
                await self._exec(following, self.path(queue.index), carry=carry)
                return
        await self._finish(
            applied, after, records=list(records), contracts=[done], kinds=frozenset({"action"})
        )

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
        for raw in reversed(queue.actions[: queue.index]):
            if raw.get("type") in ("add", "action") or raw.get("action") == "add":
                return bool(raw.get("irreversible"))
        cell: Any = self.engine.runtime.document.get(cell_id)
        meta = cell.get("metadata", {}).get("notebook_bcc", {}) if cell is not None else {}
        return bool(meta.get("irreversible"))

    async def _flush(self, carry: Carried) -> None:
        """Commit a carried action on its own (the way it was committed before issue 23)."""
        await self.engine.commit(
            carry.snapshot,
            records=carry.records,
            contracts=carry.contracts,
            cells=carry.cells,
            kinds=frozenset({"action"}),
            warnings=carry.warnings,
        )

    async def _exec(
        self, action: ExecAction, path: ActionPath, *, carry: Carried | None = None
    ) -> None:
        engine = self.engine
        document = engine.runtime.document
        target = (
            document.last_added_id if action.codecell_id == LAST_ADDED_CELL else action.codecell_id
        )
        cell = document.get(target) if target else None
        if cell is None or target is None:
            await self._execute(
                action, path, cell_id=None, irreversible=False, reason=None, carry=carry
            )
            return
        source = _source(cell)
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
            key = idempotency_key({"type": "code", "code": source})
            snap = engine.snapshot
            existing = await engine.store.call(
                lambda s: s.contracts(snap.workflow_id, idempotency_key=key)
            )
            verdict = check_idempotency(
                key, workflow_id=snap.workflow_id, run_id=snap.run_id, existing=existing
            )
            if verdict.outcome == "refuse":
                await self._skip(path, f"WARN: {verdict.reason}", key)
                return
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
                    return
        await self._execute(
            action,
            path,
            cell_id=target,
            irreversible=irreversible,
            reason=reason,
            key=key,
            carry=carry,
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
    ) -> None:
        """Write ahead, run the cell once, commit the outcome (see the module docstring).

        ``resumed`` is a contract already RUNNING and committed (an in-doubt action a human
        said never happened): the cell runs under it instead of a new one. ``carry`` (the
        cell's ``add``, its kernel check done) rides in the RUNNING commit.
        """
        engine = self.engine
        runtime = engine.runtime
        if carry is None:
            await kernel_loss.before_cell(engine)
        source = _source(runtime.document.get(cell_id)) if cell_id else ""
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
            row = self._cell_row(cell_id, contract.execution_id) if cell_id else None
            cells = [*runtime.collector.drain(), *([row] if row else [])]
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
                    kinds=frozenset({"action", "contract_running"}),
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
            and await kernel_loss.after_death(engine, running, path)
        ):
            return
        ok = outcome.refused is None and result is not None and result.ok
        if ok and result is not None:
            summary = "".join(result.effects).strip()[:200] or "ok"
            done, records = fire(running, "succeed", actor="kernel", result=summary)
            effects = list(result.effects)
        else:
            why = outcome.refused or _failure(result)
            done, records = fire(running, "fail", actor="kernel", error_message=why)
            effects = list(result.effects) if result is not None else [f"WARN: exec refused: {why}"]
        snap = engine.note_code(source, engine.snapshot)
        snap = self._notebook(snap, result)
        if not complete:
            await engine.commit(
                snap,
                records=list(records),
                contracts=[done],
                cells=runtime.collector.drain(),
                kinds=frozenset({"contract_terminal"}),
            )
            if not ok:
                await engine.fail_run(f"the inputs cell failed: {_failure(result)}")
            return
        queue = snap.action_queue
        snap = self._queue(
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
            after = self._queue(after, index=len(after.action_queue.actions))
        history: list[HistoryEntry | TraceRecord] = [*records]
        if result is not None and result.status == "dead_kernel":
            failed = fire_event(after, Event.FAIL, options=engine.client_options())
            history += failed.records
            after = with_run(failed.snapshot, "failed", f"the kernel died while running {path.key}")
        await self._finish(
            applied,
            after,
            records=history,
            contracts=[done],
            kinds=frozenset({"contract_terminal"}),
        )

    async def _skip(self, path: ActionPath, effect: str, key: str) -> None:
        engine = self.engine
        applied = complete_action(
            engine.snapshot, effects=[effect], options=engine.client_options()
        )
        record = TraceRecord(
            actor="engine",
            action=f"skip:{path.key}",
            timestamp=time.time(),
            metadata={"idempotency_key": key, "reason": effect},
        )
        await self._finish(
            applied, applied.snapshot, records=[record], contracts=[], kinds=frozenset({"action"})
        )

    # -- confirmations (D9, D14 confirm) --------------------------------------------------

    def _confirmation(
        self, detail: dict[str, Any], *, key: str | None, metadata: dict[str, Any]
    ) -> tuple[ExecutionContract, list[TraceRecord]]:
        contract, records = self.engine.new_contract(
            "confirmation", detail, key=key, metadata=metadata
        )
        running, more = fire(contract, "start", actor="engine")
        waiting, last = fire(running, "suspend", actor="engine")
        return waiting, [*records, *more, *last]

    async def _auto_approve(
        self,
        snapshot: WorkflowSnapshot,
        contract: ExecutionContract,
        records: list[TraceRecord],
        detail: dict[str, Any],
    ) -> None:
        """``--auto-confirm``: a WAITING confirmation contract approved at once, recorded."""
        resumed, more = fire(contract, "resume", actor="auto-confirm")
        done, last = fire(resumed, "succeed", actor="auto-confirm", result="approved")
        await self.engine.commit(
            snapshot,
            records=[*records, *more, *last],
            contracts=[done],
            events=[EventDraft("decision", event="approve", actor="auto-confirm", detail=detail)],
            kinds=frozenset({"decision"}),
        )

    async def _ask_irreversible(self, facts: IrreversibleExec) -> None:
        """D9: a confirmation contract WAITING and an ``irreversible_confirmation`` decision."""
        engine = self.engine
        path, cell_id, source, key, verdict, reason = facts
        earlier = verdict.outcome == "confirm"
        why = "marked by the planner" if reason == "planner" else f"matches {reason}"
        message = (
            verdict.reason if earlier else f"Run the irreversible action at {path.key}? ({why})"
        )
        contract, records = self._confirmation(
            {"message": message, "idempotency_key": key, "cell_id": cell_id},
            key=key,
            metadata={"path": path.key, "cell_id": cell_id, "kind": "irreversible_confirmation"},
        )
        snap, decision = engine.new_decision(
            "irreversible_confirmation",
            message,
            {
                "contract_id": contract.execution_id,
                "path": path.key,
                "cell_id": cell_id,
                "code": source,
                "reason": reason,
                "earlier_run": earlier,
            },
        )
        await engine.commit(
            with_run(snap, "waiting", message),
            records=list(records),
            contracts=[contract],
            events=[_decision(decision, "created")],
            kinds=frozenset({"decision"}),
        )

    async def _auto_confirmation(self, facts: IrreversibleExec) -> None:
        """``--auto-confirm``: the confirmation contract is recorded and approved at once."""
        engine = self.engine
        path, cell_id, source, key, verdict, reason = facts
        contract, records = self._confirmation(
            {"message": "auto-confirmed", "idempotency_key": key, "cell_id": cell_id},
            key=key,
            metadata={"path": path.key, "cell_id": cell_id, "kind": "irreversible_confirmation"},
        )
        await self._auto_approve(
            engine.snapshot,
            contract,
            records,
            {
                "kind": "irreversible_confirmation",
                "path": path.key,
                "earlier_run": verdict.outcome == "confirm",
                "reason": reason,
                "code": source[:200],
            },
        )

    async def ask_stage_confirmation(self, stage_id: str, route: StageRoute) -> None:
        """A stage with ``confirm:`` finished its steps: ask a human (or auto-confirm)."""
        engine = self.engine
        message = route.message or f"Stage {stage_id} is done: continue?"
        contract, records = self._confirmation(
            {"message": message, "stage": stage_id},
            key=None,
            metadata={"stage": stage_id, "kind": "stage_confirmation"},
        )
        snap = engine.snapshot
        machine = snap.stage_machine.model_copy(update={"resume_state": route.target})
        snap = snap.model_copy(update={"stage_machine": machine})
        if engine.options.auto_confirm:
            machine = machine.model_copy(update={"decided": "success"})
            snap = snap.model_copy(update={"stage_machine": machine})
            await self._auto_approve(
                snap,
                contract,
                records,
                {"kind": "stage_confirmation", "stage": stage_id, "message": message},
            )
            return
        snap, decision = engine.new_decision(
            "stage_confirmation",
            message,
            {"contract_id": contract.execution_id, "stage": stage_id, "resume_state": route.target},
        )
        await engine.commit(
            with_run(snap, "waiting", message),
            records=list(records),
            contracts=[contract],
            events=[_decision(decision, "created")],
            kinds=frozenset({"decision"}),
        )

    def _open_contract(self, pending: PendingDecision) -> ExecutionContract | None:
        wanted = pending.details.get("contract_id")
        for contract in self.engine.snapshot.open_contracts:
            if contract.execution_id == wanted:
                return contract
        return None

    async def _answer(
        self, pending: PendingDecision, decision: Literal["approve", "reject"], actor: str
    ) -> tuple[WorkflowSnapshot, list[TraceRecord], list[ExecutionContract]]:
        """Resume the decision's WAITING contract and end it (approve: COMPLETED, reject:
        REJECTED), drop the pending decision, set the run running."""
        contract = self._open_contract(pending)
        records: list[TraceRecord] = []
        contracts: list[ExecutionContract] = []
        if contract is not None and contract.status is ExecutionStatus.WAITING:
            resumed, more = fire(contract, "resume", actor=actor)
            if decision == "approve":
                done, last = fire(resumed, "succeed", actor=actor, result="approved")
            else:
                done, last = fire(resumed, "reject", actor=actor, error_message="rejected")
            records += [*more, *last]
            contracts.append(done)
        snap = with_run(drop_pending(self.engine.snapshot, pending.id), "running")
        return snap, records, contracts

    async def answer_stage_confirmation(
        self, pending: PendingDecision, decision: Literal["approve", "reject"], actor: str
    ) -> None:
        """Approve -> the stage succeeded; reject -> it failed; then route (D14)."""
        engine = self.engine
        snap, records, contracts = await self._answer(pending, decision, actor)
        outcome: Literal["success", "failure"] = "success" if decision == "approve" else "failure"
        machine = snap.stage_machine.model_copy(update={"decided": outcome})
        await engine.commit(
            snap.model_copy(update={"stage_machine": machine}),
            records=list(records),
            contracts=contracts,
            events=[_decision(pending, decision, actor=actor)],
            kinds=frozenset({"decision"}),
        )

    async def answer_in_doubt(
        self, pending: PendingDecision, decision: Literal["approve", "reject"], actor: str
    ) -> None:
        """D11: approve = it never ran, run it now under its own contract; reject = it ran:
        the contract completes as recorded by ``actor`` (result ``ran (in doubt)``), so its
        idempotency key stays taken for the rest of the run (D7) and no retry, re-entered
        stage or rebuild executes it again; the action is skipped."""
        engine = self.engine
        contract = self._open_contract(pending)
        if contract is None:
            raise NotebookBccError(f"in-doubt contract of {pending.id} is no longer open")
        snap = with_run(drop_pending(engine.snapshot, pending.id), "running")
        event = _decision(pending, decision, actor=actor)
        if decision == "reject":
            ran, records = ran_in_doubt(contract, actor=actor)
            effect = (
                f"WARN: in-doubt irreversible action at {pending.details.get('path')} was not "
                f"repeated ({actor} said it had run)"
            )
            applied = complete_action(snap, effects=[effect], options=engine.client_options())
            await engine.commit(
                applied.snapshot,
                records=[*records, *applied.records],
                contracts=[ran],
                events=[event],
                kinds=frozenset({"decision"}),
            )
            return
        running, records = fire(contract, "resume", actor=actor)
        await engine.commit(
            snap,
            records=list(records),
            contracts=[running],
            events=[event],
            kinds=frozenset({"decision", "contract_running"}),
        )
        cell_id = str(pending.details.get("cell_id") or "")
        await self._execute(
            ExecAction(codecell_id=cell_id),
            self.path(engine.snapshot.action_queue.index),
            cell_id=cell_id,
            irreversible=True,
            reason="in doubt",
            key=contract.idempotency_key,
            resumed=running,
        )

    async def answer_contract_decision(
        self, pending: PendingDecision, decision: Literal["approve", "reject"], actor: str
    ) -> None:
        """An irreversible confirmation: approve runs it next; reject skips it (D9)."""
        engine = self.engine
        snap, records, contracts = await self._answer(pending, decision, actor)
        if decision == "reject" and snap.fsm.state is State.ACTION_RUNNING:
            where = pending.details.get("path")
            effect = f"WARN: irreversible action at {where} rejected by {actor}; skipped"
            applied = complete_action(snap, effects=[effect], options=engine.client_options())
            await engine.commit(
                applied.snapshot,
                records=[*records, *applied.records],
                contracts=contracts,
                events=[_decision(pending, decision, actor=actor)],
                kinds=frozenset({"decision"}),
            )
            return
        await engine.commit(
            snap,
            records=list(records),
            contracts=contracts,
            events=[_decision(pending, decision, actor=actor)],
            kinds=frozenset({"decision"}),
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
            applied, snapshot=self._notebook(snap, None), cells=runtime.collector.drain()
        )


IN_DOUBT_RAN = "ran (in doubt)"
"""``result`` of an in-doubt contract a human said had run (it completes, its key taken)."""


def ran_in_doubt(
    contract: ExecutionContract, *, actor: str
) -> tuple[ExecutionContract, list[TraceRecord]]:
    """An in-doubt (WAITING) contract answered "it ran": resumed and completed by ``actor``.

    COMPLETED, not CANCELLED: the D7 rule and the store's unique index keep its key taken for
    the rest of the run. The metadata says the completion is a human's word, not an execution.
    """
    resumed, records = fire(contract, "resume", actor=actor)
    done, more = fire(
        resumed, "succeed", actor=actor, result=IN_DOUBT_RAN, metadata={"in_doubt": "ran"}
    )
    return done, [*records, *more]


def _failure(result: ExecResult | None) -> str:
    if result is None:
        return "no execution"
    if result.error is not None:
        return f"{result.status}: {result.error.ename}: {result.error.evalue}"
    return f"{result.status}: {result.message or 'failed'}"


def _decision(pending: PendingDecision, what: str, *, actor: str = "engine") -> EventDraft:
    return EventDraft(
        "decision",
        event=what,
        actor=actor,
        detail={"id": pending.id, "kind": pending.kind, "message": pending.message},
    )
