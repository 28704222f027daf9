"""The ExecutionContract state machine of seeds 001/002, as pure functions.

Creation and every transition return the new contract plus the trace records the store appends
(``create_contract:<id>``, ``transition:<id>:<from>→<to>``). Terminal statuses refuse every
trigger with a typed error; WAITING leaves only by resume, cancel or timeout.
"""

from __future__ import annotations

import time
from typing import Any

from notebook_bcc.errors import IllegalContractTransitionError, UnknownNameError
from notebook_bcc.models.contract import (
    ActionType,
    ContractTransition,
    ExecutionContract,
    ExecutionStatus,
    Trigger,
)
from notebook_bcc.models.records import TraceRecord

S = ExecutionStatus
T = Trigger

CONTRACT_MATRIX: dict[tuple[ExecutionStatus, Trigger], ExecutionStatus] = {
    (S.PENDING, T.START): S.RUNNING,
    (S.RUNNING, T.SUCCEED): S.COMPLETED,
    (S.RUNNING, T.FAIL): S.FAILED,
    (S.RUNNING, T.REJECT): S.REJECTED,
    (S.RUNNING, T.SUSPEND): S.WAITING,
    (S.RUNNING, T.CANCEL): S.CANCELLED,
    (S.WAITING, T.RESUME): S.RUNNING,
    (S.WAITING, T.CANCEL): S.CANCELLED,
    (S.WAITING, T.TIMEOUT): S.CANCELLED,
}
"""Seed 002's matrix: the only legal ``(status, trigger) -> status`` moves."""

TRANSITION_TAIL = 50
"""How many transitions a contract keeps inline (seed 002 suggests capping at 50)."""


def parse_trigger(value: object) -> Trigger:
    """Parse a trigger name (any case) into :class:`Trigger`."""
    if isinstance(value, Trigger):
        return value
    if isinstance(value, str):
        try:
            return Trigger(value.strip().lower())
        except ValueError:
            pass
    raise UnknownNameError("trigger", value, [t.value for t in Trigger])


def allowed_triggers(status: ExecutionStatus) -> list[Trigger]:
    """The triggers the matrix allows from ``status`` (none for terminal statuses)."""
    return [trigger for (source, trigger) in CONTRACT_MATRIX if source is status]


def create_contract(
    execution_id: str,
    action_type: ActionType,
    action_detail: dict[str, Any] | None = None,
    *,
    irreversible: bool = False,
    idempotency_key: str | None = None,
    timeout_seconds: float | None = None,
    workflow_id: str | None = None,
    run_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    actor: str = "engine",
    at: float | None = None,
) -> tuple[ExecutionContract, list[TraceRecord]]:
    """A new PENDING contract and its ``create_contract:<id>`` trace record."""
    now = time.time() if at is None else at
    contract = ExecutionContract(
        execution_id=execution_id,
        action_type=action_type,
        action_detail=dict(action_detail or {}),
        irreversible=irreversible,
        idempotency_key=idempotency_key,
        timeout_seconds=timeout_seconds,
        workflow_id=workflow_id,
        run_id=run_id,
        metadata=dict(metadata or {}),
        created_at=now,
        updated_at=now,
    )
    record = TraceRecord(
        actor=actor,
        action=f"create_contract:{execution_id}",
        timestamp=now,
        metadata={
            "contract_id": execution_id,
            "action_type": action_type,
            "irreversible": irreversible,
            "idempotency_key": idempotency_key,
        },
    )
    return contract, [record]


def fire(
    contract: ExecutionContract,
    trigger: Trigger | str,
    *,
    actor: str,
    at: float | None = None,
    result: str | None = None,
    error_message: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> tuple[ExecutionContract, list[TraceRecord]]:
    """Apply ``trigger``: the new contract and its ``transition:<id>:<from>→<to>`` record.

    ``result`` / ``error_message`` are recorded with the transition (seed 001: a succeeded
    contract carries its result, a failed one its error). The input is never modified.
    """
    trig = parse_trigger(trigger)
    source = contract.status
    target = CONTRACT_MATRIX.get((source, trig))
    if target is None:
        raise IllegalContractTransitionError(
            contract.execution_id,
            source.value,
            trig.value,
            [t.value for t in allowed_triggers(source)],
        )
    now = time.time() if at is None else at
    step = ContractTransition(
        from_status=source, to=target, trigger=trig, timestamp=now, actor=actor
    )
    update: dict[str, Any] = {
        "status": target,
        "transitions": [*contract.transitions[-(TRANSITION_TAIL - 1) :], step],
        "updated_at": now,
    }
    if result is not None:
        update["result"] = result
    if error_message is not None:
        update["error_message"] = error_message
    if metadata:
        update["metadata"] = {**contract.metadata, **metadata}
    record = TraceRecord(
        actor=actor,
        action=f"transition:{contract.execution_id}:{source.value.lower()}→{target.value.lower()}",
        timestamp=now,
        result=result,
        metadata={
            "trigger": trig.value,
            "actor": actor,
            "contract_id": contract.execution_id,
            "irreversible": contract.irreversible,
            **({"error_message": error_message} if error_message is not None else {}),
        },
    )
    return contract.model_copy(update=update), [record]
