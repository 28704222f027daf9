"""JupyterLab's Restart Kernel under a running workflow cell: the cell runs again on the new
kernel holding only its own outputs, and the first attempt's record says the kernel was
restarted under it (the restart interrupts the kernel first: its KeyboardInterrupt belongs to
the first attempt, never to the run again)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from time import monotonic
from typing import Any

from notebook_bcc.models.contract import ExecutionContract, ExecutionStatus
from notebook_bcc.server.app import NotebookBccApp
from notebook_bcc.store.sqlite import SqliteStore
from tests.server.conftest import Api, read_notebook


async def _until(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    """Wait until ``check()`` holds (a file the cell wrote, the writer's next write)."""
    deadline = monotonic() + timeout
    while not check():
        assert monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def _says(path: Path, text: str) -> Callable[[], bool]:
    return lambda: path.exists() and path.read_text() == text


def _text(output: dict[str, Any]) -> str:
    text = output.get("text", "")
    return "".join(text) if isinstance(text, list) else str(text)


def _work_cell(cells: list[dict[str, Any]]) -> dict[str, Any]:
    (cell,) = [c for c in cells if "attempt.txt" in "".join(c.get("source", ""))]
    return cell


def _work_contracts(store: SqliteStore, workflow_id: str) -> list[ExecutionContract]:
    return [
        c
        for c in store.contracts(workflow_id)
        if c.action_type == "cell_execution" and "attempt.txt" in c.action_detail.get("code", "")
    ]


async def test_a_cell_run_again_after_labs_restart_holds_only_its_own_outputs(
    api: Api, root: Path, bcc_app: NotebookBccApp
) -> None:
    folder = root / "rr"
    folder.mkdir()
    attempt = folder / "attempt.txt"
    attempt.write_text("first")
    started = await api.start(
        "rr/run.ipynb", "blueprints/restart_rerun.yaml", options={"auto_confirm": True}
    )
    workflow_id = started["workflow_id"]
    await _until("the first attempt to nap", _says(attempt, "sleeping"))
    restarted = await api.fetch(
        "api",
        "kernels",
        started["kernel"]["kernel_id"],
        "restart",
        method="POST",
        body=b"",
        raise_error=False,
    )
    assert restarted.code == 200, restarted.body
    await _until("the cell to run again", _says(attempt, "again"))

    # mid-run: the store's row was written ahead with the run again's contract (D10)
    with contextlib.closing(SqliteStore(bcc_app.store_path)) as store:
        first, again = _work_contracts(store, workflow_id)
        (row,) = [r for r in store.cells(workflow_id) if r.cell_id == first.metadata["cell_id"]]
    assert first.status is ExecutionStatus.FAILED
    assert first.transitions[-1].actor == "recovery"
    assert "restarted" in (first.error_message or ""), first.error_message
    assert first.metadata.get("kernel_died") is True
    assert again.status is ExecutionStatus.RUNNING
    assert row.contract_id == again.execution_id
    assert row.cell["outputs"] == [], "the first attempt's outputs ride in the run again's row"
    assert "message" not in row.cell["metadata"]["notebook_bcc"], row.cell["metadata"]

    # ... and the notebook (the file JupyterLab shows) no longer holds the first attempt
    notebook = root / "rr" / "run.ipynb"
    await _until(
        "the notebook to show the cell running again",
        lambda: (
            _work_cell(read_notebook(notebook)["cells"])["metadata"]["notebook_bcc"]["status"]
            in ("pending", "running")
        ),
        timeout=15,
    )
    shown = _work_cell(read_notebook(notebook)["cells"])["outputs"]
    so_far = [(o["output_type"], _text(o)) for o in shown]
    assert so_far in ([], [("stream", "attempt sleeping\n")]), shown

    (folder / "go.txt").write_text("go")
    done = await api.wait_status(workflow_id, "completed", "failed", "waiting", timeout=60)
    assert done["run"]["status"] == "completed", done["run"]

    expected = [("stream", "attempt sleeping\ndone\n")]
    cell = _work_cell(read_notebook(notebook)["cells"])
    assert [(o["output_type"], _text(o)) for o in cell["outputs"]] == expected, cell["outputs"]
    bcc = cell["metadata"]["notebook_bcc"]
    assert bcc["status"] == "ok"
    assert "message" not in bcc, bcc
    with contextlib.closing(SqliteStore(bcc_app.store_path)) as store:
        first, again = _work_contracts(store, workflow_id)
        (row,) = [r for r in store.cells(workflow_id) if r.cell_id == cell["id"]]
    assert again.status is ExecutionStatus.COMPLETED
    assert "KeyboardInterrupt" not in (again.result or ""), again.result
    assert row.contract_id == again.execution_id
    assert [(o["output_type"], _text(o)) for o in row.cell["outputs"]] == expected
    assert row.cell["metadata"]["notebook_bcc"]["status"] == "ok"
    assert "message" not in row.cell["metadata"]["notebook_bcc"]
