"""Planner test fixtures: a scripted DSLC server on loopback and requests at any FSM state."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from notebook_bcc.models.names import State
from notebook_bcc.models.snapshot import CurrentLocation, WorkflowSnapshot, new_snapshot
from notebook_bcc.planners.base import PlannerRequest
from notebook_bcc.planners.http import HttpPlanner, HttpPlannerSettings
from notebook_bcc.protocol.apply import build_observation
from tests.planners.dslc_server import ScriptedServer

T = TypeVar("T")


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A scripted server on 127.0.0.1 (answers queued with ``server.script(...)``)."""
    with ScriptedServer() as running:
        yield running


def fast(url: str, **overrides: Any) -> HttpPlannerSettings:
    """Settings with millisecond backoff and short timeouts (tests stay fast)."""
    values: dict[str, Any] = {
        "url": url,
        "connect_timeout": 2.0,
        "idle_timeout": 2.0,
        "total_timeout": 10.0,
        "max_retries": 2,
        "backoff_base": 0.001,
        "backoff_cap": 0.004,
        **overrides,
    }
    return HttpPlannerSettings(**values)


class SleepLog:
    """An ``asyncio.sleep`` stand-in that records the delays asked for (and does not wait)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def planner(url: str, *, sleep: SleepLog | None = None, **overrides: Any) -> HttpPlanner:
    """An HTTP planner on ``url`` with :func:`fast` settings."""
    if sleep is None:
        return HttpPlanner(fast(url, **overrides))
    return HttpPlanner(fast(url, **overrides), sleep=sleep)


def snapshot_at(
    state: State,
    *,
    stage: str | None = None,
    step: str | None = None,
    behavior: str | None = None,
) -> WorkflowSnapshot:
    """A snapshot in ``state`` at the given location."""
    snap = new_snapshot("wf-test", "run-1", problem="test problem", files=["/data/in.csv"])
    fsm = snap.fsm.model_copy(update={"state": state})
    current = CurrentLocation(
        stage_id=stage, step_id=step, behavior_id=behavior, behavior_iteration=1 if behavior else 0
    )
    location = snap.location.model_copy(update={"current": current})
    return snap.model_copy(update={"fsm": fsm, "location": location})


def request(
    point: Any,
    state: State,
    *,
    feedback: dict[str, Any] | None = None,
    **where: str,
) -> PlannerRequest:
    """A request at ``point`` from a snapshot in ``state`` with its D21 observation."""
    snap = snapshot_at(state, **where)
    return PlannerRequest(point, snap, build_observation(snap), feedback)


def run(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine factory to completion on a fresh event loop."""
    return asyncio.run(make())


def ask(http: HttpPlanner, method: str, req: PlannerRequest) -> Any:
    """Call ``http.METHOD(req)`` on a fresh loop and close the planner."""

    async def scenario() -> Any:
        try:
            return await getattr(http, method)(req)
        finally:
            await http.aclose()

    return asyncio.run(scenario())
