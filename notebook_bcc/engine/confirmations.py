"""Confirmations (D9, D14 ``confirm``) and the answers to them, for the action executor.

A confirmation is a contract WAITING on a human (or approved at once with ``--auto-confirm``):
an irreversible execution, a stage's ``confirm:``, an in-doubt action (D11). Answering resumes
the contract and ends it, drops the pending decision, and commits, like any other change.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from notebook_bcc.engine import lost_state
from notebook_bcc.engine.routing import drop_pending, with_run
from notebook_bcc.errors import NotebookBccError
from notebook_bcc.fsm.contract import fire
from notebook_bcc.fsm.idempotency import IdempotencyVerdict
from notebook_bcc.kernel.cell_ids import ActionPath
from notebook_bcc.kernel.cells import bcc_of
from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.kernel.effects import effects_for
from notebook_bcc.models.actions import (
    ExecAction,
)
from notebook_bcc.models.contract import ExecutionContract, ExecutionStatus
from notebook_bcc.models.names import State
from notebook_bcc.models.records import TraceRecord
from notebook_bcc.models.snapshot import PendingDecision, WorkflowSnapshot
from notebook_bcc.planners.base import StageRoute
from notebook_bcc.store.sqlite import EventDraft
from notebook_bcc.workflow import complete_action

if TYPE_CHECKING:
    from notebook_bcc.engine.host import EngineHost


def _task_words(snapshot: WorkflowSnapshot) -> str:
    """What the current behavior is for, in the blueprint's or plan's own words:
    ``of "TASK" (stage "TITLE", step "TITLE")``, falling back to ids ("" when unplaced)."""
    progress = snapshot.location.progress
    behavior = progress.behaviors.current
    step, stage = progress.steps.current, progress.stages.current
    task = None if behavior is None else (behavior.task or behavior.title or behavior.id)
    places = [
        f'{level} "{item.title or item.id}"'
        for level, item in (("stage", stage), ("step", step))
        if item is not None
    ]
    if task:
        return f'of "{task.strip()}"' + (f" ({', '.join(places)})" if places else "")
    return "in " + ", ".join(places) if places else ""


class IrreversibleExec(NamedTuple):
    """An irreversible execution about to be confirmed: where, what, and why."""

    path: ActionPath
    cell_id: str
    source: str
    key: str
    verdict: IdempotencyVerdict
    reason: str | None


class Confirmations:
    """The confirmation half of :class:`~notebook_bcc.engine.actions.ActionExecutor`."""

    engine: EngineHost

    if TYPE_CHECKING:

        def path(
            self, index: int, *, suffix: str = "", snapshot: WorkflowSnapshot | None = None
        ) -> ActionPath: ...

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
            carry: Any = None,
            chain: bool = False,
        ) -> Any: ...

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
        if reason == "planner":  # the plan flagged it: a blueprint's author, or a planner
            by_blueprint = engine.snapshot.planner.kind == "blueprint"
            why = "marked irreversible in the " + ("blueprint" if by_blueprint else "plan")
        else:
            why = f"matches {reason}"
        message = (
            verdict.reason
            if earlier
            else " ".join(["Run the irreversible code", _task_words(engine.snapshot)]).strip()
            + f"? It is {why} and runs at most once in this run (action {path.key})."
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
        visit = snap.stage_machine.visits.get(stage_id, 1)
        outputs = stage_outputs(engine.runtime.document, snap.workflow_id, stage_id, visit)
        snap, decision = engine.new_decision(
            "stage_confirmation",
            message,
            {
                "contract_id": contract.execution_id,
                "stage": stage_id,
                "resume_state": route.target,
                "outputs": outputs,
            },
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
            await self._lost_with(ran, str(pending.details.get("cell_id") or ""))
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

    async def _lost_with(self, ran: ExecutionContract, cell_id: str) -> None:
        """An in-doubt cell that ran did so on a kernel that is gone (a crash or a kernel
        death made it in doubt): the names it bound are not in this kernel. Ask about that
        state as a rebuild does for a completed irreversible cell (:mod:`.lost_state`), instead
        of going on until a later cell or an acceptance check fails on a missing name."""
        engine = self.engine
        workflow_id = engine.snapshot.workflow_id
        rows = await engine.store.call(lambda s: s.cells(workflow_id))
        row = next((r for r in rows if r.cell_id == cell_id), None)
        if row is not None:
            await lost_state.ask(engine, [(row, ran)])

    async def answer_contract_decision(
        self, pending: PendingDecision, decision: Literal["approve", "reject"], actor: str
    ) -> None:
        """An irreversible confirmation: approve runs it next; reject skips it (D9)."""
        engine = self.engine
        snap, records, contracts = await self._answer(pending, decision, actor)
        if decision == "approve":
            _note_wait(engine.runtime.document, pending)
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


def _note_wait(document: NotebookDocument, pending: PendingDecision) -> None:
    """Add the time the decision's cell waited for a human to its ``waited_s`` (metadata,
    written with the cell when it runs): the panel leaves it out of the plan's times, which
    would otherwise count a coffee break as the stage's work."""
    cell_id = pending.details.get("cell_id")
    cell = document.get(cell_id) if isinstance(cell_id, str) else None
    bcc = bcc_of(cell) if cell is not None else None
    if bcc is None:
        return
    try:
        asked = datetime.fromisoformat(pending.created_at)
    except ValueError:
        return
    waited = (datetime.now(timezone.utc) - asked).total_seconds()
    before = bcc.get("waited_s")
    before = before if isinstance(before, (int, float)) else 0.0
    bcc["waited_s"] = round(before + max(0.0, waited), 3)


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


def _decision(pending: PendingDecision, what: str, *, actor: str = "engine") -> EventDraft:
    return EventDraft(
        "decision",
        event=what,
        actor=actor,
        detail={"id": pending.id, "kind": pending.kind, "message": pending.message},
    )


REVIEW_OUTPUTS = 3
"""How many of a stage visit's last outputs a stage confirmation carries for review."""


def stage_outputs(
    document: NotebookDocument, workflow_id: str, stage_id: str, visit: int
) -> list[str]:
    """The last outputs (as effects) of the cells this workflow ran in ``stage_id``'s visit
    ``visit``: what a stage confirmation asks a person to review. Only that visit's own
    cells count -- a stage that printed nothing carries none, rather than whatever another
    stage (or an earlier attempt) printed last."""
    found: list[str] = []
    for number, cell in enumerate(document.cells, 1):
        bcc = bcc_of(cell)
        if (
            bcc is None
            or cell.get("cell_type") != "code"
            or bcc.get("workflow_id") != workflow_id
            or bcc.get("stage_id") != stage_id
            or bcc.get("visit") != visit
        ):
            continue
        found += [text for text in effects_for(cell.get("outputs") or [], number) if text]
    return found[-REVIEW_OUTPUTS:]
