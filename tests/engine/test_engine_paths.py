"""Seed 003 scenario 1 on a real kernel: every loop path, the store record, the notebook."""

from __future__ import annotations

import itertools
import json

import nbformat

from notebook_bcc.models import Event, State, WorkflowEvent
from notebook_bcc.models.contract import ExecutionStatus
from tests.engine.conftest import EngineHarness, finish


def test_every_loop_path_of_scenario_one(harness: EngineHarness) -> None:
    async def scenario() -> None:
        engine = await harness.open("paths", auto_confirm=True)
        try:
            result = await engine.run()
        finally:
            await finish(engine)
        assert result.exit_code == 0
        snap = result.snapshot
        assert snap.fsm.state is State.WORKFLOW_COMPLETED
        assert snap.run.status == "completed"
        # the stage machine looped back once, as the kernel value dictated
        assert snap.stage_machine.visits == {"first": 2, "second": 2}
        assert snap.stage_machine.hops == 4
        assert snap.stage_machine.current_state == "done"
        assert snap.variables["loops"].value == 2
        assert snap.variables["attempts"].value == 3
        assert snap.variables["total"].value == 2 + 3  # visit 1 after attempt 2, visit 2 after 3
        assert snap.acceptance["flaky"]["attempts >= 2"].status == "passed"
        assert snap.acceptance["stage:first"]["total >= 1"].status == "passed"
        assert snap.metrics.acceptance_pass_rate is not None

    harness.run(scenario)
    store = harness.store()
    (workflow_id,) = store.workflow_ids()
    events = [(h.from_state.value, h.event.value, h.to.value) for h in store.history(workflow_id)]
    fired = [e for _, e, _ in events]
    # first stage, first visit: flaky fails once (NEXT_BEHAVIOR retry), passes, then the
    # second behavior of the step (NEXT_BEHAVIOR), then NEXT_STEP
    assert fired[:4] == ["START_WORKFLOW", "START_STEP", "START_BEHAVIOR", "START_ACTION"]
    assert fired.count("NEXT_BEHAVIOR") == 2 + 1  # retry + next behavior; second visit: next only
    assert fired.count("NEXT_STEP") == 2
    assert fired.count("NEXT_STAGE") == 3
    assert fired[-1] == "COMPLETE_WORKFLOW"
    for (_, _, to), (source, _, _) in itertools.pairwise(events):
        assert to == source, "history is a legal path"
    contracts = store.contracts(workflow_id)
    assert contracts, "every action ran as a contract"
    assert all(c.status is ExecutionStatus.COMPLETED for c in contracts)
    assert store.verify() > 0
    published = store.events(workflow_id)
    assert [e.seq for e in published] == sorted(e.seq for e in published)
    assert {e.kind for e in published} >= {"transition", "contract", "cell", "run"}
    store.close()
    nb = nbformat.read(harness.notebook, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert "version" in nb.metadata["language_info"]
    sources = [c.source for c in nb.cells]
    assert sources[0].startswith("# notebook-bcc inputs")
    assert sum(1 for s in sources if s.startswith("attempts =")) == 3
    assert sum(1 for s in sources if s.startswith("loops =")) == 2
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert any(o.get("text") == "attempt 1\n" for o in outputs)
    assert harness.events, "listeners saw the events"
    assert all(isinstance(e, WorkflowEvent) for e in harness.events)
    assert json.loads(harness.events[-1].model_dump_json(by_alias=True))["kind"] in (
        "run",
        "transition",
    )


def test_two_runs_give_the_same_cell_sources(harness: EngineHarness, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    def sources(h: EngineHarness) -> list[str]:
        async def scenario() -> None:
            engine = await h.open("paths", auto_confirm=True)
            try:
                assert (await engine.run()).exit_code == 0
            finally:
                await finish(engine)

        h.run(scenario)
        nb = nbformat.read(h.notebook, as_version=4)
        return [c.source for c in nb.cells[1:]]

    other = EngineHarness(tmp_path_factory.mktemp("second"))
    assert sources(harness) == sources(other)


def test_fsm_history_tail_in_snapshot_is_bounded(harness: EngineHarness) -> None:
    async def scenario() -> None:
        engine = await harness.open("forever", auto_confirm=True, max_hops=30)
        try:
            result = await engine.run()
        finally:
            await finish(engine)
        assert len(result.snapshot.fsm.history) == 50
        assert result.snapshot.fsm.history[-1].event is Event.FAIL

    harness.run(scenario)
