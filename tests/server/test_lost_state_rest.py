"""Over REST (issue 19 §1): a kernel killed after the irreversible cell ran is replaced and
rebuilt without that cell, and the run asks the human (``lost_state``) instead of re-running it;
the question blocks the other decisions, names the code, and each answer does what it says."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from pathlib import Path
from time import monotonic

import pytest

from tests.conftest import FIXTURES
from tests.server.conftest import Api, read_notebook

OPTIONS = {"auto_confirm": False, "confirm_irreversible": False}


async def _gone(pid: int, timeout: float = 30.0) -> None:
    deadline = monotonic() + timeout
    while monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat")
        try:
            if stat.read_text().rsplit(")", 1)[-1].split()[0] == "Z":
                return
        except OSError:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"kernel {pid} still runs")


@pytest.mark.parametrize("answer", ["approve", "reject"])
async def test_kernel_lost_after_the_irreversible_cell_asks_the_human(
    api: Api, root: Path, answer: str
) -> None:
    shutil.copy(FIXTURES / "engine" / "lost_state.yaml", root / "blueprints" / "lost_state.yaml")
    folder = root / answer
    started = await api.start(f"{answer}/run.ipynb", "blueprints/lost_state.yaml", options=OPTIONS)
    workflow_id = started["workflow_id"]
    waiting = await api.wait_status(workflow_id, "waiting", "failed", "completed")
    (confirmation,) = waiting["run"]["pending"]
    assert confirmation["kind"] == "stage_confirmation", waiting["run"]
    ledger = folder / "ledger.txt"
    assert ledger.read_text().splitlines() == ["sent"]

    pid = started["kernel"]["pid"]
    os.kill(pid, signal.SIGKILL)  # idle, after the irreversible cell ran
    await _gone(pid)
    code, body = await api.command(
        workflow_id,
        decide=confirmation["id"],
        decision="approve",
        expected_version=waiting["version"],
    )
    assert code == 200, body
    asked = await api.wait(
        workflow_id,
        lambda s: (
            any(p["kind"] == "lost_state" for p in s["run"]["pending"])
            or s["run"]["status"] in ("completed", "failed")
        ),
        timeout=90,
    )
    assert asked["run"]["status"] == "waiting", asked["run"]
    (lost,) = asked["run"]["pending"]
    assert lost["kind"] == "lost_state"
    assert "ledger.write" in lost["details"]["code"]
    assert "receipt" in lost["details"]["names"]
    assert ledger.read_text().splitlines() == ["sent"], "never re-run by itself"

    # a stale or wrong answer is refused; the question is answered like any decision
    code, body = await api.command(
        workflow_id,
        decide=confirmation["id"],
        decision="approve",
        expected_version=asked["version"],
    )
    assert code == 409, body
    code, body = await api.command(
        workflow_id, decide=lost["id"], decision=answer, expected_version=asked["version"]
    )
    assert code == 200, body
    done = await api.wait_status(workflow_id, "completed", "failed", "waiting", timeout=90)
    assert done["run"]["status"] == "completed", done["run"]
    lines = ledger.read_text().splitlines()
    assert lines == (["sent", "sent"] if answer == "approve" else ["sent"])

    # the GET that said "completed" answered after the run's final notebook write
    report = read_notebook(folder / "run.ipynb")["cells"][-1]
    printed = "".join("".join(o.get("text", "")) for o in report.get("outputs", []))
    assert "total 42" in printed, printed
    assert ("receipt r-1" in printed) == (answer == "approve"), printed
    said = "re-run once to restore" if answer == "approve" else "continued without the state"
    assert any(said in e for e in done["effects"]["history"] + done["effects"]["current"])
