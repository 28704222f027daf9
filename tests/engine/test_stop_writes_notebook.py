"""Whoever sees the run stop finds every cell in the notebook file.

The moment the run's status leaves ``running`` (waiting for a human, completed, failed...)
is published as a ``run`` event and is what a client polls for; a script or a person acting
on it reads, renames or opens the file. The file is checked inside the event listener, i.e.
at the very moment the status is published, against the cells the run had at that moment.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from notebook_bcc.engine.engine import Engine
from notebook_bcc.kernel.writer import NotebookWriter
from notebook_bcc.models.event import WorkflowEvent
from tests.engine.conftest import EngineHarness, finish


def _cell_ids(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [str(cell.get("id")) for cell in json.loads(path.read_text())["cells"]]


class StopWatch:
    """At each ``run`` event leaving ``running``: the file's cells and the run's cells."""

    def __init__(self, harness: EngineHarness) -> None:
        self.harness = harness
        self.engine: Engine | None = None
        self.seen: list[tuple[str, list[str], list[str]]] = []

    def __call__(self, event: WorkflowEvent) -> None:
        if event.kind != "run" or event.from_ != "running" or self.engine is None:
            return
        document = [str(cell.get("id")) for cell in self.engine.runtime.document.nb.cells]
        self.seen.append((str(event.to), _cell_ids(self.harness.notebook), document))


def test_waiting_and_completed_are_published_after_the_notebook_holds_every_cell(
    harness: EngineHarness,
) -> None:
    watch = StopWatch(harness)

    async def scenario() -> None:
        engine = await harness.open("confirm")
        watch.engine = engine
        engine.subscribe(watch)
        try:
            waiting = await engine.run()
            assert waiting.snapshot.run.status == "waiting"
            pending = waiting.snapshot.run.pending[0]
            await engine.decide(pending.id, "approve", actor="test")
            done = await engine.run()
            assert done.snapshot.run.status == "completed", done.snapshot.run.reason
        finally:
            await finish(engine)

    harness.run(scenario)
    assert [to for to, _, _ in watch.seen] == ["waiting", "completed"]
    for to, on_disk, in_run in watch.seen:
        assert in_run, to
        assert on_disk == in_run, to
    assert len(watch.seen[1][1]) > len(watch.seen[0][1])


def test_a_snapshot_reader_that_sees_the_stop_finds_every_cell_in_the_file(
    harness: EngineHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A poller of the snapshot (a REST GET) asks ``stop_published`` before answering; the
    run's final write is slowed so that a reader not waiting for it would see the old file."""
    real_replace = NotebookWriter._replace

    def slow_replace(self: NotebookWriter, data: bytes) -> None:
        time.sleep(0.3)  # the write's I/O thread: a slow disk
        real_replace(self, data)

    monkeypatch.setattr(NotebookWriter, "_replace", slow_replace)

    async def scenario() -> tuple[str, list[str], list[str]]:
        engine = await harness.open("confirm")
        task = asyncio.ensure_future(engine.run())
        try:
            while engine.snapshot.run.status == "running" and not task.done():
                await asyncio.sleep(0)
            status = engine.snapshot.run.status
            await engine.stop_published(30)
            on_disk = _cell_ids(harness.notebook)
            in_run = [str(cell.get("id")) for cell in engine.runtime.document.nb.cells]
            await task
            return status, on_disk, in_run
        finally:
            await task
            await finish(engine)

    status, on_disk, in_run = harness.run(scenario)
    assert status == "waiting"
    assert in_run
    assert on_disk == in_run
