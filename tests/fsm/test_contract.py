"""The ExecutionContract state machine against seed 002's matrix."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from notebook_bcc.errors import IllegalContractTransitionError, UnknownNameError
from notebook_bcc.fsm.contract import create_contract, fire, parse_trigger
from notebook_bcc.models import ExecutionContract, ExecutionStatus, Trigger

# Seed 002, "合法状态迁移规则", transcribed: status --trigger--> status.
SEED_MATRIX = {
    ("PENDING", "start"): "RUNNING",
    ("RUNNING", "succeed"): "COMPLETED",
    ("RUNNING", "fail"): "FAILED",
    ("RUNNING", "reject"): "REJECTED",
    ("RUNNING", "suspend"): "WAITING",
    ("RUNNING", "cancel"): "CANCELLED",
    ("WAITING", "resume"): "RUNNING",
    ("WAITING", "cancel"): "CANCELLED",
    ("WAITING", "timeout"): "CANCELLED",
}
STATUSES = ["PENDING", "RUNNING", "WAITING", "COMPLETED", "FAILED", "REJECTED", "CANCELLED"]
TRIGGERS = ["start", "succeed", "fail", "reject", "suspend", "resume", "cancel", "timeout"]
TERMINAL = ["COMPLETED", "FAILED", "REJECTED", "CANCELLED"]


def contract_in(status: str, *, irreversible: bool = False) -> ExecutionContract:
    contract, _ = create_contract(
        "exec-1", "cell_execution", {"code": "x = 1"}, irreversible=irreversible, at=100.0
    )
    return contract.model_copy(update={"status": ExecutionStatus(status)})


def test_status_and_trigger_sets_are_exactly_the_seeds() -> None:
    assert [s.value for s in ExecutionStatus] == STATUSES
    assert sorted(t.value for t in Trigger) == sorted(TRIGGERS)
    assert {s.value for s in ExecutionStatus if s.terminal} == set(TERMINAL)


def test_creation_is_pending_with_a_create_record() -> None:
    contract, records = create_contract(
        "exec-7",
        "confirmation",
        {"message": "export the model?"},
        irreversible=False,
        idempotency_key="abc",
        timeout_seconds=30,
        workflow_id="wf",
        run_id="r1",
        actor="engine",
        at=12.5,
    )
    assert contract.status is ExecutionStatus.PENDING
    assert contract.transitions == []
    assert contract.created_at == contract.updated_at == 12.5
    assert contract.action_type == "confirmation"
    assert contract.timeout_seconds == 30
    assert [r.action for r in records] == ["create_contract:exec-7"]
    assert records[0].actor == "engine"
    assert records[0].timestamp == 12.5
    assert records[0].metadata["contract_id"] == "exec-7"


@pytest.mark.parametrize(("status", "trigger"), list(itertools.product(STATUSES, TRIGGERS)))
def test_matrix_cell(status: str, trigger: str) -> None:
    contract = contract_in(status, irreversible=True)
    before = contract.model_dump_json()
    target = SEED_MATRIX.get((status, trigger))
    if target is None:
        with pytest.raises(IllegalContractTransitionError) as info:
            fire(contract, trigger, actor="tool_node", at=200.0)
        assert info.value.status == status
        assert info.value.trigger == trigger
        assert "exec-1" in info.value.message
        if status in TERMINAL:
            assert "terminal" in info.value.message
        assert contract.model_dump_json() == before
        return
    after, records = fire(contract, trigger, actor="tool_node", at=200.0)
    assert after.status.value == target
    assert after.updated_at == 200.0
    step = after.transitions[-1].model_dump(by_alias=True, mode="json")
    assert step == {
        "from": status,
        "to": target,
        "trigger": trigger,
        "timestamp": 200.0,
        "actor": "tool_node",
    }
    assert len(records) == 1
    assert records[0].action == f"transition:exec-1:{status.lower()}→{target.lower()}"
    assert records[0].actor == "tool_node"
    assert records[0].metadata["trigger"] == trigger
    assert records[0].metadata["irreversible"] is True
    assert contract.model_dump_json() == before


def test_waiting_cannot_complete_directly() -> None:
    with pytest.raises(IllegalContractTransitionError):
        fire(contract_in("WAITING"), "succeed", actor="x")


def test_result_and_error_are_recorded() -> None:
    running, _ = fire(contract_in("PENDING"), "start", actor="tool_node", at=1.0)
    done, records = fire(running, "succeed", actor="tool_node", at=2.0, result="ok: 1 row")
    assert done.result == "ok: 1 row"
    assert records[0].result == "ok: 1 row"
    failed, records = fire(running, "fail", actor="tool_node", error_message="ZeroDivisionError")
    assert failed.error_message == "ZeroDivisionError"
    assert records[0].metadata["error_message"] == "ZeroDivisionError"


def test_seed_worked_example_trace() -> None:
    """Seed 002's e-mail example mapped to our types: confirmation then execution."""
    confirm, trace = create_contract(
        "exec-002", "confirmation", {"message": "send?"}, actor="reasoning"
    )
    execution, more = create_contract(
        "exec-001", "cell_execution", {"code": "send()"}, irreversible=True, actor="reasoning"
    )
    trace = [*more, *trace]
    for trigger, actor in [("start", "ecs_node"), ("suspend", "ecs_node")]:
        confirm, recs = fire(confirm, trigger, actor=actor)
        trace += recs
    for trigger in ["resume", "succeed"]:
        confirm, recs = fire(confirm, trigger, actor="graph_runner")
        trace += recs
    for trigger in ["start", "succeed"]:
        execution, recs = fire(execution, trigger, actor="tool_node", result="sent")
        trace += recs
    assert [r.action for r in trace] == [
        "create_contract:exec-001",
        "create_contract:exec-002",
        "transition:exec-002:pending→running",
        "transition:exec-002:running→waiting",
        "transition:exec-002:waiting→running",
        "transition:exec-002:running→completed",
        "transition:exec-001:pending→running",
        "transition:exec-001:running→completed",
    ]


@pytest.mark.parametrize("spelling", ["START", "Start", " start "])
def test_trigger_spellings(spelling: str) -> None:
    assert parse_trigger(spelling) is Trigger.START


@pytest.mark.parametrize("bad", ["go", "", 3, None, "completed"])
def test_unknown_trigger_is_typed(bad: object) -> None:
    with pytest.raises(UnknownNameError, match="unknown trigger"):
        fire(contract_in("PENDING"), bad, actor="x")  # type: ignore[arg-type]


def test_bad_contract_payloads_are_refused() -> None:
    good = contract_in("PENDING").model_dump(mode="json", by_alias=True)
    for bad, where in [
        ({**good, "status": "DONE"}, "status"),
        ({**good, "action_type": "tool_call"}, "action_type"),
        ({**good, "surprise": True}, "surprise"),
        ({k: v for k, v in good.items() if k != "execution_id"}, "execution_id"),
    ]:
        with pytest.raises(ValueError, match=where):
            ExecutionContract.model_validate(bad)


class ContractMachine(RuleBasedStateMachine):
    """Random trigger sequences: status always valid, refusals inert, transitions a legal path."""

    def __init__(self) -> None:
        super().__init__()
        self.contract, _ = create_contract("c", "cell_execution", {"code": "1"})
        self.model = "PENDING"
        self.count = 0

    @rule(trigger=st.sampled_from(TRIGGERS))
    def fire_trigger(self, trigger: str) -> None:
        target = SEED_MATRIX.get((self.model, trigger))
        before = self.contract
        if target is None:
            with pytest.raises(IllegalContractTransitionError):
                fire(self.contract, trigger, actor="prop")
            assert self.contract == before
            return
        self.contract, _ = fire(self.contract, trigger, actor="prop")
        self.model = target
        self.count += 1

    @invariant()
    def status_matches(self) -> None:
        assert self.contract.status.value == self.model

    @invariant()
    def transitions_form_a_legal_path(self) -> None:
        steps = self.contract.transitions
        assert len(steps) == min(self.count, 50)
        for a, b in itertools.pairwise(steps):
            assert a.to is b.from_status
        for step in steps:
            assert SEED_MATRIX[(step.from_status.value, step.trigger.value)] == step.to.value
        if self.model in TERMINAL:
            for trigger in TRIGGERS:
                with pytest.raises(IllegalContractTransitionError):
                    fire(self.contract, trigger, actor="prop")


TestContractMachine = ContractMachine.TestCase
