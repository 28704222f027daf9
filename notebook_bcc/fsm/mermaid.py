"""Mermaid ``stateDiagram-v2`` export for the workflow FSM and for any rule machine."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Sequence

from notebook_bcc.fsm.table import TRANSITIONS
from notebook_bcc.models.names import State, parse_state

CURRENT_CLASS = "current"
_SAFE_ID = re.compile(r"[^A-Za-z0-9_]")


def mermaid_id(name: str) -> str:
    """A Mermaid-safe state id for an arbitrary state name (stable, collision-resistant)."""
    safe = _SAFE_ID.sub("_", name)
    if safe != name:
        return f"s_{safe}_{zlib.crc32(name.encode()) % 10_000:04d}"
    if not safe or safe[0].isdigit():
        return f"s_{safe}"
    return safe


def _label(text: str) -> str:
    return text.replace(":", " ").replace("\n", " ").replace(";", ",").strip()


def state_diagram(
    states: Sequence[str],
    edges: Iterable[tuple[str, str, str]],
    *,
    start: str | None = None,
    ends: Iterable[str] = (),
    current: str | None = None,
) -> str:
    """Render states and ``(source, label, target)`` edges; mark ``current`` with a class."""
    lines = ["stateDiagram-v2"]
    for name in states:
        sid = mermaid_id(name)
        if sid != name:
            lines.append(f'    state "{_label(name)}" as {sid}')
    if start is not None:
        lines.append(f"    [*] --> {mermaid_id(start)}")
    for source, label, target in edges:
        text = f" : {_label(label)}" if label else ""
        lines.append(f"    {mermaid_id(source)} --> {mermaid_id(target)}{text}")
    for end in ends:
        lines.append(f"    {mermaid_id(end)} --> [*]")
    if current is not None:
        lines.append(f"    classDef {CURRENT_CLASS} fill:#f9c74f,stroke:#b5838d,stroke-width:3px")
        lines.append(f"    class {mermaid_id(current)} {CURRENT_CLASS}")
    return "\n".join(lines) + "\n"


def workflow_fsm_mermaid(current: State | str | None = None) -> str:
    """The 14-state workflow FSM: seed 003's 45 transitions and the rows beyond it."""
    marked = parse_state(current).value if current is not None else None
    return state_diagram(
        [s.value for s in State],
        ((r.source.value, r.event.value, r.target.value) for r in TRANSITIONS),
        start=State.IDLE.value,
        ends=[State.WORKFLOW_COMPLETED.value],
        current=marked,
    )
