"""D3 commands and the D4 event model: JSON forms, typed errors, JSON Schema."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notebook_bcc.errors import CommandError
from notebook_bcc.models import (
    ActionCommand,
    Command,
    DecideCommand,
    Event,
    EventCommand,
    WorkflowEvent,
    parse_command,
)

HUMAN = [
    "UPDATE_WORKFLOW_CONFIRMED",
    "UPDATE_WORKFLOW_REJECTED",
    "UPDATE_STEP_CONFIRMED",
    "UPDATE_STEP_REJECTED",
    "CANCEL",
    "RESET",
    "START_WORKFLOW",
    "START_BEHAVIOR",
]


@pytest.mark.parametrize("event", HUMAN)
def test_human_events_parse(event: str) -> None:
    cmd = parse_command({"event": event.lower(), "expected_version": 7})
    assert isinstance(cmd, EventCommand)
    assert cmd.event is Event(event)
    assert cmd.expected_version == 7


@pytest.mark.parametrize("event", sorted({e.value for e in Event} - set(HUMAN)))
def test_machine_events_are_not_human_commands(event: str) -> None:
    with pytest.raises(CommandError, match="not an event a human may send"):
        parse_command({"event": event, "expected_version": 1})


def test_decide_and_action_forms() -> None:
    decide = parse_command({"decide": "p-1", "decision": "approve", "expected_version": 3})
    assert isinstance(decide, DecideCommand)
    assert (decide.decide, decide.decision) == ("p-1", "approve")
    pause = parse_command({"action": "pause", "expected_version": 0})
    assert isinstance(pause, ActionCommand)
    assert pause.action == "pause"


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ([], "JSON object"),
        ("CANCEL", "JSON object"),
        ({}, "exactly one"),
        ({"event": "CANCEL", "action": "run", "expected_version": 1}, "exactly one"),
        ({"event": "CANCEL"}, "/expected_version"),
        ({"event": "CANCEL", "expected_version": -1}, "/expected_version"),
        ({"event": "CANCEL", "expected_version": "seven"}, "/expected_version"),
        ({"event": "LAUNCH", "expected_version": 1}, "unknown event"),
        ({"decide": "", "decision": "approve", "expected_version": 1}, "/decide"),
        ({"decide": "p", "decision": "maybe", "expected_version": 1}, "/decision"),
        ({"action": "stop", "expected_version": 1}, "/action"),
        ({"action": "run", "expected_version": 1, "force": True}, "/force"),
    ],
)
def test_malformed_commands_name_what_is_wrong(payload: object, fragment: str) -> None:
    with pytest.raises(CommandError) as info:
        parse_command(payload)
    assert fragment in info.value.message
    assert info.value.to_json()["code"] == "bad_command"


@given(
    st.dictionaries(
        st.sampled_from(["event", "decide", "decision", "action", "expected_version", "x"]),
        st.one_of(st.none(), st.integers(-3, 9), st.text(max_size=12), st.booleans()),
    )
)
def test_arbitrary_dicts_give_a_command_or_a_command_error(data: dict[str, object]) -> None:
    try:
        cmd = parse_command(data)
    except CommandError as exc:
        error: CommandError | None = exc
    else:
        error = None
        assert cmd.expected_version >= 0
    if error is not None:
        assert error.message.strip()


def test_command_json_schema_has_the_three_forms() -> None:
    schema = Command.model_json_schema()
    assert len(schema["anyOf"]) == 3
    names = {ref["$ref"].rsplit("/", 1)[-1] for ref in schema["anyOf"]}
    assert names == {"EventCommand", "DecideCommand", "ActionCommand"}


def test_workflow_event_uses_from_on_the_wire() -> None:
    event = WorkflowEvent(
        workflow_id="wf",
        seq=1,
        version=4,
        at="2026-01-01T00:00:00Z",
        kind="transition",
        from_="idle",
        event="START_WORKFLOW",
        to="stage_running",
        run_status="running",
    )
    dumped = event.model_dump(by_alias=True)
    assert dumped["from"] == "idle"
    assert WorkflowEvent.model_validate(dumped) == event
    assert "from" in WorkflowEvent.model_json_schema(by_alias=True)["properties"]
    with pytest.raises(ValueError, match="kind"):
        WorkflowEvent.model_validate({**dumped, "kind": "weather"})
