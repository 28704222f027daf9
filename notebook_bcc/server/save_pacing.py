"""Spacing the workflows' debounced notebook saves so that they leave the event loop free.

A save through the contents manager costs the server's event loop far more than the cell it
records: ``contents_manager.save`` signs the notebook (a hash of the whole document and a
SQLite commit into the notary's database), validates it, swaps the file in and reads the model
back, and only the JSON writing itself runs on a worker thread. One workflow saving every
``write_debounce`` seconds is harmless; twenty of them at a cell every 100-200 ms each would
keep the loop busy with saves, and every REST answer and websocket message would wait behind
them.

:class:`SavePacer` is shared by the writers of one server. Debounced (background) writes take
turns, one at a time, and after a write that took ``t`` seconds the next one starts no sooner
than ``t * (1 - share) / share`` later (at most ``max_gap``), so saves use about ``share`` of
the loop's time however many workflows run. A writer waiting for its turn keeps collecting
changes, so nothing is lost: saves simply cover more cells each under load. Explicit writes
(a workflow stopping, ``flush_async``) are not paced. The store stays the record of every cell
(D10); the notebook file follows it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from time import monotonic

DEFAULT_SHARE = 0.25
"""The part of the event loop's time that debounced saves may take together."""

DEFAULT_MAX_GAP = 2.0
"""The longest pause (seconds) between two paced saves, whatever the last one cost."""


class SavePacer:
    """Turns for background notebook saves (see the module docstring)."""

    def __init__(self, share: float = DEFAULT_SHARE, *, max_gap: float = DEFAULT_MAX_GAP) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"share must be in (0, 1], got {share}")
        self.share = share
        self.max_gap = max_gap
        self._lock: asyncio.Lock | None = None
        self._next_at = 0.0
        self.turns = 0
        """Paced saves so far (for tests and logs)."""
        self.closed = False
        """Set at server shutdown: from then on every save goes at once."""

    def close(self) -> None:
        """Stop pacing (server shutdown): waiting saves and later ones go at once."""
        self.closed = True
        self._next_at = 0.0

    def gap_after(self, spent: float) -> float:
        """The pause owed after a save that took ``spent`` seconds."""
        return min(self.max_gap, max(0.0, spent) * (1 - self.share) / self.share)

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Wait for this save's turn, hold it while the save runs, then owe the gap."""
        if self.closed:
            yield
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            delay = self._next_at - monotonic()
            if delay > 0 and not self.closed:
                await asyncio.sleep(delay)
            began = monotonic()
            try:
                yield
            finally:
                ended = monotonic()
                self._next_at = ended + self.gap_after(ended - began)
                self.turns += 1


__all__ = ["DEFAULT_MAX_GAP", "DEFAULT_SHARE", "SavePacer"]
