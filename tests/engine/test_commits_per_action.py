"""Issue 23: a run of code actions costs one commit each, and a command still lands between cells.

The outcome of a code action (outputs, terminal contract, COMPLETE_ACTION, NEXT_ACTION) rides in
the next code cell's RUNNING commit, which is still committed before that cell runs (D10). The
chain ends at a commit of its own whenever a command waits for the engine, so a pause that
arrives while a cell runs takes effect once that cell has run.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from notebook_bcc.engine import commands
from notebook_bcc.engine.engine import Engine, RunResult
from notebook_bcc.kernel.aio import maybe_await
from notebook_bcc.models.contract import ExecutionStatus
from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.planners.base import PlannerReply, PlannerRequest
from notebook_bcc.planners.blueprint import BlueprintPlanner
from tests.engine.conftest import EngineHarness, finish


def _versions_between(events: list[WorkflowEvent], first: str, last: str) -> list[int]:
    """Distinct commit versions from the first ``first`` transition's up to (not including) the
    ``last`` transition's."""
    began = next(e.version for e in events if e.kind == "transition" and e.event == first)
    ended = next(e.version for e in events if e.kind == "transition" and e.event == last)
    return sorted({e.version for e in events if began <= e.version < ended})


async def _first_cell_running(engine: Engine) -> tuple[asyncio.Future[RunResult], list[int]]:
    """Run the slow blueprint until its first sleeping cell runs: (the run, the versions of
    every event published so far and from now on)."""
    first_cell_running = asyncio.Event()
    committed: list[int] = []

    def watch(event: WorkflowEvent) -> None:
        committed.append(event.version)
        if event.kind == "cell" and "sleeper" in str(event.detail.get("cell_id", "")):
            first_cell_running.set()

    engine.subscribe(watch)
    running = asyncio.ensure_future(engine.run())
    await first_cell_running.wait()
    return running, committed


async def _sleepers_run(engine: Engine) -> list[tuple[str, ExecutionStatus]]:
    """(code, status) of the slow blueprint's sleeping cells that got a contract, in order."""
    contracts = await engine.store.call(lambda s: s.contracts(engine.snapshot.workflow_id))
    return [
        (str(c.action_detail["code"]), c.status)
        for c in contracts
        if "slept" in str(c.action_detail.get("code", ""))
    ]


def test_a_run_of_code_actions_costs_one_commit_each(
    harness: EngineHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """6 code actions and a markdown one: RUNNING(1) (START_ACTION and the boundary before it
    ride in it: a blueprint run folds its boundaries), then each code action's outcome with the
    next one's RUNNING, the third's outcome alone (a markdown action follows), the markdown,
    RUNNING(4), ..., and the last outcome rides with the folded boundary after it into the
    run's last commit: 8 commits where one per action move made 14."""
    monkeypatch.setattr(commands, "INBOX_POLL_S", 600.0)  # no inbox poll inside the chain

    async def scenario() -> Engine:
        engine = await harness.open("chain", auto_confirm=True)
        try:
            result = await engine.run()
        finally:
            await finish(engine)
        assert result.exit_code == 0, result.snapshot.run.reason
        return engine

    engine = harness.run(scenario)
    workflow_id = engine.snapshot.workflow_id
    commits = _versions_between(harness.events, "START_ACTION", "COMPLETE_BEHAVIOR")
    assert len(commits) == 8, commits

    # every cell and its outputs are in the store, every contract completed
    store = harness.store()
    try:
        cells = [row.cell for row in store.cells(workflow_id)]
        contracts = store.contracts(workflow_id)
        store.verify()
    finally:
        store.close()
    code = [c for c in cells if c["cell_type"] == "code" and "x" in "".join(c["source"])]
    assert len(code) == 6
    assert all(c["execution_count"] for c in code)
    printed = "".join(o.get("text", "") for o in code[-1]["outputs"])
    assert printed.strip() == "5"
    assert all(c.status is ExecutionStatus.COMPLETED for c in contracts), [
        (c.execution_id, c.status) for c in contracts
    ]
    on_disk = json.loads(harness.notebook.read_text())
    written = ["".join(c["source"]) for c in on_disk["cells"] if c["cell_type"] == "code"]
    assert written[-6:] == ["".join(c["source"]) for c in code]


def test_a_pause_while_a_cell_runs_lands_once_that_cell_ran(
    harness: EngineHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chain gives way to a waiting command: the running cell finishes and is committed,
    the next one does not start, the run is paused; ``run`` again finishes the rest. (The
    inbox poll, which also ends a chain, is pushed out of the way.)"""
    monkeypatch.setattr(commands, "INBOX_POLL_S", 600.0)

    async def scenario() -> None:
        engine = await harness.open("slow", auto_confirm=True)
        try:
            running, _ = await _first_cell_running(engine)
            paused = await engine.command(
                {"action": "pause", "expected_version": engine.snapshot.version}
            )
            assert paused.run.status == "paused"
            result = await running
            assert result.snapshot.run.status == "paused"
            assert await _sleepers_run(engine) == [
                ("import time; time.sleep(1.0); slept = 1", ExecutionStatus.COMPLETED)
            ]
            result = await engine.run()
            assert result.exit_code == 0, result.snapshot.run.reason
        finally:
            await finish(engine)

    harness.run(scenario)


def test_a_blueprint_boundary_rides_in_the_next_actions_commit(
    harness: EngineHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From COMPLETE_BEHAVIOR to the next START_ACTION (reflections, NEXT_STEP / NEXT_STAGE,
    the next plans, the queued actions) nothing is committed on its own: a blueprint's answers
    are asked again after a crash, so the whole boundary rides in the commit of the next
    action, made before that action runs (D10). (A due inbox poll is a safe point that ends
    the fold at a commit, as it ends a chain of code actions: it is pushed out of the way.)"""
    monkeypatch.setattr(commands, "INBOX_POLL_S", 600.0)

    async def scenario() -> None:
        engine = await harness.open("paths", auto_confirm=True)
        try:
            result = await engine.run()
        finally:
            await finish(engine)
        assert result.exit_code == 0, result.snapshot.run.reason

    harness.run(scenario)
    transitions = [e for e in harness.events if e.kind == "transition"]
    boundaries = 0
    for index, event in enumerate(transitions):
        if event.event != "COMPLETE_BEHAVIOR":
            continue
        following = next((e for e in transitions[index:] if e.event == "START_ACTION"), None)
        if following is None:
            continue  # the last behavior: the run ends
        between = transitions[index : transitions.index(following) + 1]
        assert {e.version for e in between} == {following.version}, [
            (e.event, e.version) for e in between
        ]
        ran = [e for e in harness.events if e.version == following.version and e.kind == "cell"]
        assert ran, "the boundary's commit is the next action's own"
        boundaries += 1
    assert boundaries >= 5


def test_a_stale_command_ends_the_chain_so_its_resend_lands_before_the_next_cell(
    harness: EngineHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pause sent against an old version while a cell runs is refused (409). Its sender will
    send it again against the state it got back: the chain must not carry the next cell's
    RUNNING in the commit that ends the running cell, or the resend would only land after
    that next cell too. The chain ends there and the loop gives the resend its moment: the
    paused run ran exactly the cell that was running."""
    monkeypatch.setattr(commands, "INBOX_POLL_S", 600.0)
    monkeypatch.setattr(commands, "RESEND_GRACE_S", 3.0)  # outlasts the 1 s cell

    async def scenario() -> None:
        engine = await harness.open("slow", auto_confirm=True)
        try:
            running, committed = await _first_cell_running(engine)
            seen = engine.snapshot.version
            with pytest.raises(commands.VersionConflictError) as refused:
                await engine.command({"action": "pause", "expected_version": seen - 1})
            assert refused.value.current.version == seen
            while max(committed) == seen:  # the running cell's outcome, committed
                await asyncio.sleep(0.02)
            paused = await engine.command(
                {"action": "pause", "expected_version": engine.snapshot.version}
            )
            assert paused.run.status == "paused"
            assert (await running).snapshot.run.status == "paused"
            assert await _sleepers_run(engine) == [
                ("import time; time.sleep(1.0); slept = 1", ExecutionStatus.COMPLETED)
            ]
        finally:
            await finish(engine)

    harness.run(scenario)


class _RestartsTheKernelBeforeUse(BlueprintPlanner):
    """The blueprint planner; before it hands out ``use_b``'s actions, the kernel is restarted
    behind the engine's back (as JupyterLab's Restart would), once."""

    def __init__(self, harness: EngineHarness) -> None:
        super().__init__(harness.planner("handover").loaded)
        self.engine: Engine | None = None
        self.restarted = False

    async def generate_actions(self, request: PlannerRequest) -> PlannerReply:
        if request.snapshot.location.current.behavior_id == "use_b" and not self.restarted:
            assert self.engine is not None
            self.restarted = True
            await maybe_await(self.engine.runtime.session.km.restart_kernel(now=True))
        return await super().generate_actions(request)


def test_a_kernel_rebuilt_at_a_folded_boundary_replays_the_cell_riding_in_it(
    harness: EngineHarness,
) -> None:
    """``b = a + 1`` ends its behavior: its outcome rides with the folded boundary, not yet in
    the store, when the kernel is restarted during that boundary. The next cell finds a new
    kernel and rebuilds it from the completed cells the store holds: the riding outcome is
    committed first, so ``b`` is replayed and ``c = b * 10`` passes its criterion."""
    planner = _RestartsTheKernelBeforeUse(harness)

    async def scenario() -> RunResult:
        engine = await harness.open("handover", planner=planner, auto_confirm=True)
        planner.engine = engine
        try:
            return await engine.run()
        finally:
            await finish(engine)

    result = harness.run(scenario)
    assert planner.restarted
    assert result.exit_code == 0, result.snapshot.run.reason
    assert result.snapshot.acceptance["use_b"]["c == 20"].status == "passed"
    effects = [*result.snapshot.effects.history, *result.snapshot.effects.current]
    assert any("rebuilt from the completed cells" in line for line in effects), effects
