"""The HTTP planner against a real tornado server on loopback: requests and the wire formats."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from notebook_bcc.models.names import State
from notebook_bcc.planners.http import ENDPOINTS, HttpPlanner, body_format, recase_states
from notebook_bcc.protocol.payloads import JsonActionsPayload, PlanningPayload, SignalsPayload
from notebook_bcc.protocol.plans import BehaviorPayload, StagesPayload
from notebook_bcc.protocol.reflections import ReflectionPayload, StageReflectionPayload
from tests.planners.conftest import ask, fast, planner, request
from tests.planners.dslc_server import DSLC, Scripted, ScriptedServer

S = State


def test_xml_planning_posts_the_reference_request_to_planning(server: ScriptedServer) -> None:
    server.script(Scripted.file(DSLC / "planning.IDLE.xml"))
    reply = ask(planner(server.url), "plan_stages", request("plan_stages", S.IDLE))
    assert isinstance(reply.payload, StagesPayload)
    assert [s.id for s in reply.payload.stages] == ["explore", "summarize"]
    assert reply.content_type == "application/xml"
    assert reply.body == (DSLC / "planning.IDLE.xml").read_text()
    (got,) = server.received
    assert got.path == "/planning"
    assert got.headers["Content-Type"] == "application/json"
    body = got.body
    assert set(body) == {"observation", "state", "options", "notebook_id"}
    assert set(body["observation"]["location"]) == {"current", "progress", "goals"}
    assert set(body["state"]) >= {"variables", "effects", "notebook", "FSM"}
    assert body["state"]["FSM"]["state"] == "IDLE", "upper case by default (D21)"
    assert body["state"]["variables"]["user_problem"] == "test problem"
    assert body["options"] == {"stream": False}
    assert body["notebook_id"] == "wf-test"


def test_json_planning_decision_at_step_running(server: ScriptedServer) -> None:
    server.script(
        Scripted.text('{"targetAchieved": true, "transition": {"target_achieved": true}}')
    )
    req = request("plan_behavior", S.STEP_RUNNING, stage="a", step="s")
    reply = ask(planner(server.url), "plan_behavior", req)
    assert isinstance(reply.payload, PlanningPayload)
    assert reply.payload.response is not None
    assert reply.payload.response.target_achieved is True
    assert server.received[0].body["state"]["FSM"]["state"] == "STEP_RUNNING"


def test_xml_behavior_with_charset_parameter(server: ScriptedServer) -> None:
    body = (DSLC / "planning.STEP_RUNNING.explore.xml").read_text()
    server.script(Scripted.text(body, "text/xml; charset=utf-8"))
    req = request("plan_behavior", S.STEP_RUNNING, stage="explore", step="load")
    reply = ask(planner(server.url), "plan_behavior", req)
    assert isinstance(reply.payload, BehaviorPayload)
    assert reply.payload.id == "load_rows"


def test_ndjson_split_lines_and_last_line_without_newline(server: ScriptedServer) -> None:
    lines = [
        {"action": {"type": "add", "content": "héllo ✓", "shot_type": "markdown"}},
        {"action": {"type": "add", "content": "x = 1", "shot_type": "action"}},
        {"action": {"type": "exec", "codecell_id": "lastAddedCellId"}},
    ]
    raw = "\n".join(json.dumps(line, ensure_ascii=False) for line in lines).encode("utf-8")
    cut = raw.index("é".encode()) + 1  # inside a two-byte character
    middle = raw.index(b"\n") + 10  # inside the second line
    chunks: list[str | bytes] = [raw[:cut], raw[cut:middle], raw[middle:]]
    server.script(Scripted(chunks=chunks, content_type="application/x-ndjson", pause=0.02))
    seen: list[tuple[str, Any]] = []
    http = HttpPlanner(fast(server.url), listener=lambda point, value: seen.append((point, value)))
    req = request("generate_actions", S.BEHAVIOR_RUNNING, stage="a", step="s", behavior="b")
    reply = ask(http, "generate_actions", req)
    assert isinstance(reply.payload, JsonActionsPayload)
    assert reply.payload.format == "ndjson"
    assert [a.type for a in reply.payload.actions] == ["add", "add", "exec"]
    assert reply.payload.actions[0].content == "héllo ✓"  # type: ignore[union-attr]
    assert [point for point, _ in seen] == ["generate_actions"] * 3
    assert server.paths() == ["/generating"]


def test_ndjson_is_decoded_while_the_stream_is_still_open(server: ScriptedServer) -> None:
    """The server holds the rest of the stream until the client has decoded the first line."""
    gate = threading.Event()
    first = json.dumps({"type": "add-text", "content": "one"}) + "\n"
    rest = json.dumps({"type": "add-text", "content": "two"}) + "\n"
    script = Scripted(chunks=[first, rest], content_type="application/x-ndjson", gate=gate)
    server.script(script)

    def opened(point: str, value: Any) -> None:
        gate.set()

    http = HttpPlanner(fast(server.url), listener=opened)
    req = request("generate_actions", S.BEHAVIOR_RUNNING, stage="a", step="s", behavior="b")
    reply = ask(http, "generate_actions", req)
    assert len(reply.payload.actions) == 2
    assert script.gate_timed_out is False, "the first action was decoded before the stream ended"


def test_json_actions_document(server: ScriptedServer) -> None:
    server.script(Scripted.file(DSLC / "generating.BEHAVIOR_RUNNING.summarize.json"))
    req = request("generate_actions", S.BEHAVIOR_RUNNING, stage="a", step="s", behavior="b")
    reply = ask(planner(server.url), "generate_actions", req)
    assert isinstance(reply.payload, JsonActionsPayload)
    assert reply.payload.format == "document"
    assert [a.type for a in reply.payload.actions] == ["add", "exec"]


def test_reflection_xml_gets_behavior_feedback(server: ScriptedServer) -> None:
    server.script(Scripted.file(DSLC / "reflecting.BEHAVIOR_COMPLETED.explore.xml"))
    feedback = {
        "behavior_id": "b",
        "actions_executed": 3,
        "actions_succeeded": 3,
        "sections_added": 1,
        "last_action_result": "4",
    }
    req = request(
        "reflect_behavior", S.BEHAVIOR_COMPLETED, feedback=feedback, stage="a", behavior="b"
    )
    reply = ask(planner(server.url), "reflect_behavior", req)
    assert isinstance(reply.payload, ReflectionPayload)
    assert reply.payload.current_step_is_complete is True
    (got,) = server.received
    assert got.path == "/reflecting"
    assert got.body["behavior_feedback"] == feedback


def test_stage_reflection_xml(server: ScriptedServer) -> None:
    server.script(Scripted.file(DSLC / "reflecting.STEP_COMPLETED.explore.xml"))
    reply = ask(planner(server.url), "reflect_stage", request("reflect_stage", S.STEP_COMPLETED))
    assert isinstance(reply.payload, StageReflectionPayload)
    assert reply.payload.stage_is_complete is True


def test_control_signals_interleaved_with_actions(server: ScriptedServer) -> None:
    stream = (
        '{"action": {"type": "add-text", "content": "Looks good."}}\n'
        '{"type": "complete_reflection", "whathappened": "loaded"}\n'
        '{"type": "mark_step_complete", "variables_produced": ["rows"]}\n'
    )
    server.script(Scripted.text(stream, "application/x-ndjson"))
    req = request("reflect_behavior", S.BEHAVIOR_COMPLETED, stage="a", behavior="b")
    reply = ask(planner(server.url), "reflect_behavior", req)
    assert isinstance(reply.payload, SignalsPayload)
    assert [a.type for a in reply.payload.signals] == ["complete_reflection", "mark_step_complete"]
    assert reply.payload.actions[0].type == "add-text"


def test_planning_json_at_a_reflecting_point(server: ScriptedServer) -> None:
    server.script(
        Scripted.text('{"targetAchieved": false, "transition": {"continue_behaviors": true}}')
    )
    req = request("reflect_behavior", S.BEHAVIOR_COMPLETED, stage="a", behavior="b")
    reply = ask(planner(server.url), "reflect_behavior", req)
    assert isinstance(reply.payload, PlanningPayload)


def test_unknown_content_type_is_sniffed(server: ScriptedServer) -> None:
    server.script(Scripted.text((DSLC / "planning.IDLE.xml").read_text(), "text/plain"))
    reply = ask(planner(server.url), "plan_stages", request("plan_stages", S.IDLE))
    assert isinstance(reply.payload, StagesPayload)


def test_no_content_keeps_the_current_behavior(server: ScriptedServer) -> None:
    server.script(Scripted(status=204, content_type=None))
    req = request("plan_behavior", S.BEHAVIOR_RUNNING, stage="a", step="s", behavior="b")
    assert ask(planner(server.url), "plan_behavior", req) is None


def test_lower_case_states_when_configured(server: ScriptedServer) -> None:
    server.script(Scripted.file(DSLC / "planning.IDLE.xml"))
    ask(planner(server.url, state_case="lower"), "plan_stages", request("plan_stages", S.IDLE))
    assert server.received[0].body["state"]["FSM"]["state"] == "idle"


def test_recase_reaches_the_context_form_and_history() -> None:
    doc = {
        "observation": {
            "context": {
                "FSM": {
                    "state": "STEP_RUNNING",
                    "history": [{"from": "IDLE", "to": "STAGE_RUNNING"}],
                }
            }
        }
    }
    lowered = recase_states(doc, "lower")
    fsm = lowered["observation"]["context"]["FSM"]
    assert fsm == {"state": "step_running", "history": [{"from": "idle", "to": "stage_running"}]}
    assert doc["observation"]["context"]["FSM"]["state"] == "STEP_RUNNING", "not changed in place"


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("application/xml", "xml"),
        ("text/xml; charset=utf-8", "xml"),
        ("application/vnd.dslc+xml", "xml"),
        ("application/json", "json"),
        ("application/problem+json", "json"),
        ("application/x-ndjson", "ndjson"),
        ("application/jsonl", "ndjson"),
        ("text/plain", "unknown"),
        (None, "unknown"),
    ],
)
def test_body_format_by_content_type(content_type: str | None, expected: str) -> None:
    assert body_format(content_type) == expected


def test_each_point_posts_to_its_endpoint() -> None:
    assert ENDPOINTS == {
        "plan_stages": "/planning",
        "plan_steps": "/planning",
        "plan_behavior": "/planning",
        "generate_actions": "/generating",
        "reflect_behavior": "/reflecting",
        "reflect_stage": "/reflecting",
        "route_stage": "/reflecting",
    }


def test_token_comes_from_the_named_environment_variable(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSLC_TEST_TOKEN", "s3cret")
    server.script(Scripted.file(DSLC / "planning.IDLE.xml"))
    http = planner(server.url, token_env="DSLC_TEST_TOKEN")
    assert "s3cret" not in json.dumps(http.settings())
    ask(http, "plan_stages", request("plan_stages", S.IDLE))
    assert server.received[0].headers["Authorization"] == "Bearer s3cret"
