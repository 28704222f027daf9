"""Pure snapshot moves of the engine: stage re-entry, hop accounting, run block, decisions."""

from __future__ import annotations

import pytest

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
from notebook_bcc.errors import NotebookBccError
from notebook_bcc.fsm.rules import HopAllowed, HopCapExceeded
from notebook_bcc.models import Event, PlanItem, State, WorkflowSnapshot, new_snapshot
from notebook_bcc.models.snapshot import LevelProgress, Location, Progress
from notebook_bcc.workflow.result import ApplyOptions

OPTIONS = ApplyOptions(actor="client", at="2026-01-01T00:00:00Z")


def at_stage_completed(
    current: str, remaining: list[str], completed: list[str]
) -> WorkflowSnapshot:
    snap = new_snapshot("wf", "r")
    stages = LevelProgress(
        completed=[PlanItem(id=i, completion_status="success") for i in completed],
        current=PlanItem(id=current, completion_status="success", visits=1),
        remaining=[PlanItem(id=i) for i in remaining],
    )
    location = Location(progress=Progress(stages=stages))
    fsm = snap.fsm.model_copy(update={"state": State.STAGE_COMPLETED})
    return snap.model_copy(update={"location": location, "fsm": fsm})


def test_enter_stage_re_enters_an_earlier_stage_with_its_visits() -> None:
    snap = at_stage_completed("modelling", ["results"], ["features"])
    applied = enter_stage(snap, PlanItem(id="features", title="F"), visits=2, options=OPTIONS)
    after = applied.snapshot
    assert applied.events == [Event.NEXT_STAGE]
    assert after.fsm.state is State.STAGE_RUNNING
    stages = after.location.progress.stages
    assert stages.current is not None
    assert (stages.current.id, stages.current.visits) == ("features", 2)
    assert [s.id for s in stages.remaining] == ["results"]
    assert [s.id for s in stages.completed] == ["features", "modelling"]
    assert after.location.current.stage_id == "features"
    assert snap.fsm.state is State.STAGE_COMPLETED, "input untouched"


def test_end_workflow_marks_unrun_stages_skipped() -> None:
    snap = at_stage_completed("a", ["b"], [])
    applied = end_workflow(snap, options=OPTIONS)
    assert applied.snapshot.fsm.state is State.WORKFLOW_COMPLETED
    done = {s.id: s.completion_status for s in applied.snapshot.location.progress.stages.completed}
    assert done == {"a": "success", "b": "skipped"}
    assert any("never run" in w for w in applied.warnings)


def test_fail_step_only_from_step_running() -> None:
    snap = new_snapshot("wf", "r")
    step_running = snap.model_copy(
        update={"fsm": snap.fsm.model_copy(update={"state": State.STEP_RUNNING})}
    )
    applied = fail_step(step_running, "missing x", options=OPTIONS)
    assert applied.snapshot.fsm.state is State.STEP_COMPLETED
    assert applied.warnings == ["missing x"]
    with pytest.raises(NotebookBccError, match="COMPLETE_STEP"):
        fail_step(snap, "missing x", options=OPTIONS)


def test_fire_event_refuses_what_the_table_refuses() -> None:
    snap = new_snapshot("wf", "r")
    with pytest.raises(NotebookBccError, match="COMPLETE_STAGE"):
        fire_event(snap, Event.COMPLETE_STAGE, options=OPTIONS)
    cancelled = fire_event(snap, Event.CANCEL, options=OPTIONS).snapshot
    assert cancelled.fsm.state.value == "cancelled", "idle --CANCEL--> cancelled (beyond seed)"
    with pytest.raises(NotebookBccError, match="CANCEL"):
        fire_event(cancelled, Event.CANCEL, options=OPTIONS)


def test_run_block_since_moves_only_with_the_status() -> None:
    snap = with_run(new_snapshot("wf", "r"), "waiting", "why", at="t1")
    assert (snap.run.status, snap.run.reason, snap.run.since) == ("waiting", "why", "t1")
    again = with_run(snap, "waiting", "other", at="t2")
    assert again.run.since == "t1"
    moved = with_run(again, "running", at="t3")
    assert (moved.run.since, moved.run.reason) == ("t3", None)


def test_pending_decisions_add_and_drop() -> None:
    snap, decision = add_pending(
        new_snapshot("wf", "r"), "d1", "in_doubt", "did it run?", {"x": 1}, at="t"
    )
    assert snap.run.pending == [decision]
    assert decision.details == {"x": 1}
    assert drop_pending(snap, "d1").run.pending == []
    assert drop_pending(snap, "other").run.pending == [decision]


def test_hop_cap_counts_entries_and_visits() -> None:
    snap = new_snapshot("wf", "r")
    for expected in (1, 2, 3):
        snap, verdict = count_stage_entry(snap, "s", 3)
        assert isinstance(verdict, HopAllowed)
        assert snap.stage_machine.hops == expected
    assert snap.stage_machine.visits == {"s": 3}
    same, verdict = count_stage_entry(snap, "s", 3)
    assert isinstance(verdict, HopCapExceeded)
    assert same is snap
    assert "cap is 3" in verdict.error().message
