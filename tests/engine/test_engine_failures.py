"""Failures end in an explicit state with a reason: D15 escalation and gaps, D16 hop cap, D1."""

from __future__ import annotations

import asyncio

from notebook_bcc.models import Event, State
from notebook_bcc.planners.base import PlannerError, PlannerReply, PlannerRequest
from notebook_bcc.planners.blueprint import BlueprintPlanner
from notebook_bcc.protocol.parse import parse_payload
from notebook_bcc.store.sqlite import SqliteStore
from tests.engine.conftest import EngineHarness, finish


def test_d15_exhausted_iterations_fail_the_step_and_route_the_failure(
    harness: EngineHarness,
) -> None:
    async def scenario() -> None:
        engine = await harness.open("escalation")
        try:
            result = await engine.run()
        finally:
            await finish(engine)
        snap = result.snapshot
        assert result.exit_code == 1
        assert snap.run.status == "failed"
        assert snap.run.reason == (
            "stage only failed: acceptance of never failed: 1 == 2; "
            "the workflow ended in end state 'failed'"
        )
        assert snap.fsm.state is State.STAGE_COMPLETED, "no FAIL row there: FSM stays (D1)"
        assert snap.variables["tries"].value == 2, "max_iterations: 2"
        (stage,) = snap.location.progress.stages.completed or [
            snap.location.progress.stages.current
        ]
        assert stage is not None
        assert stage.completion_status == "failed"
        assert snap.acceptance["never"]["1 == 2"].status == "failed"

    harness.run(scenario)
    store = harness.store()
    (wf,) = store.workflow_ids()
    warnings = [t.metadata["message"] for t in store.trace(wf) if t.action == "warning"]
    store.close()
    assert any("iterations exhausted (2 of 2)" in w for w in warnings)


def test_d15_missing_required_variable_is_a_gap_and_fails_the_step(harness: EngineHarness) -> None:
    async def scenario() -> None:
        engine = await harness.open("gaps")
        try:
            result = await engine.run()
        finally:
            await finish(engine)
        snap = result.snapshot
        assert result.exit_code == 1
        (gap,) = snap.gaps
        assert (gap.variable, gap.level, gap.owner_id) == (
            "data_frame_that_does_not_exist",
            "step",
            "needs_data",
        )
        effects = snap.effects.current + snap.effects.history
        assert any("data_frame_that_does_not_exist" in e and e.startswith("WARN") for e in effects)
        assert "ran" not in snap.variables, "the step's behaviors never ran"

    harness.run(scenario)


def test_d16_hop_cap_fails_the_workflow_on_entering_a_stage(harness: EngineHarness) -> None:
    async def scenario() -> None:
        engine = await harness.open("forever", max_hops=3)
        try:
            result = await engine.run()
        finally:
            await finish(engine)
        snap = result.snapshot
        assert result.exit_code == 1
        assert snap.fsm.state is State.ERROR
        assert snap.fsm.history[-1].from_state is State.STAGE_RUNNING
        assert snap.fsm.history[-1].event is Event.FAIL
        assert snap.run.reason == "hop cap exceeded: 3 state entries already made, the cap is 3"
        assert snap.variables["spins"].value == 3

    harness.run(scenario)


class RaisingPlanner(BlueprintPlanner):
    """Fails at the first stage reflection, as an unreachable planner would."""

    async def reflect_stage(self, request: PlannerRequest) -> PlannerReply:
        raise PlannerError("connection refused (after 3 retries)")


def test_d1_planner_failure_fails_the_run_and_keeps_the_fsm(harness: EngineHarness) -> None:
    async def scenario() -> None:
        planner = RaisingPlanner(harness.planner("confirm").loaded)
        engine = await harness.open("confirm", planner=planner)
        try:
            result = await engine.run()
        finally:
            await finish(engine)
        snap = result.snapshot
        assert result.exit_code == 1
        assert snap.run.status == "failed"
        assert snap.fsm.state is State.STEP_COMPLETED
        assert (
            snap.run.reason == "reflect_stage: planner failed: connection refused (after 3 retries)"
        )

    harness.run(scenario)


class OverflowingPlanner(BlueprintPlanner):
    """Raises what no planner error names: a socket's connect() on port 99999 does this."""

    async def reflect_stage(self, request: PlannerRequest) -> PlannerReply:
        raise OverflowError("connect(): port must be 0-65535.")


def test_an_unexpected_planner_exception_fails_the_run_instead_of_leaving_it_running(
    harness: EngineHarness,
) -> None:
    async def scenario() -> None:
        planner = OverflowingPlanner(harness.planner("confirm").loaded)
        engine = await harness.open("confirm", planner=planner)
        try:
            result = await engine.run()
        finally:
            await finish(engine)
        assert result.exit_code == 1
        assert result.snapshot.run.status == "failed"
        assert result.snapshot.run.reason == (
            "reflect_stage: planner failed unexpectedly: OverflowError: "
            "connect(): port must be 0-65535."
        )
        stored = harness.store().load(result.snapshot.workflow_id)
        assert stored.run.status == "failed"

    harness.run(scenario)


class IllegalPlanner(BlueprintPlanner):
    """Answers the behavior reflection with a stage reflection (not legal there)."""

    async def reflect_behavior(self, request: PlannerRequest) -> PlannerReply:
        body = (
            '<stage_reflection stage_is_complete="true"><decision>'
            "<next_state>STAGE_COMPLETED</next_state></decision></stage_reflection>"
        )
        return PlannerReply(parse_payload(body, "stage_reflection"), body, "application/xml")


def test_d1_payload_illegal_in_state_fires_fail(harness: EngineHarness) -> None:
    async def scenario() -> None:
        planner = IllegalPlanner(harness.planner("confirm").loaded)
        engine = await harness.open("confirm", planner=planner)
        try:
            result = await engine.run()
        finally:
            await finish(engine)
        snap = result.snapshot
        assert result.exit_code == 1
        assert snap.fsm.state is State.ERROR
        assert snap.fsm.history[-1].from_state is State.BEHAVIOR_COMPLETED
        assert "stage_reflection" in (snap.run.reason or "")
        assert "behavior_completed" in (snap.run.reason or "")

    harness.run(scenario)


async def until_running_a_cell(engine: object) -> None:
    """Wait until the engine is inside the first slow cell."""
    for _ in range(600):
        snap = engine.snapshot  # type: ignore[attr-defined]
        if snap.fsm.state is State.ACTION_RUNNING and snap.open_contracts:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the engine never started a cell")


def test_cancel_from_another_process_stops_at_the_next_safe_point(harness: EngineHarness) -> None:
    async def scenario() -> None:
        engine = await harness.open("slow")
        try:
            task = asyncio.create_task(engine.run())
            await until_running_a_cell(engine)
            other = SqliteStore(harness.state_db)
            other.enqueue_command(
                engine.snapshot.workflow_id, {"event": "CANCEL", "expected_version": 0}
            )
            other.close()
            result = await asyncio.wait_for(task, 60)
        finally:
            await finish(engine)
        snap = result.snapshot
        assert result.exit_code == 4
        assert snap.fsm.state is State.CANCELLED
        assert snap.run.status == "cancelled"
        assert "later" not in snap.variables, "the run stopped before the next step"

    harness.run(scenario)
    store = harness.store()
    (wf,) = store.workflow_ids()
    sleeps = [c for c in store.contracts(wf) if "time.sleep" in c.action_detail.get("code", "")]
    outcomes = [row[0] for row in store._db.execute("SELECT outcome FROM commands")]
    store.close()
    assert sleeps[0].status.value == "COMPLETED", "the running cell was allowed to finish"
    assert outcomes == ["applied"]


def test_interrupt_stops_with_130_and_leaves_the_fsm(harness: EngineHarness) -> None:
    async def scenario() -> None:
        engine = await harness.open("slow")
        try:
            task = asyncio.create_task(engine.run())
            await until_running_a_cell(engine)
            engine.request_interrupt()
            result = await asyncio.wait_for(task, 60)
        finally:
            await finish(engine)
        assert result.exit_code == 130
        assert result.snapshot.run.status == "interrupted"
        assert result.snapshot.fsm.state not in (State.CANCELLED, State.ERROR)

    harness.run(scenario)
