"""``--log-output``: a running cell's stdout/stderr, streamed as it arrives (papermill style).

Plain and live views: a cell's ``stdout`` stream goes to stdout and its ``stderr`` stream and
errors to stderr (through the live display's console, above the tree, when it is shown). With
``--json`` each output is a :class:`WorkflowEvent` of kind ``cell``, event ``output``, detail
``{cell_id, name, text}``: live-only (not in the store), carrying the last stored event's
``seq`` and the snapshot's ``version``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from notebook_bcc.engine.engine import Engine

MAX_EVENT_TEXT = 100_000
"""Longest text carried by one JSON output event (the notebook keeps all of it)."""


def output_text(output: Any) -> tuple[str, str] | None:
    """``(stream name, text)`` of a stream or error output, or None for rich displays."""
    kind = output.get("output_type")
    if kind == "stream":
        return str(output.get("name") or "stdout"), str(output.get("text") or "")
    if kind == "error":
        return "stderr", f"{output.get('ename')}: {output.get('evalue')}\n"
    return None


class CellOutputLog:
    """Called with ``(cell_id, output)`` by the kernel session for each output."""

    def __init__(self, view: Any, *, json_lines: bool) -> None:
        self.view = view
        self.json_lines = json_lines
        self.engine: Engine | None = None
        self.seq = 0

    def __call__(self, cell_id: str, output: Any) -> None:
        """Show one output now."""
        found = output_text(output)
        if found is None:
            return
        name, text = found
        if self.json_lines:
            self._event(cell_id, name, text)
            return
        live = getattr(self.view, "_live", None)
        if live is not None:
            from rich.text import Text

            # a Text, not markup=False: that flag would also apply to the live tree's labels
            live.console.print(Text(text), end="", soft_wrap=True)
            return
        stream = sys.stderr if name == "stderr" else sys.stdout
        stream.write(text)
        stream.flush()

    def _event(self, cell_id: str, name: str, text: str) -> None:
        from notebook_bcc.models.base import utc_now_iso
        from notebook_bcc.models.event import WorkflowEvent

        engine = self.engine
        if engine is None:
            return
        snap = engine.snapshot
        event = WorkflowEvent(
            workflow_id=snap.workflow_id,
            seq=max(self.seq, 0),
            version=snap.version,
            at=utc_now_iso(),
            kind="cell",
            event="output",
            actor="kernel",
            run_status=snap.run.status,
            detail={"cell_id": cell_id, "name": name, "text": text[:MAX_EVENT_TEXT]},
        )
        sys.stdout.write(event.model_dump_json(by_alias=True) + "\n")
        sys.stdout.flush()

    def on_event(self, event: Any) -> None:
        """Track the last stored event's ``seq``."""
        self.seq = int(getattr(event, "seq", self.seq))
