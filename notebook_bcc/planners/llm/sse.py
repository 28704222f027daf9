"""An incremental ``text/event-stream`` decoder: feed bytes split anywhere, get whole events.

The subset of the WHATWG rules chat APIs use: lines end with ``\\r\\n``, ``\\n`` or ``\\r`` (a
``\\r`` at the end of a chunk waits for the next byte); ``data:`` lines of one event are joined
with ``\\n``; ``event:`` names the event; ``id:``, ``retry:`` and unknown fields are ignored,
as are comments (``: keep-alive``); a blank line dispatches the event. Lines are decoded as
UTF-8 only once complete, so a character split across chunks is never broken. A line that is
not UTF-8 or longer than the bound raises :class:`SseError` naming the line.
"""

from __future__ import annotations

from dataclasses import dataclass

from notebook_bcc.protocol.limits import MAX_PAYLOAD_CHARS


class SseError(ValueError):
    """A stream that is not valid ``text/event-stream`` (names the line)."""


@dataclass(frozen=True)
class SseEvent:
    """One dispatched event: its type (``message`` by default), data and first line number."""

    data: str
    event: str = "message"
    line: int = 1


class SseDecoder:
    """Incremental decoder (see the module docstring)."""

    def __init__(self, *, max_line_bytes: int = MAX_PAYLOAD_CHARS) -> None:
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._data: list[str] = []
        self._event: str | None = None
        self._event_line: int | None = None
        self._line = 0
        self._bom_checked = False

    @property
    def line(self) -> int:
        """Lines completed so far."""
        return self._line

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Add bytes; return the events they completed, in order."""
        self._buffer += chunk
        events: list[SseEvent] = []
        start = 0
        buffer = self._buffer
        while True:
            cut = _line_end(buffer, start)
            if cut is None:
                break
            end, after = cut
            self._take(bytes(buffer[start:end]), events)
            start = after
        del buffer[:start]
        if len(buffer) > self.max_line_bytes:
            raise SseError(
                f"line {self._line + 1}: longer than {self.max_line_bytes} bytes without an end"
            )
        return events

    def close(self) -> list[SseEvent]:
        """End of stream: a last line without its end, and an event without its blank line."""
        events: list[SseEvent] = []
        if self._buffer:
            rest = bytes(self._buffer)
            self._buffer.clear()
            self._take(rest.rstrip(b"\r"), events)
        self._dispatch(events)
        return events

    def _take(self, raw: bytes, events: list[SseEvent]) -> None:
        self._line += 1
        if not self._bom_checked:
            self._bom_checked = True
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SseError(f"line {self._line}: not UTF-8 ({exc.reason})") from None
        if not text:
            self._dispatch(events)
            return
        if text.startswith(":"):
            return
        name, colon, value = text.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            if self._event_line is None:
                self._event_line = self._line
            self._data.append(value)
        elif name == "event":
            if self._event_line is None:
                self._event_line = self._line
            self._event = value

    def _dispatch(self, events: list[SseEvent]) -> None:
        if self._data:
            events.append(
                SseEvent(
                    data="\n".join(self._data),
                    event=self._event or "message",
                    line=self._event_line or self._line,
                )
            )
        self._data = []
        self._event = None
        self._event_line = None


def _line_end(buffer: bytearray, start: int) -> tuple[int, int] | None:
    """``(end of the line, start of the next)`` for the first line from ``start``, or None.

    A ``\\r`` as the last byte may be the first half of ``\\r\\n``: wait for more.
    """
    newline = buffer.find(b"\n", start)
    limit = newline if newline >= 0 else len(buffer)
    carriage = buffer.find(b"\r", start, limit)
    if carriage < 0:
        return None if newline < 0 else (newline, newline + 1)
    if carriage + 1 == len(buffer):
        return None
    if buffer[carriage + 1] == 0x0A:
        return carriage, carriage + 2
    return carriage, carriage + 1


__all__ = ["SseDecoder", "SseError", "SseEvent"]
