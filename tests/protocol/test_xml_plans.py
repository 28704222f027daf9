"""<stages>, <workflow>, <steps> and <behavior>: realistic LLM outputs, asserted field by field."""

from __future__ import annotations

import pytest

from notebook_bcc.protocol import ProtocolError, parse_payload
from tests.protocol.helpers import fixture_text, parse_fixture


def test_stages_with_prose_fences_bare_attribute_and_raw_chars() -> None:
    payload = parse_fixture("stages_fenced.txt")

    assert payload.kind == "stages"
    assert payload.repaired is True
    assert payload.truncated is False
    assert [stage.id for stage in payload.stages] == ["problem_framing", "data_cleaning", "eda"]

    framing = payload.stages[0]
    assert framing.title == "Problem Framing"
    assert framing.line == 6
    assert framing.goal == (
        "Frame the prediction task on ./assets/housing.csv: target SalePrice, metric RMSE.\n"
        "Artifacts: df_raw, problem_statement; Acceptance: len(df_raw) > 0 & "
        "'SalePrice' in df_raw.columns."
    )
    assert framing.verified_artifacts is not None
    assert framing.verified_artifacts.names == ["df_raw", "problem_statement"]
    assert framing.verified_artifacts.items[0].description == (
        "Raw housing DataFrame loaded from ./assets/housing.csv"
    )
    assert framing.verified_artifacts.items[1].line == 13
    assert framing.required_variables is not None
    assert framing.required_variables.names == ["user_submit_files"]
    assert framing.optional is False

    cleaning = payload.stages[1]
    assert cleaning.goal == (
        "Impute or drop missing values; the data required for modelling must have "
        "< 1% missing cells."
    )
    assert cleaning.required_variables is not None
    assert cleaning.required_variables.text == "df_raw"
    assert cleaning.required_variables.names == ["df_raw"]

    eda = payload.stages[2]
    assert eda.optional is True
    assert eda.attrs == {"id": "eda", "title": "Exploratory Analysis", "optional": "true"}
    assert eda.verified_artifacts is not None
    assert eda.verified_artifacts.names == ["corr_top10", "eda_notes"]
    assert eda.required_variables is not None
    assert eda.required_variables.names == ["df_clean"]

    assert payload.focus == (
        "- RMSE < 25000 & R² > 0.85 on the held-out split\n"
        "- random_state=42 everywhere (PCS computability)"
    )
    assert payload.goals == "Deliver a reproducible model whose test RMSE < 25000."
    kinds = [(note.kind, note.line) for note in payload.repairs]
    assert ("dropped_prose", 1) in kinds
    assert ("bare_attribute", 28) in kinds
    assert ("escaped_char", 38) in kinds
    assert ("dropped_trailing", 42) in kinds


def test_workflow_well_formed_with_positioning() -> None:
    payload = parse_fixture("workflow.xml")

    assert payload.kind == "workflow"
    assert payload.repaired is False
    assert payload.repairs == []
    assert payload.id == "housing_v2"
    assert payload.title == "Housing Price Prediction (revised)"
    assert payload.description == (
        "Revised plan after the EDA showed heavy right skew in SalePrice."
    )
    assert payload.focus == "Stability of CV scores across seeds."
    log, select, train = payload.stages
    assert (log.id, log.insert_after, log.insert_before, log.replaces, log.optional) == (
        "log_transform",
        "data_cleaning",
        None,
        None,
        False,
    )
    assert log.goal == "Model log1p(SalePrice); check skew < 0.5 after the transform."
    assert log.focus == "Keep the inverse transform for reporting."
    assert log.line == 5
    assert (select.id, select.insert_before, select.optional) == (
        "feature_selection",
        "model_training",
        True,
    )
    assert select.goal == "Drop features with |corr| < 0.05 & VIF > 10."
    assert select.required_variables is None
    assert (train.id, train.replaces, train.optional) == (
        "model_training_v2",
        "model_training",
        False,
    )
    assert train.required_variables is not None
    assert train.required_variables.names == ["y_log", "selected_features"]
    assert train.verified_artifacts is not None
    assert train.verified_artifacts.items[1].description == "Five RMSE values"


def test_steps_with_pcs_and_unknown_element_kept() -> None:
    payload = parse_fixture("steps.xml")

    assert payload.kind == "steps"
    assert payload.stage_id == "data_cleaning"
    audit, impute = payload.steps
    assert audit.id == "missing_audit"
    assert audit.title == "Missing Value Audit"
    assert audit.goal == (
        "Count missing values per column; flag columns where df_raw[col].isna().mean() > 0.3 "
        "and the data required for the target is complete."
    )
    assert audit.pcs_considerations is not None
    assert audit.pcs_considerations.predictability == (
        "Columns dropped here must not leak target information."
    )
    assert audit.pcs_considerations.computability == "Pure pandas, deterministic; no sampling."
    assert audit.pcs_considerations.stability == (
        "Re-run on a 90% bootstrap: flagged set should not change."
    )
    assert len(audit.extra) == 1
    notes = audit.extra[0]
    assert (notes.tag, notes.attrs, notes.text, notes.line) == (
        "notes",
        {"reviewer": "qa"},
        "Check LotFrontage separately.",
        15,
    )
    assert impute.goal == (
        'Impute numeric columns with the median, categorical with "None"; '
        "result has < 1% missing cells."
    )
    assert impute.pcs_considerations is not None
    assert impute.pcs_considerations.stability == (
        "Compare mean vs median imputation RMSE & report the gap."
    )
    assert impute.required_variables is not None
    assert impute.required_variables.names == ["df_raw", "missing_report"]
    assert payload.focus == "Audit first, then impute; never drop SalePrice rows silently."
    assert payload.goals == "Stage goal unchanged: a clean frame with < 1% missing cells."


def test_behavior_with_criteria_and_whathappened() -> None:
    payload = parse_fixture("behavior.xml")

    assert payload.kind == "behavior"
    assert payload.id == "missing_audit_b1"
    assert payload.step_id == "missing_audit"
    assert payload.agent == "ExploreAgent"
    assert payload.task == (
        "Compute per-column missing counts & shares for df_raw; store the result as "
        "missing_report sorted by share (desc)."
    )
    assert payload.inputs is not None
    assert [(v.name, v.description) for v in payload.inputs.items] == [
        ("df_raw", "pandas.DataFrame (2930 x 82)"),
        ("threshold", "0.3"),
    ]
    assert payload.effects == "True"
    assert payload.outputs is not None
    assert payload.outputs.items[0].name == "missing_report"
    assert payload.outputs.items[0].description == (
        "DataFrame with columns column, n_missing, share"
    )
    assert [c.expression for c in payload.acceptance] == [
        "isinstance(missing_report, pd.DataFrame)",
        "len(missing_report) > 0 and (missing_report['share'] <= 1).all()",
        "missing_report['share'].between(0, 1).all() & True",
    ]
    assert [c.line for c in payload.acceptance] == [13, 14, 15]
    assert payload.whathappened is not None
    overview, background = payload.whathappened.elements()
    assert overview.text == "Stage 2 started; df_raw is loaded with 2930 rows."
    assert background.text == "No cleaning has been done yet."
    assert payload.document.children[1].attrs == {"behavior_id": "missing_audit_b1"}


def test_stage_without_id_is_an_error_naming_the_line() -> None:
    text = "<stages>\n  <stage title='Load'>\n    <goal>x</goal>\n  </stage>\n</stages>"
    with pytest.raises(ProtocolError) as info:
        parse_payload(text)
    assert (info.value.kind, info.value.line, info.value.element) == ("stages", 2, "stage")
    assert "id" in info.value.message


def test_duplicate_stage_ids_are_refused() -> None:
    text = '<stages><stage id="a"/>\n<remaining><stage id="a"/></remaining></stages>'
    with pytest.raises(ProtocolError) as info:
        parse_payload(text)
    assert (info.value.line, info.value.element) == (2, "stage")


def test_bad_boolean_attribute_names_the_attribute() -> None:
    text = '<stages>\n<stage id="a" optional="maybe"/></stages>'
    with pytest.raises(ProtocolError) as info:
        parse_payload(text)
    assert (info.value.line, info.value.element) == (2, "stage")
    assert "optional" in info.value.message


def test_wrong_root_for_the_requested_kind() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload(fixture_text("wrong_root.txt"), kind="reflection")
    assert info.value.kind == "reflection"
    assert (info.value.line, info.value.element) == (3, "stage_reflection")
    assert "expected a <reflection> document" in info.value.message


def test_workflow_stages_listed_directly_and_stage_steps() -> None:
    text = """<workflow title="T">
  <stage id="s1" title="One">
    <steps>
      <step id="a" title="A"/>
      <remaining><step id="b"/></remaining>
    </steps>
  </stage>
  <stage id="s2"/>
</workflow>"""
    payload = parse_payload(text)
    assert payload.kind == "workflow"
    assert [s.id for s in payload.stages] == ["s1", "s2"]
    assert [step.id for step in payload.stages[0].steps] == ["a", "b"]
    assert payload.stages[0].steps[0].title == "A"
    assert payload.stages[1].title is None
