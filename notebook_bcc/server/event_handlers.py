"""``GET {base}notebook-bcc/api/workflows/{id}/events``: the workflow's stored D4 events.

The websocket stream carries what happens from the moment a client connects; what happened
before (a page reloaded mid-run, a panel opened on a finished workflow, a socket that was
down for a while) is in the store's ``events`` table, the same events with the same ``seq``.
Query: ``after`` (only events with a larger ``seq``; default 0) and ``limit`` (1-1000, the
newest rows; default 200, the panel's timeline length). Answers an
:class:`~notebook_bcc.models.event.EventList`, oldest first. Unknown workflow: 404; a bad
query: 400.
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from jupyter_server.utils import url_path_join
from tornado import web

from notebook_bcc.models.event import EventList
from notebook_bcc.server.exchange_handlers import query_int
from notebook_bcc.server.handlers import _WORKFLOW, URL_PREFIX, BccAPIHandler
from notebook_bcc.server.service import WorkflowService

MAX_EVENTS_LISTED = 1000
"""Largest ``limit`` accepted."""
DEFAULT_EVENTS_LISTED = 200
"""``limit`` when none is given: as many as the panel's timeline shows."""
MAX_SEQ = 2**63 - 1
"""Largest ``after`` accepted (SQLite's largest integer)."""


async def workflow_events(
    service: WorkflowService, workflow_id: str, after: int, limit: int
) -> EventList:
    """The stored events of ``workflow_id`` after ``after`` (404 when it is unknown)."""
    store = await service.start()
    events, more = await store.call(
        lambda s: s.recent_events(workflow_id, after_seq=after, limit=limit)
    )
    return EventList(workflow_id=workflow_id, after=after, events=events, truncated=more)


class EventsHandler(BccAPIHandler):
    """``GET /workflows/{id}/events?after=&limit=``: stored events, oldest first."""

    @web.authenticated
    @authorized
    async def get(self, workflow_id: str) -> None:
        """An :class:`EventList` (read-only)."""
        after = query_int("after", self.get_query_argument("after", None), 0, MAX_SEQ, 0)
        limit = query_int(
            "limit",
            self.get_query_argument("limit", None),
            1,
            MAX_EVENTS_LISTED,
            DEFAULT_EVENTS_LISTED,
        )
        self.reply(await workflow_events(self.service, workflow_id, after, limit))


def event_routes() -> list[tuple[str, type[web.RequestHandler]]]:
    """The route of this module, relative to the server's base_url."""
    workflow = url_path_join(URL_PREFIX, "api", "workflows", _WORKFLOW)
    return [(url_path_join(workflow, "events"), EventsHandler)]


__all__ = ["EventsHandler", "event_routes", "workflow_events"]
