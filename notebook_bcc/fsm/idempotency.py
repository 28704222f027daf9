"""Idempotency of irreversible actions (D7), as a pure rule the store mirrors with an index.

The key is the SHA-256 of the canonical JSON of the action's content, scoped to the workflow.
Within one run, a matching ``cell_execution`` contract in RUNNING, WAITING or COMPLETED refuses
a new one (the action is skipped, saying where it already ran); FAILED, REJECTED and CANCELLED
allow it. In a later run of the same workflow a key that completed (or may have: RUNNING or
WAITING when that run stopped) asks a human first instead of running silently.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from notebook_bcc.models.contract import ExecutionContract, ExecutionStatus

BLOCKING_STATUSES = frozenset(
    {ExecutionStatus.RUNNING, ExecutionStatus.WAITING, ExecutionStatus.COMPLETED}
)
"""Statuses of an existing contract that block a new one with the same key in the same run."""


def canonical_json(value: Any) -> str:
    """Canonical JSON: sorted keys, no insignificant whitespace, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def idempotency_key(content: Mapping[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON of an action's content (type + code/arguments).

    Callers pass only what defines the side effect (``{"type": "code", "code": src}``), never
    positions or timestamps, so the same action planned twice gets the same key.
    """
    return hashlib.sha256(canonical_json(dict(content)).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class IdempotencyVerdict:
    """What to do with a new irreversible execution: run, skip, or ask a human first."""

    outcome: Literal["allow", "refuse", "confirm"]
    existing: ExecutionContract | None = None

    @property
    def reason(self) -> str:
        """A sentence for the effect or the pending decision's message."""
        if self.existing is None:
            return "no earlier execution of this action"
        where = self.existing.metadata.get("cell_id") or self.existing.execution_id
        if self.outcome == "refuse":
            return (
                f"irreversible action already {self.existing.status.value.lower()} in this run "
                f"(contract {self.existing.execution_id}, cell {where}); not repeated"
            )
        return (
            f"irreversible action was {self.existing.status.value.lower()} in an earlier run "
            f"(run {self.existing.run_id}, contract {self.existing.execution_id}); confirm to run "
            "it again"
        )


def check_idempotency(
    key: str,
    *,
    workflow_id: str,
    run_id: str,
    existing: Iterable[ExecutionContract],
) -> IdempotencyVerdict:
    """Decide whether a new irreversible ``cell_execution`` contract with ``key`` may run.

    Only irreversible ``cell_execution`` contracts of the same workflow count; confirmation
    contracts carry the key in their detail without blocking the execution they approve.
    """
    earlier_run: ExecutionContract | None = None
    for contract in existing:
        if (
            contract.action_type != "cell_execution"
            or not contract.irreversible
            or contract.idempotency_key != key
            or contract.workflow_id != workflow_id
            or contract.status not in BLOCKING_STATUSES
        ):
            continue
        if contract.run_id == run_id:
            return IdempotencyVerdict("refuse", contract)
        if earlier_run is None or contract.status is ExecutionStatus.COMPLETED:
            earlier_run = contract
    if earlier_run is not None:
        return IdempotencyVerdict("confirm", earlier_run)
    return IdempotencyVerdict("allow")
