"""The LLM planner without a kernel: replies read and checked, feedback retries, messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from notebook_bcc.engine.headless import planner_for
from notebook_bcc.errors import NotebookBccError
from notebook_bcc.models.names import State
from notebook_bcc.planners.base import Planner, PlannerError, PlannerReply, PlannerRequest
from notebook_bcc.planners.llm import LlmPlanner, LlmReplyError, TemplateError
from notebook_bcc.planners.llm.planner import TRUNCATED_NOTE
from notebook_bcc.planners.recording import RecordingPlanner
from notebook_bcc.protocol.plans import StagesPayload
from notebook_bcc.testing.scripted_llm import Reply, ScriptedLlmServer
from tests.planners.llm_helpers import REPLIES, fast, planner, request_for, run


def reply(name: str, agent: str | None = None, **extra: Any) -> Reply:
    return Reply((REPLIES / name).read_text(encoding="utf-8"), agent=agent, name=name, **extra)


def ask(llm: LlmPlanner, request: PlannerRequest) -> PlannerReply:
    method = {
        "plan_stages": llm.plan_stages,
        "plan_steps": llm.plan_steps,
        "plan_behavior": llm.plan_behavior,
        "generate_actions": llm.generate_actions,
        "reflect_behavior": llm.reflect_behavior,
        "reflect_stage": llm.reflect_stage,
    }[request.point]

    async def scenario() -> PlannerReply:
        try:
            answer = await method(request)
            assert answer is not None
            return answer
        finally:
            await llm.aclose()

    return run(scenario)


def test_the_planner_satisfies_the_protocol() -> None:
    llm = planner("http://127.0.0.1:9/v1")
    assert isinstance(llm, Planner)
    assert llm.kind == "llm"
    assert llm.settings() == fast("http://127.0.0.1:9/v1").to_json()


def test_a_malformed_reply_then_a_good_one_after_feedback() -> None:
    script = [
        reply("stages-duplicate-id.txt", "stage-planner"),
        reply("stages-good.txt", "stage-planner"),
    ]
    with ScriptedLlmServer(script) as server:
        llm = planner(server.base_url)
        answer = ask(llm, request_for("stage-planner"))
    assert isinstance(answer.payload, StagesPayload)
    assert [s.id for s in answer.payload.stages] == ["explore", "summarize"]
    assert answer.body == (REPLIES / "stages-good.txt").read_text()
    assert answer.content_type == "application/xml"
    first, second = server.received
    assert len(first.messages) == 2
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user"]
    assert second.messages[:2] == first.messages, "the retry continues the same conversation"
    assert second.messages[2]["content"] == (REPLIES / "stages-duplicate-id.txt").read_text()
    feedback = second.messages[3]["content"]
    assert feedback.startswith("Your reply could not be used:")
    assert "- reply:8: stage: stage id 'explore' is used twice" in feedback
    assert "one complete <stages> XML document" in feedback
    assert answer.usage is not None
    assert answer.usage.calls == 2
    assert answer.usage.prompt_tokens == sum(
        max(1, len(m["content"]) // 4) for r in server.received for m in r.messages
    )
    assert [(c.reply, c.error is None) for c in llm.calls] == [(1, False), (2, True)]


@pytest.mark.parametrize(
    ("bad", "agent", "good", "expected"),
    [
        (
            "stages-json.txt",
            "stage-planner",
            "stages-good.txt",
            "- reply:1: stages: the reply holds no <stages> or <workflow> XML document",
        ),
        (
            "steps-instead-of-stages.txt",
            "stage-planner",
            "stages-good.txt",
            "expected a <stages> or <workflow> document, found <steps>",
        ),
        (
            "behavior-wrong-step.txt",
            "behavior-arrangement",
            "behavior-good.txt",
            "the document parsed, but does not fit the workflow: behavior payload in state "
            "step_running: the behavior is for step 'not_the_current_step' but the current "
            "step is 'load'",
        ),
    ],
)
def test_what_the_model_is_told(bad: str, agent: str, good: str, expected: str) -> None:
    with ScriptedLlmServer([reply(bad, agent), reply(good, agent)]) as server:
        ask(planner(server.base_url), request_for(agent))
    assert expected in server.received[1].messages[-1]["content"]


def test_a_reply_cut_by_the_token_limit_is_told_so() -> None:
    script = [
        reply("stages-truncated.txt", finish_reason="length"),
        reply("stages-good.txt"),
    ]
    with ScriptedLlmServer(script) as server:
        ask(planner(server.base_url, stream=False), request_for("stage-planner"))
    feedback = server.received[1].messages[-1]["content"]
    assert "ends before its closing tag </stages>" in feedback
    assert TRUNCATED_NOTE in feedback


def test_the_feedback_cap_raises_a_planner_error_with_every_error() -> None:
    script = [reply("stages-json.txt"), reply("stages-duplicate-id.txt"), reply("stages-good.txt")]
    with ScriptedLlmServer(script) as server:
        with pytest.raises(LlmReplyError) as caught:
            ask(planner(server.base_url, max_parse_retries=1), request_for("stage-planner"))
        assert server.remaining == 1, "max_parse_retries=1: two replies, no more"
    error = caught.value
    assert isinstance(error, PlannerError)
    assert error.message == (
        "stage-planner: no usable <stages> reply after 2 replies (the last error: "
        "reply:8: stage: stage id 'explore' is used twice)"
    )
    assert len(error.details["errors"]) == 2
    assert error.details["last_reply"].startswith("Here are the stages")


def test_no_feedback_retry_at_zero() -> None:
    with ScriptedLlmServer([reply("stages-json.txt"), reply("stages-good.txt")]) as server:
        with pytest.raises(LlmReplyError, match="after 1 reply "):
            ask(planner(server.base_url, max_parse_retries=0), request_for("stage-planner"))
        assert len(server.received) == 1


def test_messages_reach_the_addressed_agent_once() -> None:
    script = [
        reply("actions-with-messages.txt", "action-generator"),
        reply("reflection-complete.txt", "behavior-reflection"),
        reply("stage-reflection-next-step.txt", "stage-reflection"),
        reply("stage-reflection-next-step.txt", "stage-reflection"),
    ]
    with ScriptedLlmServer(script) as server:
        llm = planner(server.base_url)

        async def scenario() -> None:
            try:
                await llm.generate_actions(request_for("action-generator"))
                assert {key: len(box) for key, box in llm.outbox.items()} == {
                    "stage-reflection": 1,
                    "*": 1,
                }
                await llm.reflect_behavior(request_for("behavior-reflection"))
                assert list(llm.outbox) == ["stage-reflection"]
                await llm.reflect_stage(request_for("stage-reflection"))
                assert llm.outbox == {}
                await llm.reflect_stage(request_for("stage-reflection"))
            finally:
                await llm.aclose()

        run(scenario)
    prompts = [r.messages[1]["content"] for r in server.received]
    anyone = "- from action-generator (behavior load_b1): Anyone: rows holds dicts."
    stage = "- from action-generator (behavior load_b1): Stage: the header row was skipped."
    assert "Messages to you" not in prompts[0]
    assert anyone in prompts[1]
    assert stage not in prompts[1]
    assert stage in prompts[2]
    assert anyone not in prompts[2]
    assert "Messages to you" not in prompts[3], "delivered messages are dropped"


@pytest.mark.parametrize("state", [State.BEHAVIOR_COMPLETED, State.STEP_COMPLETED])
def test_a_rebuilt_planner_refills_messages_from_the_action_queue(state: State) -> None:
    agent = "behavior-reflection" if state is State.BEHAVIOR_COMPLETED else "stage-reflection"
    good = (
        "reflection-complete.txt"
        if agent == "behavior-reflection"
        else ("stage-reflection-next-step.txt")
    )
    with ScriptedLlmServer([reply(good, agent)]) as server:
        ask(planner(server.base_url), request_for(agent))
    prompt = server.received[0].messages[1]["content"]
    message = "- from action-generator (behavior load_b1): The file has a header row."
    if agent == "stage-reflection":
        assert message in prompt
    else:
        assert message not in prompt, "addressed to the stage reflection, not this agent"


def test_stage_routing_makes_no_call() -> None:
    with ScriptedLlmServer([]) as server:
        llm = planner(server.base_url)
        request = request_for("stage-reflection")

        async def scenario() -> Any:
            return await llm.route_stage(request)

        route = run(scenario)
    assert server.received == []
    assert (route.outcome, route.target, route.rule) == ("success", "summarize", "plan order")


def test_resume_rebuilds_the_planner_from_its_settings(tmp_path: Path) -> None:
    settings = fast("http://127.0.0.1:9/v1", max_parse_retries=4).to_json()
    rebuilt = planner_for({"kind": "llm", "settings": settings})
    assert isinstance(rebuilt, LlmPlanner)
    assert rebuilt.config.max_parse_retries == 4
    assert rebuilt.settings() == settings
    recorded = planner_for(
        {"kind": "llm", "settings": {**settings, "record": str(tmp_path / "rec")}}
    )
    assert isinstance(recorded, RecordingPlanner)
    assert isinstance(recorded.inner, LlmPlanner)
    with pytest.raises(NotebookBccError, match="cannot resume"):
        planner_for({"kind": "llm", "settings": {"model": "m"}})


def test_a_bad_template_folder_fails_when_the_planner_is_built(tmp_path: Path) -> None:
    (tmp_path / "step-planner.md").write_text("<!-- section: user -->\n", encoding="utf-8")
    with pytest.raises(TemplateError, match=r"step-planner\.md: no '<!-- section: system -->'"):
        LlmPlanner(fast("http://127.0.0.1:9/v1", templates=str(tmp_path)))
