"""Exactly-once where the side effect is decided (issue 19 §1, D7, D11 revised).

The kernel dies after the irreversible cell's side effect; the in-doubt question is answered
"it ran" (reject). The contract completes (its key stays taken); the replaced kernel lacks what
the cell bound, so the human is asked about that state (``lost_state``, as after a rebuild) and
answers "continue without"; the behavior, whose acceptance now fails, is retried: the retry
skips the action instead of executing it again. "It did not run" (approve) runs it once.
"""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Literal

import pytest

from notebook_bcc.engine.actions import IN_DOUBT_RAN
from notebook_bcc.engine.engine import Engine
from notebook_bcc.models.contract import ExecutionStatus
from tests.engine.conftest import EngineHarness, finish


async def _kill_after_side_effect(engine: Engine, harness: EngineHarness) -> None:
    hold = harness.notebook.parent / "hold.txt"
    task = asyncio.create_task(engine.run())
    for _ in range(6000):
        if hold.read_text() == "held":
            break
        await asyncio.sleep(0.01)
    else:
        raise AssertionError("the irreversible cell never held")
    os.kill(engine.runtime.session.km.provisioner.pid, signal.SIGKILL)
    result = await asyncio.wait_for(task, 60)
    assert result.exit_code == 3, result.snapshot.run
    (pending,) = result.snapshot.run.pending
    assert pending.kind == "in_doubt"


@pytest.mark.parametrize("answer", ["reject", "approve"])
def test_an_in_doubt_action_runs_at_most_once_whatever_the_retries(
    harness: EngineHarness, answer: Literal["approve", "reject"]
) -> None:
    harness.notebook.parent.mkdir(parents=True)
    (harness.notebook.parent / "hold.txt").write_text("hold")

    async def scenario() -> None:
        engine = await harness.open("in_doubt_retry", confirm_irreversible=False)
        try:
            await _kill_after_side_effect(engine, harness)
            (pending,) = engine.snapshot.run.pending
            if answer == "approve":  # a wrong "it did not run": it runs once more, no more
                (harness.notebook.parent / "ledger.txt").write_text("")
            await engine.command(
                {
                    "decide": pending.id,
                    "decision": answer,
                    "expected_version": engine.snapshot.version,
                }
            )
            result = await engine.run()
            if answer == "reject":
                # it ran on the kernel that died: the names it bound are gone, and the human is
                # asked about that state, as a rebuild asks (never re-run by itself)
                (lost,) = result.snapshot.run.pending
                assert lost.kind == "lost_state", lost
                assert "exported" in lost.details["names"]
                assert harness.ledger_lines() == ["sent"]
                await engine.command(
                    {
                        "decide": lost.id,
                        "decision": "reject",
                        "expected_version": engine.snapshot.version,
                    }
                )
                await engine.run()
        finally:
            await finish(engine)

    harness.run(scenario)
    assert harness.ledger_lines() == ["sent"], "executed exactly once after the answer"
    store = harness.store()
    try:
        (workflow_id,) = store.workflow_ids()
        executions = [
            c
            for c in store.contracts(workflow_id)
            if c.action_type == "cell_execution" and c.irreversible
        ]
        skips = [t for t in store.trace(workflow_id) if t.action.startswith("skip:")]
    finally:
        store.close()
    first = executions[0]
    assert first.status is ExecutionStatus.COMPLETED
    if answer == "reject":
        assert first.result == IN_DOUBT_RAN
        assert first.transitions[-1].actor == "human"
        assert len(executions) == 1, "never executed again in this run"
        assert skips, "the retried behavior skipped the action (its key is taken)"
    else:
        assert first.result != IN_DOUBT_RAN, "approve: it ran for real, under its contract"
