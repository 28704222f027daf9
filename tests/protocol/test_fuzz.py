"""Fuzzing: mutated, truncated, shuffled and bit-flipped payloads.

Whatever the input, ``parse_payload`` either returns a complete model (it survives a JSON round
trip through :class:`PayloadModel` unchanged) or raises :class:`ProtocolError` whose every issue
names a location (a line or a JSON pointer). No other exception escapes.

CI runs a few hundred cases per test; ``NOTEBOOK_BCC_SLOW=1`` runs 10,000 per test.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from notebook_bcc.protocol import ProtocolError, parse_payload
from tests.conftest import SLOW
from tests.protocol.helpers import PROTOCOL_FIXTURES, assert_round_trips

FUZZ = settings(
    max_examples=10_000 if SLOW else 250,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_KINDS: dict[str, str] = {
    "actions_raw.xml": "actions",
    "actions_truncated.txt": "actions",
    "behavior.xml": "behavior",
    "reflection.xml": "reflection",
    "stage_reflection_long.xml": "stage_reflection",
    "stage_reflection_short.xml": "stage_reflection",
    "stages_fenced.txt": "stages",
    "steps.xml": "steps",
    "workflow.xml": "workflow",
    "generating.ndjson": "json-actions",
    "generating_actions.json": "json-actions",
    "generating_stream.json": "json-actions",
    "signals.ndjson": "signals",
    "planning.json": "planning",
    "planning_stream.ndjson": "planning",
}
SOURCES: dict[str, tuple[bytes, str]] = {
    name: ((PROTOCOL_FIXTURES / name).read_bytes(), kind) for name, kind in _KINDS.items()
}

JUNK = [
    "<",
    ">",
    "&",
    "&amp;",
    "&#0;",
    "&bogus;",
    '"',
    "'",
    "</",
    "/>",
    "<stage",
    "</stage>",
    "<step id='x'>",
    "</actions>",
    "<add-code2run>",
    "</add-code2run>",
    "<![CDATA[",
    "]]>",
    "<!--",
    "-->",
    "<?xml version='1.0'?>",
    "<!DOCTYPE x>",
    "\x00",
    "\x07",
    "\ufffe",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    '"type"',
    '"action"',
    "null",
    "NaN",
    "1e999",
    "\n",
    "\r\n",
    "```",
    "```xml\n",
    "é",
    "📊",
]


def _check(data: str | bytes, kind: str) -> None:
    error: ProtocolError | None = None
    try:
        payload = parse_payload(data, kind)
    except ProtocolError as exc:
        error = exc
    if error is None:
        assert_round_trips(payload)
        return
    assert error.issues
    for issue in error.issues:
        assert issue.message
        assert issue.line is not None or issue.pointer is not None, error
        assert issue.line is None or issue.line >= 1


names = st.sampled_from(sorted(SOURCES))
kinds = st.sampled_from(["auto", "fixture"])


def _kind(name: str, which: str) -> str:
    return "auto" if which == "auto" else SOURCES[name][1]


@FUZZ
@given(name=names, which=kinds, data=st.data())
def test_truncated_anywhere(name: str, which: str, data: st.DataObject) -> None:
    raw = SOURCES[name][0]
    cut = data.draw(st.integers(min_value=0, max_value=len(raw)))
    _check(raw[:cut], _kind(name, which))


@FUZZ
@given(name=names, which=kinds, data=st.data())
def test_bit_flips(name: str, which: str, data: st.DataObject) -> None:
    raw = bytearray(SOURCES[name][0])
    flips = data.draw(
        st.lists(st.tuples(st.integers(0, len(raw) - 1), st.integers(0, 7)), min_size=1, max_size=8)
    )
    for index, bit in flips:
        raw[index] ^= 1 << bit
    _check(bytes(raw), _kind(name, which))


@FUZZ
@given(name=names, which=kinds, data=st.data())
def test_junk_inserted_and_slices_deleted(name: str, which: str, data: st.DataObject) -> None:
    text = SOURCES[name][0].decode("utf-8")
    edits = data.draw(
        st.lists(
            st.tuples(
                st.booleans(),
                st.integers(0, len(text)),
                st.integers(0, 40),
                st.sampled_from(JUNK),
            ),
            min_size=1,
            max_size=6,
        )
    )
    for insert, where, length, junk in edits:
        position = min(where, len(text))
        if insert:
            text = text[:position] + junk + text[position:]
        else:
            text = text[:position] + text[position + length :]
    _check(text, _kind(name, which))


@FUZZ
@given(name=names, which=kinds, data=st.data())
def test_lines_shuffled_and_duplicated(name: str, which: str, data: st.DataObject) -> None:
    lines = SOURCES[name][0].decode("utf-8").split("\n")
    shuffled = data.draw(st.permutations(lines))
    extra = data.draw(st.lists(st.sampled_from(lines), max_size=3))
    _check("\n".join([*shuffled, *extra]), _kind(name, which))


@FUZZ
@given(text=st.text(max_size=200), which=st.sampled_from(["auto", "actions", "json-actions"]))
def test_arbitrary_text(text: str, which: str) -> None:
    _check(text, which)
