"""Where a workflow's notebook went: a line for ``status`` and ``resume`` when the file is not
where the run writes it (renamed, moved or deleted in a terminal or a file manager)."""

from __future__ import annotations

import json
from pathlib import Path

from notebook_bcc.models.snapshot import WorkflowSnapshot

MAX_LOOKED_AT = 200
"""Sibling notebooks read at most, looking for the moved one."""
MAX_BYTES = 20 * 1024 * 1024
"""Larger siblings are not read."""


def _owner(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    metadata = data.get("metadata") if isinstance(data, dict) else None
    bcc = metadata.get("notebook_bcc") if isinstance(metadata, dict) else None
    owner = bcc.get("workflow_id") if isinstance(bcc, dict) else None
    return owner if isinstance(owner, str) else None


def _carriers(snapshot: WorkflowSnapshot) -> tuple[Path, list[Path]] | None:
    """The workflow's recorded notebook path and the sibling notebooks that carry its id,
    when the path holds no file (None when it does, or no path is recorded)."""
    if not snapshot.notebook_path:
        return None
    path = Path(snapshot.notebook_path)
    if path.exists():
        return None
    found: list[Path] = []
    if path.parent.is_dir():
        for index, sibling in enumerate(sorted(path.parent.glob("*.ipynb"))):
            if index >= MAX_LOOKED_AT:
                break
            if _owner(sibling) == snapshot.workflow_id:
                found.append(sibling)
    return path, found


def renamed_notebook(snapshot: WorkflowSnapshot) -> Path | None:
    """Where the workflow's notebook went when it was renamed in its folder (a terminal, a
    file manager): the one sibling notebook carrying the workflow's id, once its recorded
    path holds nothing. None when the notebook is where it was, is gone, or several copies
    carry the id (which one to go on in is the user's call)."""
    carriers = _carriers(snapshot)
    if carriers is None or len(carriers[1]) != 1:
        return None
    return carriers[1][0]


def moved_notebook(snapshot: WorkflowSnapshot) -> str | None:
    """A warning when the workflow's notebook is not at its path (None when it is there):
    which sibling notebook carries the workflow's id, if one does, and what resume does."""
    carriers = _carriers(snapshot)
    if carriers is None:
        return None
    path, found = carriers
    if len(found) == 1:
        return (
            f"the notebook is not at {path}: {found[0].name} carries this workflow (renamed?); "
            f"resume goes on in {found[0].name}"
        )
    if found:
        names = ", ".join(f.name for f in found)
        return (
            f"the notebook is not at {path}: {names} all carry this workflow (copies?); "
            f"resume writes to {path.name} again; rename the one to go on in to {path.name}"
        )
    return f"the notebook is not at {path} (moved or deleted?): resume writes it there again"


__all__ = ["moved_notebook", "renamed_notebook"]
