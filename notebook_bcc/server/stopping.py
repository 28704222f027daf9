"""Stopping a workflow that is stuck: a cell that never ends, a planner call that hangs.

A stop (CANCEL, DELETE) waits for the step in progress by design (D1: a cell is never cut
short by a pause). For a stop that must answer within ``stop_timeout`` that is not enough:
:func:`interrupt_running_cell` interrupts the kernel when a cell runs (the cell ends with a
KeyboardInterrupt, the step ends, the stop applies), and :func:`stop_command` cancels the run
loop's task when the step still holds on (a planner call that hangs).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from jupyter_core.utils import ensure_async

from notebook_bcc.models.snapshot import WorkflowSnapshot

if TYPE_CHECKING:
    from notebook_bcc.server.kernels import Kernels
    from notebook_bcc.server.service import LiveWorkflow


def runs_a_cell(snapshot: WorkflowSnapshot) -> bool:
    """Whether a contract of the workflow is executing a cell now."""
    return any(str(c.status).lower().endswith("running") for c in snapshot.open_contracts)


async def interrupt_running_cell(live: LiveWorkflow, kernels: Kernels) -> bool:
    """Interrupt the workflow's kernel when it executes a cell of the workflow (in its run
    loop, or in a command: an approved re-run of a lost irreversible cell); whether it did."""
    executing = live.running or live.engine.lock.locked()
    if not executing or not runs_a_cell(live.engine.snapshot):
        return False
    km = kernels.manager_of(live.kernel.kernel_id)
    if km is None:
        return False
    await ensure_async(km.interrupt_kernel())
    return True


def is_stop(body: Any) -> bool:
    """A CANCEL command."""
    return isinstance(body, dict) and str(body.get("event", "")).upper() == "CANCEL"


async def stop_command(
    live: LiveWorkflow, body: dict[str, Any], kernels: Kernels, timeout: float
) -> WorkflowSnapshot:
    """Apply a stop command within about ``timeout`` seconds even when the step is stuck."""
    await interrupt_running_cell(live, kernels)
    attempt = asyncio.ensure_future(live.engine.command(body))
    done, _ = await asyncio.wait([attempt], timeout=timeout / 2)
    if not done:
        task = live.task
        if task is not None and not task.done():
            task.cancel()  # a planner call (or anything else) that holds the step
            await asyncio.wait([task], timeout=timeout / 4)
    return await attempt


__all__ = ["interrupt_running_cell", "is_stop", "runs_a_cell", "stop_command"]
