"""A headless run whose kernel someone else restarts under a running cell (its manager's
``restart_kernel``, which interrupts first, as JupyterLab's Restart does): the cell runs again
on the new kernel holding only its own outputs, the first attempt's record says why."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

from notebook_bcc.blueprint.loader import load_blueprint_file
from notebook_bcc.engine.engine import RunResult
from notebook_bcc.models.contract import ExecutionContract, ExecutionStatus
from notebook_bcc.planners.blueprint import BlueprintPlanner
from notebook_bcc.store.sqlite import CellRow
from tests.conftest import FIXTURES
from tests.engine.conftest import EngineHarness, finish

BLUEPRINT = FIXTURES / "server" / "restart_rerun.yaml"
"""Prints, naps the first time, and the time after waits for ``go.txt``."""


async def _until_says(path: Path, text: str) -> None:
    for _ in range(3000):
        if path.exists() and path.read_text() == text:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path.name} never said {text!r}")


def _outputs(cell: dict[str, Any]) -> list[tuple[str, str]]:
    return [(o["output_type"], "".join(o.get("text", ""))) for o in cell["outputs"]]


def _work(harness: EngineHarness, workflow_id: str) -> tuple[list[ExecutionContract], CellRow]:
    with contextlib.closing(harness.store()) as store:
        contracts = [
            c
            for c in store.contracts(workflow_id)
            if c.action_type == "cell_execution"
            and "attempt.txt" in c.action_detail.get("code", "")
        ]
        (row,) = [r for r in store.cells(workflow_id) if "attempt.txt" in str(r.cell["source"])]
    return contracts, row


def test_a_kernel_restarted_mid_cell_runs_the_cell_again_with_only_its_own_outputs(
    harness: EngineHarness,
) -> None:
    folder = harness.notebook.parent
    folder.mkdir(parents=True)
    attempt = folder / "attempt.txt"
    attempt.write_text("first")
    planner = BlueprintPlanner(load_blueprint_file(BLUEPRINT))

    async def scenario() -> tuple[RunResult, CellRow, list[ExecutionContract]]:
        engine = await harness.open("restart_rerun", planner=planner, auto_confirm=True)
        try:
            task = asyncio.create_task(engine.run())
            await _until_says(attempt, "sleeping")
            await engine.runtime.session.km.restart_kernel()
            await _until_says(attempt, "again")
            contracts, running_row = _work(harness, engine.snapshot.workflow_id)
            (folder / "go.txt").write_text("go")
            return await asyncio.wait_for(task, 60), running_row, contracts
        finally:
            await finish(engine)

    result, running_row, (first, again) = harness.run(scenario)
    assert result.exit_code == 0, result.snapshot.run.reason
    assert first.status is ExecutionStatus.FAILED
    assert "restarted" in (first.error_message or ""), first.error_message
    assert running_row.contract_id == again.execution_id
    assert running_row.cell["outputs"] == [], "the first attempt's outputs in the run again's row"
    expected = [("stream", "attempt sleeping\ndone\n")]
    (_, again_done), row = _work(harness, result.snapshot.workflow_id)
    assert again_done.status is ExecutionStatus.COMPLETED
    assert _outputs(row.cell) == expected
    cells = json.loads(harness.notebook.read_text())["cells"]
    (cell,) = [c for c in cells if "attempt.txt" in "".join(c["source"])]
    assert _outputs(cell) == expected
    bcc = cell["metadata"]["notebook_bcc"]
    assert bcc["status"] == "ok"
    assert "message" not in bcc, bcc
