"""Planner test fixtures: a scripted DSLC server on loopback and requests at any FSM state."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from notebook_bcc.engine.engine import RunResult
from notebook_bcc.engine.headless import HeadlessRun, close_headless, open_headless, open_stored
from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.models.names import State
from notebook_bcc.models.snapshot import CurrentLocation, WorkflowSnapshot, new_snapshot
from notebook_bcc.planners.base import Planner, PlannerRequest
from notebook_bcc.planners.http import HttpPlanner, HttpPlannerSettings
from notebook_bcc.store.sqlite import SqliteStore
from notebook_bcc.workflow import build_observation
from tests.planners.dslc_server import DSLC, ScriptedServer

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


class FolderRun:
    """One headless run (auto-confirm) in a folder of its own: start it, resume it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.notebook = folder / "nb.ipynb"
        self.state_db = folder / "state.sqlite"

    def start(
        self,
        planner: Planner,
        *,
        problem: str | None = "Describe the house prices",
        files: list[Path] | None = None,
    ) -> RunResult:
        """A new run of ``planner`` on the prices file (or ``files``)."""

        async def scenario() -> RunResult:
            engine = await open_headless(
                HeadlessRun(
                    planner=planner,
                    notebook=self.notebook,
                    state_db=self.state_db,
                    problem=problem,
                    files=[DSLC / "prices.csv"] if files is None else files,
                    options=EngineOptions(auto_confirm=True, write_debounce=0.05),
                )
            )
            try:
                return await engine.run()
            finally:
                await close_headless(engine)

        return asyncio.run(scenario())

    def resume(self, planner_type: type[Any] | None = None) -> RunResult:
        """Reopen the stored workflow (its planner rebuilt from the snapshot) and run on."""

        async def scenario() -> RunResult:
            engine = await open_stored(
                self.state_db,
                workflow_id=self.workflow_id(),
                options=EngineOptions(auto_confirm=True, write_debounce=0.05),
            )
            try:
                if planner_type is not None:
                    # The engine logs an AI planner's exchanges through a transparent wrapper.
                    rebuilt = getattr(engine.planner, "inner", engine.planner)
                    assert isinstance(rebuilt, planner_type), "rebuilt from the snapshot"
                await engine.recovery.prepare()
                return await engine.run()
            finally:
                await close_headless(engine)

        return asyncio.run(scenario())

    def workflow_id(self) -> str:
        """The one workflow in the state database."""
        store = SqliteStore(self.state_db)
        try:
            (workflow_id,) = store.workflow_ids()
            return workflow_id
        finally:
            store.close()
