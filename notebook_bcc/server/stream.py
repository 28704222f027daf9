"""The live channel's plumbing, free of tornado: one hub per workflow, one bounded feed per client.

The engine calls its listeners synchronously at every commit; the hub is the engine's one
listener for the server and fans each :class:`WorkflowEvent` out to the feeds of the connected
clients. A feed never grows without bound: when a client reads too slowly and its buffer is
full, the buffer is dropped and the client is sent a fresh snapshot instead (the snapshot
carries everything the dropped events would have told it), then the events that follow.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.models.snapshot import WorkflowSnapshot

SnapshotReason = Literal["hello", "resync", "closed"]
"""Why a snapshot is sent: first message, after dropped events, or as the last message."""


@dataclass(frozen=True)
class SnapshotMessage:
    """A whole snapshot to send, and why."""

    reason: SnapshotReason
    snapshot: WorkflowSnapshot


Message = WorkflowEvent | SnapshotMessage
"""What a feed hands its client: an event, or a whole snapshot."""


class EventFeed:
    """One client's queue of messages, at most ``limit`` events deep.

    ``snapshot`` is called when the feed must resynchronize (and for the first message); it
    returns the workflow's current snapshot, which reflects every event committed so far.
    """

    def __init__(self, limit: int, snapshot: Callable[[], WorkflowSnapshot]) -> None:
        self.limit = max(1, limit)
        self._snapshot = snapshot
        self._events: deque[WorkflowEvent] = deque()
        self._pending: SnapshotReason | None = "hello"
        self._closing: WorkflowSnapshot | None = None
        self._closed = False
        self._wakeup = asyncio.Event()
        self._wakeup.set()
        self.dropped = 0
        """How many events were dropped for this client (each drop triggers a resync)."""

    @property
    def closed(self) -> bool:
        """True once the feed was closed (no more messages after the queued ones)."""
        return self._closed

    def push(self, event: WorkflowEvent) -> None:
        """Queue an event; on overflow drop the queue and ask for a resync snapshot."""
        if self._closed:
            return
        if len(self._events) >= self.limit:
            self.dropped += len(self._events) + 1
            self._events.clear()
            self._pending = "resync"
        else:
            self._events.append(event)
        self._wakeup.set()

    def close(self, final: WorkflowSnapshot | None = None) -> None:
        """End the feed; ``final`` (if any) is sent as a ``closed`` snapshot first."""
        if self._closed:
            return
        self._closed = True
        self._closing = final
        self._wakeup.set()

    def queued_events(self, most: int) -> list[WorkflowEvent]:
        """Up to ``most`` events queued behind the one :meth:`next` just gave (none while a
        snapshot is owed): they leave with it, in one message (see :func:`encode_events`)."""
        taken: list[WorkflowEvent] = []
        while self._pending is None and self._events and len(taken) < most:
            taken.append(self._events.popleft())
        return taken

    async def next(self) -> Message | None:
        """The next message for the client, waiting for one; None once the feed is over."""
        while True:
            if self._pending is not None and not self._closed:
                reason = self._pending
                self._pending = None
                snap = self._snapshot()
                while self._events and self._events[0].version <= snap.version:
                    self._events.popleft()
                return SnapshotMessage(reason, snap)
            if self._events:
                return self._events.popleft()
            if self._closed:
                if self._closing is not None:
                    final, self._closing = self._closing, None
                    return SnapshotMessage("closed", final)
                return None
            self._wakeup.clear()
            await self._wakeup.wait()


class WorkflowHub:
    """Fans one workflow's events out to its clients' feeds."""

    def __init__(self, snapshot: Callable[[], WorkflowSnapshot], *, limit: int) -> None:
        self._snapshot = snapshot
        self.limit = limit
        self._feeds: set[EventFeed] = set()

    @property
    def clients(self) -> int:
        """How many feeds are open."""
        return len(self._feeds)

    def publish(self, event: WorkflowEvent) -> None:
        """The engine listener: queue ``event`` on every open feed."""
        for feed in list(self._feeds):
            feed.push(event)

    def open(self) -> EventFeed:
        """A new feed; its first message is the current snapshot."""
        feed = EventFeed(self.limit, self._snapshot)
        self._feeds.add(feed)
        return feed

    def release(self, feed: EventFeed) -> None:
        """Forget a feed (its client disconnected)."""
        feed.close()
        self._feeds.discard(feed)

    def close_all(self, final: WorkflowSnapshot | None = None) -> None:
        """Close every feed, sending ``final`` as the last message."""
        for feed in list(self._feeds):
            feed.close(final)
        self._feeds.clear()
