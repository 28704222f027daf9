"""Kernel messages unpacked as jupyter_client does, with their header dates parsed in C.

jupyter_client's ``Session.deserialize`` hands each message's header and parent header to
``extract_dates``, which parses every ISO 8601 string with ``dateutil.parser.parse``: about
16 µs a date, two dates a message, several messages a cell, in the engine's process and
in the server's (jupyter_server deserializes every iopub message again to record kernel
activity). :func:`unpack` is jupyter_client's JSON unpacker plus one step: a header's
``date`` that ``extract_dates`` would parse is parsed with ``datetime.fromisoformat``
(0.4 µs) and handed on as the ``datetime``, which ``extract_dates`` leaves as it is. The
message is the same either way; a ``date`` it would not parse, or one without a time zone
(jupyter_client warns and assumes local time), is left for it.

:func:`use_fast_dates` installs it through ``Session.unpacker``, jupyter_client's own
configuration point for custom unpackers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from jupyter_client.jsonutil import ISO8601_PAT
from jupyter_client.session import Session, json_unpacker

UNPACKER = "notebook_bcc.kernel.wire.unpack"
"""The import string ``Session.unpacker`` takes."""


def unpack(data: bytes | str) -> Any:
    """A message part as jupyter_client's JSON unpacker gives it, a header's date parsed."""
    value = json_unpacker(data)
    if isinstance(value, dict) and "msg_id" in value:
        stamp = value.get("date")
        if isinstance(stamp, str) and ISO8601_PAT.match(stamp):
            try:
                parsed = datetime.fromisoformat(stamp)
            except ValueError:
                return value
            if parsed.tzinfo is not None:
                value["date"] = parsed
    return value


def use_fast_dates(session: Session) -> None:
    """Make ``session`` unpack with :func:`unpack` (unless it was configured otherwise)."""
    if session.unpack is json_unpacker or getattr(session.unpack, "__name__", "") in (
        "json_unpacker",
        "orjson_unpacker",
    ):
        session.unpacker = UNPACKER
