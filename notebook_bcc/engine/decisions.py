"""Errors of answering a pending decision (D2, D3): a typed conflict, never a silent no-op."""

from __future__ import annotations

from typing import TYPE_CHECKING

from notebook_bcc.errors import NotebookBccError

if TYPE_CHECKING:
    from notebook_bcc.models.snapshot import WorkflowSnapshot


class DecisionGoneError(NotebookBccError):
    """A ``decide`` naming a decision that is not pending (answered already, replaced, or never
    asked): a conflict with the state the command was sent for; carries the current snapshot
    so the client can show what is pending now (409 over REST, like a stale version)."""

    code = "decision_gone"

    def __init__(self, decision_id: str, current: WorkflowSnapshot) -> None:
        known = [p.id for p in current.run.pending]
        super().__init__(
            f"no pending decision {decision_id!r} (pending: {', '.join(known) or 'none'})",
            details={
                "decision": decision_id,
                "pending": known,
                "snapshot": current.model_dump(mode="json", by_alias=True),
            },
        )
        self.decision_id = decision_id
