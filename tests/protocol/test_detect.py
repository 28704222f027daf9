"""``kind="auto"``: JSON vs XML, the XML root, planning vs actions vs signals."""

from __future__ import annotations

import pytest

from notebook_bcc.protocol import PAYLOAD_KINDS, ProtocolError, parse_payload


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("<stages/>", "stages"),
        ("Plan:\n```xml\n<workflow title='t'/>\n```", "workflow"),
        ("I will write <steps> below.\n<steps>\n<step id='a'/>\n</steps>", "steps"),
        ('<behavior id="b1"/>', "behavior"),
        ("<actions></actions>", "actions"),
        ("<reflection/>", "reflection"),
        ("<stage_reflection/>", "stage_reflection"),
        ('{"targetAchieved": true}', "planning"),
        ('{"context_filter": {}}', "planning"),
        ('{"type": "add", "content": "x"}', "json-actions"),
        ('[{"action": {"type": "mark_stage_complete"}}]', "signals"),
        ('\n\n{"type": "finish_thinking"}\n{"type": "complete_reflection"}\n', "signals"),
    ],
)
def test_auto_detection(text: str, kind: str) -> None:
    assert parse_payload(text).kind == kind


def test_prose_before_the_root_line_does_not_fool_detection() -> None:
    payload = parse_payload("I will write <steps> below.\n<steps>\n<step id='a'/>\n</steps>")
    assert [step.id for step in payload.steps] == ["a"]
    assert payload.steps[0].line == 3


def test_undetectable_text() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload("Sorry, I cannot help with that.")
    assert (info.value.kind, info.value.line, info.value.element) == ("payload", 1, "payload")


def test_json_syntax_error_names_line() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload('{\n  "targetAchieved": true,\n  "transition": {,}\n}')
    assert (info.value.line, info.value.element) == (3, "json")
    assert info.value.issues[0].message.startswith("invalid JSON: Expecting property name")


def test_every_kind_is_listed() -> None:
    assert PAYLOAD_KINDS == (
        "auto",
        "stages",
        "workflow",
        "steps",
        "behavior",
        "actions",
        "reflection",
        "stage_reflection",
        "json-actions",
        "planning",
        "signals",
    )
