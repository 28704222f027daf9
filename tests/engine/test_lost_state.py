"""A kernel rebuilt without an irreversible cell's state asks the human (issue 19 §1, D11).

Headless, one process per command as a user runs them: the irreversible send ran in the first
kernel; the next ``resume`` is a new process whose kernel is rebuilt from the completed cells.
The send is never replayed by itself: a ``lost_state`` decision shows its code and asks
(approve: re-run it once; reject: continue without). It blocks the other decisions until it is
answered, survives a process change with the same id, and is not asked again once answered.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from notebook_bcc.engine.lost_state import bound_names
from notebook_bcc.store.sqlite import SqliteStore
from tests.conftest import FIXTURES, SLOW, run_cli

BLUEPRINT = FIXTURES / "engine" / "lost_state.yaml"

pytestmark = pytest.mark.timeout(600)

ANSWERS = ["reject", "approve"] if SLOW else ["reject"]
"""Each case is ~6 processes with a kernel (~1-2 min here): approve runs in slow mode and over
REST (tests/server/test_lost_state_rest.py)."""


def _status(db: Path) -> dict[str, object]:
    shown = run_cli("status", "--state-db", db, "--json")
    assert shown.returncode == 0, shown.stderr
    return dict(json.loads(shown.stdout))


def _pending(db: Path) -> list[dict[str, object]]:
    store = SqliteStore(db)
    try:
        (workflow_id,) = store.workflow_ids()
        snapshot = store.load(workflow_id)
    finally:
        store.close()
    return [p.model_dump(mode="json") for p in snapshot.run.pending]


def _until_sent(tmp_path: Path, blueprint: Path = BLUEPRINT) -> tuple[Path, Path]:
    """Run until the send ran and the stage confirmation waits (answered in new processes)."""
    notebook = tmp_path / "nb" / "lost.ipynb"
    db = tmp_path / "state.sqlite"
    first = run_cli("run", blueprint, "--notebook", notebook, "--state-db", db)
    assert first.returncode == 3, first.stdout + first.stderr
    for _ in range(3):
        (pending,) = _pending(db)
        if pending["kind"] == "stage_confirmation" and (notebook.parent / "ledger.txt").exists():
            return notebook, db
        answered = run_cli("resume", "--state-db", db, "--approve")
        assert answered.returncode == 3, answered.stdout + answered.stderr
    raise AssertionError(f"never reached the stage confirmation after the send: {pending}")


def _ledger(notebook: Path) -> list[str]:
    return (notebook.parent / "ledger.txt").read_text().splitlines()


@pytest.mark.parametrize("answer", ANSWERS)
def test_a_new_kernel_without_the_irreversible_cells_state_asks_the_human(
    tmp_path: Path, answer: str
) -> None:
    notebook, db = _until_sent(tmp_path)
    assert _ledger(notebook) == ["sent"]
    (confirmation,) = _pending(db)

    # a new process: the kernel is rebuilt, the send is not replayed, the human is asked
    blocked = run_cli(
        "resume", "--state-db", db, "--decision", str(confirmation["id"]), "--approve"
    )
    assert blocked.returncode == 3, blocked.stdout + blocked.stderr
    assert _ledger(notebook) == ["sent"], "never re-run by itself"
    lost, still = _pending(db)
    assert lost["kind"] == "lost_state"
    assert still["id"] == confirmation["id"]
    assert f"answer {lost['id']} first" in blocked.stderr
    details = lost["details"]
    assert isinstance(details, dict)
    assert 'ledger.write("sent\\n")' in str(details["code"])
    assert "receipt" in details["names"]
    status = run_cli("status", "--state-db", db)
    assert "lost_state" in status.stdout, status.stdout
    assert "ledger.write" in status.stdout, status.stdout

    # answered in yet another process: the same question (same id) is still the one pending
    answered = run_cli("resume", "--state-db", db, "--decision", str(lost["id"]), f"--{answer}")
    assert answered.returncode == 3, answered.stdout + answered.stderr
    assert [p["id"] for p in _pending(db)] == [confirmation["id"]]
    assert _ledger(notebook) == (["sent", "sent"] if answer == "approve" else ["sent"])

    if answer == "approve":
        # the re-run restored that process's kernel only: the next one loses the state again
        # and asks again (never re-runs by itself)
        again = run_cli("resume", "--state-db", db, "--approve")
        assert again.returncode == 3, again.stdout + again.stderr
        asked, _ = _pending(db)
        assert asked["kind"] == "lost_state"
        assert asked["id"] != lost["id"]
        assert _ledger(notebook) == ["sent", "sent"]
        return

    # the next process rebuilds again: "continue without" holds, it is not asked again
    done = run_cli("resume", "--state-db", db, "--approve")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _ledger(notebook) == ["sent"]
    report = json.loads(notebook.read_text())["cells"][-1]
    printed = "".join("".join(o.get("text", "")) for o in report.get("outputs", []))
    assert "total 42 receipt None" in printed, printed
    assert "continued without the state of irreversible cell" in json.dumps(_status(db))
    store = SqliteStore(db)
    try:
        (workflow_id,) = store.workflow_ids()
        held = [
            c
            for c in store.contracts(workflow_id)
            if c.action_type == "replay" and c.metadata.get("lost_state")
        ]
    finally:
        store.close()
    assert len(held) == 1, "one question for the one lost cell, in all these processes"
    assert held[0].status.value == "REJECTED"
    verified = run_cli("trace", "--state-db", db, "--verify")
    assert verified.returncode == 0, verified.stderr


@pytest.mark.skipif(not SLOW, reason="slow mode (NOTEBOOK_BCC_SLOW=1)")
def test_auto_confirm_records_the_question_and_never_repeats_the_side_effect(
    tmp_path: Path,
) -> None:
    notebook, db = _until_sent(tmp_path)
    done = run_cli("resume", "--state-db", db, "--approve", "--auto-confirm")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _ledger(notebook) == ["sent"]
    store = SqliteStore(db)
    try:
        (workflow_id,) = store.workflow_ids()
        answers = [
            e.detail
            for e in store.events(workflow_id)
            if e.kind == "decision" and e.detail.get("kind") == "lost_state"
        ]
    finally:
        store.close()
    assert answers, "the question is recorded"
    assert "continued without the state" in json.dumps(_status(db))


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ('with open("summary.txt", "w") as out:\n    out.write("x")\n', []),
        ('with open("a") as f, open("b") as (g):\n    rows = f.read()\n', ["rows"]),
        ("async def go():\n    async with lock as held:\n        pass\n", ["go"]),
        ('with open("a") as f:\n    pass\nf = 1\n', ["f"]),
        (
            "import pandas as pd\nsent = post(url)\nfor i in range(2):\n    pass\n",
            ["pd", "sent", "i"],
        ),
        ("def send(:", ["?"]),
    ],
)
def test_a_with_target_alone_is_not_state_worth_repeating_a_side_effect(
    source: str, names: list[str]
) -> None:
    assert bound_names(source) == names


CLI = (sys.executable, "-m", "notebook_bcc")


def _descendants(pid: int) -> list[int]:
    """The processes ``pid`` started, and theirs (its kernel), from /proc."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def test_a_process_killed_during_an_approved_rerun_leaves_it_on_record(tmp_path: Path) -> None:
    """The approval is committed before the irreversible cell re-runs (write-ahead). The
    process (and its kernel) killed during the re-run: the next process does not re-run it
    either, and the question it asks again says the approved re-run may have happened."""
    notebook, db = _until_sent(tmp_path, FIXTURES / "engine" / "lost_state_hold.yaml")
    (confirmation,) = _pending(db)
    blocked = run_cli(
        "resume", "--state-db", db, "--decision", str(confirmation["id"]), "--approve"
    )
    assert blocked.returncode == 3, blocked.stdout + blocked.stderr
    lost, _ = _pending(db)
    assert lost["kind"] == "lost_state"

    approving = subprocess.Popen(
        [*CLI, "resume", "--state-db", db, "--decision", str(lost["id"]), "--approve"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while len(_ledger(notebook)) < 2:  # the re-run is under way, and holds
            assert approving.poll() is None, "the approving process ended"
            assert time.monotonic() < deadline, "the re-run never started"
            time.sleep(0.05)
    finally:
        for pid in [*_descendants(approving.pid), approving.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        approving.wait(30)
    assert _ledger(notebook) == ["sent", "sent"]
    # on record already: the human's answer, and the re-run's contract RUNNING
    assert [p["kind"] for p in _pending(db)] == ["stage_confirmation"]

    # the next process that goes on rebuilds its kernel (without the send) and asks again
    again = run_cli("resume", "--state-db", db, "--decision", str(confirmation["id"]), "--approve")
    assert again.returncode == 3, again.stdout + again.stderr
    asked, _ = _pending(db)
    assert asked["kind"] == "lost_state"
    assert asked["id"] != lost["id"]
    assert "may have happened already" in str(asked["message"]), asked["message"]
    assert _ledger(notebook) == ["sent", "sent"], "never re-run by itself"
    store = SqliteStore(db)
    try:
        (workflow_id,) = store.workflow_ids()
        replays = [c for c in store.contracts(workflow_id) if c.action_type == "replay"]
    finally:
        store.close()
    interrupted = [c for c in replays if c.status.value == "FAILED"]
    assert [c.error_message for c in interrupted] == ["interrupted"], replays

    done = run_cli("resume", "--state-db", db, "--decision", str(asked["id"]), "--reject")
    assert done.returncode == 3, done.stdout + done.stderr  # the stage confirmation is next
    finished = run_cli("resume", "--state-db", db, "--approve")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert _ledger(notebook) == ["sent", "sent"]
    verified = run_cli("trace", "--state-db", db, "--verify")
    assert verified.returncode == 0, verified.stderr
