"""An incremental NDJSON decoder: feed chunks split anywhere, get each complete value once.

Chunks may be ``str`` or ``bytes`` (UTF-8, multi-byte characters may be split across chunks).
Lines end with ``\\n`` (a ``\\r`` before it is dropped); blank lines are skipped; the last line
is kept even without a trailing newline (:meth:`NdjsonDecoder.close`). A malformed line raises
:class:`ProtocolError` naming its line; values already returned stand.
"""

from __future__ import annotations

import codecs
from typing import Any, NamedTuple

from notebook_bcc.protocol.errors import PayloadTooLargeError, ProtocolError
from notebook_bcc.protocol.json_text import decode_json
from notebook_bcc.protocol.limits import MAX_PAYLOAD_CHARS


class NdjsonRecord(NamedTuple):
    """One decoded line: its 1-based line number, value and text."""

    line: int
    value: Any
    text: str


class NdjsonDecoder:
    """Incremental NDJSON decoder (see the module docstring)."""

    def __init__(
        self,
        *,
        kind: str = "json-actions",
        first_line: int = 1,
        max_line_chars: int = MAX_PAYLOAD_CHARS,
    ) -> None:
        self.kind = kind
        self.max_line_chars = max_line_chars
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="strict")
        self._pending: list[str] = []
        self._pending_size = 0
        self._line = first_line
        self._at_start = True
        self._closed = False

    @property
    def line(self) -> int:
        """The number of the line being assembled."""
        return self._line

    def feed(self, chunk: str | bytes) -> list[Any]:
        """Add a chunk; return the values of the lines it completed."""
        return [record.value for record in self.feed_records(chunk)]

    def close(self) -> list[Any]:
        """End of stream: return the value of a last line that had no newline, if any."""
        return [record.value for record in self.close_records()]

    def feed_records(self, chunk: str | bytes) -> list[NdjsonRecord]:
        """Like :meth:`feed`, with line numbers and line texts."""
        if self._closed:
            raise RuntimeError("NdjsonDecoder.feed() after close()")
        text = self._decode(chunk, final=False)
        records: list[NdjsonRecord] = []
        start = 0
        while True:
            newline = text.find("\n", start)
            if newline < 0:
                break
            self._hold(text[start:newline])
            record = self._complete_line()
            if record is not None:
                records.append(record)
            start = newline + 1
        self._hold(text[start:])
        return records

    def close_records(self) -> list[NdjsonRecord]:
        """Like :meth:`close`, with line numbers and line texts."""
        if self._closed:
            return []
        self._hold(self._decode(b"", final=True))
        self._closed = True
        record = self._complete_line()
        return [] if record is None else [record]

    def _decode(self, chunk: str | bytes, *, final: bool) -> str:
        if isinstance(chunk, str):
            return chunk
        try:
            return self._utf8.decode(chunk, final)
        except UnicodeDecodeError as exc:
            line = self._line + bytes(exc.object[: exc.start]).count(b"\n")
            raise ProtocolError(
                self.kind, f"invalid UTF-8: {exc.reason}", line=line, element="encoding"
            ) from None

    def _hold(self, piece: str) -> None:
        if not piece:
            return
        self._pending.append(piece)
        self._pending_size += len(piece)
        if self._pending_size > self.max_line_chars:
            raise PayloadTooLargeError(
                self.kind,
                f"line longer than {self.max_line_chars} characters",
                line=self._line,
                element="json",
            )

    def _complete_line(self) -> NdjsonRecord | None:
        line_text = "".join(self._pending)
        self._pending = []
        self._pending_size = 0
        number = self._line
        self._line += 1
        if self._at_start:
            self._at_start = False
            if line_text.startswith("\ufeff"):
                line_text = line_text[1:]
        if line_text.endswith("\r"):
            line_text = line_text[:-1]
        if not line_text.strip():
            return None
        value = decode_json(line_text, self.kind, first_line=number)
        return NdjsonRecord(number, value, line_text)
