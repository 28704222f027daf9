"""Typed errors of the apply layer.

An :class:`ApplyError` means the payload changed nothing: it names the payload kind, the FSM
state it arrived in and what is wrong, so the engine can fire FAIL where the table allows it
(DESIGN §9 D1) and a person can read why.
"""

from __future__ import annotations

from typing import Any

from notebook_bcc.errors import NotebookBccError
from notebook_bcc.models.names import State


def _state_name(state: State | str | None) -> str:
    if state is None:
        return "-"
    return state.value if isinstance(state, State) else str(state)


class ApplyError(NotebookBccError):
    """A payload that cannot be applied to the snapshot; the snapshot is left as it was."""

    code = "apply_error"

    def __init__(
        self,
        kind: str,
        state: State | str | None,
        message: str,
        *,
        details: dict[str, Any] | None = None,
    ) -> None:
        state_name = _state_name(state)
        super().__init__(
            f"{kind} payload in state {state_name}: {message}",
            details={"kind": kind, "state": state_name, "reason": message, **(details or {})},
        )
        self.kind = kind
        self.state = state_name
        self.reason = message


class IllegalPayloadError(ApplyError):
    """The payload kind is not legal in the current FSM state (a reflection in step_running)."""

    code = "illegal_payload"

    def __init__(self, kind: str, state: State | str, allowed: list[str]) -> None:
        where = ", ".join(allowed) if allowed else "no state"
        super().__init__(
            kind,
            state,
            f"not legal in this state; a {kind} payload is accepted in: {where}",
            details={"allowed_states": allowed},
        )
        self.allowed = allowed


class ContradictoryPayloadError(ApplyError):
    """The payload is legal here but contradicts itself or the snapshot (D17 protocol errors)."""

    code = "contradictory_payload"


class PendingNotFoundError(ApplyError):
    """An approve/reject naming a pending decision the snapshot does not hold."""

    code = "unknown_pending"


class StateDocumentError(NotebookBccError, ValueError):
    """A state document (our snapshot or a reference-client state) that cannot be read.

    ``pointer`` is the JSON pointer of the offending field (``/state/FSM/state``).
    """

    code = "bad_state_document"

    def __init__(self, pointer: str, message: str) -> None:
        where = pointer or "/"
        super().__init__(
            f"state document at {where}: {message}",
            details={"pointer": where, "reason": message},
        )
        self.pointer = where
        self.reason = message
