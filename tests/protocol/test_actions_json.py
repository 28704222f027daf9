"""JSON actions: every type, both discriminator keys, wrappers, extra keys kept, typed errors."""

from __future__ import annotations

import pytest

from notebook_bcc.models.actions import (
    AddAction,
    ExecAction,
    IsThinkingAction,
    UpdateTitleAction,
)
from notebook_bcc.protocol import ACTION_MODELS, ProtocolError, parse_action, parse_payload
from tests.protocol.helpers import parse_fixture


def test_actions_list_with_action_key_and_extra_keys() -> None:
    payload = parse_fixture("generating_actions.json")

    assert payload.kind == "json-actions"
    assert payload.format == "document"
    assert payload.envelope == {"phase_id": "p3"}
    section, text, code, run = payload.actions
    assert (section.type, section.content) == ("new_section", "Model Training")
    assert isinstance(text, AddAction)
    assert (text.shot_type, text.is_code) == ("dialogue", False)
    assert text.content == "We fit a **Ridge** baseline; RMSE < 25000 is the bar."
    assert isinstance(code, AddAction)
    assert code.is_code is True
    assert code.content == (
        "from sklearn.linear_model import Ridge\nmodel = Ridge(alpha=1.0).fit(X_train, y_train)"
    )
    assert code.model_extra == {"stage_id": "model_training", "store_id": "s-17"}
    assert isinstance(run, ExecAction)
    assert (run.codecell_id, run.need_output, run.auto_debug) == ("lastAddedCellId", True, False)
    assert run.model_extra == {"shot_type": "action"}


def test_ndjson_stream_with_wrappers_and_no_final_newline() -> None:
    payload = parse_fixture("generating.ndjson")

    assert payload.format == "ndjson"
    types = [action.type for action in payload.actions]
    assert types == [
        "update_title",
        "new_step",
        "is_thinking",
        "finish_thinking",
        "add",
        "exec",
        "set_effect_as_thinking",
        "comment_result",
        "update_last_text",
        "add-text",
        "new_chapter",
    ]
    title = payload.actions[0]
    assert isinstance(title, UpdateTitleAction)
    assert title.value == "Ames Housing — Price Prediction"
    thinking = payload.actions[2]
    assert isinstance(thinking, IsThinkingAction)
    assert (thinking.thinking_text, thinking.agent_name, thinking.text_array) == (
        "Choosing features…",
        "ModelAgent",
        ["a", "b"],
    )
    code = payload.actions[4]
    assert isinstance(code, AddAction)
    assert code.content == (
        "pred = model.predict(X_test)\nrmse = ((pred - y_test) ** 2).mean() ** 0.5\n"
        'print(f"RMSE {rmse:.0f}")'
    )
    run = payload.actions[5]
    assert isinstance(run, ExecAction)
    assert run.auto_debug is True
    assert payload.actions[6].thinking_text == "RMSE 23,412 < 25,000 ✓"
    assert payload.actions[8].text == "Baseline: Ridge, RMSE 23,412."
    assert payload.actions[10].content == "Results"


def test_json_array_of_wrappers_with_irreversible() -> None:
    payload = parse_fixture("generating_stream.json")

    assert [a.type for a in payload.actions] == ["update_title", "add", "add", "exec"]
    assert [a.irreversible for a in payload.actions] == [False, False, True, True]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"type": "add", "content": "x"}, "add"),
        ({"action": "add", "content": "x"}, "add"),
        ({"type": "add", "action": "add", "content": "x"}, "add"),
        ({"action": {"type": "exec", "codecell_id": "c1"}}, "exec"),
        ({"action": {"action": "exec", "codecell_id": "c1"}}, "exec"),
        ({"type": "New-Section", "content": "x"}, "new_section"),
        ({"type": "add_text", "content": "x"}, "add-text"),
        ({"type": "MARK_STEP_COMPLETE"}, "mark_step_complete"),
        ({"type": "plan_stage", "stage_id": "s"}, "plan_stage"),
        ({"type": "communication", "to": "ModelAgent", "content": "hi"}, "communication"),
    ],
)
def test_discriminator_spellings(value: dict[str, object], expected: str) -> None:
    (action,) = parse_action(value)
    assert action.type == expected
    assert "action" not in (action.model_extra or {})


def test_wrapper_keys_are_merged_into_the_action() -> None:
    (action,) = parse_action({"action": {"type": "add", "content": "x"}, "state": "S1"})
    assert action.model_extra == {"state": "S1"}


def test_every_registered_type_round_trips_through_its_model() -> None:
    minimal = {
        "add": {"content": "c"},
        "add-text": {"content": "c"},
        "new_chapter": {"content": "c"},
        "new_section": {"content": "c"},
        "new_step": {"content": "c"},
        "exec": {"codecell_id": "lastAddedCellId"},
        "comment_result": {"content": "c"},
        "update_title": {"title": "t"},
        "update_last_text": {"text": "t"},
        "set_effect_as_thinking": {"thinking_text": "t"},
        "communication": {"content": "c"},
        "plan_stage": {"stage_id": "s"},
    }
    for type_name in ACTION_MODELS:
        value = {"type": type_name, **minimal.get(type_name, {})}
        (action,) = parse_action(value)
        dumped = action.model_dump(exclude_defaults=True)
        assert {"type": action.type, **dumped} == {**value, "type": type_name}


def test_unknown_type_names_pointer_and_line() -> None:
    text = '{"actions": [\n  {"type": "add", "content": "x"},\n  {"type": "explode"}\n]}'
    with pytest.raises(ProtocolError) as info:
        parse_payload(text)
    error = info.value
    assert (error.kind, error.line, error.pointer, error.element) == (
        "json-actions",
        3,
        "/actions/1/type",
        "explode",
    )
    assert "unknown action type 'explode'" in error.message


def test_missing_field_names_line_pointer_and_type() -> None:
    text = '[\n {"action": {"type": "add", "shot_type": "action"}}\n]'
    with pytest.raises(ProtocolError) as info:
        parse_payload(text, kind="json-actions")
    error = info.value
    assert (error.kind, error.line, error.pointer, error.element) == (
        "json-actions",
        2,
        "/0/action/content",
        "add",
    )
    assert error.format_lines("gen.json") == [
        "gen.json:2: add: content: Field required (at /0/action/content)"
    ]


def test_conflicting_type_and_action() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload('{"type": "add", "action": "exec", "content": "x"}')
    assert (info.value.pointer, info.value.line) == ("/type", 1)


def test_update_title_needs_a_title() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload('{"type": "update_title"}', kind="json-actions")
    assert info.value.element == "update_title"
    assert "needs a title or a content" in info.value.message


def test_non_action_values_are_refused() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload('{"actions": [42]}', kind="json-actions")
    assert info.value.pointer == "/actions/0"
    with pytest.raises(ProtocolError) as other:
        parse_payload('{"content": "no type"}', kind="json-actions")
    assert other.value.pointer == ""


def test_bad_field_type_in_ndjson_line() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload('{"type": "finish_thinking"}\n{"type": "exec", "codecell_id": 7}\n')
    assert (info.value.line, info.value.pointer, info.value.element) == (
        2,
        "/codecell_id",
        "exec",
    )


def test_duplicate_keys_and_nan_are_refused() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload('{"type": "add", "content": "a", "content": "b"}')
    assert info.value.element == "content"
    with pytest.raises(ProtocolError):
        parse_payload('{"type": "add", "content": "a", "metadata": {"x": NaN}}')


def test_fenced_json_is_accepted() -> None:
    payload = parse_payload('```json\n{"type": "new_step", "content": "S"}\n```')
    assert payload.actions[0].content == "S"
