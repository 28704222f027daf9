"""The scripted chat server itself: replies in order, loud mismatches, faults, its CLI."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from notebook_bcc.planners.llm import LlmApiError
from notebook_bcc.testing.scripted_llm import (
    Reply,
    ScriptedLlmServer,
    load_replies,
    main,
    request_agent,
)
from tests.planners.llm_helpers import (
    CONVERSATION,
    REPLIES,
    planner,
    request_for,
    run,
    write_replies,
)


def post(server: ScriptedLlmServer, body: object) -> httpx.Response:
    return httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=5)


def chat(agent: str) -> dict[str, object]:
    return {
        "model": "m",
        "messages": [
            {"role": "system", "content": f"# notebook-bcc agent: {agent}\n\nHello."},
            {"role": "user", "content": "Go."},
        ],
    }


def test_a_folder_is_read_in_number_order(tmp_path: Path) -> None:
    folder = write_replies(
        tmp_path,
        {
            "010-stage-reflection.txt": "ten",
            "002-step-planner.txt": "two",
            "README.md": "ignored",
            "notes.txt": "ignored",
        },
    )
    replies = load_replies(folder)
    assert [(r.name, r.agent, r.content) for r in replies] == [
        ("002-step-planner.txt", "step-planner", "two"),
        ("010-stage-reflection.txt", "stage-reflection", "ten"),
    ]
    assert len(load_replies(CONVERSATION)) == 11


def test_reply_files_naming_an_unknown_agent_are_refused(tmp_path: Path) -> None:
    write_replies(tmp_path, {"001-stage-planer.txt": "x"})
    with pytest.raises(ValueError, match=r"001-stage-planer\.txt: unknown agent 'stage-planer'"):
        load_replies(tmp_path)
    with pytest.raises(ValueError, match="not a folder"):
        load_replies(tmp_path / "missing")


def test_a_reply_for_another_agent_is_a_loud_400_and_is_not_consumed() -> None:
    with ScriptedLlmServer(CONVERSATION) as server:
        wrong = post(server, chat("step-planner"))
        assert wrong.status_code == 400
        message = wrong.json()["error"]["message"]
        assert message == (
            "scripted_llm: 001-stage-planner.txt is for stage-planner, but the request comes "
            "from step-planner"
        )
        assert server.errors == [message]
        right = post(server, chat("stage-planner"))
        assert right.status_code == 200
        assert right.json()["choices"][0]["message"]["content"].startswith("Here is the plan")
        assert [r.status for r in server.received] == [400, 200]
        assert server.remaining == 10


def test_the_planner_fails_naming_the_mismatch() -> None:
    with ScriptedLlmServer([Reply("<steps/>", agent="step-planner", name="007-x")]) as server:
        llm = planner(server.base_url)

        async def scenario() -> None:
            try:
                await llm.plan_stages(request_for("stage-planner"))
            finally:
                await llm.aclose()

        with pytest.raises(LlmApiError, match="007-x is for step-planner, but the request comes"):
            run(scenario)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"messages": [{"role": "user", "content": "hi"}]}, "the first message is not a system"),
        ({"messages": []}, "the request has no messages"),
        ([1], "the request body is not a JSON object"),
        (
            {"messages": [{"role": "system", "content": "You are a planner."}]},
            "does not start with '# notebook-bcc agent: <agent-id>'",
        ),
        (
            {"messages": [{"role": "system", "content": "# notebook-bcc agent: oracle"}]},
            "does not start with",
        ),
    ],
)
def test_requests_without_the_agent_line_are_refused(body: object, message: str) -> None:
    assert request_agent(body)[1] is not None
    with ScriptedLlmServer([Reply("x")]) as server:
        answer = post(server, body)
        assert answer.status_code == 400
        assert message in answer.json()["error"]["message"]
        assert server.remaining == 1


def test_running_out_of_replies_and_other_paths() -> None:
    with ScriptedLlmServer([]) as server:
        out = post(server, chat("stage-planner"))
        assert out.status_code == 400
        assert "no scripted reply left for agent stage-planner" in out.json()["error"]["message"]
        assert httpx.post(f"{server.base_url}/completions", json={}, timeout=5).status_code == 404
        models = httpx.get(f"{server.base_url}/models", timeout=5).json()
        assert models["data"][0]["id"] == "scripted"
        assert httpx.get(f"{server.base_url}/other", timeout=5).status_code == 404


def test_usage_can_be_switched_off_per_reply() -> None:
    script = [Reply("a", usage=False), Reply("b")]
    with ScriptedLlmServer(script) as server:
        first = post(server, chat("step-planner")).json()
        second = post(server, chat("step-planner")).json()
    assert "usage" not in first
    assert second["usage"]["completion_tokens"] == 1


def test_the_command_refuses_a_bad_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_replies(tmp_path, {"001-nobody.txt": "x"})
    assert main([str(tmp_path)]) == 2
    assert "unknown agent 'nobody'" in capsys.readouterr().err
    assert (REPLIES / "stages-good.txt").exists()
