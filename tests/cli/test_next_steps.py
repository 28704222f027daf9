"""The ``next:`` lines a run or resume prints: the command that continues it, as typed."""

from __future__ import annotations

import pytest

from notebook_bcc.cli.next_steps import next_commands
from notebook_bcc.models import new_snapshot
from notebook_bcc.models.snapshot import PendingDecision, RunStatus, WorkflowSnapshot


def _with(status: RunStatus, pending: list[PendingDecision] | None = None) -> WorkflowSnapshot:
    snap = new_snapshot("wf-1", "run-1")
    run = snap.run.model_copy(update={"status": status, "pending": pending or []})
    return snap.model_copy(update={"run": run})


@pytest.mark.parametrize("status", ["interrupted", "paused"])
def test_a_run_driven_with_auto_confirm_is_continued_with_it(status: RunStatus) -> None:
    snap = _with(status)
    assert next_commands(snap, "s.db", auto_confirm=True) == [
        "next: notebook-bcc resume --state-db s.db --auto-confirm   (continues where it stopped)"
    ]
    assert next_commands(snap, "s.db") == [
        "next: notebook-bcc resume --state-db s.db   (continues where it stopped)"
    ]


def test_a_pending_decision_is_answered_and_the_run_keeps_auto_confirm() -> None:
    """An unattended run stopped on what ``--auto-confirm`` never answers (an action in
    doubt): the command answers it, and keeps the flag so the run does not stop again at the
    next stage review."""
    asked = PendingDecision(id="d-1", kind="in_doubt", message="did it happen?", created_at="x")
    snap = _with("waiting", [asked])
    assert next_commands(snap, "s.db", auto_confirm=True) == [
        "next: notebook-bcc resume --state-db s.db --auto-confirm --approve   (or --reject)"
    ]
    stored = snap.model_copy(update={"options": {"auto_confirm": True}})
    assert next_commands(stored, "s.db") == next_commands(snap, "s.db", auto_confirm=True)
    assert next_commands(snap, "s.db") == [
        "next: notebook-bcc resume --state-db s.db --approve   (or --reject)"
    ]
    other = asked.model_copy(update={"id": "d-2", "kind": "budget"})
    base = "next: notebook-bcc resume --state-db s.db --auto-confirm"
    assert next_commands(_with("waiting", [asked, other]), "s.db", auto_confirm=True) == [
        f"{base} --decision d-1 --approve|--reject",
        f"{base} --decision d-2 --approve|--reject",
    ]


def test_a_failed_run_keeps_auto_confirm_in_both_ways_out() -> None:
    lines = next_commands(_with("failed"), "s.db", auto_confirm=True)
    assert lines[0].startswith("next: notebook-bcc resume --state-db s.db --auto-confirm   (")
    assert lines[1].startswith("  or: notebook-bcc resume --state-db s.db --auto-confirm --restart")
