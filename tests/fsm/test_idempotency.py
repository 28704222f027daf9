"""D7: idempotency of irreversible actions within a run and across runs."""

from __future__ import annotations

import hashlib

import pytest

from notebook_bcc.fsm.contract import create_contract
from notebook_bcc.fsm.idempotency import canonical_json, check_idempotency, idempotency_key
from notebook_bcc.models import ExecutionContract, ExecutionStatus

KEY = idempotency_key({"type": "code", "code": "model.save('model.joblib')"})


def contract(
    status: str,
    *,
    run_id: str = "run-1",
    workflow_id: str = "wf",
    key: str | None = KEY,
    irreversible: bool = True,
    action_type: str = "cell_execution",
    execution_id: str = "exec-1",
) -> ExecutionContract:
    made, _ = create_contract(
        execution_id,
        action_type,  # type: ignore[arg-type]
        {"code": "model.save('model.joblib')"},
        irreversible=irreversible,
        idempotency_key=key,
        workflow_id=workflow_id,
        run_id=run_id,
        metadata={"cell_id": "s1/1/st/b/1/3"},
    )
    return made.model_copy(update={"status": ExecutionStatus(status)})


def verdict(*existing: ExecutionContract, run_id: str = "run-1") -> str:
    return check_idempotency(KEY, workflow_id="wf", run_id=run_id, existing=existing).outcome


def test_key_is_sha256_of_canonical_json() -> None:
    content = {"type": "code", "code": "x = 'é'"}
    expected = hashlib.sha256('{"code":"x = \'é\'","type":"code"}'.encode()).hexdigest()
    assert idempotency_key(content) == expected
    assert idempotency_key({"code": "x = 'é'", "type": "code"}) == expected
    assert idempotency_key({"type": "code", "code": "x = 2"}) != expected
    assert canonical_json({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'


def test_no_earlier_contract_allows() -> None:
    assert verdict() == "allow"


@pytest.mark.parametrize("status", ["RUNNING", "WAITING", "COMPLETED"])
def test_same_run_blocking_statuses_refuse(status: str) -> None:
    result = check_idempotency(KEY, workflow_id="wf", run_id="run-1", existing=[contract(status)])
    assert result.outcome == "refuse"
    assert result.existing is not None
    assert "s1/1/st/b/1/3" in result.reason
    assert "not repeated" in result.reason


@pytest.mark.parametrize("status", ["FAILED", "REJECTED", "CANCELLED", "PENDING"])
def test_same_run_other_statuses_allow(status: str) -> None:
    assert verdict(contract(status)) == "allow"


def test_later_run_after_completion_asks_for_confirmation() -> None:
    result = check_idempotency(
        KEY, workflow_id="wf", run_id="run-2", existing=[contract("COMPLETED", run_id="run-1")]
    )
    assert result.outcome == "confirm"
    assert "earlier run" in result.reason
    assert "run-1" in result.reason


@pytest.mark.parametrize("status", ["FAILED", "REJECTED", "CANCELLED"])
def test_later_run_after_non_completion_allows(status: str) -> None:
    assert verdict(contract(status, run_id="run-1"), run_id="run-2") == "allow"


def test_same_run_refusal_wins_over_earlier_run_confirmation() -> None:
    earlier = contract("COMPLETED", run_id="run-0", execution_id="old")
    current = contract("RUNNING", run_id="run-1", execution_id="new")
    result = check_idempotency(KEY, workflow_id="wf", run_id="run-1", existing=[earlier, current])
    assert result.outcome == "refuse"
    assert result.existing is not None
    assert result.existing.execution_id == "new"


@pytest.mark.parametrize(
    "other",
    [
        {"workflow_id": "other-wf"},
        {"key": "different"},
        {"irreversible": False},
        {"action_type": "confirmation"},
        {"action_type": "replay"},
    ],
)
def test_only_same_workflow_irreversible_cell_executions_count(other: dict[str, object]) -> None:
    assert verdict(contract("COMPLETED", **other)) == "allow"  # type: ignore[arg-type]
