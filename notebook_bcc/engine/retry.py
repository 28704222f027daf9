"""Retry and restart of a failed run: the two ways out of a failure a user has (D1).

A run fails in three shapes, and each has a retry and a restart that the FSM table allows:

- FAIL fired (protocol error, dead kernel, hop cap), FSM ``error``: retry = START_BEHAVIOR
  (the failed behavior, next iteration); restart = START_WORKFLOW.
- a blueprint failure end state (a failed step or acceptance routed there), FSM
  ``stage_completed``: retry = NEXT_STAGE into the failing stage (a new visit); restart =
  NEXT_STAGE into the first stage under a new run id.
- an operational failure (planner unreachable, notebook write error), FSM where it stopped:
  retry = ask the same decision again; restart = FAIL, then START_WORKFLOW.

Both are offered on a ``failed`` run (and in ``error``); the CLI's ``resume`` retries and
``resume --restart`` restarts, the panel and REST send ``{"action": "retry" | "restart"}``.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from notebook_bcc.engine.kernel_loss import note_kernel
from notebook_bcc.engine.routing import fire_event, with_run
from notebook_bcc.errors import NotebookBccError
from notebook_bcc.fsm.workflow import can_fire
from notebook_bcc.models.names import Event, State
from notebook_bcc.models.snapshot import PlanItem, WorkflowSnapshot
from notebook_bcc.planners.base import StageRoute
from notebook_bcc.store.sqlite import EventDraft

if TYPE_CHECKING:
    from notebook_bcc.engine.host import EngineHost


def can_retry(snapshot: WorkflowSnapshot) -> bool:
    """A failed run (or one in ``error``) that a retry or restart may continue."""
    if snapshot.fsm.state in (State.WORKFLOW_COMPLETED, State.CANCELLED):
        return False
    return snapshot.run.status == "failed" or snapshot.fsm.state is State.ERROR


def _failing_stage(snapshot: WorkflowSnapshot) -> PlanItem | None:
    return snapshot.location.progress.stages.current


def _first_stage(snapshot: WorkflowSnapshot) -> PlanItem | None:
    stages = snapshot.location.progress.stages
    if stages.completed:
        return stages.completed[0]
    if stages.current is not None:
        return stages.current
    return stages.remaining[0] if stages.remaining else None


async def _note(engine: EngineHost, what: str, actor: str, detail: dict[str, object]) -> None:
    await engine.commit(
        with_run(engine.snapshot, "running", None),
        events=[EventDraft("run", event=what, actor=actor, detail=detail)],
    )


async def retry(engine: EngineHost, *, actor: str = "human") -> None:
    """Go on from the failure: the failed behavior, the failing stage, or the same question."""
    snap = engine.snapshot
    if not can_retry(snap):
        raise NotebookBccError(
            f"nothing to retry: the run is {snap.run.status} in {snap.fsm.state.value}",
            details={"status": snap.run.status, "state": snap.fsm.state.value},
        )
    if snap.fsm.state is State.ERROR:
        await engine.recovery.retry_behavior()
        return
    if snap.fsm.state is State.STAGE_COMPLETED and snap.stage_machine.decided is None:
        stage = _failing_stage(snap)
        if stage is not None and _ended_failed(snap):
            await _note(engine, "retry", actor, {"stage": stage.id})
            await engine.follow_route(
                StageRoute(outcome="failure", target=stage.id, rule="retry by a human")
            )
            return
    await _note(engine, "retry", actor, {"state": snap.fsm.state.value})


async def _restart_kernel(engine: EngineHost) -> None:
    """Restart the workflow's kernel (the same kernel, a new process with an empty
    namespace), take it as the one the run's state lives in, and run the inputs cell again."""
    runtime = engine.runtime
    if runtime.kernel_restarter is not None:
        await runtime.kernel_restarter()
    else:
        await runtime.session.restart()
    note_kernel(runtime)
    await engine.actions.inputs_cell()


def _ended_failed(snapshot: WorkflowSnapshot) -> bool:
    """The run reached a failure end state (the stage machine sits on it, not on a stage)."""
    stage = snapshot.location.progress.stages.current
    machine = snapshot.stage_machine.current_state
    return (
        snapshot.run.status == "failed"
        and machine is not None
        and (stage is None or machine != stage.id)
    )


async def restart_run(
    engine: EngineHost, *, actor: str = "human", fresh_kernel: bool = False
) -> None:
    """A new run from the first stage (new ``run_id``), the record of the failed one kept.

    ``fresh_kernel``: the kernel the failed attempt ran in is restarted first and the inputs
    cell runs again, so nothing of that attempt (its variables, counters, half-applied
    transforms) leaks into the new run: what ``resume --restart`` gets from its new process,
    the panel's Start over gets from a live engine.
    """
    snap = engine.snapshot
    if not can_retry(snap):
        raise NotebookBccError(
            f"nothing to restart: the run is {snap.run.status} in {snap.fsm.state.value} "
            "(a completed or cancelled workflow starts again with RESET)",
            details={"status": snap.run.status, "state": snap.fsm.state.value},
        )
    if snap.fsm.state is not State.ERROR and _first_stage(snap) is None:
        raise NotebookBccError("nothing to restart: the workflow has no stage yet")
    if fresh_kernel and engine.runtime.session.started:
        await _restart_kernel(engine)
        snap = engine.snapshot
    if snap.fsm.state is not State.ERROR and can_fire(snap.fsm.state, Event.FAIL):
        failed = fire_event(snap, Event.FAIL, options=engine.client_options())
        await engine.commit_applied(
            failed, snapshot=with_run(failed.snapshot, "failed", "restarted by a human")
        )
        snap = engine.snapshot
    if snap.fsm.state is State.ERROR:
        await engine.recovery.restart()
        return
    first = _first_stage(snap)
    if first is None:
        raise NotebookBccError("nothing to restart: the workflow has no stage yet")
    machine = snap.stage_machine.model_copy(
        update={"hops": 0, "decided": None, "resume_state": None}
    )
    engine.snapshot = snap.model_copy(
        update={"run_id": uuid.uuid4().hex[:12], "stage_machine": machine}
    )
    await _note(engine, "restart", actor, {"stage": first.id})
    await engine.follow_route(
        StageRoute(outcome="failure", target=first.id, rule="restart by a human")
    )
