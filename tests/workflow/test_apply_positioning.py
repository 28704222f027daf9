"""Stage/step positioning and dynamic updates: parked (D18), then approved or rejected."""

from __future__ import annotations

import json

import pytest

from notebook_bcc.models.names import Event, State
from notebook_bcc.models.records import TraceRecord
from notebook_bcc.models.snapshot import PendingDecision, WorkflowSnapshot
from notebook_bcc.workflow import (
    ApplyOptions,
    ContradictoryPayloadError,
    PendingNotFoundError,
    PlanDiff,
    apply_text,
    approve_update,
    pending_updates,
    reject_update,
)
from notebook_bcc.workflow.result import Replacement
from tests.conftest import FIXTURES
from tests.workflow.test_apply_chain import Run, at_state, ids, snapshot_before

E = Event
AT = "2025-04-04T12:00:00Z"
WORKFLOW_XML = (FIXTURES / "protocol" / "workflow.xml").read_text(encoding="utf-8")

BASE_PLAN = """<stages>
  <stage id="problem_framing" title="Problem Framing"><goal>frame</goal></stage>
  <stage id="data_cleaning" title="Data Cleaning"><goal>clean</goal></stage>
  <stage id="model_training" title="Model Training"><goal>train</goal></stage>
  <stage id="reporting" title="Reporting"><goal>report</goal></stage>
</stages>"""


def planned(text: str = BASE_PLAN) -> WorkflowSnapshot:
    """A run whose stages are ``text`` (at stage_running)."""
    run = Run()
    run.apply_text(text)
    return run.snapshot


def stage_ids(snapshot: WorkflowSnapshot) -> list[str]:
    """Every stage id in plan order (completed, current, remaining)."""
    stages = snapshot.location.progress.stages
    current = [stages.current.id] if stages.current is not None else []
    return [*ids(stages.completed), *current, *ids(stages.remaining)]


# ---------------------------------------------------------------- positioning


def test_positioning_within_one_plan() -> None:
    text = """<stages>
      <stage id="a"/><stage id="b"/>
      <stage id="c" insert_before="b"/>
      <stage id="d" replaces="a" optional/>
      <stage id="e" insert_after="c"/>
    </stages>"""
    snapshot = planned(text)
    assert stage_ids(snapshot) == ["d", "c", "e", "b"]
    stages = snapshot.location.progress.stages
    assert stages.current is not None
    assert stages.current.optional is True


def test_positions_may_name_items_later_in_the_document() -> None:
    text = '<stages><stage id="x" insert_after="y"/><stage id="y"/></stages>'
    assert stage_ids(planned(text)) == ["y", "x"]


def test_restart_from_error_positions_against_the_existing_plan() -> None:
    snapshot = at_state(planned(), State.ERROR)
    applied = apply_text(snapshot, WORKFLOW_XML, at=AT)
    assert applied.events == [E.START_WORKFLOW]
    new = applied.snapshot
    assert stage_ids(new) == [
        "problem_framing",
        "data_cleaning",
        "log_transform",
        "feature_selection",
        "model_training_v2",
        "reporting",
    ]
    stages = new.location.progress.stages
    assert stages.completed == []
    assert stages.current is not None
    assert stages.current.id == "problem_framing"
    assert stages.current.visits == 1
    feature = next(s for s in stages.remaining if s.id == "feature_selection")
    assert feature.optional is True
    assert stages.focus == "Stability of CV scores across seeds."
    assert applied.diff == PlanDiff(
        level="stages",
        added=["log_transform", "feature_selection"],
        replaced=[Replacement(old="model_training", new="model_training_v2")],
    )


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('<stages><stage id="a" insert_after="zzz"/></stages>', "'a' is to go after 'zzz'"),
        ('<stages><stage id="a" replaces="zzz"/></stages>', "'a' replaces 'zzz'"),
        (
            '<stages><stage id="a"/><stage id="b" insert_after="a" insert_before="a"/></stages>',
            "give one position only",
        ),
        (
            '<stages><stage id="a"/><stage id="b"/><stage id="b2" replaces="a"/>'
            '<stage id="x" replaces="b"/><stage id="a2" insert_after="b2"/></stages>',
            None,
        ),
    ],
)
def test_positioning_conflicts_are_refused(text: str, match: str | None) -> None:
    snapshot = Run().snapshot
    if match is None:
        assert stage_ids(apply_text(snapshot, text, at=AT).snapshot) == ["b2", "a2", "x"]
        return
    with pytest.raises(ContradictoryPayloadError, match=match):
        apply_text(snapshot, text, at=AT)


def test_steps_are_positioned_too() -> None:
    snapshot = snapshot_before("01_steps_loading.xml")
    text = """<steps stage_id="data_loading">
      <step id="load"/><step id="profile"/>
      <step id="check" insert_before="profile"/>
    </steps>"""
    applied = apply_text(snapshot, text, at=AT)
    steps = applied.snapshot.location.progress.steps
    assert steps.current is not None
    assert [steps.current.id, *ids(steps.remaining)] == ["load", "check", "profile"]


# ---------------------------------------------------------------- D18: workflow updates

WORKFLOW_UPDATE = {
    "targetAchieved": False,
    "transition": {"continue_behaviors": True},
    "context_update": {
        "workflow_update": {
            "workflowTemplate": {
                "name": "housing_v2",
                "stages": [
                    {"id": "data_loading", "title": "Data Loading"},
                    {"id": "data_cleaning", "title": "Cleaning (revised)"},
                    {"id": "feature_engineering", "title": "Features", "steps": [{"id": "fe1"}]},
                    {"id": "modeling", "title": "Modeling"},
                ],
            },
            "nextStageId": "feature_engineering",
        }
    },
}


def test_a_workflow_update_is_parked_not_applied() -> None:
    snapshot = snapshot_before("04_reflection_load_continue.xml")
    applied = apply_text(snapshot, json.dumps(WORKFLOW_UPDATE), at=AT)
    assert applied.events == [E.NEXT_BEHAVIOR]
    assert stage_ids(applied.snapshot) == stage_ids(snapshot)
    assert len(applied.pending) == 1
    pending = applied.pending[0]
    assert applied.snapshot.run.pending == [pending]
    assert pending_updates(applied.snapshot) == [pending]
    assert pending.kind == "workflow_update"
    assert pending.id.startswith("workflow_update-")
    assert pending.created_at == AT
    assert pending.message == (
        "planner proposes a workflow update: add feature_engineering; remove eda; "
        "change data_cleaning"
    )
    diff = pending.details["diff"]
    assert diff["added"] == ["feature_engineering"]
    assert diff["removed"] == ["eda"]
    assert diff["changed"] == ["data_cleaning"]
    assert pending.details["proposal"]["next_stage_id"] == "feature_engineering"
    assert applied.warnings == [f"workflow update parked as pending decision {pending.id} (D18)"]


def _parked() -> tuple[WorkflowSnapshot, PendingDecision]:
    snapshot = snapshot_before("04_reflection_load_continue.xml")
    applied = apply_text(snapshot, json.dumps(WORKFLOW_UPDATE), at=AT)
    return applied.snapshot, applied.pending[0]


def test_approving_a_workflow_update_applies_it_and_keeps_the_diff() -> None:
    snapshot, pending = _parked()
    before = snapshot.model_dump(mode="json")
    applied = approve_update(snapshot, pending.id, options=ApplyOptions(actor="alice", at=AT))
    assert snapshot.model_dump(mode="json") == before
    new = applied.snapshot
    assert applied.events == []
    assert new.fsm == snapshot.fsm
    assert new.run.pending == []
    stages = new.location.progress.stages
    assert stages.current is not None
    assert stages.current.id == "data_loading"
    assert stages.current.visits == 1
    assert ids(stages.remaining) == ["feature_engineering", "data_cleaning", "modeling"]
    cleaning = next(s for s in stages.remaining if s.id == "data_cleaning")
    assert cleaning.title == "Cleaning (revised)"
    features = stages.remaining[0]
    assert features.extra["steps"] == [{"id": "fe1"}]
    assert applied.diff is not None
    assert applied.diff.added == ["feature_engineering"]
    assert applied.diff.removed == ["eda"]
    [record] = applied.records
    assert isinstance(record, TraceRecord)
    assert record.actor == "alice"
    assert record.action == f"approve_update:{pending.id}"
    assert record.result == "applied"
    assert record.metadata["diff"]["added"] == ["feature_engineering"]


def test_rejecting_a_workflow_update_leaves_the_plan() -> None:
    snapshot, pending = _parked()
    applied = reject_update(snapshot, pending.id, options=ApplyOptions(at=AT))
    assert applied.snapshot.run.pending == []
    assert applied.snapshot.location == snapshot.location
    assert applied.diff is None
    [record] = applied.records
    assert isinstance(record, TraceRecord)
    assert record.action == f"reject_update:{pending.id}"
    assert record.result == "rejected"


def test_the_same_proposal_is_parked_once() -> None:
    snapshot, pending = _parked()
    again = apply_text(
        at_state(snapshot, State.BEHAVIOR_COMPLETED), json.dumps(WORKFLOW_UPDATE), at=AT
    )
    assert again.snapshot.run.pending == [pending]
    assert f"update {pending.id} is already pending" in again.warnings


def test_unknown_or_foreign_pending_ids_are_refused() -> None:
    snapshot, _ = _parked()
    with pytest.raises(PendingNotFoundError, match="no pending decision 'nope'"):
        approve_update(snapshot, "nope")
    foreign = PendingDecision(id="c1", kind="in_doubt", message="?", created_at=AT)
    with_foreign = snapshot.model_copy(
        update={"run": snapshot.run.model_copy(update={"pending": [foreign]})}
    )
    with pytest.raises(PendingNotFoundError, match="is a in_doubt, not a plan update"):
        reject_update(with_foreign, "c1")


def test_a_workflow_document_mid_run_is_parked_and_its_positions_applied_on_approval() -> None:
    snapshot = at_state(planned(), State.BEHAVIOR_COMPLETED)
    applied = apply_text(snapshot, WORKFLOW_XML, at=AT)
    assert applied.events == []
    [pending] = applied.pending
    assert pending.details["diff"]["replaced"] == [
        {"old": "model_training", "new": "model_training_v2"}
    ]
    assert stage_ids(applied.snapshot) == stage_ids(snapshot)
    approved = approve_update(applied.snapshot, pending.id, options=ApplyOptions(at=AT))
    assert stage_ids(approved.snapshot) == [
        "problem_framing",
        "data_cleaning",
        "log_transform",
        "feature_selection",
        "model_training_v2",
        "reporting",
    ]
    current = approved.snapshot.location.progress.stages.current
    assert current is not None
    assert current.id == "problem_framing"


def test_an_update_replacing_the_running_stage_lets_it_finish() -> None:
    snapshot = at_state(planned(), State.BEHAVIOR_COMPLETED)
    text = '<workflow><stage id="framing_v2" replaces="problem_framing"/></workflow>'
    [pending] = apply_text(snapshot, text, at=AT).pending
    approved = approve_update(
        apply_text(snapshot, text, at=AT).snapshot, pending.id, options=ApplyOptions(at=AT)
    )
    stages = approved.snapshot.location.progress.stages
    assert stages.current is not None
    assert stages.current.id == "problem_framing"
    assert ids(stages.remaining) == ["framing_v2", "data_cleaning", "model_training", "reporting"]
    assert approved.warnings == [
        "the running stage 'problem_framing' is not in the new plan; it finishes first"
    ]


def test_a_conflicting_update_is_refused_when_it_arrives() -> None:
    snapshot = snapshot_before("04_reflection_load_continue.xml")
    with pytest.raises(ContradictoryPayloadError, match="is to go after 'nowhere'"):
        apply_text(snapshot, '<workflow><stage id="x" insert_after="nowhere"/></workflow>', at=AT)
    bad_next = json.loads(json.dumps(WORKFLOW_UPDATE))
    bad_next["context_update"]["workflow_update"]["nextStageId"] = "ghost"
    with pytest.raises(ContradictoryPayloadError, match="nextStageId 'ghost'"):
        apply_text(snapshot, json.dumps(bad_next), at=AT)


# ---------------------------------------------------------------- D18: step updates


def _steps_update(stage_id: str, steps: list[str]) -> str:
    return json.dumps(
        {
            "context_update": {
                "stage_steps_update": {
                    "stage_id": stage_id,
                    "steps": [{"id": step, "description": step.title()} for step in steps],
                }
            }
        }
    )


def test_a_step_update_for_the_current_stage() -> None:
    snapshot = snapshot_before("04_reflection_load_continue.xml")
    applied = apply_text(
        snapshot, _steps_update("data_loading", ["load_csv", "validate", "inventory"]), at=AT
    )
    assert applied.events == []
    [pending] = applied.pending
    assert pending.kind == "step_update"
    assert pending.details["diff"]["added"] == ["validate"]
    approved = approve_update(applied.snapshot, pending.id, options=ApplyOptions(at=AT))
    steps = approved.snapshot.location.progress.steps
    assert steps.current is not None
    assert steps.current.id == "load_csv"
    assert steps.current.goal == "Load_Csv"
    assert ids(steps.remaining) == ["validate", "inventory"]
    assert approved.diff is not None
    assert approved.diff.level == "steps"


def test_a_step_update_for_a_later_stage_is_kept_on_that_stage() -> None:
    snapshot = snapshot_before("04_reflection_load_continue.xml")
    applied = apply_text(snapshot, _steps_update("modeling", ["split", "fit"]), at=AT)
    approved = approve_update(applied.snapshot, applied.pending[0].id, options=ApplyOptions(at=AT))
    modeling = approved.snapshot.location.progress.stages.remaining[-1]
    assert modeling.id == "modeling"
    assert modeling.extra["steps"] == [
        {"id": "split", "goal": "Split"},
        {"id": "fit", "goal": "Fit"},
    ]
    assert approved.snapshot.location.progress.steps == snapshot.location.progress.steps


def test_a_step_update_for_an_unknown_stage_is_refused() -> None:
    snapshot = snapshot_before("04_reflection_load_continue.xml")
    with pytest.raises(ContradictoryPayloadError, match="stage 'ghost' is not in the plan"):
        apply_text(snapshot, _steps_update("ghost", ["a"]), at=AT)
