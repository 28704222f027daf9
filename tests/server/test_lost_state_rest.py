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
from typing import Any

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


async def _until_lost(
    api: Api, root: Path, name: str, blueprint: str = "lost_state.yaml"
) -> tuple[str, dict[str, Any], dict[str, Any], Path]:
    """Run until the send ran, kill the idle kernel, approve the stage confirmation: the new
    kernel lacks the send's state and the run asks. (workflow id, the snapshot that asks,
    the confirmation answered, the ledger)."""
    shutil.copy(FIXTURES / "engine" / blueprint, root / "blueprints" / blueprint)
    folder = root / name
    started = await api.start(f"{name}/run.ipynb", f"blueprints/{blueprint}", options=OPTIONS)
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
    return workflow_id, asked, confirmation, ledger


@pytest.mark.parametrize("answer", ["approve", "reject"])
async def test_kernel_lost_after_the_irreversible_cell_asks_the_human(
    api: Api, root: Path, answer: str
) -> None:
    workflow_id, asked, confirmation, ledger = await _until_lost(api, root, answer)
    folder = ledger.parent
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


async def _lines(ledger: Path, count: int, timeout: float = 60.0) -> None:
    deadline = monotonic() + timeout
    while len(ledger.read_text().splitlines()) < count:
        assert monotonic() < deadline, f"the ledger still reads {ledger.read_text()!r}"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("stop", ["cancel", "delete"])
async def test_an_approved_rerun_is_recorded_before_it_runs_and_a_stop_interrupts_it(
    api: Api, root: Path, stop: str
) -> None:
    """The approval and the re-run's RUNNING contract are committed before the cell runs
    (write-ahead: a process killed meanwhile leaves a record that it may have happened), and
    a CANCEL or DELETE sent while it runs interrupts it within stop_timeout (5 s here) instead
    of waiting for it."""
    workflow_id, asked, _, ledger = await _until_lost(api, root, stop, "lost_state_hold.yaml")
    (lost,) = asked["run"]["pending"]
    approving = asyncio.ensure_future(
        api.command(
            workflow_id, decide=lost["id"], decision="approve", expected_version=asked["version"]
        )
    )
    await _lines(ledger, 2)  # the re-run is under way (and holds)
    during = await api.snapshot(workflow_id)
    assert not approving.done(), "the approval answers once its re-run ended"
    assert [p["kind"] for p in during["run"]["pending"]] == [], during["run"]
    running = [c for c in during["open_contracts"] if c["action_type"] == "replay"]
    assert [c["status"] for c in running] == ["RUNNING"], during["open_contracts"]
    trace = await api.ok("GET", "workflows", workflow_id, "trace")
    resumed = [r for r in trace["trace"] if r["metadata"].get("trigger") == "resume"]
    assert resumed, "the re-run's RUNNING transition is in the stored trace before it ends"

    began = monotonic()
    if stop == "cancel":
        code, body = await api.command(
            workflow_id, event="CANCEL", expected_version=during["version"]
        )
        assert code == 200, body
        assert body["run"]["status"] == "cancelled", body["run"]
    else:
        code, body = await api.call("DELETE", "workflows", workflow_id)
        assert code == 200, body
    took = monotonic() - began
    assert took < 5.0 + 2, f"the stop took {took:.1f} s (stop_timeout 5 s)"
    code, answered = await asyncio.wait_for(approving, 10)
    assert code in (200, 409), answered
    assert ledger.read_text().splitlines() == ["sent", "sent"], "re-run once, never again"
    final = await api.snapshot(workflow_id)
    assert not [c for c in final["open_contracts"] if c["action_type"] == "replay"]
    said = " ".join(final["effects"]["history"] + final["effects"]["current"])
    assert "re-running irreversible cell" in said, said
    assert "failed: KeyboardInterrupt" in said, said
