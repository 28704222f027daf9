"""Human decisions on a real kernel: D9 confirmations, D7 idempotency, D14 confirm, D18 updates."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import nbformat
import pytest

from notebook_bcc.models import State
from notebook_bcc.models.contract import ExecutionStatus
from notebook_bcc.planners.base import PlannerReply, PlannerRequest
from notebook_bcc.planners.blueprint import BlueprintPlanner
from notebook_bcc.protocol.parse import parse_payload
from notebook_bcc.store.errors import VersionConflictError
from tests.engine.conftest import EngineHarness, finish


def ledger_cells(notebook: Path) -> int:
    """Code cells of the saved notebook that append to the side-effect fixture's ledger."""
    saved = nbformat.read(notebook, as_version=4)
    return sum(
        1 for cell in saved.cells if cell.cell_type == "code" and '"ledger.txt", "a"' in cell.source
    )


def only_pending(engine: Any, kind: str) -> Any:
    (pending,) = engine.snapshot.run.pending
    assert pending.kind == kind
    return pending


@pytest.mark.parametrize("answer", ["approve", "reject"])
def test_d9_irreversible_action_waits_for_a_human(
    harness: EngineHarness, answer: Literal["approve", "reject"]
) -> None:
    async def scenario() -> None:
        engine = await harness.open("side_effect")
        try:
            first = await engine.run()
            assert first.exit_code == 3
            assert first.snapshot.run.status == "waiting"
            assert first.snapshot.fsm.state is State.ACTION_RUNNING
            pending = only_pending(engine, "irreversible_confirmation")
            assert "ledger.txt" in pending.details["code"]
            assert pending.details["reason"] == "planner"
            # the question names the behavior and where it is (ids: the fixture has no titles)
            assert pending.message.startswith(
                'Run the irreversible code of "send_once" (stage "publish", step "send")? '
                "It is marked irreversible in the blueprint"
            ), pending.message
            assert harness.ledger_lines() == [], "nothing ran before the human answered"
            (waiting,) = engine.snapshot.open_contracts
            assert waiting.action_type == "confirmation"
            assert waiting.status is ExecutionStatus.WAITING
            await engine.command(
                {
                    "decide": pending.id,
                    "decision": answer,
                    "expected_version": engine.snapshot.version,
                }
            )
            assert engine.snapshot.run.pending == []
            second = await engine.run()
            # the loop back asks again only if the first one did not complete (D7 refuses it)
            if answer == "approve":
                assert second.exit_code == 0, second.snapshot.run.reason
            else:
                assert second.exit_code == 3
        finally:
            await finish(engine)
        store = harness.store()
        (workflow_id,) = store.workflow_ids()
        confirmations = [c for c in store.contracts(workflow_id) if c.action_type == "confirmation"]
        executions = [c for c in store.contracts(workflow_id) if c.irreversible]
        store.close()
        if answer == "approve":
            assert harness.ledger_lines() == ["sent"]
            assert confirmations[0].status is ExecutionStatus.COMPLETED
            assert [c.status for c in executions] == [ExecutionStatus.COMPLETED]
            effects = " ".join(engine.snapshot.effects.history + engine.snapshot.effects.current)
            assert "already completed in this run" in effects
        else:
            assert harness.ledger_lines() == []
            assert confirmations[0].status is ExecutionStatus.REJECTED
            assert executions == []
            assert engine.snapshot.variables["published"].value is True, "the behavior went on"

    harness.run(scenario)


def test_an_approved_irreversible_cell_records_how_long_it_waited_for_the_human(
    harness: EngineHarness,
) -> None:
    """The plan's times (the panel) leave out a confirmation's wait: the cell says how long
    it waited (``waited_s``), in the store and in the notebook."""
    thinking = 0.3  # the human reading the code before approving

    async def scenario() -> tuple[float, str]:
        engine = await harness.open("side_effect")
        try:
            assert (await engine.run()).exit_code == 3
            pending = only_pending(engine, "irreversible_confirmation")
            cell_id = pending.details["cell_id"]
            asked = datetime.fromisoformat(pending.created_at)
            await asyncio.sleep(thinking)
            await engine.command(
                {
                    "decide": pending.id,
                    "decision": "approve",
                    "expected_version": engine.snapshot.version,
                }
            )
            bound = (datetime.now(timezone.utc) - asked).total_seconds()
            assert (await engine.run()).exit_code == 0
        finally:
            await finish(engine)
        return bound, cell_id

    bound, cell_id = harness.run(scenario)
    store = harness.store()
    (workflow_id,) = store.workflow_ids()
    rows = [r for r in store.cells(workflow_id) if r.cell_id == cell_id]
    store.close()
    (row,) = rows
    waited = row.cell["metadata"]["notebook_bcc"]["waited_s"]
    assert thinking <= waited <= bound + 0.01, (waited, bound)
    saved = nbformat.read(harness.notebook, as_version=4)
    (cell,) = [c for c in saved.cells if c.id == cell_id]
    assert cell.metadata["notebook_bcc"]["waited_s"] == waited
    others = [c for c in saved.cells if c is not cell and "notebook_bcc" in c.metadata]
    assert others, "the run wrote other cells"
    assert all("waited_s" not in c.metadata["notebook_bcc"] for c in others), "only it waited"


def test_d7_second_run_asks_before_repeating(harness: EngineHarness) -> None:
    async def scenario() -> None:
        engine = await harness.open("side_effect", confirm_irreversible=False)
        try:
            first = await engine.run()
            assert first.exit_code == 0, first.snapshot.run.reason
            assert harness.ledger_lines() == ["sent"], "a loop revisit never repeats it"
            assert ledger_cells(harness.notebook) == 1, "nor adds a copy of the refused cell"
            effects = " ".join(engine.snapshot.effects.history + engine.snapshot.effects.current)
            assert "already completed in this run" in effects
            assert "not added again" in effects
            old_run = engine.snapshot.run_id
            await engine.command({"event": "RESET", "expected_version": engine.snapshot.version})
            assert engine.snapshot.fsm.state is State.IDLE
            assert engine.snapshot.run_id != old_run
            second = await engine.run()
            assert second.exit_code == 3
            pending = only_pending(engine, "irreversible_confirmation")
            assert pending.details["earlier_run"] is True
            assert old_run in pending.message
            assert harness.ledger_lines() == ["sent"]
            await engine.decide(pending.id, "approve")
            third = await engine.run()
            assert third.exit_code == 0
            assert harness.ledger_lines() == ["sent", "sent"]
        finally:
            await finish(engine)

    harness.run(scenario)


@pytest.mark.parametrize("answer", ["approve", "reject"])
def test_stage_confirmation(harness: EngineHarness, answer: Literal["approve", "reject"]) -> None:
    async def scenario() -> None:
        engine = await harness.open("confirm")
        try:
            first = await engine.run()
            assert first.exit_code == 3
            assert first.snapshot.fsm.state is State.STAGE_COMPLETED
            pending = only_pending(engine, "stage_confirmation")
            assert pending.message == "Is the review good enough to go on?"
            await engine.decide(pending.id, answer)
            second = await engine.run()
        finally:
            await finish(engine)
        if answer == "approve":
            assert second.exit_code == 0
            assert second.snapshot.variables["after"].value is True
        else:
            assert second.exit_code == 1
            assert second.snapshot.run.status == "failed"
            # the cause is the human's decision, said in the reason (not only the end state)
            assert "stage review failed: its review was rejected by human" in (
                second.snapshot.run.reason or ""
            ), second.snapshot.run.reason
            assert "after" not in second.snapshot.variables

    harness.run(scenario)


class UpdatingPlanner(BlueprintPlanner):
    """The blueprint, except that stage a's reflection proposes dropping stage c (D18)."""

    proposed = False

    async def reflect_behavior(self, request: PlannerRequest) -> PlannerReply:
        if not self.proposed and request.snapshot.location.current.stage_id == "a":
            self.proposed = True
            body = json.dumps(
                {
                    "targetAchieved": True,
                    "transition": {"continue_behaviors": False, "target_achieved": True},
                    "context_update": {
                        "workflow_update": {
                            "workflowTemplate": {
                                "name": "shorter",
                                "stages": [{"id": "a"}, {"id": "b"}],
                            }
                        }
                    },
                }
            )
            return PlannerReply(parse_payload(body, "planning"), body, "application/json")
        return await super().reflect_behavior(request)


@pytest.mark.parametrize("answer", ["approve", "reject"])
def test_d18_parked_update(harness: EngineHarness, answer: Literal["approve", "reject"]) -> None:
    async def scenario() -> None:
        planner = UpdatingPlanner(harness.planner("update").loaded)
        engine = await harness.open("update", planner=planner)
        try:
            first = await engine.run()
            assert first.exit_code == 3
            assert first.snapshot.fsm.state is State.WORKFLOW_UPDATE_PENDING
            pending = only_pending(engine, "workflow_update")
            assert "in_b" not in first.snapshot.variables, "nothing of b ran yet"
            event = (
                "UPDATE_WORKFLOW_CONFIRMED" if answer == "approve" else "UPDATE_WORKFLOW_REJECTED"
            )
            await engine.command({"event": event, "expected_version": engine.snapshot.version})
            assert engine.snapshot.fsm.state is State.ACTION_COMPLETED
            second = await engine.run()
        finally:
            await finish(engine)
        assert second.exit_code == 0, second.snapshot.run.reason
        assert second.snapshot.variables["in_b"].value is True
        ran_c = "in_c" in second.snapshot.variables
        assert ran_c is (answer == "reject")
        decisions = [e for e in harness.events if e.kind == "decision"]
        assert decisions[0].detail["kind"] == "workflow_update"
        if answer == "approve":
            assert decisions[-1].detail["diff"]["removed"] == ["c"]
        assert pending.details

    harness.run(scenario)


def test_auto_confirm_approves_but_never_in_doubt(harness: EngineHarness) -> None:
    async def scenario() -> None:
        engine = await harness.open("confirm", auto_confirm=True)
        try:
            result = await engine.run()
        finally:
            await finish(engine)
        assert result.exit_code == 0
        approvals = [
            e for e in harness.events if e.kind == "decision" and e.actor == "auto-confirm"
        ]
        assert [e.detail["kind"] for e in approvals] == ["stage_confirmation"]

    harness.run(scenario)


def test_stale_command_is_a_conflict_with_the_current_snapshot(harness: EngineHarness) -> None:
    async def scenario() -> None:
        engine = await harness.open("confirm")
        try:
            await engine.run()
            pending = only_pending(engine, "stage_confirmation")
            stale = engine.snapshot.version - 1
            with pytest.raises(VersionConflictError) as info:
                await engine.command(
                    {"decide": pending.id, "decision": "approve", "expected_version": stale}
                )
            assert info.value.details["snapshot"]["version"] == engine.snapshot.version
            assert engine.snapshot.run.pending, "nothing applied"
        finally:
            await finish(engine)

    harness.run(scenario)
