"""Planning JSON, streamed planning actions, reflecting signals and behavior_feedback."""

from __future__ import annotations

import pytest

from notebook_bcc.protocol import BehaviorFeedback, ProtocolError, parse_payload
from notebook_bcc.protocol.planning import PlanningResponse, SummarizeStrategy
from tests.protocol.helpers import parse_fixture


def test_planning_response_field_by_field() -> None:
    payload = parse_fixture("planning.json")

    assert payload.kind == "planning"
    assert payload.actions == []
    response = payload.response
    assert response is not None
    assert response.target_achieved is False
    assert response.transition is not None
    assert (response.transition.continue_behaviors, response.transition.target_achieved) == (
        True,
        False,
    )
    update = response.context_update
    assert update is not None
    assert update.variables == {"rmse_threshold": 25000, "target": "SalePrice"}
    assert update.progress_update is not None
    assert (update.progress_update.level, update.progress_update.focus) == (
        "behaviors",
        "Retry the imputation with Neighborhood medians.",
    )
    workflow = update.workflow_update
    assert workflow is not None
    assert workflow.next_stage_id == "log_transform"
    assert workflow.workflow_template is not None
    assert workflow.workflow_template.name == "housing_v2"
    assert [s.id for s in workflow.workflow_template.stages] == ["data_cleaning", "log_transform"]
    assert workflow.workflow_template.stages[0].steps[0].description == "Median imputation"
    steps_update = update.stage_steps_update
    assert steps_update is not None
    assert steps_update.stage_id == "data_cleaning"
    assert [(s.id, s.description) for s in steps_update.steps] == [
        ("missing_audit", "Audit"),
        ("impute", "Impute"),
    ]
    assert update.effects_update is not None
    assert update.effects_update.current == ["RMSE 23412"]

    context_filter = response.context_filter
    assert context_filter is not None
    assert context_filter.variables_to_include == ["df_clean", "missing_report"]
    strategies = {
        name: (s.strategy, s.n) for name, s in context_filter.variables_to_summarize.items()
    }
    assert strategies == {
        "corr": ("shape_only", None),
        "df_raw": ("describe_only", None),
        "cv_log": ("last_N_only", 5),
        "train_log": ("last_N_only", 12),
        "preds": ("head_only", None),
    }
    config = context_filter.effects_config
    assert config is not None
    assert (config.include_current, config.current_limit) == (True, 3)
    assert (config.include_history, config.history_limit) == (False, 0)
    assert config.patterns is not None
    assert config.patterns.include == [r"RMSE\s+\d+"]
    assert config.patterns.exclude == ["^Warning"]
    assert context_filter.focus_to_include == ["behaviors", "steps"]
    assert context_filter.outputs_tracking is not None
    assert context_filter.outputs_tracking.expected_variables == ["df_clean"]


def test_planning_dump_is_snake_case_and_validates_back() -> None:
    payload = parse_fixture("planning.json")
    dumped = payload.response.model_dump()
    assert "target_achieved" in dumped
    assert dumped["context_update"]["workflow_update"]["next_stage_id"] == "log_transform"
    assert PlanningResponse.model_validate(dumped) == payload.response


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("shape_only", ("shape_only", None)),
        ("last_N_only", ("last_N_only", 5)),
        ("last_10_only", ("last_N_only", 10)),
        ({"strategy": "last_N_only", "n": 3}, ("last_N_only", 3)),
    ],
)
def test_summarize_strategies(value: object, expected: tuple[str, int | None]) -> None:
    strategy = SummarizeStrategy.model_validate(value)
    assert (strategy.strategy, strategy.n) == expected


def test_bad_planning_json_lists_every_issue_with_lines() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_fixture("bad_planning.json")
    error = info.value
    assert error.kind == "planning"
    assert [(i.line, i.pointer, i.element) for i in error.issues] == [
        (5, "/context_filter/effects_config/current_limit", "current_limit"),
        (6, "/context_filter/effects_config/patterns/include", "include"),
    ]
    assert "invalid regular expression" in error.issues[1].message


def test_unknown_strategy_and_level_are_refused() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload(
            '{"targetAchieved": true,\n "context_filter": {"variables_to_summarize": '
            '{"df": "everything"}}}'
        )
    assert info.value.pointer == "/context_filter/variables_to_summarize/df"
    assert info.value.line == 2
    with pytest.raises(ProtocolError):
        parse_payload('{"context_update": {"progress_update": {"level": "tasks"}}}')


def test_planning_level_accepts_singular() -> None:
    payload = parse_payload('{"context_update": {"progress_update": {"level": "Step"}}}')
    assert payload.response.context_update.progress_update.level == "steps"


def test_planning_stream_of_newer_actions() -> None:
    payload = parse_fixture("planning_stream.ndjson", kind="planning")

    assert payload.response is None
    assert [a.type for a in payload.actions] == [
        "plan_stage",
        "plan_stage",
        "complete_workflow_planning",
        "delegate_task",
        "complete_step_planning",
    ]
    first = payload.actions[0]
    assert (first.stage_id, first.title, first.task, first.acceptance) == (
        "problem_framing",
        "Problem Framing",
        "Frame the task",
        ["len(df_raw) > 0"],
    )
    assert payload.actions[2].total_stages == 2
    delegate = payload.actions[3]
    assert (delegate.step_id, delegate.agent, delegate.task_description) == (
        "missing_audit",
        "ExploreAgent",
        "Audit missing values",
    )


def test_auto_detects_a_planning_stream_as_actions() -> None:
    payload = parse_fixture("planning_stream.ndjson")
    assert payload.kind == "json-actions"
    assert len(payload.actions) == 5


def test_signals_stream_interleaved_with_actions() -> None:
    payload = parse_fixture("signals.ndjson")

    assert payload.kind == "signals"
    assert [a.type for a in payload.actions] == [
        "add-text",
        "complete_reflection",
        "mark_step_complete",
        "mark_stage_complete",
    ]
    assert [s.type for s in payload.signals] == [
        "complete_reflection",
        "mark_step_complete",
        "mark_stage_complete",
    ]
    reflection = payload.actions[1]
    assert reflection.whathappened == "missing_report built"
    assert reflection.variables_produced == {"missing_report": "DataFrame (19 x 2)"}
    step_done = payload.actions[2]
    assert step_done.outputs_tracking == {"produced": ["missing_report"]}
    assert step_done.recommendations_for_next == "impute next"


def test_signals_kind_accepts_a_stream_without_signals() -> None:
    payload = parse_payload('{"type": "add-text", "content": "x"}', kind="signals")
    assert payload.kind == "signals"
    assert payload.signals == []


def test_behavior_feedback_model() -> None:
    feedback = BehaviorFeedback.model_validate(
        {
            "behavior_id": "missing_audit_b1",
            "actions_executed": 4,
            "actions_succeeded": 3,
            "sections_added": 1,
            "last_action_result": {"status": "error", "ename": "KeyError"},
        }
    )
    assert (feedback.actions_executed, feedback.actions_succeeded) == (4, 3)
    assert feedback.last_action_result == {"status": "error", "ename": "KeyError"}
    with pytest.raises(ValueError, match="greater than or equal"):
        BehaviorFeedback.model_validate({"actions_executed": -1})
