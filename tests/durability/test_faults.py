"""Faults (issue 7 §3): each ends in an explicit, recoverable state with its reason, and a
resume completes the run (DESIGN D1, D10, D11). Faults are injected, never provoked through
permissions: tests and CI run as root (JUPYTER-NOTES "Tests as root").
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from notebook_bcc.cli import main
from notebook_bcc.engine.engine import Engine
from notebook_bcc.engine.headless import close_headless
from notebook_bcc.models.contract import ExecutionStatus
from notebook_bcc.models.names import State
from notebook_bcc.planners.base import PlannerError, PlannerReply, PlannerRequest
from notebook_bcc.planners.blueprint import BlueprintPlanner
from notebook_bcc.store.async_store import AsyncStore
from notebook_bcc.store.sqlite import Commit, CommitResult, SqliteStore
from tests.durability.conftest import Durable, nap_taken


async def until_napping(engine: Engine, durable: Durable) -> None:
    """Wait (in the engine's loop) until the kernel sleeps in the nap cell."""
    for _ in range(3000):
        naps = [
            c
            for c in engine.snapshot.open_contracts
            if "nap.txt" in c.action_detail.get("code", "")
        ]
        if naps and nap_taken(durable.nap_file):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the nap cell never started")


def test_kernel_killed_mid_cell_is_replaced_and_the_run_goes_on(durable: Durable) -> None:
    """D11 / issue 19: a kernel that dies under a reversible cell is replaced in the same run,
    its state rebuilt by replay, and the action runs again under a new contract."""
    durable.nap(120)

    async def scenario() -> Any:
        engine = await durable.open(auto_confirm=True)
        try:
            task = asyncio.create_task(engine.run())
            await until_napping(engine, durable)
            killed = engine.runtime.session.km.provisioner.pid
            os.kill(killed, signal.SIGKILL)
            result = await asyncio.wait_for(task, 60)
            assert engine.runtime.session.km.provisioner.pid != killed, "a new kernel"
            return result
        finally:
            await close_headless(engine)

    result = durable.run(scenario)
    assert result.exit_code == 0, result.snapshot.run.reason
    durable.assert_finished()
    nap_first, nap_again = durable.nap_contracts()
    assert nap_first.status is ExecutionStatus.FAILED
    assert nap_first.transitions[-1].actor == "recovery"
    assert nap_first.metadata.get("kernel_died") is True
    assert nap_again.status is ExecutionStatus.COMPLETED
    replays = [c for c in durable.contracts() if c.action_type == "replay"]
    assert len(replays) == 2, "the inputs cell and prep's cell rebuilt the kernel"
    assert all(c.status is ExecutionStatus.COMPLETED for c in replays)


def test_cell_timeout_fails_the_contract_and_the_behavior_retries_on_the_same_kernel(
    durable: Durable,
) -> None:
    durable.nap(60)

    async def scenario() -> tuple[Any, int, int]:
        engine = await durable.open(cell_timeout=1.5)
        try:
            await engine.runtime.start()
            pid = engine.runtime.session.km.provisioner.pid
            result = await asyncio.wait_for(engine.run(), 60)
            alive = await engine.runtime.session.is_alive()
            assert alive
            return result, pid, engine.runtime.session.km.provisioner.pid
        finally:
            await close_headless(engine)

    result, pid_before, pid_after = durable.run(scenario)
    assert result.exit_code == 0, result.snapshot.run.reason
    assert pid_before == pid_after, "the kernel survived the timeout (interrupted, not killed)"
    first, second = durable.nap_contracts()
    assert first.status is ExecutionStatus.FAILED
    assert "timeout" in (first.error_message or "")
    assert "1.5 s" in (first.error_message or "")
    assert second.status is ExecutionStatus.COMPLETED
    assert second.metadata["path"] != first.metadata["path"], "a retry writes a new cell"
    durable.assert_finished()


class FailingReflection(BlueprintPlanner):
    """An unreachable planner at the first stage reflection."""

    async def reflect_stage(self, request: PlannerRequest) -> PlannerReply:
        raise PlannerError("connection refused (after 3 retries)")


def test_planner_raising_fails_the_run_and_resume_with_a_working_planner_completes(
    durable: Durable,
) -> None:
    async def scenario() -> Any:
        engine = await durable.open(planner=FailingReflection(durable.planner().loaded))
        try:
            return await engine.run()
        finally:
            await close_headless(engine)

    result = durable.run(scenario)
    snap = result.snapshot
    assert result.exit_code == 1
    assert snap.run.status == "failed"
    assert snap.fsm.state is State.STEP_COMPLETED, "the FSM stays where it was (D1)"
    assert snap.run.reason == (
        "reflect_stage: planner failed: connection refused (after 3 retries)"
    )
    # resume reopens the stored planner (the blueprint), which answers now
    resumed = durable.run(lambda: durable.resume(auto_confirm=True))
    assert resumed.exit_code == 0, resumed.snapshot.run.reason
    durable.assert_finished()


def test_sqlite_locked_by_another_writer_exits_1_and_resume_continues(
    durable: Durable, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second connection holds the write lock when the engine records the outcome of the
    first code cell: the process exits 1 naming the lock, the database stays at its last
    commit (the cell's contract RUNNING), and once the lock is free ``resume`` re-runs that
    reversible cell and completes."""
    holder: list[sqlite3.Connection] = []
    seen: dict[str, Any] = {}
    commit = SqliteStore.commit
    open_store = AsyncStore.open.__func__  # type: ignore[attr-defined]

    def locking_commit(self: SqliteStore, change: Commit) -> CommitResult:
        ends_prep = "contract_terminal" in change.kinds and any(
            "before_nap = 41" in c.action_detail.get("code", "") for c in change.contracts
        )
        if ends_prep and not holder:
            seen["version"] = self.load(change.snapshot.workflow_id).version
            other = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
            other.execute("BEGIN IMMEDIATE")
            holder.append(other)
        return commit(self, change)

    async def impatient_open(cls: type[AsyncStore], /, path: Any, **kwargs: Any) -> AsyncStore:
        store: AsyncStore = await open_store(cls, path, **{**kwargs, "busy_timeout": 0.3})
        return store

    monkeypatch.setattr(SqliteStore, "commit", locking_commit)
    monkeypatch.setattr(AsyncStore, "open", classmethod(impatient_open))
    argv = ["--notebook", str(durable.notebook), "--state-db", str(durable.state_db)]
    code = main(["run", str(durable.blueprint()), *argv, "--auto-confirm"])
    err = capsys.readouterr().err
    try:
        assert code == 1, err
        assert "locked by another writer" in err
        assert str(durable.state_db) in err
        snap = durable.snapshot()  # a reader is not blocked by the writer (WAL)
        assert snap.version == seen["version"], "the database stayed at its last commit"
        prep = [c for c in durable.contracts() if "before_nap" in c.action_detail.get("code", "")]
        assert [c.status for c in prep] == [ExecutionStatus.RUNNING]
        store = durable.store()
        try:
            assert store.verify() > 0
        finally:
            store.close()
    finally:
        for other in holder:
            other.execute("ROLLBACK")
            other.close()
    monkeypatch.undo()
    assert main(["resume", "--state-db", str(durable.state_db), "--auto-confirm"]) == 0
    capsys.readouterr()
    durable.assert_finished()
    prep = [c for c in durable.contracts() if "before_nap = 41" in c.action_detail.get("code", "")]
    assert [c.status for c in prep] == [ExecutionStatus.FAILED, ExecutionStatus.COMPLETED]
    assert prep[0].error_message == "interrupted"


def test_notebook_write_failure_fails_the_run_and_resume_writes_it(
    durable: Durable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC on the notebook's atomic rename: the run fails with the reason, the store keeps
    every cell, and a resume (with space again) completes and writes the notebook."""
    replace = os.replace

    def full_disk(src: Any, dst: Any, **kwargs: Any) -> None:
        if Path(dst) == durable.notebook.resolve():
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        replace(src, dst, **kwargs)

    monkeypatch.setattr(os, "replace", full_disk)

    async def scenario() -> Any:
        engine = await durable.open(auto_confirm=True)
        try:
            return await engine.run()
        finally:
            await close_headless(engine)

    result = durable.run(scenario)
    snap = result.snapshot
    assert result.exit_code == 1
    assert snap.run.status == "failed"
    assert snap.fsm.state is not State.ERROR, "an operational failure leaves the FSM (D1)"
    reason = snap.run.reason or ""
    assert "notebook" in reason
    assert "No space left on device" in reason
    assert not durable.notebook.exists()
    assert durable.store_sources(), "the cells are in the store"
    monkeypatch.undo()

    resumed = durable.run(lambda: durable.resume(auto_confirm=True))
    assert resumed.exit_code == 0, resumed.snapshot.run.reason
    durable.assert_finished()
