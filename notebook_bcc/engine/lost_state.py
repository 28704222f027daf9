"""A kernel rebuilt without the state of an irreversible cell: the human decides (D11, issue 19).

A rebuild (a new process, a dead kernel replaced, a kernel restarted behind the workflow's back)
replays the completed reversible cells only: an irreversible cell is never replayed by itself.
When such a cell bound names (its variables are now missing), the run does not go on as if
nothing happened, and does not silently re-run it either: it waits on a ``lost_state`` decision
that shows the cell's code and asks

- approve: re-run the irreversible cell(s) once now, silently, to restore the state (the side
  effect happens again -- the human said so);
- reject: continue without that state (a later cell that needs it fails visibly);
- or cancel the workflow (the ordinary ``cancel`` command).

Each lost cell gets a ``replay`` contract (irreversible, ``metadata.lost_state``) held WAITING
while the question is open, so the question survives a crash with the same id. Once it is
answered "continue without" (REJECTED), later rebuilds of this workflow skip that cell with a
warning instead of asking again; a re-run (COMPLETED or FAILED) restored one kernel's state
only, so a later rebuild that loses it again asks again. With ``auto_confirm`` the question is still
recorded, and answered at once by ``auto-confirm`` with *reject* (continue without): delegation
never repeats an irreversible side effect.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Literal

from notebook_bcc.engine.routing import drop_pending, with_run
from notebook_bcc.engine.store_trust import ensure_unaltered
from notebook_bcc.errors import NotebookBccError
from notebook_bcc.fsm.contract import fire
from notebook_bcc.models.contract import ExecutionContract, ExecutionStatus
from notebook_bcc.models.records import HistoryEntry, TraceRecord
from notebook_bcc.store.sqlite import CellRow, EventDraft
from notebook_bcc.workflow.effects import add_current

if TYPE_CHECKING:
    from notebook_bcc.engine.host import EngineHost
    from notebook_bcc.models.snapshot import PendingDecision, WorkflowSnapshot

KIND = "lost_state"
"""The decision's kind."""

REPLAY_TIMEOUT = 600.0
"""Seconds a re-run irreversible cell may take when no cell timeout is configured."""

NAMES_SHOWN = 8
"""Names listed in the question."""


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def bound_names(source: str) -> list[str]:
    """Names a cell binds at its top level (assignments, imports, defs, loops), in order; code
    that does not parse counts as binding ``?`` (it may have bound anything).

    A ``with ... as NAME`` target alone is not state: its context manager is closed when the
    block ends (``with open("summary.txt", "w") as out`` leaves a closed file), so losing it
    is no reason to offer repeating the cell's side effect. A name the cell also binds
    otherwise still counts.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ["?"]
    managed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    managed.update(id(target) for target in ast.walk(item.optional_vars))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.alias):
            names.append((node.asname or node.name).split(".")[0])
        elif (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Store)
            and id(node) not in managed
        ):
            names.append(node.id)
    return list(dict.fromkeys(names))


def pending_decision(engine: EngineHost) -> PendingDecision | None:
    """The open ``lost_state`` decision, if any."""
    return next((p for p in engine.snapshot.run.pending if p.kind == KIND), None)


async def ask(engine: EngineHost, skipped: list[tuple[CellRow, ExecutionContract]]) -> bool:
    """After a rebuild that skipped ``skipped`` irreversible cells: ask about those whose state
    is lost and was never asked about (or keep the open question); True when the run waits."""
    open_decision = pending_decision(engine)
    if open_decision is not None:
        if engine.snapshot.run.status != "waiting":
            await engine.commit(with_run(engine.snapshot, "waiting", open_decision.message))
        return True
    workflow_id = engine.snapshot.workflow_id
    contracts = await engine.store.call(lambda s: s.contracts(workflow_id))
    # "continue without" holds for the rest of the workflow; a re-run restored the state of
    # one kernel only, so a later rebuild that loses it again asks again
    answered = {
        c.metadata.get("of")
        for c in contracts
        if c.action_type == "replay"
        and c.metadata.get(KIND)
        and c.status in (ExecutionStatus.REJECTED, ExecutionStatus.WAITING)
    }
    lost: list[tuple[CellRow, ExecutionContract, list[str]]] = []
    for row, original in skipped:
        names = bound_names(_source(row.cell))
        if names and original.execution_id not in answered:
            lost.append((row, original, names))
    if not lost:
        return False
    # an approved re-run the process stopped in (recovery failed it "interrupted"): its side
    # effect may have happened; the question says so rather than asking as if it never ran
    interrupted = {
        str(c.metadata.get("of"))
        for c in contracts
        if c.action_type == "replay"
        and c.metadata.get(KIND)
        and c.status is ExecutionStatus.FAILED
        and c.error_message == "interrupted"
    }
    records: list[HistoryEntry | TraceRecord] = []
    held: list[ExecutionContract] = []
    for row, original, _ in lost:
        replay, more = engine.new_contract(
            "replay",
            {"cell_id": row.cell_id, "of": original.execution_id, "code": _source(row.cell)},
            irreversible=True,
            metadata={"cell_id": row.cell_id, "of": original.execution_id, KIND: True},
        )
        started, start_records = fire(replay, "start", actor="recovery")
        waiting, wait_records = fire(started, "suspend", actor="recovery")
        records += [*more, *start_records, *wait_records]
        held.append(waiting)
    cells = [row.cell_id for row, _, _ in lost]
    names = list(dict.fromkeys(n for _, _, found in lost for n in found))
    shown = ", ".join(names[:NAMES_SHOWN]) + (", ..." if len(names) > NAMES_SHOWN else "")
    which = f"cell {cells[0]}" if len(cells) == 1 else f"cells {', '.join(cells)}"
    message = (
        f"The kernel was rebuilt without the state of the irreversible {which} (never re-run "
        f"by itself; missing: {shown}). Approve to re-run it once now (its side effect happens "
        "again); reject to continue without that state; or cancel the workflow."
    )
    if any(original.execution_id in interrupted for _, original, _ in lost):
        message += (
            " An approved re-run of it was under way when the process stopped: it may have "
            "happened already (check its side effect before you approve)."
        )
    snap, decision = engine.new_decision(
        KIND,
        message,
        {
            "cell_id": cells[0],
            "cells": cells,
            "contracts": [c.execution_id for c in held],
            "of": [original.execution_id for _, original, _ in lost],
            "code": "\n\n".join(_source(row.cell) for row, _, _ in lost),
            "names": names,
        },
    )
    # asked first: the other decisions build on a kernel that lacks this state
    others = [p for p in snap.run.pending if p.id != decision.id]
    snap = snap.model_copy(
        update={"run": snap.run.model_copy(update={"pending": [decision, *others]})}
    )
    await engine.commit(
        with_run(snap, "waiting", message),
        records=records,
        contracts=held,
        events=[
            EventDraft(
                "decision",
                event="created",
                actor="recovery",
                detail={"id": decision.id, "kind": KIND, "cells": cells},
            )
        ],
        kinds=frozenset({"decision"}),
    )
    if engine.options.auto_confirm:
        # delegated: auto-confirm never repeats an irreversible side effect on its own
        await answer(engine, decision, "reject", "auto-confirm")
        return False
    return True


async def answer(
    engine: EngineHost, pending: PendingDecision, decision: Literal["approve", "reject"], actor: str
) -> None:
    """Approve: re-run the lost irreversible cells once, silently; reject: go on without.

    An approval is committed before the first cell re-runs (write-ahead, as every irreversible
    action): the decision and each cell's contract RUNNING. So a stop command sees a cell
    running and interrupts it, and a process killed during the re-run leaves a record that
    it may have happened (recovery fails the contract "interrupted"; the next rebuild asks
    again and says so) instead of the same open question, as if nobody had approved.
    """
    workflow_id = engine.snapshot.workflow_id
    wanted = [str(c) for c in pending.details.get("contracts", [])]
    contracts = {
        c.execution_id: c
        for c in await engine.store.call(lambda s: s.contracts(workflow_id))
        if c.execution_id in wanted and c.status is ExecutionStatus.WAITING
    }
    if not contracts:
        raise NotebookBccError(f"the cells of {pending.id} are no longer waiting")
    if decision == "approve":
        await ensure_unaltered(engine, "no irreversible cell is re-run from it")
    records: list[HistoryEntry | TraceRecord] = []
    resumed: list[ExecutionContract] = []
    for contract_id in wanted:
        held = contracts.get(contract_id)
        if held is not None:
            running, more = fire(held, "resume", actor=actor)
            records += more
            resumed.append(running)
    decided = EventDraft(
        "decision",
        event=decision,
        actor=actor,
        detail={"id": pending.id, "kind": KIND, "cells": pending.details.get("cells")},
    )
    if decision == "approve":
        await engine.commit(
            _after_answer(drop_pending(engine.snapshot, pending.id)),
            records=records,
            contracts=resumed,
            events=[decided],
            kinds=frozenset({"decision"}),
        )
        records, events = [], []
    else:
        engine.snapshot = drop_pending(engine.snapshot, pending.id)
        events = [decided]
    settled: list[ExecutionContract] = []
    effects: list[str] = []
    for running in resumed:
        cell_id = running.metadata.get("cell_id")
        if decision == "reject":
            done, rejected = fire(running, "reject", actor=actor, error_message="continue without")
            last: list[TraceRecord] = list(rejected)
            effects.append(
                f"WARN: continued without the state of irreversible cell {cell_id} "
                f"({actor} chose not to re-run it)"
            )
        else:
            done, last, effect = await _rerun(engine, running, actor)
            effects.append(effect)
        records = [*records, *last]
        settled.append(done)
    snap = engine.snapshot
    snap = snap.model_copy(update={"effects": add_current(snap.effects, effects)})
    await engine.commit(
        _after_answer(snap),
        records=records,
        contracts=settled,
        events=events,
        kinds=frozenset({"decision", "replay"}),
    )


def _after_answer(snap: WorkflowSnapshot) -> WorkflowSnapshot:
    """The run goes on once no decision waits any more."""
    return snap if snap.run.pending else with_run(snap, "running")


async def _rerun(
    engine: EngineHost, running: ExecutionContract, actor: str
) -> tuple[ExecutionContract, list[TraceRecord], str]:
    """Re-run one lost cell silently (its contract is RUNNING in the store): the settled
    contract, its records, and the effect line that says what happened."""
    cell_id = running.metadata.get("cell_id")
    code = str(running.action_detail.get("code") or "")
    timeout = engine.options.cell_timeout or REPLAY_TIMEOUT
    try:
        reply = await engine.runtime.session.silent(code, timeout=timeout)
        content = reply.content
    except NotebookBccError as exc:
        content = {"status": "error", "ename": type(exc).__name__, "evalue": exc.message}
    if content.get("status") == "ok":
        done, last = fire(running, "succeed", actor=actor, result="re-run once")
        return (
            done,
            last,
            f"WARN: irreversible cell {cell_id} re-run once to restore its state "
            f"(approved by {actor})",
        )
    why = f"{content.get('ename', 'error')}: {content.get('evalue', '')}"
    done, last = fire(running, "fail", actor=actor, error_message=why)
    return done, last, f"WARN: re-running irreversible cell {cell_id} failed: {why}"


__all__ = ["KIND", "answer", "ask", "bound_names", "pending_decision"]
