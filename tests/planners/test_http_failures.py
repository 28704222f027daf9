"""The HTTP planner when the server misbehaves: retries, timeouts, fallback, protocol errors."""

from __future__ import annotations

import json
import random
import time
from email.utils import formatdate

import pytest

from notebook_bcc.models.names import State
from notebook_bcc.planners.base import PlannerError, StageRoute
from notebook_bcc.planners.http import (
    HttpPlanner,
    HttpPlannerError,
    HttpPlannerSettings,
    HttpProtocolError,
    backoff_delay,
    parse_retry_after,
)
from notebook_bcc.protocol.payloads import PlanningPayload
from notebook_bcc.protocol.plans import StagesPayload
from tests.planners.conftest import SleepLog, ask, fast, planner, request
from tests.planners.dslc_server import DSLC, Scripted, ScriptedServer, closed_port

S = State
STAGES = (DSLC / "planning.IDLE.xml").read_text()


def stages_request() -> object:
    return request("plan_stages", S.IDLE)


# -- retries ------------------------------------------------------------------------------


def test_500_then_success(server: ScriptedServer) -> None:
    server.script(
        Scripted.text("boom", "text/plain", status=500),
        Scripted.text("still down", "text/plain", status=503),
        Scripted.text(STAGES, "application/xml"),
    )
    sleep = SleepLog()
    reply = ask(planner(server.url, sleep=sleep), "plan_stages", stages_request())
    assert isinstance(reply.payload, StagesPayload)
    assert server.paths() == ["/planning"] * 3
    assert len(sleep.delays) == 2
    assert all(0 < d <= 0.004 for d in sleep.delays), "backoff base/cap are honoured"


def test_429_honours_retry_after(server: ScriptedServer) -> None:
    server.script(
        Scripted.text("slow down", "text/plain", status=429, headers={"Retry-After": "7"}),
        Scripted.text(STAGES, "application/xml"),
    )
    sleep = SleepLog()
    reply = ask(planner(server.url, sleep=sleep), "plan_stages", stages_request())
    assert isinstance(reply.payload, StagesPayload)
    assert sleep.delays == [7.0], "Retry-After wins over the (millisecond) backoff"


def test_retry_after_is_capped(server: ScriptedServer) -> None:
    server.script(
        Scripted.text("", "text/plain", status=503, headers={"Retry-After": "3600"}),
        Scripted.text(STAGES, "application/xml"),
    )
    sleep = SleepLog()
    ask(planner(server.url, sleep=sleep, retry_after_cap=2.5), "plan_stages", stages_request())
    assert sleep.delays == [2.5]


def test_retry_after_real_wait_is_short_and_real(server: ScriptedServer) -> None:
    server.script(
        Scripted.text("", "text/plain", status=429, headers={"Retry-After": "0.05"}),
        Scripted.text(STAGES, "application/xml"),
    )
    began = time.monotonic()
    ask(planner(server.url), "plan_stages", stages_request())
    assert time.monotonic() - began >= 0.05


def test_other_4xx_is_not_retried(server: ScriptedServer) -> None:
    server.script(Scripted.text('{"error": "bad request"}', status=400))
    sleep = SleepLog()
    req = request("plan_behavior", S.STEP_RUNNING, stage="a", step="s")
    with pytest.raises(HttpPlannerError) as caught:
        ask(planner(server.url, sleep=sleep), "plan_behavior", req)
    assert server.paths() == ["/planning"]
    assert sleep.delays == []
    assert "HTTP 400" in caught.value.message
    assert "bad request" in caught.value.message
    assert caught.value.details["retryable"] is False
    assert "fallback" not in caught.value.message, "a refusal is not an outage: no fallback"


def test_connection_refused_retries_then_fails_with_the_cause() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    sleep = SleepLog()
    http = planner(url, sleep=sleep, max_retries=3)
    with pytest.raises(HttpPlannerError) as caught:
        ask(http, "plan_stages", stages_request())
    assert http.attempts == 4
    assert len(sleep.delays) == 3
    assert "cannot connect" in caught.value.message
    assert "after 4 attempts" in caught.value.message
    assert caught.value.details["attempts"] == 4


def test_backoff_grows_exponentially_with_jitter_under_the_cap() -> None:
    rng = random.Random(7)
    delays = [backoff_delay(n, 0.1, 1.0, rng) for n in range(1, 7)]
    ceilings = [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    for delay, ceiling in zip(delays, ceilings, strict=True):
        assert ceiling / 2 <= delay <= ceiling
    assert len({round(d, 6) for d in delays}) == len(delays), "jittered"


def test_retry_after_forms() -> None:
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
    now = time.time()
    later = formatdate(now + 30, usegmt=True)
    assert 28 <= (parse_retry_after(later, now=now) or 0) <= 31
    assert parse_retry_after(formatdate(now - 30, usegmt=True), now=now) == 0.0


# -- the seed 003 fallback (D17) -----------------------------------------------------------


def test_fallback_at_step_running_when_unreachable() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    req = request("plan_behavior", S.STEP_RUNNING, stage="a", step="s")
    reply = ask(planner(url, max_retries=1), "plan_behavior", req)
    assert isinstance(reply.payload, PlanningPayload)
    body = json.loads(reply.body)
    assert body["targetAchieved"] is False
    assert body["transition"]["continue_behaviors"] is False
    assert "cannot connect" in body["fallback"]["reason"]


def test_fallback_at_behavior_completed_only_once(server: ScriptedServer) -> None:
    down = Scripted.text("", "text/plain", status=503)
    server.script(down, down, down, down)
    http = planner(server.url, max_retries=1)
    req = request("reflect_behavior", S.BEHAVIOR_COMPLETED, stage="a", behavior="b")

    async def twice() -> tuple[object, BaseException | None]:
        try:
            first = await http.reflect_behavior(req)
            try:
                await http.reflect_behavior(req)
            except PlannerError as exc:
                return first, exc
            return first, None
        finally:
            await http.aclose()

    import asyncio

    first, second = asyncio.run(twice())
    assert isinstance(first.payload, PlanningPayload)  # type: ignore[attr-defined]
    assert isinstance(second, HttpPlannerError), "the fallback answers once, then the run fails"
    assert "HTTP 503" in second.message


@pytest.mark.parametrize(
    ("point", "state"),
    [
        ("plan_stages", S.IDLE),
        ("plan_steps", S.STAGE_RUNNING),
        ("plan_behavior", S.BEHAVIOR_RUNNING),
        ("generate_actions", S.BEHAVIOR_RUNNING),
        ("reflect_stage", S.STEP_COMPLETED),
    ],
)
def test_no_fallback_where_it_maps_to_no_event(point: str, state: State) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(HttpPlannerError):
        ask(planner(url, max_retries=0), point, request(point, state, stage="a"))


def test_fallback_can_be_switched_off() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    req = request("plan_behavior", S.STEP_RUNNING, stage="a", step="s")
    with pytest.raises(HttpPlannerError):
        ask(planner(url, max_retries=0, fallback=False), "plan_behavior", req)


# -- timeouts -----------------------------------------------------------------------------


def test_idle_stream_times_out_and_is_retried(server: ScriptedServer) -> None:
    stalled = Scripted(
        chunks=['{"type": "add-text", "content": "a"}\n'],
        content_type="application/x-ndjson",
        hang=30.0,
    )
    server.script(stalled, stalled)
    req = request("generate_actions", S.BEHAVIOR_RUNNING, stage="a", step="s", behavior="b")
    began = time.monotonic()
    with pytest.raises(HttpPlannerError) as caught:
        ask(planner(server.url, idle_timeout=0.2, max_retries=1), "generate_actions", req)
    elapsed = time.monotonic() - began
    assert 0.4 <= elapsed < 10.0, "two attempts of ~0.2 s each, not the 30 s hang"
    assert "stream stopped for 0.2s" in caught.value.message
    assert server.paths() == ["/generating", "/generating"]


def test_no_first_byte_within_idle_timeout(server: ScriptedServer) -> None:
    server.script(Scripted(chunks=[], hang=30.0))
    began = time.monotonic()
    with pytest.raises(HttpPlannerError) as caught:
        ask(planner(server.url, idle_timeout=0.2, max_retries=0), "plan_stages", stages_request())
    assert time.monotonic() - began < 10.0
    assert "idle" in caught.value.message or "stream stopped" in caught.value.message


def test_total_timeout_bounds_a_trickling_stream(server: ScriptedServer) -> None:
    trickle = [f'{{"type": "add-text", "content": "{i}"}}\n' for i in range(400)]
    server.script(Scripted(chunks=list(trickle), content_type="application/x-ndjson", pause=0.05))
    req = request("generate_actions", S.BEHAVIOR_RUNNING, stage="a", step="s", behavior="b")
    began = time.monotonic()
    with pytest.raises(HttpPlannerError) as caught:
        ask(
            planner(server.url, idle_timeout=1.0, total_timeout=0.4, max_retries=0),
            "generate_actions",
            req,
        )
    assert time.monotonic() - began < 10.0, "not the 20 s the stream would take"
    assert "within 0.4s" in caught.value.message


# -- protocol errors: kept, never retried, never skipped -----------------------------------


def test_truncated_fixed_length_body(server: ScriptedServer) -> None:
    server.script(
        Scripted(
            chunks=["<stages><remaining><stage id='a'"],
            content_type="application/xml",
            content_length=500,
            truncate=True,
        )
    )
    with pytest.raises(HttpProtocolError) as caught:
        ask(planner(server.url), "plan_stages", stages_request())
    assert "truncated response" in caught.value.message
    assert caught.value.details["body"] == "<stages><remaining><stage id='a'"
    assert caught.value.details["status"] == 200
    assert server.paths() == ["/planning"], "a protocol error is not retried"


def test_truncated_ndjson_stream(server: ScriptedServer) -> None:
    server.script(
        Scripted(
            chunks=['{"type": "add-text", "content": "a"}\n', '{"type": "add-te'],
            content_type="application/x-ndjson",
            truncate=True,
        )
    )
    req = request("generate_actions", S.BEHAVIOR_RUNNING, stage="a", step="s", behavior="b")
    with pytest.raises(HttpProtocolError) as caught:
        ask(planner(server.url), "generate_actions", req)
    assert caught.value.details["body"].endswith('{"type": "add-te')
    assert caught.value.details["content_type"] == "application/x-ndjson"


def test_truncated_xml_document_is_refused(server: ScriptedServer) -> None:
    server.script(Scripted.text("<stages><remaining><stage id='a' title='A'/>", "application/xml"))
    with pytest.raises(HttpProtocolError) as caught:
        ask(planner(server.url), "plan_stages", stages_request())
    assert "truncated <stages>" in caught.value.message


def test_truncated_xml_document_accepted_when_configured(server: ScriptedServer) -> None:
    server.script(Scripted.text("<stages><remaining><stage id='a' title='A'/>", "application/xml"))
    reply = ask(planner(server.url, accept_truncated=True), "plan_stages", stages_request())
    assert isinstance(reply.payload, StagesPayload)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("<html><body>502 Bad Gateway</body></html>", "text/html"),
        ("this is not a payload", "application/json"),
        ("", "application/xml"),
        ("\x00\x01garbage", None),
    ],
)
def test_garbage_is_a_protocol_error_with_the_body(
    server: ScriptedServer, body: str, content_type: str | None
) -> None:
    server.script(Scripted.text(body, content_type))
    with pytest.raises(HttpProtocolError) as caught:
        ask(planner(server.url), "plan_stages", stages_request())
    assert caught.value.details["body"] == body
    assert caught.value.details["point"] == "plan_stages"
    assert server.paths() == ["/planning"]
    # what a person reads says what came back, not "payload payload: ... payload: ..."
    message = caught.value.message
    assert "payload payload" not in message
    assert f"HTTP 200, {content_type or 'no Content-Type'}" in message
    assert f"{len(body.encode())} bytes: {' '.join(body.split())[:40]!r}"[:-1] in message


def test_bad_ndjson_line_stops_the_stream_at_once(server: ScriptedServer) -> None:
    lines = [
        '{"type": "add-text", "content": "a"}\n',
        "not json at all\n",
        *[f'{{"type": "add-text", "content": "{i}"}}\n' for i in range(400)],
    ]
    server.script(Scripted(chunks=lines, content_type="application/x-ndjson", pause=0.05))
    req = request("generate_actions", S.BEHAVIOR_RUNNING, stage="a", step="s", behavior="b")
    began = time.monotonic()
    with pytest.raises(HttpProtocolError) as caught:
        ask(planner(server.url), "generate_actions", req)
    assert time.monotonic() - began < 10.0, "refused on line 2, not after 20 s of lines"
    assert caught.value.line == 2
    assert "not json at all" in caught.value.details["body"]


def test_wrong_root_for_the_state(server: ScriptedServer) -> None:
    server.script(Scripted.file(DSLC / "planning.STAGE_RUNNING.explore.xml"))
    with pytest.raises(HttpProtocolError) as caught:
        ask(planner(server.url), "plan_stages", stages_request())
    message = caught.value.message
    assert "wrong root <steps> for plan_stages at idle" in message
    assert "<stages>" in message
    assert "<steps stage_id" in caught.value.details["body"]


def test_json_where_xml_was_announced(server: ScriptedServer) -> None:
    server.script(Scripted.text('{"targetAchieved": true}', "application/xml"))
    with pytest.raises(HttpProtocolError) as caught:
        ask(planner(server.url), "plan_stages", stages_request())
    assert "Content-Type says XML but the body is JSON" in caught.value.message


def test_xml_actions_root_at_reflecting_is_wrong(server: ScriptedServer) -> None:
    server.script(Scripted.text("<actions><add-text>hi</add-text></actions>", "application/xml"))
    req = request("reflect_behavior", S.BEHAVIOR_COMPLETED, stage="a", behavior="b")
    with pytest.raises(HttpProtocolError) as caught:
        ask(planner(server.url), "reflect_behavior", req)
    assert "expected <reflection>" in caught.value.message


def test_empty_204_where_an_answer_is_required(server: ScriptedServer) -> None:
    server.script(Scripted(status=204, content_type=None))
    with pytest.raises(HttpProtocolError):
        ask(planner(server.url), "plan_stages", stages_request())


# -- stage routing at stage_completed -------------------------------------------------------


def _stage_completed(remaining: list[str]) -> object:
    from notebook_bcc.models.snapshot import PlanItem

    req = request("route_stage", S.STAGE_COMPLETED, stage="a")
    snap = req.snapshot  # type: ignore[attr-defined]
    stages = snap.location.progress.stages.model_copy(
        update={
            "current": PlanItem(id="a", title="A", completion_status="success"),
            "remaining": [PlanItem(id=r, title=r) for r in remaining],
        }
    )
    progress = snap.location.progress.model_copy(update={"stages": stages})
    location = snap.location.model_copy(update={"progress": progress})
    snap = snap.model_copy(update={"location": location})
    return type(req)("route_stage", snap, {}, None)


def route(server: ScriptedServer, answer: Scripted, remaining: list[str]) -> StageRoute:
    server.script(answer)
    routed: StageRoute = ask(planner(server.url), "route_stage", _stage_completed(remaining))
    return routed


def test_route_target_achieved_ends_the_workflow(server: ScriptedServer) -> None:
    routed = route(server, Scripted.text('{"targetAchieved": true}'), ["b"])
    assert routed.target is None
    assert any("skipped: b" in w for w in routed.warnings)
    (got,) = server.received
    assert got.path == "/reflecting"
    assert got.body["state"]["FSM"]["state"] == "STAGE_COMPLETED", "built when the engine sends {}"


def test_route_not_achieved_goes_to_the_next_stage(server: ScriptedServer) -> None:
    assert route(server, Scripted.text('{"targetAchieved": false}'), ["b", "c"]).target == "b"


def test_route_not_achieved_without_stages_left_fails(server: ScriptedServer) -> None:
    with pytest.raises(PlannerError, match="no stage remains"):
        route(server, Scripted.text('{"targetAchieved": false}'), [])


def test_route_signals_follow_the_plan_and_warn_about_actions(server: ScriptedServer) -> None:
    stream = '{"type": "add-text", "content": "x"}\n{"type": "complete_reflection"}\n'
    routed = route(server, Scripted.text(stream, "application/x-ndjson"), ["b"])
    assert routed.target == "b"
    assert any("not run" in w for w in routed.warnings)


def test_route_garbage_is_a_planner_error_with_the_body(server: ScriptedServer) -> None:
    with pytest.raises(PlannerError) as caught:
        route(server, Scripted.text("<<garbage>>", "text/plain"), ["b"])
    assert "malformed" in caught.value.message
    assert caught.value.details["body"] == "<<garbage>>"


def test_route_by_plan_asks_nothing(server: ScriptedServer) -> None:
    http = planner(server.url, route="plan")
    routed: StageRoute = ask(http, "route_stage", _stage_completed(["b"]))
    assert routed.target == "b"
    assert server.received == []


# -- settings -------------------------------------------------------------------------------


def test_settings_round_trip_and_refuse_credentials() -> None:
    settings = fast("http://127.0.0.1:1/base/", max_retries=5, state_case="lower")
    assert HttpPlannerSettings.from_json({**settings.to_json(), "unknown": 1}) == settings
    assert HttpPlanner(settings).url_for("generate_actions") == "http://127.0.0.1:1/base/generating"
    with pytest.raises(PlannerError, match="credentials"):
        HttpPlannerSettings(url="http://user:pw@127.0.0.1:1")
    with pytest.raises(PlannerError, match="not an http"):
        HttpPlannerSettings(url="ftp://example.org")
    with pytest.raises(PlannerError, match="positive"):
        fast("http://127.0.0.1:1", idle_timeout=0)
