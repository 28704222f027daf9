"""Kernel fixtures: one real kernel per test module, driven from a loop on its own thread.

pytest-jupyter closes its event loop after every test, and a kernel client's sockets belong to
the loop that made them, so a module-scoped kernel lives on a private loop in a background
thread. Tests stay plain functions and call ``kh.run(coroutine)``; each test gets a fresh
document and runner on the shared kernel (``kh.runner()``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from notebook_bcc.kernel import (
    ActionOutcome,
    ActionPath,
    ActionRunner,
    KernelSession,
    MemorySink,
    NotebookDocument,
)
from notebook_bcc.models.actions import ExecAction, PlannerAction

LAST = ExecAction(codecell_id="lastAddedCellId")
"""Run the cell the last ``add`` made (what a planner's ``exec`` of a new cell sends)."""

T = TypeVar("T")


class LoopThread:
    """An asyncio loop running forever on a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Run ``coro`` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        """Stop the loop and its thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


async def started(runner: ActionRunner, cell_id: str, timeout: float = 30.0) -> None:
    """Wait until the cell has printed something: it is running in the kernel now."""
    cell = runner.document.get(cell_id)
    assert cell is not None
    deadline = asyncio.get_running_loop().time() + timeout
    while not cell.get("outputs"):
        assert asyncio.get_running_loop().time() < deadline, "the cell never started"
        await asyncio.sleep(0.02)


def path(index: int, behavior: str = "b1", iteration: int = 0, step: str = "st1") -> ActionPath:
    """An action path in stage ``s1`` (visit 1) with the given behavior and index."""
    return ActionPath("s1", 1, step, behavior, iteration, index)


class KernelHarness:
    """A shared kernel session plus helpers to make runners and run actions on it."""

    def __init__(self, loop: LoopThread, session: KernelSession, cwd: Path) -> None:
        self.loop = loop
        self.session = session
        self.cwd = cwd

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Run a coroutine on the kernel's loop."""
        return self.loop.run(coro, timeout)

    def runner(self, **kwargs: Any) -> tuple[ActionRunner, MemorySink]:
        """A fresh document and runner (with a memory sink) on the shared kernel."""
        sink = MemorySink()
        document = NotebookDocument(workflow_id="wf-test")
        sinks = [sink, *kwargs.pop("sinks", [])]
        runner = ActionRunner(self.session, document, sinks=sinks, **kwargs)
        self.run(runner.start())
        return runner, sink

    def act(
        self,
        runner: ActionRunner,
        action: PlannerAction,
        at: ActionPath,
        **kwargs: Any,
    ) -> ActionOutcome:
        """Run one action through ``runner``."""
        return self.run(runner.run(action, at, **kwargs))

    def value(self, expression: str) -> str:
        """The ``text/plain`` of an expression evaluated silently in the kernel."""
        reply = self.run(self.session.silent(user_expressions={"v": expression}))
        answer = reply.content["user_expressions"]["v"]
        assert answer["status"] == "ok", answer
        return str(answer["data"]["text/plain"])


@pytest.fixture(scope="module")
def loop_thread() -> Iterator[LoopThread]:
    """A private event loop for this module's kernel."""
    loop = LoopThread()
    yield loop
    loop.close()


@pytest.fixture(scope="module")
def kh(
    loop_thread: LoopThread, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KernelHarness]:
    """One real ipykernel for the whole test module."""
    cwd = tmp_path_factory.mktemp("kernel-cwd")
    session = KernelSession(cwd=cwd)
    loop_thread.run(session.start())
    yield KernelHarness(loop_thread, session, cwd)
    loop_thread.run(session.shutdown())
