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


def moved_notebook(snapshot: WorkflowSnapshot) -> str | None:
    """A warning when the workflow's notebook is not at its path (None when it is there):
    which sibling notebook carries the workflow's id, if one does, and what resume does."""
    if not snapshot.notebook_path:
        return None
    path = Path(snapshot.notebook_path)
    if path.exists():
        return None
    found: Path | None = None
    if path.parent.is_dir():
        for index, sibling in enumerate(sorted(path.parent.glob("*.ipynb"))):
            if index >= MAX_LOOKED_AT:
                break
            if _owner(sibling) == snapshot.workflow_id:
                found = sibling
                break
    if found is not None:
        return (
            f"the notebook is not at {path}: {found.name} carries this workflow (renamed?). "
            f"resume writes to {path.name} again; rename {found.name} back to go on in it"
        )
    return f"the notebook is not at {path} (moved or deleted?): resume writes it there again"


__all__ = ["moved_notebook"]
