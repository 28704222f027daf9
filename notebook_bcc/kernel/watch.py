"""Watching a running cell's kernel: a lost reply, and a restart behind the session's back.

A kernel restarted while a cell runs (JupyterLab's Restart, ``POST /api/kernels/{id}/restart``,
any ``restart_kernel`` on its manager) never answers that cell. jupyter_client's restart first
*interrupts* the kernel, so the cell may still end with a ``KeyboardInterrupt`` reply before the
old process is gone: that interrupt is the restart's, and the cell was lost with its kernel,
not interrupted by a human (:func:`restarted_since`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from time import monotonic
from typing import Any

PROCESS_POLL_S = 0.5
"""While a cell runs: how often the kernel's process id is compared with the one it began in."""

REPLY_GRACE_S = 3.0
"""How long after a cell's ``status: idle`` its ``execute_reply`` may still arrive (the
kernel sends the reply first; the two travel on different sockets)."""

NO_REPLY = "the kernel was interrupted and never answered the cell (its execute_reply was lost)"

RESTARTED_BY_MANAGER = "the kernel died while the cell ran (restarted by its manager)"
RESTARTED_OUTSIDE = (
    "the kernel was restarted while the cell ran (from JupyterLab or the kernels API); "
    "its state was lost"
)
SHUT_DOWN_OUTSIDE = (
    "the kernel was shut down while the cell ran (from JupyterLab or the kernels API); "
    "its state was lost"
)


def process_id(km: Any) -> int | None:
    """The kernel's process id, when its manager launched it locally (else None)."""
    pid = getattr(getattr(km, "provisioner", None), "pid", None)
    return pid if isinstance(pid, int) else None


def restarted_since(km: Any, before: int | None) -> bool:
    """Whether ``km``'s kernel is being shut down or restarted, or is no longer the process
    ``before`` (the one a cell began in): jupyter_client sets ``shutting_down`` before the
    interrupt it sends first, and clears it only when the new process is launched."""
    if km is None:
        return False
    if getattr(km, "shutting_down", False) is True:
        return True
    return before is not None and process_id(km) != before


async def settled(km: Any, timeout: float) -> str:
    """Wait (at most ``timeout`` s) for a restart or shutdown under way on ``km`` to end;
    what happened to the cell's kernel (:data:`RESTARTED_OUTSIDE` or
    :data:`SHUT_DOWN_OUTSIDE`). jupyter_client gives each phase (shutdown, start) a fresh
    ``ready`` future and moves from one to the next without yielding to the loop."""
    deadline = monotonic() + timeout
    while (left := deadline - monotonic()) > 0:
        ready = getattr(km, "ready", None)
        if ready is None or ready.done():
            break
        waited = (
            asyncio.wrap_future(ready) if isinstance(ready, concurrent.futures.Future) else ready
        )
        await asyncio.wait([waited], timeout=left)
    if getattr(km, "shutting_down", False) is True:
        return SHUT_DOWN_OUTSIDE
    return RESTARTED_OUTSIDE


class ReplyWatch:
    """Gives up a cell whose reply was lost. An interrupt (ours, or JupyterLab's button) that
    lands in ipykernel's execute handler outside the cell's code ends that handler with no
    reply at all, and nbclient would wait for it forever. A cell whose ``idle`` came and
    whose reply has not, ``REPLY_GRACE_S`` later, is cancelled (nbclient turns that into
    ``DeadKernelError``) and ends ``interrupted``: the kernel is idle, ready for the next.
    One timer per cell, armed at its ``idle`` (no task: this is on every cell's path)."""

    def __init__(self, task: asyncio.Future[Any]) -> None:
        self._task = task
        self._timer: asyncio.TimerHandle | None = None
        self.lost = False

    def idle(self) -> None:
        """The cell's ``status: idle`` arrived: its reply has ``REPLY_GRACE_S`` from now."""
        if self._timer is None and not self._task.done():
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(REPLY_GRACE_S, self._give_up)

    def _give_up(self) -> None:
        if not self._task.done():
            self.lost = True
            self._task.cancel()

    def close(self) -> None:
        """The cell is over: no timer outlives it."""
        if self._timer is not None:
            self._timer.cancel()


__all__ = [
    "NO_REPLY",
    "PROCESS_POLL_S",
    "REPLY_GRACE_S",
    "RESTARTED_BY_MANAGER",
    "RESTARTED_OUTSIDE",
    "SHUT_DOWN_OUTSIDE",
    "ReplyWatch",
    "process_id",
    "restarted_since",
    "settled",
]
