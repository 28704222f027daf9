"""Interruptions of a real ``notebook-bcc run`` process (issue 7 §1, DESIGN D1).

- SIGINT: the running cell finishes and is committed, then the run is ``interrupted``
  (exit 130) with the FSM untouched; ``resume`` completes it. A second SIGINT stops at once:
  the cell's contract is left RUNNING and ``resume`` settles and re-runs it (D11).
- ``notebook-bcc cancel`` while the process runs: it notices at its next safe point and
  exits 4; ``cancelled`` leaves only by RESET, so ``resume`` exits 4 too.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from notebook_bcc.cli import main
from notebook_bcc.models.contract import ExecutionStatus
from notebook_bcc.models.names import State
from tests.conftest import FIXTURES, StdoutWatch
from tests.durability.conftest import Durable, stop


def status_json(durable: Durable, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    """``notebook-bcc status --json``."""
    capsys.readouterr()
    assert main(["status", "--state-db", str(durable.state_db), "--json"]) == 0
    data: dict[str, object] = json.loads(capsys.readouterr().out)
    return data


def test_sigint_lets_the_cell_finish_exits_130_and_resume_completes(
    durable: Durable, capsys: pytest.CaptureFixture[str]
) -> None:
    durable.nap(2.5)
    process = durable.cli_run("--auto-confirm")
    try:
        durable.wait_for_nap(process)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        stop(process)
    assert process.returncode == 130, err
    assert "finishing the running cell" in out + err
    status = status_json(durable, capsys)
    run = status["run"]
    assert isinstance(run, dict)
    assert run["status"] == "interrupted"
    snap = durable.snapshot()
    assert snap.fsm.state not in (State.CANCELLED, State.ERROR), "the FSM is untouched"
    (nap,) = durable.nap_contracts()
    assert nap.status is ExecutionStatus.COMPLETED, "the running cell finished first"
    assert "after" not in snap.variables

    assert main(["resume", "--state-db", str(durable.state_db), "--auto-confirm"]) == 0
    durable.assert_finished()


def test_second_sigint_stops_at_once_and_resume_reruns_the_cell(durable: Durable) -> None:
    durable.nap(60)
    process = durable.cli_run("--auto-confirm")
    try:
        durable.wait_for_nap(process)
        out = StdoutWatch(process, "interrupt: finishing the running cell")
        process.send_signal(signal.SIGINT)
        assert out.seen.wait(60), "the first SIGINT was never acknowledged"
        process.send_signal(signal.SIGINT)
        began = time.monotonic()
        process.wait(timeout=60)
        took = time.monotonic() - began
        out.thread.join(timeout=10)
        err = process.stderr.read() if process.stderr is not None else ""
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    finally:
        stop(process)
    assert process.returncode == 130, err
    assert took < 30, "the second signal did not wait for the 60 s cell"
    (nap,) = durable.nap_contracts()
    assert nap.status is ExecutionStatus.RUNNING, "its outcome was never recorded"

    assert main(["resume", "--state-db", str(durable.state_db), "--auto-confirm"]) == 0
    durable.assert_finished()
    first, second = durable.nap_contracts()
    assert (first.status, first.error_message) == (ExecutionStatus.FAILED, "interrupted")
    assert second.status is ExecutionStatus.COMPLETED


def test_cancel_from_another_process_exits_4_and_stays_cancelled(
    durable: Durable, capsys: pytest.CaptureFixture[str]
) -> None:
    durable.nap(2.5)
    process = durable.cli_run("--auto-confirm")
    try:
        durable.wait_for_nap(process)
        capsys.readouterr()
        assert main(["status", "--state-db", str(durable.state_db)]) == 0
        told = capsys.readouterr().out
        assert f"process {process.pid}@" in told, told
        assert "is running it: it goes on by itself (`notebook-bcc cancel" in told
        assert "next: notebook-bcc resume" not in told, "resume would be refused"
        assert main(["cancel", "--state-db", str(durable.state_db)]) == 0
        assert "cancel queued" in capsys.readouterr().out
        _, err = process.communicate(timeout=60)
    finally:
        stop(process)
    assert process.returncode == 4, err
    snap = durable.snapshot()
    assert snap.run.status == "cancelled"
    assert snap.fsm.state is State.CANCELLED
    (nap,) = durable.nap_contracts()
    assert nap.status is ExecutionStatus.COMPLETED, "the running cell finished first"
    assert "after" not in snap.variables, "the run stopped at the next safe point"

    assert main(["resume", "--state-db", str(durable.state_db), "--auto-confirm"]) == 4
    assert durable.snapshot().fsm.state is State.CANCELLED, "cancelled leaves only by RESET"


def test_status_after_kill_9_says_nothing_drives_the_run_and_resume_continues(
    durable: Durable, capsys: pytest.CaptureFixture[str]
) -> None:
    durable.nap(60)
    process = durable.cli_run("--auto-confirm")
    try:
        durable.wait_for_nap(process)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)  # reaps it and closes its pipes
    finally:
        stop(process)
    capsys.readouterr()
    assert main(["status", "--state-db", str(durable.state_db)]) == 0
    out = capsys.readouterr().out
    assert "run: running" in out
    assert f"nothing drives this run now: its process {process.pid}@" in out, out
    assert "goes on by itself" not in out, "its process is gone: resume is the way on"
    assert "next: notebook-bcc resume" in out

    # running it again on the same notebook says what happened to the earlier run
    again = [str(durable.blueprint()), "--notebook", str(durable.notebook)]
    assert main(["run", *again, "--state-db", str(durable.state_db)]) == 2
    err = capsys.readouterr().err
    assert f"is stopped mid-run (its process {process.pid}@" in err, err
    assert "is gone; killed?)" in err

    assert main(["resume", "--state-db", str(durable.state_db), "--auto-confirm"]) == 0
    durable.assert_finished()
    capsys.readouterr()
    assert main(["status", "--state-db", str(durable.state_db)]) == 0
    assert "nothing drives" not in capsys.readouterr().out


def test_a_run_stopped_at_once_keeps_what_the_cell_printed_in_its_notebook(
    tmp_path: Path,
) -> None:
    """The notebook kept only 'tick 0' of a cell that had printed five lines when the second
    Ctrl-C stopped the run: the cell's outputs are written at its end, which never came."""
    notebook = tmp_path / "ticks.ipynb"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "notebook_bcc",
            "run",
            str(FIXTURES / "durability" / "ticks.yaml"),
            "--notebook",
            str(notebook),
            "--log-output",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out = StdoutWatch(process, "tick 3")
        assert out.seen.wait(120), "the cell never printed"
        process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 60
        while not any("interrupt: finishing the running cell" in line for line in out.lines):
            assert time.monotonic() < deadline, "the first SIGINT was never acknowledged"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
        out.thread.join(timeout=10)
    finally:
        stop(process)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    assert process.returncode == 130
    printed = [line.strip() for line in out.lines if line.startswith("tick ")]
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    (ticker,) = [c for c in cells if "for i in range(120)" in "".join(c["source"])]
    kept = "".join("".join(o.get("text", "")) for o in ticker["outputs"]).splitlines()
    assert kept[: len(printed)] == printed, (kept, printed)
    assert len(printed) >= 4
