"""Durability fixtures: real kernels, SQLite files, blueprints from tests/fixtures/durability."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from notebook_bcc.blueprint.loader import load_blueprint_file
from notebook_bcc.engine.engine import Engine, RunResult
from notebook_bcc.engine.headless import HeadlessRun, close_headless, open_headless, open_stored
from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.models.contract import ExecutionContract, ExecutionStatus
from notebook_bcc.models.names import State
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.planners.base import Planner
from notebook_bcc.planners.blueprint import BlueprintPlanner
from notebook_bcc.store.sqlite import SqliteStore
from tests.conftest import FIXTURES

T = TypeVar("T")
BLUEPRINTS = FIXTURES / "durability"
FINAL = {"before_nap": 41, "after": 42}
"""Kernel values of a completed faults.yaml run (``after`` needs ``before_nap`` from an
earlier cell: a kernel state lost on the way shows)."""
CLI = Path(sys.executable).with_name("notebook-bcc")
"""The installed console script: the process a user starts."""


class Durable:
    """One workflow on ``faults.yaml`` (or another fixture) in a temporary folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def notebook(self) -> Path:
        """The run's notebook (its folder is the kernel's working directory)."""
        return self.root / "run" / "faults.ipynb"

    @property
    def state_db(self) -> Path:
        """The run's state database."""
        return self.root / "run" / "state.sqlite"

    def blueprint(self, name: str = "faults") -> Path:
        """``tests/fixtures/durability/NAME.yaml``."""
        return BLUEPRINTS / f"{name}.yaml"

    def planner(self, name: str = "faults") -> BlueprintPlanner:
        """A blueprint planner of a fixture."""
        return BlueprintPlanner(load_blueprint_file(self.blueprint(name)))

    @property
    def nap_file(self) -> Path:
        """The nap cell's switch (see faults.yaml)."""
        return self.notebook.parent / "nap.txt"

    def nap(self, seconds: float) -> None:
        """Make the first execution of the nap cell sleep ``seconds`` (see faults.yaml)."""
        self.notebook.parent.mkdir(parents=True, exist_ok=True)
        self.nap_file.write_text(str(seconds))

    async def open(self, *, planner: Planner | None = None, **options: Any) -> Engine:
        """A new headless engine with ``EngineOptions(**options)``."""
        return await open_headless(
            HeadlessRun(
                planner=planner or self.planner(),
                notebook=self.notebook,
                state_db=self.state_db,
                problem="faults",
                options=EngineOptions(**options),
            )
        )

    async def resume(self, *, planner: Planner | None = None, **options: Any) -> RunResult:
        """What ``notebook-bcc resume`` does, in this process: reopen, recover, run, close."""
        engine = await open_stored(
            self.state_db,
            workflow_id=self.workflow_id(),
            options=EngineOptions(**options),
            planner=planner,
        )
        try:
            await engine.recovery.prepare()
            return await engine.run()
        finally:
            await close_headless(engine)

    def run(self, scenario: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run an async scenario to completion."""
        return asyncio.run(scenario())

    def store(self) -> SqliteStore:
        """A second, synchronous connection to the run's database."""
        return SqliteStore(self.state_db)

    def workflow_id(self) -> str:
        """The only workflow in the database."""
        store = self.store()
        try:
            (workflow_id,) = store.workflow_ids()
            return workflow_id
        finally:
            store.close()

    def snapshot(self) -> WorkflowSnapshot:
        """The stored snapshot."""
        store = self.store()
        try:
            return store.load(self.workflow_id())
        finally:
            store.close()

    def contracts(self) -> list[ExecutionContract]:
        """Every contract of the workflow, in creation order."""
        store = self.store()
        try:
            return store.contracts(self.workflow_id())
        finally:
            store.close()

    def nap_contracts(self) -> list[ExecutionContract]:
        """Execution contracts of the nap cell."""
        return [c for c in self.contracts() if "nap.txt" in c.action_detail.get("code", "")]

    def notebook_sources(self) -> list[str]:
        """Cell sources of the notebook file."""
        import nbformat

        nb = nbformat.read(str(self.notebook), as_version=4)  # type: ignore[no-untyped-call]
        return [cell["source"] for cell in nb.cells]

    def store_sources(self) -> list[str]:
        """Cell sources the store holds, in notebook order."""
        store = self.store()
        try:
            return [str(row.cell.get("source", "")) for row in store.cells(self.workflow_id())]
        finally:
            store.close()

    def assert_finished(self) -> None:
        """The run completed with the right kernel values; the notebook file holds the
        store's cells, none duplicated; no contract is left RUNNING; the chains verify."""
        snap = self.snapshot()
        assert snap.run.status == "completed", snap.run.reason
        assert snap.fsm.state is State.WORKFLOW_COMPLETED
        for name, value in FINAL.items():
            assert snap.variables[name].value == value
        assert self.notebook_sources() == self.store_sources()
        store = self.store()
        try:
            rows = store.cells(self.workflow_id())
            running = store.contracts(self.workflow_id(), statuses=[ExecutionStatus.RUNNING])
            assert store.verify() > 0
        finally:
            store.close()
        assert len({row.cell_id for row in rows}) == len(rows)
        assert running == []

    # -- real CLI processes -------------------------------------------------------------------

    def cli(self, *args: str) -> subprocess.Popen[str]:
        """Start ``notebook-bcc ARGS`` as its own process (output captured)."""
        return subprocess.Popen(
            [str(CLI), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=self.root,
        )

    def cli_run(self, *extra: str) -> subprocess.Popen[str]:
        """``notebook-bcc run faults.yaml`` into this folder."""
        return self.cli(
            "run",
            str(self.blueprint()),
            "--notebook",
            str(self.notebook),
            "--state-db",
            str(self.state_db),
            *extra,
        )

    def wait_for_nap(self, process: subprocess.Popen[str], timeout: float = 60.0) -> None:
        """Wait until the nap cell runs (its contract RUNNING and its nap file taken)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                _, err = process.communicate()
                raise AssertionError(f"the run ended early ({process.returncode}): {err}")
            if self.state_db.exists() and nap_taken(self.nap_file):
                running = [c for c in self._safe_nap_contracts() if c.status.value == "RUNNING"]
                if running:
                    return
            time.sleep(0.05)
        raise AssertionError("the nap cell never started")

    def _safe_nap_contracts(self) -> list[ExecutionContract]:
        try:
            return self.nap_contracts()
        except ValueError:  # the workflow row is not there yet
            return []


def nap_taken(nap_file: Path) -> bool:
    """Whether the nap cell read its nap file (it writes 0 back before sleeping)."""
    try:
        return nap_file.read_text() == "0"
    except FileNotFoundError:
        return False


@pytest.fixture
def durable(tmp_path: Path) -> Durable:
    """A :class:`Durable` in a fresh temporary folder."""
    return Durable(tmp_path)


def stop(process: subprocess.Popen[str]) -> None:
    """Make sure a CLI process is gone (a failed test must not leave it running)."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
