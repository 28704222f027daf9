"""Whether a browser's open document holds a workflow's cells as they are now.

While a browser holds a notebook (see :mod:`.coedit`) the workflow's cells reach the file
through that browser: it asks for a merge plan, applies it to Lab's document, saves, and
acknowledges. A run's last cell states (its outputs, its end) travel that way a heartbeat or
so after the run ended. A new workflow started on the notebook in that moment took the
notebook's writer over, and the earlier run's last plan was never asked for: Lab kept its
last code cell "running" (``[*]``, no outputs) and saved it so. :class:`Delivery` tells
when the document has caught up with a writer's cells version, so the start waits for it.
"""

from __future__ import annotations

import asyncio

DELIVERY_WAIT = 5.0
"""Seconds a new workflow waits for the browser holding its notebook to take the earlier
run's last cells (about three of the panel's heartbeats); past it, it starts anyway."""


class Delivery:
    """The newest cells version a holder's document is known to hold entirely: a merge plan
    of that version with nothing to do, or one applied and acknowledged."""

    def __init__(self) -> None:
        self.version: int | None = None
        self._waiters: list[asyncio.Future[None]] = []

    def reached(self, version: int) -> None:
        """A document holds every cell change up to ``version``."""
        if self.version is None or version > self.version:
            self.version = version
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait_for(self, version: int, timeout: float) -> bool:
        """Whether a document reaches ``version`` within ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.version is None or self.version < version:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            try:
                await asyncio.wait_for(waiter, remaining)
            except TimeoutError:
                return False
        return True


__all__ = ["DELIVERY_WAIT", "Delivery"]
