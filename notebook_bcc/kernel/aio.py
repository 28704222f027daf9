"""Small asyncio helpers around jupyter_client and nbclient objects (used by the session)."""

from __future__ import annotations

import asyncio
from typing import Any

from nbclient import NotebookClient

from notebook_bcc.kernel.errors import KernelDeadError


def consume(task: asyncio.Future[Any]) -> None:
    """Retrieve a finished task's outcome so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()


def cancel_alive_pollers(client: NotebookClient) -> None:
    """Stop nbclient's per-cell liveness poller of a cell task we had to cancel.

    nbclient cancels it on every path but this one; left alone it would poll a live kernel
    every second forever.
    """
    for task in asyncio.all_tasks():
        coro: Any = task.get_coro()
        frame = getattr(coro, "cr_frame", None)
        if (
            getattr(coro, "__qualname__", "").endswith("_async_poll_kernel_alive")
            and frame is not None
            and frame.f_locals.get("self") is client
        ):
            task.cancel()


def kernel_client_of(client: NotebookClient) -> Any:
    """The client's kernel client (an ``AsyncKernelClient`` once connected)."""
    if client.kc is None:
        raise KernelDeadError("the kernel client is not connected")
    return client.kc


async def maybe_await(value: Any) -> Any:
    """jupyter_client methods are sync or async depending on the manager class."""
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        return await value
    return value
