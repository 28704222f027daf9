"""Damaged payloads never apply silently, and a stage reflection's ``next_step_id`` routes.

Issue 21: a truncated document is a protocol error (nothing applied), a repair that closes an
element where its sibling opens keeps the sibling a sibling, a repair that cannot tell is an
error naming the line, and every repair applied is listed (result and trace row).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from notebook_bcc.models.names import Event, State
from notebook_bcc.models.records import TraceRecord
from notebook_bcc.protocol import ProtocolError, parse_payload
from notebook_bcc.workflow import (
    ContradictoryPayloadError,
    apply_payload,
    apply_text,
    build_observation,
    load_state_document,
)
from notebook_bcc.workflow.damage import DamagedPayloadError
from tests.conftest import SLOW
from tests.workflow.test_apply_chain import fixture_bytes, snapshot_before, start_snapshot

AT = "2025-03-01T10:00:00Z"


def _cut(name: str, marker: str) -> bytes:
    """A chain fixture cut off just before ``marker`` (which must occur once)."""
    text = fixture_bytes(name).decode("utf-8")
    assert text.count(marker) == 1
    return text[: text.index(marker)].encode("utf-8")


def test_a_stage_plan_cut_off_mid_document_is_refused() -> None:
    snapshot = start_snapshot()
    before = snapshot.model_dump(mode="json")
    cut = _cut("00_stages.txt", '<stage id="eda"')
    payload = parse_payload(cut)
    assert payload.truncated is True
    with pytest.raises(DamagedPayloadError) as caught:
        apply_payload(snapshot, payload, at=AT)
    error = caught.value
    assert error.kind == "stages"
    assert error.state == "idle"
    assert "truncated" in error.message
    assert error.line is not None
    assert snapshot.model_dump(mode="json") == before


def test_a_cut_off_reflection_is_refused_instead_of_losing_a_variable() -> None:
    snapshot = snapshot_before("07_reflection_load_complete.xml")
    cut = _cut("07_reflection_load_complete.xml", '<variable name="raw_path"')
    with pytest.raises(DamagedPayloadError) as caught:
        apply_text(snapshot, cut, at=AT)
    assert caught.value.kind == "reflection"
    assert caught.value.state == "behavior_completed"


def test_truncation_is_accepted_only_when_marked_so() -> None:
    payload = parse_payload(_cut("00_stages.txt", '<stage id="eda"'))
    accepted = payload.model_copy(update={"truncation_accepted": True})
    applied = apply_payload(start_snapshot(), accepted, at=AT)
    assert applied.events == [Event.START_WORKFLOW]
    assert [s.id for s in applied.snapshot.location.progress.stages.remaining] == ["data_cleaning"]
    assert any("closed at the end of input" in line for line in applied.repairs)


def test_a_missing_goal_end_tag_keeps_the_artifacts_as_siblings() -> None:
    text = (
        "<stages>\n"
        '  <stage id="load" title="Load">\n'
        "    <goal>Load the CSV into df_raw\n"
        "    <verified_artifacts>\n"
        '      <variable name="df_raw">Raw DataFrame</variable>\n'
        "    </verified_artifacts>\n"
        "    <required_variables>user_submit_files</required_variables>\n"
        "  </stage>\n"
        "</stages>"
    )
    applied = apply_text(start_snapshot(), text, at=AT)
    stage = applied.snapshot.location.progress.stages.current
    assert stage is not None
    assert stage.goal == "Load the CSV into df_raw"
    assert stage.verified_artifacts == {"df_raw": "Raw DataFrame"}
    assert stage.required_variables == {"user_submit_files": ""}
    assert applied.repairs == [
        "repaired line 4: <goal>: <goal> from line 3 closed where its sibling "
        "<verified_artifacts> opens"
    ]
    (trace,) = [row for row in applied.records if isinstance(row, TraceRecord)]
    assert trace.action == "repair:stages"
    assert trace.metadata == {"repairs": applied.repairs}


def test_a_closed_prose_element_keeps_what_the_llm_put_inside() -> None:
    text = (
        "<stages>\n"
        '  <stage id="load"><goal>Load <artifact>df_raw</artifact> from disk</goal>\n'
        "    <verified_artifacts>df_raw</verified_artifacts>\n"
        "  </stage>\n"
        "  <focus>rows < 5</focus>\n"
        "</stages>"
    )
    payload = parse_payload(text)
    (stage,) = payload.stages
    assert stage.goal == "Load <artifact>df_raw</artifact> from disk"
    assert [note.kind for note in payload.repairs] == ["escaped_char"]


def test_an_unterminated_attribute_quote_is_an_error_naming_the_line() -> None:
    text = (
        "<stages>\n"
        '  <stage id="load"><goal>g</goal>\n'
        "    <verified_artifacts>\n"
        '      <variable name="df_raw>Raw DataFrame</variable>\n'
        '      <variable name="df_meta">Metadata</variable>\n'
        "    </verified_artifacts>\n"
        "  </stage>\n"
        "</stages>"
    )
    with pytest.raises(ProtocolError) as caught:
        parse_payload(text)
    assert caught.value.line == 4
    assert caught.value.element == "variable"
    assert "name attribute" in caught.value.message


def test_markup_like_text_in_a_closed_attribute_value_is_still_repaired() -> None:
    payload = parse_payload(
        '<stages><stage id="a" title="Map<str, List<int>>"><goal>g</goal></stage></stages>x<'
    )
    (stage,) = payload.stages
    assert stage.title == "Map<str, List<int>>"
    assert "attribute_value" in [note.kind for note in payload.repairs]


# ---------------------------------------------------------------- next_step_id routing


def _step_completed_state() -> dict[str, Any]:
    return {
        "observation": {
            "location": {
                "current": {"stage_id": "clean", "step_id": "audit"},
                "progress": {
                    "stages": {"current": {"stage_id": "clean", "goal": "clean frame"}},
                    "steps": {
                        "completed": [{"step_id": "load", "completion_status": "success"}],
                        "current": {"step_id": "audit", "goal": "audit missing values"},
                        "remaining": [
                            {"step_id": "impute", "goal": "impute"},
                            {"step_id": "scale", "goal": "scale"},
                        ],
                    },
                },
            }
        },
        "state": {"FSM": {"state": "STEP_COMPLETED"}},
    }


def _stage_reflection(next_step: str) -> str:
    return (
        '<stage_reflection stage_is_complete="false">\n'
        "  <decision>\n"
        "    <next_state>STEP_RUNNING</next_state>\n"
        f"    <next_step_id>{next_step}</next_step_id>\n"
        "  </decision>\n"
        "  <variable_management>\n"
        "    <retain>df_raw</retain>\n"
        "    <deprecate>tmp</deprecate>\n"
        "  </variable_management>\n"
        "</stage_reflection>"
    )


def test_next_step_id_names_the_step_entered_next() -> None:
    snapshot = load_state_document(_step_completed_state())
    applied = apply_text(snapshot, _stage_reflection("scale"), at=AT)
    assert applied.events == [Event.NEXT_STEP]
    steps = applied.snapshot.location.progress.steps
    assert steps.current is not None
    assert steps.current.id == "scale"
    assert [item.id for item in steps.remaining] == ["impute"]
    assert [item.id for item in steps.completed] == ["load", "audit"]
    assert applied.snapshot.location.current.step_id == "scale"
    assert applied.snapshot.fsm.state is State.STEP_RUNNING
    assert applied.snapshot.location.goals == "scale"
    assert applied.snapshot.deprecated_variables == ["tmp"]
    observed = build_observation(applied.snapshot)
    assert observed["state"]["deprecated_variables"] == ["tmp"]
    stage = observed["observation"]["location"]["progress"]["stages"]["current"]
    assert stage["variable_management"] == {"retain": ["df_raw"], "deprecate": ["tmp"]}
    assert applied.warnings[-1] == "next_step_id 'scale': entered before 'impute'"


@pytest.mark.parametrize(
    ("step", "why"),
    [("ghost", "is not a step of this stage"), ("load", "has already run"), ("audit", "already")],
)
def test_a_next_step_id_that_is_not_remaining_is_a_protocol_error(step: str, why: str) -> None:
    snapshot = load_state_document(_step_completed_state())
    with pytest.raises(ContradictoryPayloadError) as caught:
        apply_text(snapshot, _stage_reflection(step), at=AT)
    assert f"next_step_id {step!r}" in caught.value.message
    assert why in caught.value.message
    assert "impute, scale" in caught.value.message


def test_next_step_id_is_read_from_context_for_next_too() -> None:
    text = (
        '<stage_reflection stage_is_complete="false">\n'
        "  <decision><next_state>STEP_RUNNING</next_state></decision>\n"
        "  <context_for_next><if_continuing_stage>\n"
        "    <next_step_id>scale</next_step_id>\n"
        "  </if_continuing_stage></context_for_next>\n"
        "</stage_reflection>"
    )
    payload = parse_payload(text)
    assert (payload.next_step_id, payload.next_step_line) == ("scale", 4)
    snapshot = load_state_document(_step_completed_state())
    steps = apply_payload(snapshot, payload, at=AT).snapshot.location.progress.steps
    assert steps.current is not None
    assert steps.current.id == "scale"


_WORDS = (
    st.text(
        alphabet=st.characters(
            exclude_categories=("Cs", "Cc", "Cn"), exclude_characters="<>&\"'\ufeff"
        ),
        min_size=1,
        max_size=30,
    )
    .map(str.strip)
    .filter(bool)
)
_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)


@settings(max_examples=300 if SLOW else 60, deadline=None)
@given(
    goal=_WORDS,
    artifacts=st.dictionaries(_NAMES, _WORDS, min_size=1, max_size=4),
    required=st.dictionaries(_NAMES, _WORDS, max_size=3),
    drop_goal_end=st.booleans(),
)
def test_a_dropped_goal_end_tag_never_swallows_its_siblings(
    goal: str, artifacts: dict[str, str], required: dict[str, str], drop_goal_end: bool
) -> None:
    def variables(tag: str, entries: dict[str, str]) -> str:
        body = "".join(f'<variable name="{k}">{v}</variable>\n' for k, v in entries.items())
        return f"<{tag}>\n{body}</{tag}>\n"

    end = "" if drop_goal_end else "</goal>"
    text = (
        '<stages>\n<stage id="s" title="S">\n'
        f"<goal>{goal}{end}\n"
        + variables("verified_artifacts", artifacts)
        + (variables("required_variables", required) if required else "")
        + "</stage>\n</stages>"
    )
    payload = parse_payload(text)
    (stage,) = payload.stages
    assert stage.goal == goal
    assert stage.verified_artifacts is not None
    assert [(ref.name, ref.description) for ref in stage.verified_artifacts.items] == list(
        artifacts.items()
    )
    if required:
        assert stage.required_variables is not None
        assert {ref.name: ref.description for ref in stage.required_variables.items} == (required)
    closed = [note for note in payload.repairs if note.kind == "closed_element"]
    assert [note.element for note in closed] == (["goal"] if drop_goal_end else [])
    assert payload.truncated is False
