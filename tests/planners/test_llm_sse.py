"""The parsers the LLM client adds: SSE lines, streamed chunks, JSON bodies, error bodies."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notebook_bcc.planners.llm.client import (
    CallUsage,
    StreamAssembler,
    error_body_message,
    read_completion,
    read_usage,
    redact,
)
from notebook_bcc.planners.llm.errors import LlmResponseError
from notebook_bcc.planners.llm.sse import SseDecoder, SseError, SseEvent

STREAM = (
    b": keep-alive comment\n"
    b'data: {"choices": [{"index": 0, "delta": {"role": "assistant"}}]}\n\n'
    b'data: {"choices": [{"index": 0, "delta": {"content": "<actions>caf\xc3\xa9 "}}]}\r\n\r\n'
    b'data: {"choices": [{"index": 0, "delta": {"content": "\xe2\x82\xac</actions>"}}]}\r\r'
    b"event: message\nid: 7\nretry: 100\n"
    b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
    b'data: {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 5}}\n\n'
    b"data: [DONE]\n\n"
)


def decode(chunks: list[bytes]) -> list[SseEvent]:
    decoder = SseDecoder()
    events: list[SseEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.close()


def assemble(events: list[SseEvent]) -> StreamAssembler:
    assembler = StreamAssembler()
    for event in events:
        assembler.feed(event)
        if assembler.done:
            break
    return assembler


def test_a_whole_stream_decodes_to_the_answer_and_its_usage() -> None:
    events = decode([STREAM])
    assert [e.event for e in events] == ["message"] * 6
    answer = assemble(events)
    assert answer.done
    assert answer.content == "<actions>café €</actions>"
    assert answer.finish_reason == "stop"
    assert answer.usage == CallUsage(12, 5, reported=True)


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_split_of_the_bytes_gives_the_same_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    assert decode(chunks) == decode([STREAM])


def test_every_single_byte_boundary_including_mid_utf8_and_crlf() -> None:
    assert decode([bytes([b]) for b in STREAM]) == decode([STREAM])


def test_multi_line_data_event_names_comments_and_bom() -> None:
    raw = b"\xef\xbb\xbfdata: one\ndata:two\n: ignored\nevent: error\nfield-only\n\ndata\n\n"
    events = decode([raw])
    assert events == [SseEvent("one\ntwo", "error", 1), SseEvent("", "message", 7)]


def test_a_last_event_without_its_blank_line_is_kept_at_close() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: [DONE]") == []
    assert decoder.close() == [SseEvent("[DONE]", "message", 1)]
    decoder = SseDecoder()
    assert decoder.feed(b"data: x\r") == [], "a trailing CR waits for a possible LF"
    assert decoder.close() == [SseEvent("x", "message", 1)]


def test_malformed_sse_lines_name_the_line() -> None:
    decoder = SseDecoder()
    with pytest.raises(SseError, match="line 2: not UTF-8"):
        decoder.feed(b"data: ok\ndata: \xff\xfe\n\n")
    small = SseDecoder(max_line_bytes=16)
    with pytest.raises(SseError, match="line 1: longer than 16 bytes"):
        small.feed(b"data: " + b"x" * 40)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{not json", "stream event 1 (line 1): not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"choices": {"0": 1}}', "/choices: expected a list"),
        ('{"choices": ["x"]}', "/choices/0: expected an object"),
        ('{"choices": [{"delta": "text"}]}', "/choices/0/delta: expected an object"),
        ('{"choices": [{"delta": {"content": 5}}]}', "/choices/0/delta/content: expected a str"),
        ('{"choices": [{"delta": {"content": [{"kind": 1}]}}]}', "expected a text part"),
        ('{"choices": [{"delta": {}, "finish_reason": 3}]}', "finish_reason: expected a string"),
    ],
)
def test_malformed_stream_chunks_are_typed_errors_naming_where(data: str, message: str) -> None:
    with pytest.raises(LlmResponseError, match=message.replace("(", r"\(").replace(")", r"\)")):
        StreamAssembler().feed(SseEvent(data))


def test_an_error_event_mid_stream_is_retryable_not_a_bad_answer() -> None:
    from notebook_bcc.planners.http_transport import RetryableAttempt

    with pytest.raises(RetryableAttempt, match="mid-stream: overloaded"):
        StreamAssembler().feed(SseEvent('{"error": {"message": "overloaded"}}'))
    with pytest.raises(RetryableAttempt):
        StreamAssembler().feed(SseEvent('{"message": "x"}', event="error"))


def test_content_parts_and_other_choices() -> None:
    answer = StreamAssembler()
    answer.feed(SseEvent('{"choices": [{"index": 1, "delta": {"content": "other"}}]}'))
    answer.feed(SseEvent('{"choices": [{"index": 0, "delta": {"content": [{"text": "a"}, "b"]}}]}'))
    assert answer.content == "ab"


def body(doc: object) -> bytes:
    return json.dumps(doc).encode()


def test_a_plain_answer_is_read() -> None:
    content, finish, usage = read_completion(
        body(
            {
                "choices": [
                    {"index": 0, "message": {"content": "<steps/>"}, "finish_reason": "length"}
                ],
                "usage": {"prompt_tokens": 3, "completion_tokens": 4.0},
            }
        )
    )
    assert (content, finish, usage) == ("<steps/>", "length", CallUsage(3, 4, reported=True))
    content, finish, usage = read_completion(body({"choices": [{"message": {"content": "x"}}]}))
    assert (content, finish, usage) == ("x", None, None)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"<html>busy</html>", "the answer is not JSON"),
        (b"\xff\xfe", "the answer is not JSON"),
        (b"[]", "not a JSON object"),
        (b'{"error": {"message": "bad model"}}', "the answer is an error: bad model"),
        (b'{"id": "x"}', "/choices: no choice"),
        (b'{"choices": []}', "/choices: no choice"),
        (b'{"choices": [{"message": "hi"}]}', "/choices/0/message: expected an object"),
        (b'{"choices": [{"message": {"content": null}}]}', "has no text"),
        (b'{"choices": [{"message": {"content": null, "refusal": "no"}}]}', "refusal: no"),
        (b'{"choices": [{"message": {"content": {"a": 1}}}]}', "expected a string, got dict"),
    ],
)
def test_malformed_json_bodies_are_typed_errors(raw: bytes, message: str) -> None:
    with pytest.raises(LlmResponseError, match=message):
        read_completion(raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            b'{"error": {"message": "Rate limit", "type": "rate_limit_error"}}',
            "Rate limit (rate_limit_error)",
        ),
        (b'{"error": "plain string"}', "plain string"),
        (b'{"detail": "Not Found"}', "Not Found"),
        (b'{"message": "oops"}', "oops"),
        (b'{"error": {"code": 5}}', '{"code": 5}'),
        (b"upstream timed out", "upstream timed out"),
        (b"\xff\xfebroken", "\ufffd\ufffdbroken"),
        (b"", ""),
        (b"[1, 2]", "[1, 2]"),
    ],
)
def test_error_bodies_give_a_readable_message(raw: bytes, expected: str) -> None:
    assert error_body_message(raw) == expected


def test_error_bodies_are_clipped() -> None:
    assert len(error_body_message(b"x" * 50_000)) == 2_000


@pytest.mark.parametrize(
    "value", ["12", [1], {"prompt_tokens": "3"}, {"prompt_tokens": -1}, {"completion_tokens": True}]
)
def test_malformed_usage_is_not_counted_and_logged(
    value: object, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        assert read_usage(value, "body") is None
    assert "not counted" in caplog.text


def test_redact_replaces_every_occurrence() -> None:
    assert redact("key sk-1 and sk-1", "sk-1") == "key [REDACTED] and [REDACTED]"
    assert redact("nothing", None) == "nothing"
