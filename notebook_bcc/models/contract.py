"""The ExecutionContract of seeds 001/002: one executable action bound to one attempt."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import Field

from notebook_bcc.models.base import WireModel


class ExecutionStatus(str, Enum):
    """Exactly the seven statuses of seed 001."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    WAITING = "WAITING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    REJECTED = "REJECTED"
    CANCELLED = "CANCELLED"

    def __str__(self) -> str:
        return self.value

    @property
    def terminal(self) -> bool:
        """Whether no trigger may leave this status."""
        return self in TERMINAL_STATUSES


TERMINAL_STATUSES = frozenset(
    {
        ExecutionStatus.COMPLETED,
        ExecutionStatus.FAILED,
        ExecutionStatus.REJECTED,
        ExecutionStatus.CANCELLED,
    }
)


class Trigger(str, Enum):
    """What moves a contract between statuses (seed 002's matrix)."""

    START = "start"
    SUCCEED = "succeed"
    FAIL = "fail"
    REJECT = "reject"
    SUSPEND = "suspend"
    RESUME = "resume"
    CANCEL = "cancel"
    TIMEOUT = "timeout"

    def __str__(self) -> str:
        return self.value


ActionType = Literal["cell_execution", "confirmation", "replay"]
"""Our mapping of seed 002's nodes: ToolNode = a code cell, ECSNode = a human confirmation;
``replay`` re-executes a completed cell silently while rebuilding kernel state (D11)."""


class ContractTransition(WireModel):
    """``{from, to, trigger, timestamp, actor}`` as seed 002 records each transition."""

    from_status: ExecutionStatus = Field(alias="from")
    to: ExecutionStatus
    trigger: Trigger
    timestamp: float
    actor: str


class ExecutionContract(WireModel):
    """One execution attempt of one action, tracked by its own state machine (seed 002)."""

    execution_id: str
    action_type: ActionType
    action_detail: dict[str, Any] = Field(default_factory=dict)
    irreversible: bool = False
    idempotency_key: str | None = None
    timeout_seconds: float | None = None
    status: ExecutionStatus = ExecutionStatus.PENDING
    transitions: list[ContractTransition] = Field(default_factory=list)
    result: str | None = None
    error_message: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    workflow_id: str | None = Field(default=None, description="Scope of the idempotency key (D7).")
    run_id: str | None = Field(default=None, description="The run that created the contract.")
    created_at: float
    updated_at: float
