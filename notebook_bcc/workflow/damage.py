"""Damaged payloads never apply silently: truncated documents refused, every repair listed.

The XML parser repairs what an LLM gets wrong (unescaped ``<``, an element left open) and says
so: ``truncated`` when the input ended before the document did, ``repairs`` for each edit. A
truncated document has lost an unknown part of what the planner meant (a stage, a produced
variable), so applying it is a protocol error unless whoever fetched it explicitly accepted
truncation (``truncation_accepted``, the HTTP planner's ``accept_truncated``). Repairs that
keep every word are applied, and :func:`repair_lines` lists them for ``apply``'s output, the
trace (as warnings) and the recording.
"""

from __future__ import annotations

from typing import Any

from notebook_bcc.models.names import State
from notebook_bcc.protocol.xml_tree import RepairNote
from notebook_bcc.workflow.errors import ApplyError

_END_KINDS = ("closed_at_end", "dropped_partial_tag")


class DamagedPayloadError(ApplyError):
    """A payload that lost part of its content on the way (truncated): nothing was applied."""

    code = "damaged_payload"

    def __init__(self, kind: str, state: State | str | None, message: str, line: int | None):
        super().__init__(kind, state, message, details={"line": line})
        self.line = line


def repair_notes(payload: Any) -> list[RepairNote]:
    """The repair notes a parsed payload carries (XML payloads; none for JSON ones)."""
    notes = getattr(payload, "repairs", None)
    return list(notes) if isinstance(notes, list) else []


def repair_lines(payload: Any) -> list[str]:
    """One ``repaired line N: <element>: what was done`` line per repair of ``payload``."""
    lines: list[str] = []
    for note in repair_notes(payload):
        element = f"<{note.element}>: " if note.element else ""
        detail = note.detail or note.kind.replace("_", " ")
        lines.append(f"repaired line {note.line}: {element}{detail}")
    return lines


def check_intact(payload: Any, state: State | str | None) -> None:
    """Refuse a truncated payload (see the module docstring); anything else passes."""
    if not getattr(payload, "truncated", False):
        return
    if getattr(payload, "truncation_accepted", False):
        return
    kind = str(getattr(payload, "kind", "payload"))
    ends = [note for note in repair_notes(payload) if note.kind in _END_KINDS]
    line = ends[0].line if ends else None
    where = f" (line {line}: {ends[0].detail})" if ends else ""
    raise DamagedPayloadError(
        kind,
        state,
        f"the <{kind}> document is truncated: it ends before its closing tag </{kind}>"
        f"{where}; part of it is lost, so nothing was applied",
        line,
    )
