"""The chat client against the scripted OpenAI-style server on loopback."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from notebook_bcc.planners.base import PlannerError
from notebook_bcc.planners.llm.client import ChatClient, ChatResult
from notebook_bcc.planners.llm.errors import LlmApiError, LlmResponseError, LlmSettingsError
from notebook_bcc.planners.llm.settings import API_KEY_ENVS, LlmSettings, api_key
from notebook_bcc.testing.scripted_llm import (
    Fault,
    Reply,
    ScriptedLlmServer,
    rate_limited,
    server_error,
)
from tests.planners.llm_helpers import SECRET, SleepLog, fast, run

MESSAGES = [
    {"role": "system", "content": "# notebook-bcc agent: step-planner\n\nPlan steps."},
    {"role": "user", "content": "The observation."},
]
TEXT = 'Sure:\n<steps stage_id="s">\n  <step id="a"><goal>x < 5 & y</goal></step>\n</steps>\n'


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No API key unless a test sets one."""
    for name in ("NOTEBOOK_BCC_LLM_API_KEY", "OPENAI_API_KEY", "MY_LLM_KEY"):
        monkeypatch.delenv(name, raising=False)


def call(settings: LlmSettings, *, sleep: SleepLog | None = None) -> ChatResult:
    async def scenario() -> ChatResult:
        client = ChatClient(settings, sleep=sleep or SleepLog())
        try:
            return await client.complete(MESSAGES, agent="step-planner")
        finally:
            await client.aclose()

    return run(scenario)


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("usage", [True, False])
def test_streamed_and_plain_answers_with_and_without_usage(stream: bool, usage: bool) -> None:
    with ScriptedLlmServer([Reply(TEXT, agent="step-planner")], usage=usage) as server:
        result = call(fast(server.base_url, stream=stream))
    assert result.content == TEXT
    assert result.finish_reason == "stop"
    assert result.attempts == 1
    assert result.latency_ms > 0
    if usage:
        assert result.usage.reported
        assert result.usage.completion_tokens == len(TEXT) // 4
        assert result.usage.prompt_tokens > 0
    else:
        assert not result.usage.reported
        assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (0, 0)
    (received,) = server.received
    body = received.body
    assert body["model"] == "scripted-model"
    assert body["messages"] == MESSAGES
    assert body["stream"] is stream
    if stream:
        assert body["stream_options"] == {"include_usage": True}
    else:
        assert "stream_options" not in body
    assert "temperature" not in body
    assert "max_tokens" not in body
    assert received.path == "/v1/chat/completions"


@pytest.mark.parametrize("write_bytes", [1, 7, 13])
def test_sse_split_at_odd_boundaries_on_the_wire(write_bytes: int) -> None:
    text = "<actions>café – € ✓</actions>" * 3
    with ScriptedLlmServer([Reply(text)], chunk_chars=5, write_bytes=write_bytes) as server:
        result = call(fast(server.base_url))
    assert result.content == text
    assert result.usage.reported


def test_options_are_sent() -> None:
    with ScriptedLlmServer([Reply(TEXT)]) as server:
        call(fast(server.base_url, temperature=0.3, max_tokens=512, stream=False))
    body = server.received[0].body
    assert (body["temperature"], body["max_tokens"]) == (0.3, 512)


def test_429_then_success_honours_retry_after_capped() -> None:
    sleep = SleepLog()
    script: list[Reply | Fault] = [rate_limited("7"), rate_limited("600"), Reply(TEXT)]
    with ScriptedLlmServer(script) as server:
        result = call(fast(server.base_url, retry_after_cap=30.0), sleep=sleep)
    assert result.content == TEXT
    assert result.attempts == 3
    assert sleep.delays == [7.0, 30.0], "Retry-After is honoured, up to retry_after_cap"
    assert [r.status for r in server.received] == [429, 429, 200]


def test_5xx_retried_then_a_typed_planner_error() -> None:
    sleep = SleepLog()
    script: list[Reply | Fault] = [server_error(500), server_error(502), server_error(503)]
    with ScriptedLlmServer(script) as server, pytest.raises(LlmApiError) as caught:
        call(fast(server.base_url, max_retries=2), sleep=sleep)
    error = caught.value
    assert isinstance(error, PlannerError)
    assert "HTTP 503: scripted server error (server_error)" in error.message
    assert "after 3 attempts" in error.message
    assert error.message.startswith("step-planner: POST http://127.0.0.1:")
    assert error.details["attempts"] == 3
    assert error.details["status"] == 503
    assert len(sleep.delays) == 2
    assert all(0 < delay <= 0.004 for delay in sleep.delays)


def test_a_refusal_is_not_retried() -> None:
    refused = Fault(status=401, body='{"error": {"message": "Incorrect API key"}}')
    with ScriptedLlmServer([refused, Reply(TEXT)]) as server:
        with pytest.raises(LlmApiError, match="refused the request: HTTP 401: Incorrect API key"):
            call(fast(server.base_url))
        assert len(server.received) == 1
        assert server.remaining == 1


def test_a_stream_cut_short_is_retried() -> None:
    with ScriptedLlmServer([Fault(status=200, cut=True), Reply(TEXT)]) as server:
        result = call(fast(server.base_url))
    assert result.content == TEXT
    assert result.attempts == 2


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (Fault(status=200, raw=b"<html>hello</html>", content_type="text/html"), "not JSON"),
        (
            Fault(status=200, raw=b"data: {broken\n\n", content_type="text/event-stream"),
            "stream event 1 (line 1): not JSON",
        ),
        (Fault(status=200, raw=b'{"choices": []}'), "/choices: no choice"),
    ],
)
def test_a_malformed_answer_is_a_typed_error_and_not_retried(fault: Fault, message: str) -> None:
    with ScriptedLlmServer([fault, Reply(TEXT)]) as server:
        with pytest.raises(LlmResponseError, match=message.replace("(", r"\(").replace(")", r"\)")):
            call(fast(server.base_url))
        assert len(server.received) == 1


def test_a_stream_without_done_but_finished_is_accepted() -> None:
    raw = (
        b'data: {"choices": [{"delta": {"content": "<steps/>"}}]}\n\n'
        b'data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}\n\n'
    )
    with ScriptedLlmServer([Fault(status=200, raw=raw, content_type="text/event-stream")]) as s:
        result = call(fast(s.base_url))
    assert result.content == "<steps/>"


def test_an_unfinished_stream_without_done_is_retried() -> None:
    raw = b'data: {"choices": [{"delta": {"content": "<st"}}]}\n\n'
    script: list[Reply | Fault] = [
        Fault(status=200, raw=raw, content_type="text/event-stream"),
        Reply(TEXT),
    ]
    with ScriptedLlmServer(script) as server:
        result = call(fast(server.base_url))
    assert result.content == TEXT
    assert result.attempts == 2


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_connection_refused_is_retried_then_fails() -> None:
    sleep = SleepLog()
    with pytest.raises(LlmApiError, match="cannot connect") as caught:
        call(fast(f"http://127.0.0.1:{closed_port()}/v1", max_retries=1), sleep=sleep)
    assert caught.value.details["attempts"] == 2
    assert len(sleep.delays) == 1


def test_the_key_is_sent_as_a_bearer_token_and_redacted_from_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NOTEBOOK_BCC_LLM_API_KEY", SECRET)
    echo = Fault(status=400, body=f'{{"error": {{"message": "bad key {SECRET}"}}}}')
    with ScriptedLlmServer([Reply(TEXT), echo]) as server:
        call(fast(server.base_url))
        with pytest.raises(LlmApiError) as caught:
            call(fast(server.base_url))
    assert server.received[0].headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in str(caught.value)
    assert SECRET not in repr(caught.value.details)
    assert "bad key [REDACTED]" in caught.value.message


def test_where_the_key_comes_from(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = fast("http://127.0.0.1:9/v1")
    assert api_key(settings) is None
    monkeypatch.setenv("OPENAI_API_KEY", "openai")
    assert api_key(settings) == "openai"
    monkeypatch.setenv("NOTEBOOK_BCC_LLM_API_KEY", "ours")
    assert api_key(settings) == "ours", "NOTEBOOK_BCC_LLM_API_KEY comes first"
    named = fast("http://127.0.0.1:9/v1", api_key_env="MY_LLM_KEY")
    with pytest.raises(LlmSettingsError, match=r"MY_LLM_KEY .* is not set"):
        api_key(named)
    monkeypatch.setenv("MY_LLM_KEY", "mine")
    assert api_key(named) == "mine"
    assert "mine" not in repr(named.to_json())


def test_no_key_sends_no_authorization() -> None:
    with ScriptedLlmServer([Reply(TEXT)]) as server:
        call(fast(server.base_url))
    assert "authorization" not in server.received[0].headers


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"base_url": "ftp://x/v1"}, "not an http"),
        ({"base_url": "http://user:pw@127.0.0.1/v1"}, "credentials"),
        ({"base_url": "http://127.0.0.1/v1?key=1"}, "must not have a query"),
        ({"model": "  "}, "a model name is required"),
        ({"temperature": 3.0}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_parse_retries": 11}, "max_parse_retries"),
        ({"idle_timeout": 0}, "idle_timeout must be positive"),
        ({"max_retries": -1}, "max_retries"),
        ({"api_key_env": "not a name"}, "not an environment variable name"),
    ],
)
def test_bad_settings_are_refused(overrides: dict[str, Any], message: str) -> None:
    values = dict(overrides)
    base_url = values.pop("base_url", "http://127.0.0.1:9/v1")
    with pytest.raises(LlmSettingsError, match=message):
        fast(base_url, **values)


def test_settings_round_trip_and_the_endpoint() -> None:
    settings = fast("http://127.0.0.1:11434/v1/", templates="/t")
    assert settings.endpoint == "http://127.0.0.1:11434/v1/chat/completions"
    assert LlmSettings.from_json({**settings.to_json(), "unknown": 1}) == settings


@pytest.mark.parametrize(
    ("env", "key_env", "hint"),
    [
        (
            {"NOTEBOOK_BCC_LLM_API_KEY": "sk-wrong"},
            None,
            "the API key comes from $NOTEBOOK_BCC_LLM_API_KEY",
        ),
        ({"MY_KEY": "sk-wrong"}, "MY_KEY", "the API key comes from $MY_KEY"),
        ({}, None, "no API key was sent: set $NOTEBOOK_BCC_LLM_API_KEY"),
    ],
)
def test_a_401_says_where_the_key_came_from(
    env: dict[str, str], key_env: str | None, hint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (*API_KEY_ENVS, "MY_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    refused = Fault(status=401, body='{"error": {"message": "Incorrect API key"}}')
    with ScriptedLlmServer([refused]) as server, pytest.raises(LlmApiError) as caught:
        call(fast(server.base_url, api_key_env=key_env))
    assert hint in caught.value.message
    assert "sk-wrong" not in caught.value.message
