"""Small text helpers shared by the XML and JSON readers: decoding, line numbers, tidying."""

from __future__ import annotations

import re
import textwrap
from bisect import bisect_right

from notebook_bcc.protocol.errors import PayloadTooLargeError, ProtocolError
from notebook_bcc.protocol.limits import MAX_PAYLOAD_CHARS

_BOM = "\ufeff"
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")
_INVALID_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def decode_payload(data: str | bytes, kind: str) -> str:
    """The payload as text: UTF-8 decoded (strictly), byte-order mark removed, size checked."""
    if len(data) > MAX_PAYLOAD_CHARS:
        raise PayloadTooLargeError(
            kind,
            f"payload of {len(data)} {'bytes' if isinstance(data, bytes) else 'characters'} "
            f"exceeds the limit of {MAX_PAYLOAD_CHARS}",
            line=1,
            element="payload",
        )
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise ProtocolError(
                kind,
                f"invalid UTF-8 at byte {exc.start}: {exc.reason}",
                line=line,
                element="encoding",
            ) from None
    else:
        text = data
    return text[1:] if text.startswith(_BOM) else text


class LineIndex:
    """Maps character offsets of one text to 1-based line numbers in O(log n)."""

    def __init__(self, text: str) -> None:
        self._newlines = [m.start() for m in re.finditer("\n", text)]

    def line_of(self, offset: int) -> int:
        """The 1-based line holding ``offset``."""
        return bisect_right(self._newlines, offset - 1) + 1


def line_of(text: str, offset: int) -> int:
    """The 1-based line of ``offset`` in ``text`` (one-off lookups)."""
    return text.count("\n", 0, offset) + 1


def find_invalid_xml_char(text: str, start: int = 0, end: int | None = None) -> int:
    """Offset of the first character XML 1.0 forbids in ``text[start:end]``, or -1."""
    match = _INVALID_XML_CHAR.search(text, start, len(text) if end is None else end)
    return match.start() if match else -1


def clean_text(text: str) -> str:
    """Prose as a reader wants it: blank edge lines dropped, common indent removed, trimmed.

    Words are never touched: only whitespace at the edges and the shared indentation go.
    """
    return textwrap.dedent(_LEADING_BLANK_LINES.sub("", text)).strip()


def clean_block(text: str) -> str:
    """Code or markdown ready for a cell: blank edge lines dropped, dedented, right-trimmed.

    Unlike :func:`clean_text` the first line keeps its indentation relative to the others.
    """
    return textwrap.dedent(_LEADING_BLANK_LINES.sub("", text)).rstrip()
