"""A workflow's kernel killed over REST-driven runs (issue 19): mid-cell and while idle, the
kernel is replaced, its state rebuilt from the completed cells, and the run completes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sqlite3
from pathlib import Path
from time import monotonic
from typing import Any

from notebook_bcc.server.app import NotebookBccApp
from tests.server.conftest import Api, read_notebook


async def _gone(pid: int, timeout: float = 30.0) -> None:
    deadline = monotonic() + timeout
    while monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().rsplit(")", 1)[-1].split()[0] == "Z":
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"kernel {pid} still runs")


async def _napping(api: Api, root: Path, name: str) -> dict[str, Any]:
    """The kernel-kill blueprint started in folder ``name``, once its cell naps (mid-cell)."""
    folder = root / name
    folder.mkdir()
    (folder / "nap.txt").write_text("nap")
    started = await api.start(
        f"{name}/run.ipynb", "blueprints/kernel_kill.yaml", options={"auto_confirm": True}
    )
    deadline = monotonic() + 60
    while (folder / "nap.txt").read_text() != "napping":
        assert monotonic() < deadline, await api.snapshot(started["workflow_id"])
        await asyncio.sleep(0.05)
    return started


async def test_kernel_killed_mid_cell_is_replaced_and_the_run_completes(
    api: Api, root: Path
) -> None:
    started = await _napping(api, root, "mid")
    workflow_id = started["workflow_id"]
    pid = started["kernel"]["pid"]
    assert isinstance(pid, int)
    os.kill(pid, signal.SIGKILL)
    done = await api.wait_status(workflow_id, "completed", "failed", "waiting", timeout=90)
    assert done["run"]["status"] == "completed", done["run"]
    assert done["acceptance"]["use"]["value == 42"]["status"] == "passed", "state rebuilt"
    trace = await api.ok("GET", "workflows", workflow_id, "trace")
    failed = [r for r in trace["trace"] if r["action"].endswith("running→failed")]
    assert len(failed) == 1, failed
    assert failed[0]["actor"] == "recovery"
    replays = [
        r
        for r in trace["trace"]
        if r["action"].endswith("running→completed") and r["result"] == "replayed"
    ]
    assert len(replays) >= 2, "the inputs cell and prep's cell were replayed"


async def test_kernel_restarted_mid_cell_from_lab_ends_the_cell_and_the_run_completes(
    api: Api, root: Path
) -> None:
    """JupyterLab's Restart (the kernels API) fires no restart callback and the new process is
    alive: the cell must still end, be run again on the rebuilt state, and the run complete."""
    started = await _napping(api, root, "lab")
    workflow_id = started["workflow_id"]
    kernel_id = started["kernel"]["kernel_id"]
    restarted = await api.fetch(
        "api", "kernels", kernel_id, "restart", method="POST", body=b"", raise_error=False
    )
    assert restarted.code == 200, restarted.body
    done = await api.wait_status(workflow_id, "completed", "failed", "waiting", timeout=60)
    assert done["run"]["status"] == "completed", done["run"]
    assert done["acceptance"]["use"]["value == 42"]["status"] == "passed", "state rebuilt"
    trace = await api.ok("GET", "workflows", workflow_id, "trace")
    failed = [r for r in trace["trace"] if r["action"].endswith("running→failed")]
    assert len(failed) == 1, failed
    pollers = [t for t in asyncio.all_tasks() if "_async_poll_kernel_alive" in repr(t.get_coro())]
    assert pollers == [], "no liveness poller of the ended cell keeps running"
    said = " ".join(done["effects"]["history"] + done["effects"]["current"])
    # nbclient may see the old process gone first ("died"), else the new process id tells
    either = r"stopped \(it died or was restarted\)|was restarted \(from JupyterLab.*\)"
    assert re.search(rf"the kernel ({either}) while running", said), said


async def test_kernel_killed_while_idle_is_replaced_before_the_next_cell(
    api: Api, root: Path
) -> None:
    started = await api.start("idle/run.ipynb", "blueprints/kernel_kill.yaml")
    workflow_id = started["workflow_id"]
    waiting = await api.wait_status(workflow_id, "waiting", "failed")
    (decision,) = waiting["run"]["pending"]
    pid = started["kernel"]["pid"]
    os.kill(pid, signal.SIGKILL)
    await _gone(pid)
    code, body = await api.command(
        workflow_id, decide=decision["id"], decision="approve", expected_version=waiting["version"]
    )
    assert code == 200, body
    done = await api.wait_status(workflow_id, "completed", "failed", "waiting", timeout=90)
    assert done["run"]["status"] == "completed", done["run"]
    assert done["acceptance"]["use"]["value == 42"]["status"] == "passed", "state rebuilt"


async def test_kernel_killed_in_the_irreversible_export_never_repeats_it(
    api: Api, root: Path
) -> None:
    """The kernel dies after the export's side effect: an in-doubt question (never auto), a
    human says it ran, the run completes over REST, and the export ran once."""
    folder = root / "exp"
    folder.mkdir()
    (folder / "hold.txt").write_text("after")
    options = {"auto_confirm": True, "confirm_irreversible": False}
    started = await api.start("exp/run.ipynb", "blueprints/crash_export.yaml", options=options)
    workflow_id = started["workflow_id"]
    deadline = monotonic() + 90
    while not (folder / "export.appended").exists():
        assert monotonic() < deadline, await api.snapshot(workflow_id)
        await asyncio.sleep(0.05)
    os.kill(started["kernel"]["pid"], signal.SIGKILL)
    waiting = await api.wait_status(workflow_id, "waiting", "failed", "completed", timeout=90)
    (pending,) = waiting["run"]["pending"]
    assert pending["kind"] == "in_doubt", waiting["run"]
    (folder / "hold.txt").unlink()
    version = waiting["version"]
    for _ in range(20):  # the kernel's rebuild may still commit after the question is asked
        code, body = await api.command(
            workflow_id, decide=pending["id"], decision="reject", expected_version=version
        )
        if code != 409 or body["code"] != "conflict":
            break
        version = body["details"]["snapshot"]["version"]
    assert code == 200, body
    done = await api.wait_status(workflow_id, "completed", "failed", "waiting", timeout=90)
    assert done["run"]["status"] == "completed", done["run"]
    assert (folder / "exports.log").read_text().splitlines() == ["exported 2"]
    sources = ["".join(c["source"]) for c in read_notebook(folder / "run.ipynb")["cells"]]
    assert sum("exports.log" in s for s in sources) == 1, "the export cell is in the notebook once"


async def test_a_kernel_rebuild_refuses_a_cell_source_altered_in_the_store(
    api: Api, root: Path, bcc_app: NotebookBccApp
) -> None:
    """While the run waits, a completed cell's source is edited in the state database (the
    notebook still shows the original); the kernel dies. The rebuild would replay the forged
    source: it verifies the store first, fails the run naming the row, and runs nothing."""
    started = await api.start("forged/run.ipynb", "blueprints/kernel_kill.yaml")
    workflow_id = started["workflow_id"]
    waiting = await api.wait_status(workflow_id, "waiting", "failed")
    (decision,) = waiting["run"]["pending"]
    forged = root / "FORGED"
    with contextlib.closing(sqlite3.connect(bcc_app.store_path)) as conn:
        cell_id, text = conn.execute(
            "SELECT cell_id, cell FROM cells WHERE workflow_id = ? AND cell LIKE '%base = 41%'",
            (workflow_id,),
        ).fetchone()
        cell = json.loads(text)
        cell["source"] = f"open({str(forged)!r}, 'w').write('x'); base = 41"
        conn.execute("UPDATE cells SET cell = ? WHERE cell_id = ?", (json.dumps(cell), cell_id))
        conn.commit()
    pid = started["kernel"]["pid"]
    os.kill(pid, signal.SIGKILL)
    await _gone(pid)
    code, body = await api.command(
        workflow_id, decide=decision["id"], decision="approve", expected_version=waiting["version"]
    )
    assert code == 200, body
    done = await api.wait_status(workflow_id, "completed", "failed", timeout=90)
    assert done["run"]["status"] == "failed", done["run"]
    assert "was altered after it was written" in done["run"]["reason"], done["run"]
    assert "cells row" in done["run"]["reason"], done["run"]
    assert not forged.exists(), "the forged source ran in the rebuilt kernel"
