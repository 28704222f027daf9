"""Typed errors shared by every layer.

Every error the product raises on bad input derives from :class:`NotebookBccError`, carries a
machine-readable ``code`` and a message a user can act on, and names *where* the problem is.
"""

from __future__ import annotations

from typing import Any


class NotebookBccError(Exception):
    """Base of every error notebook-bcc raises on purpose."""

    code: str = "error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    def to_json(self) -> dict[str, Any]:
        """The ``{code, message, details}`` body used by the CLI and the REST API."""
        return {"code": self.code, "message": self.message, "details": self.details}


class UnknownNameError(NotebookBccError, ValueError):
    """A state, event, status or trigger name that the vocabulary does not know."""

    code = "unknown_name"

    def __init__(self, kind: str, value: object, known: list[str]) -> None:
        super().__init__(
            f"unknown {kind} {value!r}; expected one of: {', '.join(known)}",
            details={"kind": kind, "value": repr(value), "known": known},
        )
        self.kind = kind
        self.value = value


class IllegalTransitionError(NotebookBccError):
    """The workflow FSM's table has no row for this (state, event) pair."""

    code = "illegal_transition"

    def __init__(self, state: str, event: str, allowed: list[str]) -> None:
        allowed_text = ", ".join(allowed) if allowed else "none (terminal for events)"
        super().__init__(
            f"event {event} is not allowed in state {state}; allowed events: {allowed_text}",
            details={"state": state, "event": event, "allowed": allowed},
        )
        self.state = state
        self.event = event


class IllegalContractTransitionError(NotebookBccError):
    """An ExecutionContract trigger not allowed from the contract's current status."""

    code = "illegal_contract_transition"

    def __init__(self, execution_id: str, status: str, trigger: str, allowed: list[str]) -> None:
        allowed_text = ", ".join(allowed) if allowed else "none: the status is terminal"
        super().__init__(
            f"contract {execution_id}: trigger {trigger!r} is not allowed in status {status}; "
            f"allowed triggers: {allowed_text}",
            details={
                "execution_id": execution_id,
                "status": status,
                "trigger": trigger,
                "allowed": allowed,
            },
        )
        self.execution_id = execution_id
        self.status = status
        self.trigger = trigger


class CommandError(NotebookBccError):
    """A command (D3) that is malformed or cannot apply to the snapshot it names."""

    code = "bad_command"
