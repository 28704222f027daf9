"""Engine fixtures: real kernels, real SQLite files, blueprints from tests/fixtures/engine."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from notebook_bcc.blueprint.loader import load_blueprint_file
from notebook_bcc.engine.engine import Engine, RunResult
from notebook_bcc.engine.headless import HeadlessRun, close_headless, open_headless
from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.models.event import WorkflowEvent
from notebook_bcc.planners.base import Planner
from notebook_bcc.planners.blueprint import BlueprintPlanner
from notebook_bcc.store.sqlite import SqliteStore
from tests.conftest import FIXTURES

T = TypeVar("T")
BLUEPRINTS = FIXTURES / "engine"


class EngineHarness:
    """Opens engines on fixture blueprints in a temporary folder and closes them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.events: list[WorkflowEvent] = []

    @property
    def notebook(self) -> Path:
        """Where the run writes its notebook."""
        return self.root / "run" / "notebook.ipynb"

    @property
    def state_db(self) -> Path:
        """The run's state database."""
        return self.root / "run" / "state.sqlite"

    def planner(self, name: str) -> BlueprintPlanner:
        """The blueprint planner of ``tests/fixtures/engine/NAME.yaml``."""
        return BlueprintPlanner(load_blueprint_file(BLUEPRINTS / f"{name}.yaml"))

    async def open(
        self,
        name: str,
        *,
        planner: Planner | None = None,
        **options: Any,
    ) -> Engine:
        """An engine on blueprint ``name`` with ``EngineOptions(**options)``."""
        engine = await open_headless(
            HeadlessRun(
                planner=planner or self.planner(name),
                notebook=self.notebook,
                state_db=self.state_db,
                problem=f"test {name}",
                options=EngineOptions(**options),
            )
        )
        engine.subscribe(self.events.append)
        return engine

    def run(self, scenario: Callable[[], Awaitable[T]]) -> T:
        """Run an async scenario to completion."""
        return asyncio.run(scenario())

    def store(self) -> SqliteStore:
        """A second, synchronous connection to the run's database (for assertions)."""
        return SqliteStore(self.state_db)

    def ledger_lines(self) -> list[str]:
        """Lines the side-effect fixture appended (its countable side effect)."""
        path = self.notebook.parent / "ledger.txt"
        return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def harness(tmp_path: Path) -> EngineHarness:
    """An :class:`EngineHarness` in a fresh temporary folder."""
    return EngineHarness(tmp_path)


async def finish(engine: Engine) -> None:
    """Close an engine's kernel, planner and store."""
    await close_headless(engine)


async def run_once(engine: Engine, status: str) -> RunResult:
    """Run ``engine`` until it stops, check it stopped ``status``, and close it either way."""
    try:
        result = await engine.run()
        assert result.snapshot.run.status == status, result.snapshot.run
        return result
    finally:
        await finish(engine)
