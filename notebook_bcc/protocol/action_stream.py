"""Streamed actions: NDJSON chunks in, action models out as soon as each line is complete."""

from __future__ import annotations

from notebook_bcc.protocol.json_actions import JsonAction, read_actions
from notebook_bcc.protocol.json_text import JsonRecord
from notebook_bcc.protocol.ndjson import NdjsonDecoder, NdjsonRecord


class ActionStreamDecoder:
    """Incremental action decoder for ``/generating`` and ``/reflecting`` NDJSON streams.

    Each line may hold one action, ``{"action": {...}}`` or ``{"actions": [...]}``. A bad line
    raises :class:`~notebook_bcc.protocol.errors.ProtocolError` naming its line; actions
    already returned stand.
    """

    def __init__(self, *, kind: str = "json-actions") -> None:
        self.kind = kind
        self._lines = NdjsonDecoder(kind=kind)

    def feed(self, chunk: str | bytes) -> list[JsonAction]:
        """Add a chunk; return the actions of the lines it completed."""
        return self._actions(self._lines.feed_records(chunk))

    def close(self) -> list[JsonAction]:
        """End of stream: the actions of a last line without a newline, if any."""
        return self._actions(self._lines.close_records())

    def _actions(self, records: list[NdjsonRecord]) -> list[JsonAction]:
        converted = [JsonRecord(rec.value, rec.line, rec.text, rec.line) for rec in records]
        return read_actions(converted, self.kind).actions
