"""The incremental NDJSON decoder and the streamed action decoder."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from notebook_bcc.protocol import ActionStreamDecoder, NdjsonDecoder, ProtocolError
from tests.conftest import SLOW
from tests.protocol.helpers import fixture_bytes

STREAM = fixture_bytes("generating.ndjson")
EXPECTED = [json.loads(line) for line in STREAM.decode("utf-8").splitlines() if line.strip()]


def _decode_in_pieces(data: bytes, cuts: list[int]) -> list[object]:
    decoder = NdjsonDecoder()
    values: list[object] = []
    previous = 0
    for cut in [*sorted(cuts), len(data)]:
        values += decoder.feed(data[previous:cut])
        previous = cut
    return values + decoder.close()


def test_fixture_has_multibyte_text_and_no_final_newline() -> None:
    assert not STREAM.endswith(b"\n")
    assert "—".encode() in STREAM
    assert len(EXPECTED) == 11


def test_split_at_every_byte_gives_the_same_values() -> None:
    for cut in range(len(STREAM) + 1):
        assert _decode_in_pieces(STREAM, [cut]) == EXPECTED, cut


def test_one_byte_at_a_time() -> None:
    decoder = NdjsonDecoder()
    values: list[object] = []
    for index in range(len(STREAM)):
        values += decoder.feed(STREAM[index : index + 1])
    assert len(values) == len(EXPECTED) - 1
    values += decoder.close()
    assert values == EXPECTED


@settings(max_examples=10_000 if SLOW else 200)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_split_anywhere_into_many_chunks(cuts: list[int]) -> None:
    assert _decode_in_pieces(STREAM, cuts) == EXPECTED


def test_text_chunks_crlf_blank_lines_and_bom() -> None:
    decoder = NdjsonDecoder()
    got = decoder.feed('\ufeff{"a": 1}\r\n\r\n   \n{"b"')
    got += decoder.feed(': 2}\r\n{"c": 3}')
    got += decoder.close()
    assert got == [{"a": 1}, {"b": 2}, {"c": 3}]


def test_records_carry_line_numbers() -> None:
    decoder = NdjsonDecoder()
    records = decoder.feed_records('\n{"a": 1}\n\n{"b": 2}') + decoder.close_records()
    assert [(r.line, r.value, r.text) for r in records] == [
        (2, {"a": 1}, '{"a": 1}'),
        (4, {"b": 2}, '{"b": 2}'),
    ]


def test_bad_line_names_its_line_and_earlier_values_stand() -> None:
    decoder = NdjsonDecoder(kind="signals")
    assert decoder.feed('{"a": 1}\n') == [{"a": 1}]
    with pytest.raises(ProtocolError) as info:
        decoder.feed('{"b": \n')
    assert (info.value.kind, info.value.line, info.value.element) == ("signals", 2, "json")


def test_invalid_utf8_and_cut_multibyte_character() -> None:
    with pytest.raises(ProtocolError) as info:
        NdjsonDecoder().feed(b'{"a": 1}\n{"b": "\xff"}\n')
    assert (info.value.line, info.value.element) == (2, "encoding")
    decoder = NdjsonDecoder()
    decoder.feed(b'{"a": "\xe2\x80')
    with pytest.raises(ProtocolError):
        decoder.close()


def test_line_length_is_bounded() -> None:
    decoder = NdjsonDecoder(max_line_chars=10)
    with pytest.raises(ProtocolError) as info:
        decoder.feed('{"a": "0123456789"')
    assert info.value.code == "payload_too_large"


def test_feed_after_close_is_a_usage_error() -> None:
    decoder = NdjsonDecoder()
    decoder.close()
    assert decoder.close() == []
    with pytest.raises(RuntimeError):
        decoder.feed("{}")


def test_action_stream_decoder_yields_models_per_line() -> None:
    decoder = ActionStreamDecoder(kind="signals")
    first = decoder.feed(b'{"action": {"type": "add-text", "content": "ok"}}\n{"type": "mark_st')
    assert [a.type for a in first] == ["add-text"]
    rest = decoder.feed(b'ep_complete"}\n{"actions": [{"type": "complete_reflection"}, ')
    assert [a.type for a in rest] == ["mark_step_complete"]
    last = decoder.feed(b'{"type": "mark_stage_complete"}]}') + decoder.close()
    assert [a.type for a in last] == ["complete_reflection", "mark_stage_complete"]


def test_action_stream_decoder_error_names_line_and_pointer() -> None:
    decoder = ActionStreamDecoder()
    decoder.feed('{"type": "finish_thinking"}\n')
    with pytest.raises(ProtocolError) as info:
        decoder.feed('{"type": "add"}\n')
    assert (info.value.line, info.value.pointer, info.value.element) == (2, "/content", "add")
