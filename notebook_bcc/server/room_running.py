"""JupyterLab's ``[*]`` in a collaboration room for the cell a workflow runs.

In a room, the server writes the workflow's cells into the shared notebook; no browser
executes them, so none would mark one as running. A code cell's ``execution_state`` in the
shared model (``"idle"`` / ``"running"``, jupyter_ydoc) is what JupyterLab draws as ``[*]``:
:func:`mark_running` sets it on the cell the kernel runs now, for every collaborator, and puts
the cell marked before back to ``idle``.
"""

from __future__ import annotations

from typing import Any


def mark_running(room: Any, now: str | None, before: str | None) -> int:
    """Mark cell ``now`` running and ``before`` idle in ``room`` (a jupyter_ydoc YNotebook);
    returns how many cells changed. Cells are looked up from the end, where a run writes."""
    wanted: dict[str, str] = {}
    if before is not None:
        wanted[before] = "idle"
    if now is not None:
        wanted[now] = "running"
    if not wanted:
        return 0
    changed = 0
    ycells = room.ycells
    with room.ydoc.transaction():
        for index in range(len(ycells) - 1, -1, -1):
            ycell = ycells[index]
            state = wanted.pop(str(ycell.get("id")), None)
            code = state is not None and ycell.get("cell_type") == "code"
            if code and ycell.get("execution_state") != state:
                ycell["execution_state"] = state
                changed += 1
            if not wanted:
                break
    return changed


__all__ = ["mark_running"]
