"""Commands applied to a stored workflow when no process drives it (``notebook-bcc cancel``).

When a live process owns the workflow, commands go to the store's inbox and that process
applies them at its next safe point (D1); otherwise they are applied here, directly.
"""

from __future__ import annotations

import os
import socket

from notebook_bcc.engine.routing import fire_event, with_run
from notebook_bcc.models.names import Event
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.store.sqlite import Commit, EventDraft, SqliteStore
from notebook_bcc.workflow.result import HUMAN_OPTIONS


def owner_alive(owner: str | None) -> bool:
    """Whether ``pid@host`` names a live process on this host."""
    if not owner or "@" not in owner:
        return False
    pid_text, _, host = owner.partition("@")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cancel_now(store: SqliteStore, workflow_id: str) -> WorkflowSnapshot:
    """Fire CANCEL on the stored snapshot (refused where seed 003 has no CANCEL row)."""
    snapshot = store.load(workflow_id)
    applied = fire_event(snapshot, Event.CANCEL, options=HUMAN_OPTIONS)
    after = with_run(applied.snapshot, "cancelled", "cancelled by a human")
    after = after.model_copy(update={"run": after.run.model_copy(update={"pending": []})})
    history = [r for r in applied.records if r.__class__.__name__ == "HistoryEntry"]
    result = store.commit(
        Commit(
            snapshot=after,
            expected_version=snapshot.version,
            history=history,  # type: ignore[arg-type]
            events=[
                EventDraft("transition", snapshot.fsm.state.value, "CANCEL", "cancelled", "human"),
                EventDraft("run", snapshot.run.status, None, "cancelled", "human"),
            ],
            kinds=frozenset({"decision", "transition"}),
        )
    )
    return result.snapshot
