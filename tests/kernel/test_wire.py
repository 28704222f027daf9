"""Kernel messages unpack to what jupyter_client gives, with header dates parsed in C."""

from __future__ import annotations

import json
import warnings
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jupyter_client.jsonutil import extract_dates
from jupyter_client.session import Session, json_unpacker

from notebook_bcc.kernel.wire import UNPACKER, unpack, use_fast_dates
from tests.kernel.conftest import KernelHarness


def _as_jupyter_client(data: bytes) -> Any:
    return extract_dates(json_unpacker(data))


def _as_here(data: bytes) -> Any:
    return extract_dates(unpack(data))


def _header(date: Any, **more: Any) -> bytes:
    header = {"msg_id": "m-1", "msg_type": "status", "session": "s", "username": "u"}
    return json.dumps({**header, "date": date, **more}).encode()


OFFSETS = st.integers(min_value=-14 * 60, max_value=14 * 60).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
MOMENTS = st.datetimes(
    min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1), timezones=OFFSETS
)


@st.composite
def iso_stamps(draw: st.DrawFn) -> str:
    """The ISO 8601 forms kernels send: 0-6 fraction digits; Z, +HH:MM or +HHMM."""
    moment = draw(MOMENTS)
    digits = draw(st.integers(min_value=0, max_value=6))
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if digits:
        text += "." + f"{moment.microsecond:06d}"[:digits]
    offset = moment.utcoffset() or timedelta()
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    hours, rest = divmod(abs(minutes), 60)
    style = draw(st.sampled_from(["colon", "plain", "z"]))
    if style == "z" and minutes == 0:
        return text + "Z"
    return text + f"{sign}{hours:02d}{':' if style != 'plain' else ''}{rest:02d}"


@given(iso_stamps())
def test_a_header_date_gives_the_same_datetime(stamp: str) -> None:
    ours, theirs = _as_here(_header(stamp)), _as_jupyter_client(_header(stamp))
    assert isinstance(ours["date"], datetime)
    assert ours == theirs
    assert ours["date"].utcoffset() == theirs["date"].utcoffset()


@given(st.one_of(st.text(max_size=40), st.integers(), st.none(), st.lists(st.text(), max_size=3)))
def test_anything_else_in_the_date_field_is_left_as_jupyter_client_leaves_it(value: Any) -> None:
    assert _as_here(_header(value)) == _as_jupyter_client(_header(value))


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=12,
    )
)
def test_a_part_that_is_not_a_header_is_untouched(value: Any) -> None:
    data = json.dumps(value).encode()
    assert unpack(data) == json_unpacker(data)


def test_a_naive_date_is_left_to_jupyter_client_which_warns_and_assumes_local_time() -> None:
    data = _header("2026-11-27T01:02:03.456789")
    assert unpack(data)["date"] == "2026-11-27T01:02:03.456789"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours, theirs = _as_here(data), _as_jupyter_client(data)
    assert ours == theirs
    assert len(caught) == 2
    assert "naive" in str(caught[0].message)


def test_a_session_signs_and_checks_as_before_with_the_unpacker() -> None:
    sender, receiver = Session(key=b"secret"), Session(key=b"secret")
    use_fast_dates(receiver)
    assert receiver.unpack is unpack
    message = sender.msg("status", {"execution_state": "idle"})
    parts = sender.serialize(message)
    got = receiver.deserialize(parts[parts.index(b"<IDS|MSG>") + 1 :])
    assert got["header"]["date"] == message["header"]["date"]
    assert got["content"] == {"execution_state": "idle"}
    forged = Session(key=b"other").serialize(message)
    with pytest.raises(ValueError, match="Invalid Signature"):
        receiver.deserialize(forged[forged.index(b"<IDS|MSG>") + 1 :])


def test_a_session_configured_with_another_unpacker_keeps_it() -> None:
    session = Session(key=b"k", unpacker="pickle", packer="pickle")
    use_fast_dates(session)
    assert session.unpacker == "pickle"
    assert session.unpack is not unpack


def test_the_real_kernels_messages_arrive_through_it(kh: KernelHarness) -> None:
    session = kh.session.kernel_client.session
    assert session.unpacker == UNPACKER
    assert session.unpack is unpack
    seen: list[Any] = []

    def recording(data: bytes) -> Any:
        value = unpack(data)
        seen.append(value)
        return value

    session.unpack = recording
    try:
        assert kh.value("6 * 7") == "42"
    finally:
        session.unpack = unpack
    headers = [v for v in seen if isinstance(v, dict) and "msg_id" in v and "date" in v]
    assert len(headers) >= 2  # the reply's header and its parent header at least
    for header in headers:
        assert isinstance(header["date"], datetime), header
        assert header["date"].tzinfo is not None
