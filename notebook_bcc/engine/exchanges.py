"""Wiring the planner-exchange log (:mod:`notebook_bcc.planners.exchange_log`) to the store.

The engine wraps its planner with :func:`log_exchanges` once, so every face (server, CLI run
and resume) records what an LLM, HTTP or replay planner was asked and answered in the
store's ``planner_exchanges`` table (:mod:`notebook_bcc.store.exchanges`). A blueprint is left
alone: it has no exchange to show.
"""

from __future__ import annotations

from notebook_bcc.models.exchanges import PlannerExchange
from notebook_bcc.planners.base import Planner
from notebook_bcc.planners.exchange_log import ExchangeLoggingPlanner
from notebook_bcc.store.async_store import AsyncStore
from notebook_bcc.store.exchanges import append_exchange

UNLOGGED_KINDS = frozenset({"blueprint"})
"""Planner kinds whose answers are not exchanges (no request, no reply to show)."""


def log_exchanges(planner: Planner, store: AsyncStore) -> Planner:
    """``planner`` wrapped so that each of its answers is stored (blueprints: unchanged)."""
    if planner.kind in UNLOGGED_KINDS or isinstance(planner, ExchangeLoggingPlanner):
        return planner

    async def sink(exchange: PlannerExchange) -> None:
        await store.call(lambda s: append_exchange(s, exchange))

    return ExchangeLoggingPlanner(planner, sink)


__all__ = ["UNLOGGED_KINDS", "log_exchanges"]
