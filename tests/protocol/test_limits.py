"""Hostile inputs are refused fast and in bounded memory: size, depth, declarations."""

from __future__ import annotations

import tracemalloc

import pytest

from notebook_bcc.protocol import (
    DoctypeRefusedError,
    PayloadTooLargeError,
    ProtocolError,
    parse_payload,
)
from notebook_bcc.protocol.limits import MAX_DEPTH, MAX_PAYLOAD_CHARS
from tests.protocol.helpers import fixture_text

_MB = 1024 * 1024


def _peak_mb(func: object, *args: object) -> tuple[BaseException | None, float]:
    tracemalloc.start()
    error: BaseException | None = None
    try:
        func(*args)  # type: ignore[operator]
    except ProtocolError as exc:
        error = exc
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return error, peak / _MB


@pytest.mark.timeout(30)
def test_billion_laughs_padded_to_nine_megabytes_is_refused_cheaply() -> None:
    text = fixture_text("billion_laughs.xml")
    head, tail = text.split("<stages>")
    padded = head + "<stages>" + "<!-- padding -->\n" * (9 * _MB // 17) + tail
    error, peak = _peak_mb(parse_payload, padded)
    assert isinstance(error, DoctypeRefusedError)
    assert error.line == 2
    assert peak < 40


@pytest.mark.timeout(30)
def test_declaration_after_megabytes_of_content_is_refused() -> None:
    body = "<stage id='a'><goal>ok</goal></stage>\n" * 200_000
    error, peak = _peak_mb(parse_payload, f"<stages>\n{body}<!DOCTYPE x>\n</stages>")
    assert isinstance(error, DoctypeRefusedError)
    assert error.line == 200_002
    assert peak < 200


def test_payload_size_is_bounded() -> None:
    with pytest.raises(PayloadTooLargeError) as info:
        parse_payload("x" * (MAX_PAYLOAD_CHARS + 1))
    assert info.value.code == "payload_too_large"
    with pytest.raises(PayloadTooLargeError):
        parse_payload(b"x" * (MAX_PAYLOAD_CHARS + 1))


@pytest.mark.parametrize(
    "text",
    [
        "<stages>" + "<remaining>" * 100 + "</remaining>" * 100 + "</stages>",
        "<stages>" + "<remaining>" * 100,
        "<stages>" + "<remaining>" * 20_000,
        "<stages>" + "<remaining>" * 300 + "</remaining>" * 300 + "</stages>",
    ],
)
def test_xml_nesting_is_bounded(text: str) -> None:
    with pytest.raises(PayloadTooLargeError) as info:
        parse_payload(text)
    assert info.value.line == 1
    assert info.value.element == "remaining"
    assert str(MAX_DEPTH) in info.value.message


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        "[" * 100 + "]" * 100,
        '{"actions": [' + '{"a": ' * 80 + "1" + "}" * 80 + "]}",
    ],
)
def test_json_nesting_is_bounded(text: str) -> None:
    with pytest.raises(PayloadTooLargeError) as info:
        parse_payload(text)
    assert info.value.line == 1


def test_invalid_utf8_bytes_name_the_line() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload(b"<steps>\n<focus>\xff</focus></steps>")
    assert (info.value.line, info.value.element) == (2, "encoding")


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_payload("<steps/>", kind="yaml")
    assert info.value.element == "kind"
