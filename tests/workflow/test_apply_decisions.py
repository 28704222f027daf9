"""Decisions: D17 precedence and fallback, D15 escalation, signals, planning JSON, navigation."""

from __future__ import annotations

import json

import pytest

from notebook_bcc.models.names import Event, State
from notebook_bcc.models.snapshot import VariableInfo, WorkflowSnapshot
from notebook_bcc.workflow import (
    Applied,
    ApplyOptions,
    ContradictoryPayloadError,
    apply_text,
    complete_action,
    navigate,
)
from tests.workflow.test_apply_chain import Run, ids, snapshot_before

E = Event
AT = "2025-02-02T10:00:00Z"

BEHAVIOR_DONE = "04_reflection_load_continue.xml"
"""Before this fixture the chain is at behavior_completed (iteration 1 of load_csv)."""
STEP_DONE_MORE = "08_stage_reflection_next_step.xml"
"""Before this fixture: step_completed with one step (inventory) remaining."""
STEP_DONE_LAST = "12_stage_reflection_complete.xml"
"""Before this fixture: step_completed with no step remaining."""


def apply(snapshot: WorkflowSnapshot, text: str, kind: str = "auto", **kwargs: int) -> Applied:
    """Apply ``text`` at a fixed time, checking the input is left untouched."""
    before = snapshot.model_dump(mode="json")
    applied = apply_text(snapshot, text, kind, at=AT, **kwargs)
    assert snapshot.model_dump(mode="json") == before
    return applied


def refused(snapshot: WorkflowSnapshot, text: str, match: str, kind: str = "auto") -> None:
    """The payload is a contradiction and the snapshot stays as it was."""
    before = snapshot.model_dump(mode="json")
    with pytest.raises(ContradictoryPayloadError, match=match):
        apply_text(snapshot, text, kind, at=AT)
    assert snapshot.model_dump(mode="json") == before


def reflection(attr: str | None, next_state: str | None, extra: str = "") -> str:
    """A minimal behavior reflection."""
    root = "<reflection" + (f' current_step_is_complete="{attr}"' if attr else "") + ">"
    decision = f"<decision><next_state>{next_state}</next_state></decision>" if next_state else ""
    return f"{root}{decision}{extra}</reflection>"


def stage_reflection(attr: str | None, next_state: str | None, extra: str = "") -> str:
    """A minimal stage reflection."""
    root = "<stage_reflection" + (f' stage_is_complete="{attr}"' if attr else "") + ">"
    decision = (
        f"<decision><next_state>{next_state}</next_state><next_focus>go on</next_focus></decision>"
        if next_state
        else ""
    )
    return f"{root}{decision}{extra}</stage_reflection>"


def planning(**fields: object) -> str:
    """A planning JSON response."""
    return json.dumps(fields)


# ---------------------------------------------------------------- D17 behavior reflections


def test_decision_wins_over_the_root_attribute_and_warns() -> None:
    snapshot = snapshot_before(BEHAVIOR_DONE)
    applied = apply(snapshot, reflection("false", "STEP_COMPLETED"))
    assert applied.events == [E.COMPLETE_STEP]
    assert applied.warnings == [
        'D17: <next_state> STEP_COMPLETED wins over current_step_is_complete="false"'
    ]
    applied = apply(snapshot, reflection("true", "step_running"))
    assert applied.events == [E.NEXT_BEHAVIOR]
    assert applied.warnings == [
        'D17: <next_state> step_running wins over current_step_is_complete="true"'
    ]


def test_agreeing_decision_and_attribute_do_not_warn() -> None:
    snapshot = snapshot_before(BEHAVIOR_DONE)
    assert apply(snapshot, reflection("true", "STEP_COMPLETED")).warnings == []
    assert apply(snapshot, reflection("false", "STATE_STEP_RUNNING")).warnings == []


@pytest.mark.parametrize(("attr", "event"), [("true", E.COMPLETE_STEP), ("false", E.NEXT_BEHAVIOR)])
def test_the_attribute_decides_when_there_is_no_next_state(attr: str, event: Event) -> None:
    applied = apply(snapshot_before(BEHAVIOR_DONE), reflection(attr, None))
    assert applied.events == [event]
    assert applied.warnings == []


def test_a_reflection_without_any_decision_is_refused() -> None:
    refused(snapshot_before(BEHAVIOR_DONE), reflection(None, None), "no decision")


@pytest.mark.parametrize("state", ["STAGE_COMPLETED", "workflow_completed", "IDLE"])
def test_a_next_state_a_behavior_reflection_cannot_decide_is_refused(state: str) -> None:
    refused(
        snapshot_before(BEHAVIOR_DONE),
        reflection("true", state),
        "is not a decision this reflection can make",
    )


# ---------------------------------------------------------------- D15


def test_exhausted_iterations_escalate_to_the_stage_reflection() -> None:
    snapshot = snapshot_before(BEHAVIOR_DONE)
    assert snapshot.location.progress.behaviors.iteration == 1
    applied = apply(snapshot, reflection("false", "STEP_RUNNING"), max_iterations=1)
    assert applied.events == [E.COMPLETE_STEP]
    assert applied.warnings == [
        "behavior iterations exhausted (1 of 1): the step completes as failed and the stage "
        "reflection decides (D15)"
    ]
    step = applied.snapshot.location.progress.steps.current
    assert step is not None
    assert step.completion_status == "failed"
    behaviors = applied.snapshot.location.progress.behaviors
    assert [b.completion_status for b in behaviors.completed] == ["failed"]
    assert applied.snapshot.metrics.retry_rate == 0.0


def test_the_cap_counts_iterations_of_the_step_not_behavior_ids() -> None:
    run = Run()
    for name in ("00_stages.txt", "01_steps_loading.xml", "02_behavior_load_b1.xml"):
        run.apply(name)
    events: list[Event] = []
    for _ in range(3):
        run.apply("03_actions_load_b1.xml")
        run.execute([])
        applied = run.apply("04_reflection_load_continue.xml", max_iterations=3)
        events.extend(applied.events)
    assert events == [E.NEXT_BEHAVIOR, E.NEXT_BEHAVIOR, E.COMPLETE_STEP]
    assert run.snapshot.fsm.state is State.STEP_COMPLETED
    behaviors = run.snapshot.location.progress.behaviors
    assert [b.iteration for b in behaviors.completed] == [1, 2, 3]
    step = run.snapshot.location.progress.steps.current
    assert step is not None
    assert step.completion_status == "failed"


def test_the_cap_is_for_retries_a_behavior_that_reached_its_goal_goes_on() -> None:
    """At the cap, a behavior whose evaluation says its goal was achieved and that asks for
    more behaviors goes on to the step's next behavior (NEXT_BEHAVIOR): D15 caps retries of a
    behavior that still fails, not a step that lists several behaviors."""
    snapshot = snapshot_before(BEHAVIOR_DONE)
    achieved = '<evaluation><goal_achievement status="achieved"/></evaluation>'
    applied = apply(snapshot, reflection("false", "STEP_RUNNING", achieved), max_iterations=1)
    assert applied.events == [E.NEXT_BEHAVIOR]
    assert not any("exhausted" in w for w in applied.warnings), applied.warnings
    behaviors = applied.snapshot.location.progress.behaviors
    assert [b.completion_status for b in behaviors.completed] == ["success"]
    assert applied.snapshot.metrics.retry_rate == 0.0
    # the same answer without the goal reached is a retry past the cap: escalated
    applied = apply(snapshot, reflection("false", "STEP_RUNNING"), max_iterations=1)
    assert applied.events == [E.COMPLETE_STEP]


# ---------------------------------------------------------------- D17 stage reflections


def test_stage_decision_wins_over_stage_is_complete() -> None:
    snapshot = snapshot_before(STEP_DONE_MORE)
    applied = apply(snapshot, stage_reflection("true", "STEP_RUNNING"))
    assert applied.events == [E.NEXT_STEP]
    assert applied.warnings == ['D17: <next_state> STEP_RUNNING wins over stage_is_complete="true"']
    applied = apply(snapshot, stage_reflection("false", "STAGE_COMPLETE"))
    assert applied.events == [E.COMPLETE_STAGE]
    assert applied.warnings[0] == (
        'D17: <next_state> STAGE_COMPLETE wins over stage_is_complete="false"'
    )


def test_next_step_when_none_remains_is_a_protocol_error() -> None:
    snapshot = snapshot_before(STEP_DONE_LAST)
    refused(snapshot, stage_reflection("false", "STEP_RUNNING"), "no step remains")
    refused(snapshot, stage_reflection("false", None), "no step remains")


def test_completing_a_stage_with_steps_left_marks_them_skipped() -> None:
    applied = apply(snapshot_before(STEP_DONE_MORE), stage_reflection("true", None))
    assert applied.events == [E.COMPLETE_STAGE]
    steps = applied.snapshot.location.progress.steps
    assert [(s.id, s.completion_status) for s in steps.completed] == [
        ("load_csv", "success"),
        ("inventory", "skipped"),
    ]
    assert applied.warnings == ["stage completed with steps never run (marked skipped): inventory"]


def test_stage_reflection_variable_management() -> None:
    snapshot = snapshot_before(STEP_DONE_MORE)
    management = (
        "<variable_management><extracted><variable name='bad_rows' type='int'>0</variable>"
        "</extracted><retain>df_raw, ghost</retain><deprecate>raw_path df_raw</deprecate>"
        "<gaps><variable name='df_raw'/><variable name='target_log'/></gaps>"
        "</variable_management>"
    )
    applied = apply(snapshot, stage_reflection(None, "STEP_RUNNING", management))
    snap = applied.snapshot
    assert snap.variables["bad_rows"] == VariableInfo(type="int", repr="0", source="planner")
    assert snap.deprecated_variables == ["raw_path"]
    assert [(g.variable, g.level, g.owner_id) for g in snap.gaps] == [
        ("target_log", "stage", "data_loading")
    ]
    assert applied.warnings == [
        "retained variables not in the workspace: ghost",
        "variable 'df_raw' is both retained and deprecated; it is retained",
        "gap reported for stage 'data_loading': variable 'target_log' is missing",
    ]


# ---------------------------------------------------------------- planning JSON (seed 003, D17)


def test_planning_fallback_at_step_running_starts_a_behavior() -> None:
    snapshot = snapshot_before("02_behavior_load_b1.xml")
    applied = apply(
        snapshot, planning(targetAchieved=False, transition={"continue_behaviors": False})
    )
    assert applied.events == [E.START_BEHAVIOR]
    behavior = applied.snapshot.location.progress.behaviors.current
    assert behavior is not None
    assert behavior.id == "load_csv_b1"
    assert behavior.outputs == {"df_raw": ""}
    assert behavior.task == "Read the uploaded CSV into df_raw; check that it has > 2000 rows."


def test_planning_fallback_at_behavior_completed_completes_the_step_unverified() -> None:
    applied = apply(
        snapshot_before(BEHAVIOR_DONE),
        planning(targetAchieved=False, transition={"continue_behaviors": False}),
    )
    assert applied.events == [E.COMPLETE_STEP]
    step = applied.snapshot.location.progress.steps.current
    assert step is not None
    assert step.completion_status == "unverified"
    behavior = applied.snapshot.location.progress.behaviors.completed[-1]
    assert behavior.completion_status == "unverified"


@pytest.mark.parametrize("stop", [STEP_DONE_MORE, "13_stage_completed", "action_completed"])
def test_planning_fallback_elsewhere_is_refused(stop: str) -> None:
    snapshot = _somewhere(stop)
    refused(
        snapshot,
        planning(targetAchieved=False, transition={"continue_behaviors": False}),
        "only applies at step_running and behavior_completed",
    )


def _somewhere(stop: str) -> WorkflowSnapshot:
    if stop == "13_stage_completed":
        run = Run(snapshot_before(STEP_DONE_LAST))
        run.apply(STEP_DONE_LAST)
        assert run.snapshot.fsm.state is State.STAGE_COMPLETED
        return run.snapshot
    if stop == "action_completed":
        run = Run(snapshot_before("03_actions_load_b1.xml"))
        run.apply("03_actions_load_b1.xml")
        done = complete_action(run.snapshot, options=ApplyOptions(at=AT))
        assert done.snapshot.fsm.state is State.ACTION_COMPLETED
        return done.snapshot
    return snapshot_before(stop)


def test_planning_target_achieved_and_continue_is_a_contradiction() -> None:
    refused(
        snapshot_before(BEHAVIOR_DONE),
        planning(targetAchieved=True, transition={"continue_behaviors": True}),
        "both true",
    )


def test_planning_target_root_wins_over_transition_target() -> None:
    applied = apply(
        snapshot_before(BEHAVIOR_DONE),
        planning(targetAchieved=True, transition={"target_achieved": False}),
    )
    assert applied.events == [E.COMPLETE_STEP]
    assert applied.warnings == ["targetAchieved=true wins over transition.target_achieved=false"]


@pytest.mark.parametrize(
    ("stop", "fields", "events"),
    [
        ("02_behavior_load_b1.xml", {"targetAchieved": True}, [E.COMPLETE_STEP]),
        (
            "02_behavior_load_b1.xml",
            {"transition": {"continue_behaviors": True}},
            [E.START_BEHAVIOR],
        ),
        (BEHAVIOR_DONE, {"transition": {"continue_behaviors": True}}, [E.NEXT_BEHAVIOR]),
        (BEHAVIOR_DONE, {"targetAchieved": False}, [E.NEXT_BEHAVIOR]),
        (BEHAVIOR_DONE, {"targetAchieved": True}, [E.COMPLETE_STEP]),
        ("action_completed", {"targetAchieved": True}, [E.COMPLETE_BEHAVIOR, E.COMPLETE_STEP]),
        (
            "action_completed",
            {"transition": {"continue_behaviors": True}},
            [E.COMPLETE_BEHAVIOR, E.NEXT_BEHAVIOR],
        ),
        (STEP_DONE_MORE, {"targetAchieved": False}, [E.NEXT_STEP]),
        (STEP_DONE_MORE, {"targetAchieved": True}, [E.COMPLETE_STAGE]),
        ("13_stage_completed", {"targetAchieved": False}, [E.NEXT_STAGE]),
        ("01_steps_loading.xml", {"targetAchieved": True}, [E.COMPLETE_STAGE]),
    ],
)
def test_planning_decisions_map_to_seed_003_events(
    stop: str, fields: dict[str, object], events: list[Event]
) -> None:
    applied = apply(_somewhere(stop), json.dumps(fields))
    assert applied.events == events


def test_planning_target_at_stage_completed_completes_the_workflow_skipping_the_rest() -> None:
    applied = apply(_somewhere("13_stage_completed"), planning(targetAchieved=True))
    assert applied.events == [E.COMPLETE_WORKFLOW]
    stages = applied.snapshot.location.progress.stages
    assert [(s.id, s.completion_status) for s in stages.completed] == [
        ("data_loading", "success"),
        ("data_cleaning", "skipped"),
        ("eda", "skipped"),
        ("modeling", "skipped"),
    ]
    assert applied.snapshot.metrics.overall_progress == 1.0


def test_planning_not_achieved_at_stage_running_needs_a_steps_plan() -> None:
    refused(snapshot_before("01_steps_loading.xml"), planning(targetAchieved=False), "<steps>")


def test_planning_without_a_decision_fires_nothing_but_merges_the_context() -> None:
    snapshot = snapshot_before(BEHAVIOR_DONE)
    applied = apply(
        snapshot,
        planning(
            context_update={
                "variables": {"rmse_threshold": 25000},
                "progress_update": {"level": "step", "focus": "Impute by Neighborhood."},
                "effects_update": {"history": ["older", {"rmse": 1}]},
            },
            context_filter={"variables_to_include": ["df_raw"]},
        ),
    )
    snap = applied.snapshot
    assert applied.events == []
    assert applied.warnings == ["the planning response carries no decision; no event fired"]
    assert snap.fsm == snapshot.fsm
    assert snap.variables["rmse_threshold"] == VariableInfo(
        type="int", value=25000, source="planner"
    )
    assert snap.location.progress.steps.focus == "Impute by Neighborhood."
    assert snap.effects.current == snapshot.effects.current
    assert snap.effects.history == ["older", '{"rmse": 1}']
    assert snap.context_filter is not None
    assert snap.context_filter["variables_to_include"] == ["df_raw"]


def test_planning_keeps_kernel_variables() -> None:
    snapshot = snapshot_before(STEP_DONE_MORE)
    applied = apply(snapshot, planning(context_update={"variables": {"df_raw": 1}}))
    assert applied.snapshot.variables["df_raw"].source == "kernel"
    assert applied.warnings[0] == (
        "variable 'df_raw' is observed in the kernel; the planner value is ignored"
    )


# ---------------------------------------------------------------- streamed planning actions


def test_streamed_planning_actions_plan_stages_steps_and_a_behavior() -> None:
    run = Run()
    stream = "\n".join(
        json.dumps(line)
        for line in [
            {"type": "plan_stage", "stage_id": "load", "title": "Load", "task": "read csv"},
            {"type": "plan_stage", "stage_id": "model", "title": "Model"},
            {"type": "complete_workflow_planning", "total_stages": 3},
        ]
    )
    applied = run.apply_text(stream, "planning")
    assert applied.events == [E.START_WORKFLOW]
    assert applied.warnings == ["complete_workflow_planning says 3 stages, 2 sent"]
    assert ids(run.snapshot.location.progress.stages.remaining) == ["model"]
    steps = "\n".join(
        [
            '{"type": "plan_step", "step_id": "read", "task": "pd.read_csv"}',
            '{"type": "complete_stage_planning"}',
        ]
    )
    assert run.apply_text(steps, "planning").events == [E.START_STEP]
    task = {
        "type": "delegate_task",
        "step_id": "read",
        "agent": "Loader",
        "task_description": "load it",
        "acceptance": ["len(df) > 0"],
    }
    applied = run.apply_text(json.dumps(task), "planning")
    assert applied.events == [E.START_BEHAVIOR]
    behavior = run.snapshot.location.progress.behaviors.current
    assert behavior is not None
    assert (behavior.id, behavior.agent, behavior.acceptance) == (
        "read_b1",
        "Loader",
        ["len(df) > 0"],
    )


# ---------------------------------------------------------------- control signals


def signals(*types: str) -> str:
    """An NDJSON reflecting stream of these control signals."""
    return "\n".join(json.dumps({"type": kind}) for kind in types)


@pytest.mark.parametrize(
    ("stop", "types", "events"),
    [
        (BEHAVIOR_DONE, ["complete_reflection"], [E.NEXT_BEHAVIOR]),
        (BEHAVIOR_DONE, ["complete_reflection", "mark_step_complete"], [E.COMPLETE_STEP]),
        (BEHAVIOR_DONE, ["mark_stage_complete"], [E.COMPLETE_STEP, E.COMPLETE_STAGE]),
        (STEP_DONE_MORE, ["complete_reflection"], [E.NEXT_STEP]),
        (STEP_DONE_MORE, ["mark_stage_complete"], [E.COMPLETE_STAGE]),
        ("13_stage_completed", ["complete_reflection"], [E.NEXT_STAGE]),
    ],
)
def test_control_signals_map_to_seed_003_events(
    stop: str, types: list[str], events: list[Event]
) -> None:
    applied = apply(_somewhere(stop), signals(*types), "signals")
    assert applied.events == events


def test_signal_next_step_when_none_remains_is_refused() -> None:
    refused(snapshot_before(STEP_DONE_LAST), signals("complete_reflection"), "no step remains")


def test_signal_stream_without_signals_fires_nothing() -> None:
    text = json.dumps({"type": "add-text", "content": "thinking aloud"})
    applied = apply(snapshot_before(BEHAVIOR_DONE), text, "signals")
    assert applied.events == []
    assert applied.warnings == ["the stream carries no control signal; no event fired"]
    assert [a.type for a in applied.actions] == ["add-text"]


# ---------------------------------------------------------------- actions, behaviors, steps


def test_an_empty_actions_answer_completes_the_behavior() -> None:
    snapshot = snapshot_before("03_actions_load_b1.xml")
    applied = apply(snapshot, '{"actions": []}', "json-actions")
    assert applied.events == [E.COMPLETE_BEHAVIOR]
    assert applied.warnings == ["the generator sent no action; the behavior completes"]


def test_control_signals_in_an_actions_payload_are_refused() -> None:
    refused(
        snapshot_before("03_actions_load_b1.xml"),
        '{"actions": [{"type": "mark_step_complete"}]}',
        "control signal 'mark_step_complete' in an actions payload",
        "json-actions",
    )


def test_more_actions_at_action_completed_continue_the_queue() -> None:
    snapshot = _somewhere("action_completed")
    queue = snapshot.action_queue
    applied = apply(snapshot, '{"actions": [{"type": "add-text", "content": "more"}]}')
    assert applied.events == [E.NEXT_ACTION]
    assert len(applied.snapshot.action_queue.actions) == len(queue.actions) + 1
    assert applied.snapshot.action_queue.index == queue.index


def test_a_behavior_for_another_step_is_refused() -> None:
    text = '<behavior id="x_b1" step_id="inventory"><task>t</task></behavior>'
    refused(snapshot_before("02_behavior_load_b1.xml"), text, "current step is 'load_csv'")


def test_a_behavior_cannot_re_plan_an_iteration_that_has_actions() -> None:
    run = Run(snapshot_before("03_actions_load_b1.xml"))
    run.apply("03_actions_load_b1.xml")
    run.execute([])
    run.apply("04_reflection_load_continue.xml")
    run.apply("06_actions_load_b2.ndjson")
    done = complete_action(run.snapshot, options=ApplyOptions(at=AT))
    snapshot = navigate(done.snapshot, options=ApplyOptions(at=AT)).snapshot
    assert snapshot.fsm.state is State.ACTION_RUNNING
    snapshot = snapshot.model_copy(
        update={"fsm": snapshot.fsm.model_copy(update={"state": State.BEHAVIOR_RUNNING})}
    )
    text = '<behavior id="load_csv_b3" step_id="load_csv"><task>t</task></behavior>'
    refused(snapshot, text, "already has actions")


def test_steps_for_another_stage_are_refused() -> None:
    text = '<steps stage_id="modeling"><step id="fit"><goal>fit</goal></step></steps>'
    refused(snapshot_before("01_steps_loading.xml"), text, "current stage is 'data_loading'")


def test_a_plan_without_items_is_refused() -> None:
    refused(Run().snapshot, "<stages><focus>nothing</focus></stages>", "no stage")
    refused(snapshot_before("01_steps_loading.xml"), "<steps><focus>x</focus></steps>", "no step")


def test_missing_required_variables_when_a_stage_starts() -> None:
    run = Run()
    run.snapshot = run.snapshot.model_copy(update={"files": []})
    applied = run.apply("00_stages.txt")
    message = "required variable 'user_submit_files' for stage 'data_loading' is missing"
    assert applied.warnings == [message]
    assert applied.snapshot.effects.current == [f"WARN: {message}"]
    assert [(g.variable, g.level, g.owner_id) for g in applied.snapshot.gaps] == [
        ("user_submit_files", "stage", "data_loading")
    ]
    assert applied.snapshot.metrics.variable_coverage == 0.0


# ---------------------------------------------------------------- navigation


def test_navigate_follows_the_remaining_lists() -> None:
    run = Run(snapshot_before("03_actions_load_b1.xml"))
    run.apply("03_actions_load_b1.xml")
    queue_length = len(run.snapshot.action_queue.actions)
    assert run.execute([]) == [E.COMPLETE_ACTION, E.NEXT_ACTION] * (queue_length - 1) + [
        E.COMPLETE_ACTION,
        E.COMPLETE_BEHAVIOR,
    ]
    last = Run(snapshot_before(STEP_DONE_LAST))
    applied = last.navigate()
    assert applied.events == [E.COMPLETE_STAGE]
    assert last.navigate().events == [E.NEXT_STAGE]
    final = last.snapshot.model_copy(
        update={
            "fsm": last.snapshot.fsm.model_copy(update={"state": State.STAGE_COMPLETED}),
            "location": last.snapshot.location.model_copy(
                update={
                    "progress": last.snapshot.location.progress.model_copy(
                        update={
                            "stages": last.snapshot.location.progress.stages.model_copy(
                                update={"remaining": []}
                            )
                        }
                    )
                }
            ),
        }
    )
    applied = navigate(final)
    assert applied.events == [E.COMPLETE_WORKFLOW]
    assert applied.snapshot.fsm.state is State.WORKFLOW_COMPLETED
    assert ids(applied.snapshot.location.progress.stages.completed) == [
        "data_loading",
        "data_cleaning",
    ]
