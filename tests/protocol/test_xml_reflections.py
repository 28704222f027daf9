"""<reflection> and <stage_reflection> in both spellings, asserted field by field."""

from __future__ import annotations

import pytest

from notebook_bcc.models.names import State
from notebook_bcc.protocol import ProtocolError, parse_payload
from tests.protocol.helpers import fixture_text, parse_fixture


def test_behavior_reflection() -> None:
    payload = parse_fixture("reflection.xml")

    assert payload.kind == "reflection"
    assert payload.current_step_is_complete is True
    evaluation = payload.evaluation
    assert evaluation is not None
    assert evaluation.artifacts_produced is not None
    (artifact,) = evaluation.artifacts_produced.items
    assert (artifact.name, artifact.attrs["status"]) == ("missing_report", "complete")
    assert artifact.description == "19 columns with missing values, sorted by share."
    assert [(c.expression, c.attrs) for c in evaluation.acceptance_validation] == [
        ("isinstance(missing_report, pd.DataFrame)", {"status": "passed"}),
        (
            "len(missing_report) > 0 and (missing_report['share'] <= 1).all()",
            {"status": "passed"},
        ),
    ]
    assert evaluation.goal_status == "achieved"
    assert evaluation.execution_quality is not None
    assert [(e.tag, e.text) for e in evaluation.execution_quality.elements()] == [
        ("code_execution", "success"),
        ("errors_found", "None"),
    ]
    assert evaluation.goal_achievement is not None
    assert evaluation.goal_achievement.elements()[1].text == (
        "The audit covers all 82 columns & flags 4 with share > 0.3."
    )

    decision = payload.decision
    assert decision is not None
    assert decision.next_state is State.STEP_COMPLETED
    assert decision.next_state_text == "STEP_COMPLETED"
    assert decision.reasoning == "All artifacts exist and every criterion passed."

    context = payload.context_for_next
    assert context is not None
    assert context.variables_produced is not None
    (produced,) = context.variables_produced.items
    assert (produced.name, produced.attrs["value"], produced.description) == (
        "missing_report",
        "DataFrame (19 x 2)",
        "Per-column missing counts and shares",
    )
    assert context.whathappened is not None
    assert context.whathappened.plain_text().strip() == (
        "Missing values audited; PoolQC, MiscFeature, Alley, Fence have share > 0.8."
    )
    assert context.recommendations_for_next is not None
    assert context.recommendations_for_next.elements()[0].tag == "if_moving_forward"

    outputs = payload.outputs_tracking_update
    assert outputs is not None
    assert outputs.level is None
    assert outputs.produced is not None
    assert outputs.produced.names == ["missing_report"]
    assert outputs.in_progress is not None
    assert outputs.in_progress.names == []
    assert outputs.remaining is not None
    assert outputs.remaining.names == ["df_clean"]

    (new_variable,) = payload.new_variables
    assert new_variable.name == "sparse_columns"
    assert new_variable.description == "['PoolQC', 'MiscFeature', 'Alley', 'Fence']"


def test_stage_reflection_long_spellings() -> None:
    payload = parse_fixture("stage_reflection_long.xml")

    assert payload.kind == "stage_reflection"
    assert payload.repaired is False
    assert payload.stage_is_complete is False
    assert payload.step_evaluation is not None
    assert payload.step_evaluation.elements()[0].tag == "step_summary"

    assessment = payload.stage_assessment
    assert assessment is not None
    assert assessment.progress is not None
    assert assessment.progress.tag == "stage_progress"
    assert [(e.tag, e.text) for e in assessment.progress.elements()] == [
        ("completed_steps", "1"),
        ("remaining_steps", "1"),
        ("progress_percentage", "50"),
    ]
    assert assessment.stage_artifacts_status is not None
    (required,) = assessment.stage_artifacts_status.items
    assert (required.name, required.attrs["status"]) == ("df_clean", "missing")
    assert assessment.goal_status == "partial"

    review = payload.stage_goal_review
    assert review is not None
    assert review.needs_update is False
    assert review.current_goal == "Clean frame with < 1% missing cells."
    assert review.reasoning == "The goal still fits the data."

    experience = payload.stage_experience
    assert experience is not None
    assert (experience.tag, experience.from_stage) == ("experience_summary", "data_cleaning")
    assert experience.summary == (
        "Auditing before imputing avoided imputing columns we later drop."
    )
    assert [e.tag for e in experience.extra] == ["lessons_learned"]

    decision = payload.decision
    assert decision is not None
    assert decision.next_state is State.STEP_RUNNING
    assert decision.next_focus == "Impute the remaining columns."

    assert payload.context_for_next is not None
    assert [e.tag for e in payload.context_for_next.extra] == ["if_continuing_stage"]

    outputs = payload.outputs_tracking_update
    assert outputs is not None
    assert outputs.level == "stage_level"
    assert outputs.produced is not None
    assert outputs.produced.names == ["missing_report"]
    assert outputs.in_progress is not None
    assert outputs.in_progress.names == ["df_clean"]

    variables = payload.variable_management
    assert variables is not None
    assert variables.extracted is not None
    (extracted,) = variables.extracted.items
    assert extracted.name == "missing_report"
    assert extracted.description == "Per-column missing counts"
    assert extracted.details == {"description": "Per-column missing counts", "type": "DataFrame"}
    assert extracted.attrs == {"name": "missing_report", "source": "code_cell_4"}
    assert variables.retained is not None
    assert variables.retained.names == ["df_raw", "missing_report"]
    assert variables.retained.items[0].attrs["reason"] == "input of the imputation step"
    assert variables.deprecated is not None
    assert variables.deprecated.items[0].details == {"safe_to_delete": "true"}
    assert variables.required_for_next is not None
    (needed,) = variables.required_for_next.items
    assert (needed.name, needed.group, needed.attrs["required_by"]) == (
        "df_raw",
        "if_continuing_stage",
        "impute",
    )
    assert variables.gaps is not None
    assert variables.gaps.items == []

    pcs = payload.pcs_check
    assert pcs is not None
    assert (pcs.predictability, pcs.computability, pcs.stability) == (
        "No target leakage so far.",
        "All cells deterministic.",
        "Audit stable under bootstrap.",
    )


def test_stage_reflection_short_spellings_and_bare_attribute() -> None:
    payload = parse_fixture("stage_reflection_short.xml")

    assert payload.stage_is_complete is True
    assert "bare_attribute" in [note.kind for note in payload.repairs]
    assert payload.step_evaluation is not None
    assert payload.step_evaluation.text == (
        "Imputation done; df_clean has 0.0% missing cells (target was < 1%)."
    )
    assessment = payload.stage_assessment
    assert assessment is not None
    assert assessment.progress is not None
    assert (assessment.progress.tag, assessment.progress.text) == ("progress", "2/2 steps (100%)")
    assert assessment.goal_status == "achieved"
    review = payload.stage_goal_review
    assert review is not None
    assert review.needs_update is True
    assert review.proposed_goal == "Clean frame with no missing cells & no constant columns."
    experience = payload.stage_experience
    assert experience is not None
    assert (experience.tag, experience.from_stage) == ("stage_experience", "data_cleaning")
    assert experience.summary == (
        "Median imputation by Neighborhood beat the global median (RMSE −3%)."
    )
    decision = payload.decision
    assert decision is not None
    assert decision.next_state is State.STAGE_COMPLETED
    assert decision.next_state_text == "stage_complete"
    variables = payload.variable_management
    assert variables is not None
    assert variables.extracted is not None
    assert variables.extracted.names == ["df_clean", "imputer"]
    assert variables.retained is not None
    assert variables.retained.names == ["df_clean"]
    assert variables.deprecated is not None
    assert variables.deprecated.names == ["df_raw", "missing"]
    assert variables.gaps is not None
    assert variables.gaps.items[0].name == "selected_features"
    assert variables.gaps.items[0].description == "Needed by model_training; not produced yet."
    assert payload.pcs_check is not None
    assert payload.pcs_check.predictability == "Imputer fitted on train only."
    assert payload.pcs_check.stability is None


def test_wrong_root_parses_as_what_it_is_in_auto_mode() -> None:
    payload = parse_payload(fixture_text("wrong_root.txt"))
    assert payload.kind == "stage_reflection"
    assert payload.stage_is_complete is True


def test_unknown_next_state_is_a_typed_error() -> None:
    text = "<reflection>\n<decision>\n<next_state>STEP_RUNNING|STEP_COMPLETED</next_state>"
    text += "</decision></reflection>"
    with pytest.raises(ProtocolError) as info:
        parse_payload(text)
    assert (info.value.kind, info.value.line, info.value.element) == (
        "reflection",
        3,
        "next_state",
    )


def test_template_echo_in_root_attribute_is_a_typed_error() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload('<reflection current_step_is_complete="true|false"></reflection>')
    assert (info.value.line, info.value.element) == (1, "reflection")
