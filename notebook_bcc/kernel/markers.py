"""In-place notebook changes: last-text updates, thinking markers and agent messages.

None of these makes a cell. Thinking markers and ``communication`` messages are kept in the
``metadata.notebook_bcc`` of the last workflow cell (``finish_thinking`` only stamps the marker:
nothing user-visible is removed); markers sent before any cell exists wait for the first one.
Each change is handed to the runner's sinks and reported as an event for the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nbformat.notebooknode import NotebookNode

from notebook_bcc.kernel.cells import bcc_of
from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.kernel.results import ActionOutcome, CellChange, KernelEvent
from notebook_bcc.models.actions import (
    CommunicationAction,
    FinishThinkingAction,
    IsThinkingAction,
    SetEffectAsThinkingAction,
    UpdateLastTextAction,
)
from notebook_bcc.models.base import utc_now_iso

Emit = Callable[[NotebookNode, CellChange], None]
"""Hands a changed cell to the sinks."""


class MarkerBook:
    """The in-place changes of one document, and the thinking marker that is open."""

    def __init__(self, document: NotebookDocument, emit: Emit) -> None:
        self.document = document
        self._emit = emit
        self._thinking: dict[str, Any] | None = None
        self._thinking_cell: str | None = None
        self._pending_marks: list[tuple[str, Any]] = []

    def update_last_text(self, action: UpdateLastTextAction) -> ActionOutcome:
        """Replace the text of the last workflow markdown cell."""
        cell_id = self.document.last_markdown_id
        cell = self.document.get(cell_id) if cell_id else None
        if cell is None or cell_id is None:
            return ActionOutcome(action.type, refused="there is no markdown cell to update")
        cell["source"] = action.text
        self._emit(cell, "updated")
        return ActionOutcome(
            action.type,
            cell_id=cell_id,
            change="updated",
            events=[KernelEvent("last_text", {"cell_id": cell_id, "text": action.text})],
        )

    def _mark_last(self, key: str, value: Any) -> str | None:
        """Put ``value`` under ``key`` in the last workflow cell's metadata (or hold it)."""
        cell_id = self.document.last_added_id
        cell = self.document.get(cell_id) if cell_id else None
        bcc = bcc_of(cell) if cell is not None else None
        if cell is None or bcc is None:
            self._pending_marks.append((key, value))
            return None
        self._store_mark(bcc, key, value)
        self._emit(cell, "updated")
        return cell_id

    @staticmethod
    def _store_mark(bcc: dict[str, Any], key: str, value: Any) -> None:
        if key == "messages":
            bcc.setdefault("messages", []).append(value)
        else:
            bcc[key] = value

    def attach_pending(self, cell: NotebookNode) -> None:
        """Markers sent before the first cell existed go to the first cell made."""
        if not self._pending_marks:
            return
        bcc = bcc_of(cell)
        if bcc is None:
            return
        for key, value in self._pending_marks:
            self._store_mark(bcc, key, value)
            if key == "thinking":
                self._thinking_cell = str(cell["id"])
        self._pending_marks.clear()

    def start_thinking(self, action: IsThinkingAction) -> ActionOutcome:
        """Open a thinking marker on the last workflow cell (or the next one made)."""
        marker: dict[str, Any] = {
            "thinking_text": action.thinking_text,
            "agent_name": action.agent_name,
            "custom_text": action.custom_text,
            "text_array": action.text_array,
            "started_at": utc_now_iso(),
            "finished_at": None,
        }
        self._thinking = marker
        cell_id = self._mark_last("thinking", marker)
        self._thinking_cell = cell_id
        data = {key: value for key, value in marker.items() if value is not None}
        return ActionOutcome(
            action.type,
            cell_id=cell_id,
            change="updated" if cell_id else None,
            events=[KernelEvent("thinking", data)],
        )

    def finish_thinking(self, action: FinishThinkingAction) -> ActionOutcome:
        """Stamp the open marker finished; the cell and its text stay as they are."""
        marker = self._thinking
        self._thinking = None
        if marker is None:
            return ActionOutcome(action.type, events=[KernelEvent("thinking_finished", {})])
        marker["finished_at"] = utc_now_iso()
        cell_id = self._thinking_cell
        cell = self.document.get(cell_id) if cell_id else None
        if cell is not None:
            self._emit(cell, "updated")
        return ActionOutcome(
            action.type,
            cell_id=cell_id if cell is not None else None,
            change="updated" if cell is not None else None,
            events=[KernelEvent("thinking_finished", {"finished_at": marker["finished_at"]})],
        )

    def effect_as_thinking(self, action: SetEffectAsThinkingAction) -> ActionOutcome:
        """Mark the last code cell's effect as thinking (kept in its metadata)."""
        cell_id = self.document.last_code_id
        cell = self.document.get(cell_id) if cell_id else None
        bcc = bcc_of(cell) if cell is not None else None
        if cell is None or bcc is None or cell_id is None:
            return ActionOutcome(action.type, refused="there is no code cell to mark")
        bcc["effect_as_thinking"] = action.thinking_text
        self._emit(cell, "updated")
        return ActionOutcome(
            action.type,
            cell_id=cell_id,
            change="updated",
            events=[
                KernelEvent(
                    "effect_as_thinking",
                    {"cell_id": cell_id, "thinking_text": action.thinking_text},
                )
            ],
        )

    def communication(self, action: CommunicationAction) -> ActionOutcome:
        """Record a message to another agent on the last workflow cell."""
        message = {"to": action.to, "content": action.content, "at": utc_now_iso()}
        cell_id = self._mark_last("messages", message)
        return ActionOutcome(
            action.type,
            cell_id=cell_id,
            change="updated" if cell_id else None,
            events=[KernelEvent("communication", {"to": action.to, "content": action.content})],
        )
