"""``GET {base}notebook-bcc/api/workflows/{id}/exchanges``: what an AI planner was asked and
answered (see :mod:`notebook_bcc.models.exchanges`).

Query: ``behavior`` (only the exchanges of that behavior: the call that planned it, generated
its actions and reflected on it) and ``limit`` (1-500, the newest rows; default 500). Answers
an :class:`~notebook_bcc.models.exchanges.ExchangeList`, oldest first; a blueprint run has
``planner_kind: "blueprint"`` and no exchanges. Unknown workflow: 404; a bad query: 400.
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from jupyter_server.utils import url_path_join
from tornado import web

from notebook_bcc.models.exchanges import ExchangeList
from notebook_bcc.server.errors import BadRequestError
from notebook_bcc.server.handlers import _WORKFLOW, URL_PREFIX, BccAPIHandler
from notebook_bcc.server.service import WorkflowService
from notebook_bcc.store.exchanges import MAX_ROWS_LISTED, list_exchanges

MAX_BEHAVIOR_ID = 200
"""Longest ``behavior`` query value accepted."""


async def workflow_exchanges(
    service: WorkflowService, workflow_id: str, behavior: str | None, limit: int
) -> ExchangeList:
    """The stored exchanges of ``workflow_id`` (404 when the workflow is unknown)."""
    store = await service.start()
    snapshot = await store.load(workflow_id)
    rows, more = await store.call(
        lambda s: list_exchanges(s, workflow_id, behavior=behavior, limit=limit)
    )
    return ExchangeList(
        workflow_id=workflow_id,
        planner_kind=snapshot.planner.kind,
        behavior=behavior,
        exchanges=rows,
        truncated=more,
    )


def parse_limit(raw: str | None) -> int:
    """The ``limit`` query value: an integer in 1..MAX_ROWS_LISTED (400 otherwise)."""
    return query_int("limit", raw, 1, MAX_ROWS_LISTED, MAX_ROWS_LISTED)


def query_int(name: str, raw: str | None, low: int, high: int, default: int) -> int:
    """A query value that must be an integer in ``low..high`` (400 naming it otherwise)."""
    if raw is None:
        return default
    value = low - 1
    if len(raw) <= 20 and raw.isascii() and raw.strip().isdigit():
        value = int(raw)
    if not low <= value <= high:
        raise BadRequestError(
            f"{name}: expected an integer from {low} to {high}, got {raw[:40]!r}",
            details={"field": name},
        )
    return value


class ExchangesHandler(BccAPIHandler):
    """``GET /workflows/{id}/exchanges?behavior=&limit=``: the planner exchanges."""

    @web.authenticated
    @authorized
    async def get(self, workflow_id: str) -> None:
        """An :class:`ExchangeList` (read-only)."""
        behavior = self.get_query_argument("behavior", None)
        if behavior is not None and not 0 < len(behavior) <= MAX_BEHAVIOR_ID:
            raise BadRequestError(
                f"behavior: expected 1 to {MAX_BEHAVIOR_ID} characters",
                details={"field": "behavior"},
            )
        limit = parse_limit(self.get_query_argument("limit", None))
        self.reply(await workflow_exchanges(self.service, workflow_id, behavior, limit))


def exchange_routes() -> list[tuple[str, type[web.RequestHandler]]]:
    """The route of this module, relative to the server's base_url."""
    workflow = url_path_join(URL_PREFIX, "api", "workflows", _WORKFLOW)
    return [(url_path_join(workflow, "exchanges"), ExchangesHandler)]


__all__ = [
    "ExchangesHandler",
    "exchange_routes",
    "parse_limit",
    "query_int",
    "workflow_exchanges",
]
