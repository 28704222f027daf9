"""A cell run again holds only its own run; a restart's interrupt is not a human's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from notebook_bcc.kernel import (
    ActionOutcome,
    ActionRunner,
    KernelSession,
    MemorySink,
    NotebookDocument,
)
from notebook_bcc.kernel.cells import bcc_of
from notebook_bcc.kernel.session import RESTARTED_OUTSIDE
from notebook_bcc.models.actions import AddAction, ExecAction
from tests.kernel.conftest import LAST, KernelHarness, LoopThread, path, started

pytestmark = pytest.mark.timeout(60)


def test_a_cell_run_again_keeps_nothing_of_its_earlier_run(kh: KernelHarness) -> None:
    runner, sink = kh.runner()
    source = "print('run', ran_before := 'again_flag' in globals())\nagain_flag = 1\n1 / ran_before"
    added = kh.act(runner, AddAction(content=source, shot_type="action"), path(0))
    cell_id = added.cell_id or ""
    assert not runner.clear_run(cell_id), "a cell that never ran has nothing to clear"
    failed = kh.act(runner, LAST, path(1))
    assert failed.execution is not None
    assert failed.execution.status == "error"
    cell: Any = runner.document.get(cell_id)
    assert bcc_of(cell)["message"]  # type: ignore[index]
    assert runner.clear_run(cell_id)
    assert (cell["outputs"], cell["execution_count"]) == ([], None)
    assert "message" not in bcc_of(cell)  # type: ignore[operator]
    assert sink.changes[-1] == (cell_id, "updated"), "the sinks hear of the emptied cell"
    assert sink.cells[cell_id]["outputs"] == []
    again = kh.act(runner, ExecAction(codecell_id=cell_id), path(2))
    assert again.ok
    assert [o.get("text") for o in cell["outputs"]] == ["run True\n", None]
    assert "message" not in bcc_of(cell)  # type: ignore[operator]


def test_a_restart_whose_interrupt_ends_the_cell_first_loses_the_cell(
    loop_thread: LoopThread,
) -> None:
    """jupyter_client interrupts a kernel before it restarts it: a cell whose KeyboardInterrupt
    reply lands before the old process is gone was lost with its kernel (``dead_kernel``,
    restarted), not interrupted by a human, and the session waits for the new process."""
    session = KernelSession()
    runner = ActionRunner(session, NotebookDocument(workflow_id="wf"), sinks=[MemorySink()])

    async def scenario() -> tuple[ActionOutcome, bool]:
        await runner.start()
        source = "import time\nprint('go', flush=True)\ntime.sleep(60)"
        added = await runner.run(AddAction(content=source, shot_type="action"), path(0))
        task = asyncio.ensure_future(runner.run(LAST, path(1)))
        await started(runner, added.cell_id or "")
        km = session.km
        interrupt = km._async_interrupt_kernel

        async def interrupt_then_let_the_reply_land() -> None:
            await interrupt()
            for _ in range(1500):  # the old kernel answers the cell before it is shut down
                if session._inflight is None:
                    return
                await asyncio.sleep(0.02)

        km._async_interrupt_kernel = interrupt_then_let_the_reply_land
        try:
            await km.restart_kernel()
            outcome = await asyncio.wait_for(task, 30)
            return outcome, await session.is_alive()
        finally:
            await session.shutdown()

    outcome, alive = loop_thread.run(scenario())
    assert outcome.execution is not None
    assert (outcome.execution.status, outcome.execution.message) == (
        "dead_kernel",
        RESTARTED_OUTSIDE,
    )
    names = [o.get("ename") for o in outcome.execution.outputs]
    assert names == [None, "KeyboardInterrupt"], "the first attempt's own outputs, kept"
    assert alive, "the cell ended once the new kernel was up"
