"""Running the same command again, as CI does: the notebook holds the new run only.

papermill overwrites its output notebook; a CI job that re-runs ``notebook-bcc run`` expects
the same. Before a headless run starts on a notebook:

- the earlier workflows of that notebook in the store are looked at: a finished one
  (completed, failed, cancelled) is archived — its record, trace and cells stay in the store,
  it just no longer holds the notebook; an unfinished one (waiting on a decision, paused,
  interrupted, running) stops the new run with :class:`UnfinishedRunError`, which names the
  ``resume`` command, unless the caller abandons it (``--abandon``): it is then recorded as
  cancelled, with that reason, and archived;
- the cells earlier workflows wrote into the notebook (they carry ``metadata.notebook_bcc``)
  are removed from the file, so the notebook holds the user's own cells and then the new run.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from notebook_bcc.engine.offline import owner_alive
from notebook_bcc.engine.routing import with_run
from notebook_bcc.errors import NotebookBccError
from notebook_bcc.kernel.cells import BCC_KEY
from notebook_bcc.kernel.document import NotebookDocument
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.store.async_store import AsyncStore
from notebook_bcc.store.sqlite import Commit, EventDraft

FINISHED = frozenset({"completed", "failed", "cancelled"})
"""Run statuses a new run may archive without asking."""


class UnfinishedRunError(NotebookBccError):
    """The notebook's earlier run is not finished: resume it, or abandon it explicitly."""


def resume_command(state_db: Path, workflow_id: str) -> str:
    """The command that continues ``workflow_id``."""
    return f"notebook-bcc resume --state-db {state_db} --workflow {workflow_id}"


async def release_notebook(
    store: AsyncStore, notebook: str, *, state_db: Path, abandon: bool
) -> list[str]:
    """Archive the notebook's earlier workflows (see the module docstring); their ids."""
    ids = await store.call(lambda s: s.workflow_ids(notebook_path=notebook, active=True))
    archived: list[str] = []
    for workflow_id in ids:
        snapshot = await store.load(workflow_id)
        owner = await store.call(lambda s, wid=workflow_id: s.owner(wid))  # type: ignore[misc]
        if owner_alive(owner):
            raise UnfinishedRunError(
                f"the notebook's run {workflow_id} is being run by process {owner} right now: "
                f"wait for it, or stop it with `notebook-bcc cancel --state-db {state_db}`",
                details={"workflow_id": workflow_id, "owner": owner},
            )
        if snapshot.run.status not in FINISHED:
            if not abandon:
                status: str = snapshot.run.status
                if status == "running":  # no live process drives it: its process is gone
                    gone = f"its process {owner} is gone" if owner else "no process drives it"
                    status = f"stopped mid-run ({gone}; killed?)"
                raise UnfinishedRunError(
                    f"the notebook's earlier run {workflow_id} is {status} "
                    f"({snapshot.run.reason or snapshot.fsm.state.value}); continue it with "
                    f"`{resume_command(state_db, workflow_id)}`, or start anew with --abandon",
                    details={"workflow_id": workflow_id, "status": snapshot.run.status},
                )
            await _abandon(store, snapshot)
        await store.call(lambda s, wid=workflow_id: s.deactivate(wid))  # type: ignore[misc]
        archived.append(workflow_id)
    return archived


async def _abandon(store: AsyncStore, snapshot: WorkflowSnapshot) -> None:
    reason = "abandoned: a new run was started on its notebook with --abandon"
    after = with_run(snapshot, "cancelled", reason)
    after = after.model_copy(update={"run": after.run.model_copy(update={"pending": []})})
    await store.commit(
        Commit(
            snapshot=after,
            expected_version=snapshot.version,
            events=[EventDraft("run", event="abandon", actor="human", detail={"reason": reason})],
        )
    )


def read_document(path: Path, workflow_id: str) -> NotebookDocument:
    """The notebook at ``path`` as the run's document; a file that is JSON but no notebook
    nbformat can read (an invalid v3, ``cells`` that is not a list, ...) is a
    :class:`NotebookBccError` naming the file and what is wrong, not a traceback."""
    try:
        return NotebookDocument.read(path, workflow_id=workflow_id)
    except NotebookBccError:
        raise
    except Exception as exc:  # nbformat's validation and upgrade errors have no common base
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise NotebookBccError(
            f"{path} is not a readable notebook: {first[:300]}",
            details={"path": str(path), "error": type(exc).__name__},
        ) from exc


def _notebook_json(path: Path) -> dict[str, Any] | None:
    """The notebook file's JSON object (None when there is no file); anything else is a
    :class:`NotebookBccError` naming the file and what it holds."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise NotebookBccError(f"{path} is not a readable notebook: {exc}") from exc
    if not isinstance(data, dict):
        raise NotebookBccError(
            f"{path} is not a notebook: it holds a JSON {type(data).__name__}, not an object "
            "with cells"
        )
    return data


def check_notebook(path: Path, workflow_id: str) -> None:
    """Refuse, before anything is made or changed, a notebook file a run cannot use (not
    JSON, not an object, not a notebook nbformat reads); a missing file is fine."""
    if _notebook_json(path) is not None:
        read_document(path, workflow_id)


def drop_workflow_cells(path: Path) -> int:
    """Remove the cells earlier workflows wrote from the notebook at ``path``; how many.

    The user's own cells (no ``metadata.notebook_bcc``) stay, in their order. The file is
    replaced atomically, so a reader never sees half of it.
    """
    data = _notebook_json(path)
    if data is None:
        return 0
    cells = data.get("cells")
    if not isinstance(cells, list):
        return 0
    kept = [
        cell
        for cell in cells
        if not (isinstance(cell, dict) and isinstance(cell.get("metadata"), dict))
        or BCC_KEY not in cell["metadata"]
    ]
    dropped = len(cells) - len(kept)
    metadata = data.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get(BCC_KEY), dict):
        metadata[BCC_KEY].pop("workflow_id", None)
    if not dropped:
        return 0
    data["cells"] = kept
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return dropped
