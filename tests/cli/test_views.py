"""The plain-line view (``run`` / ``resume`` with output piped): what a person reads per event."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from notebook_bcc.cli.views import PlainView, action_progress, summary_lines
from notebook_bcc.models import WorkflowEvent, new_snapshot
from notebook_bcc.models.actions import AddAction, ExecAction
from notebook_bcc.models.snapshot import (
    ActionQueue,
    LevelProgress,
    PlanItem,
    PlannerSettings,
    Usage,
)
from notebook_bcc.workflow.metrics import refresh_metrics


def _shown(capsys: pytest.CaptureFixture[str], **event: Any) -> str:
    view = PlainView()
    view.engine = SimpleNamespace(snapshot=new_snapshot("wf-1", "run-1"))  # type: ignore[assignment]
    capsys.readouterr()
    view._event(
        WorkflowEvent(workflow_id="wf-1", seq=1, version=1, at="t", run_status="running", **event)
    )
    return capsys.readouterr().out


def test_a_note_on_the_run_reads_as_words_not_run_none(capsys: pytest.CaptureFixture[str]) -> None:
    """``resume`` after a failure retries: it printed ``run None`` before ``run running``."""
    out = _shown(capsys, kind="run", event="retry", actor="human", detail={"stage": "explore"})
    assert "run: retry (stage explore)" in out
    assert "None" not in out


def test_a_run_status_change_names_the_status_and_its_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _shown(
        capsys, kind="run", from_="running", to="failed", detail={"reason": "planner failed"}
    )
    assert "run failed: planner failed" in out


def test_the_summary_shows_an_ai_planners_usage_and_not_a_blueprints() -> None:
    usage = Usage(calls=9, prompt_tokens=14634, completion_tokens=2100, latency_ms=5300.0)
    llm = new_snapshot("wf-1", "run-1").model_copy(
        update={"usage": usage, "planner": PlannerSettings(kind="llm")}
    )
    assert "planner (llm): 9 calls, 14634 prompt + 2100 completion tokens, 5.3 s waiting" in (
        summary_lines(llm, None)
    )
    blueprint = llm.model_copy(update={"planner": PlannerSettings(kind="blueprint")})
    assert not [line for line in summary_lines(blueprint, None) if line.startswith("planner")]


def test_the_summary_says_its_time_is_this_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """After ``resume --approve`` the summary said ``time: 0.2 s`` for a run of minutes, and
    then 0.1 s for a resume whose kernel start and silent replay took 24 s: the time is the
    command's, from its start, not the engine loop's."""
    from notebook_bcc import cli
    from notebook_bcc.engine.engine import RunResult

    snapshot = new_snapshot("wf-1", "run-1")
    result = RunResult(snapshot, 0, 21, 0.1)
    # set last: the summary rounds to 0.1 s, so nothing slow (an import) may come between
    monkeypatch.setattr(cli, "_STARTED", [time.monotonic() - 24.04])
    lines = summary_lines(snapshot, result)
    assert "cells: 21; time in this command: 24.0 s" in lines


def test_a_code_action_added_then_run_counts_once_in_the_tree() -> None:
    """A blueprint ``code:`` action is queued as ``add`` + ``exec lastAddedCellId``: the tree
    says action 1/1, not 2/2; markdown and an exec of an earlier cell count on their own."""
    queue = ActionQueue(
        actions=[
            AddAction(content="# Title", shot_type="markdown"),
            AddAction(content="x = 1", shot_type="code"),
            ExecAction(codecell_id="lastAddedCellId"),
            ExecAction(codecell_id="cell-1"),
        ]
    )
    assert action_progress(queue) == (1, 3)
    assert action_progress(queue.model_copy(update={"index": 2})) == (2, 3)
    assert action_progress(queue.model_copy(update={"index": 3})) == (3, 3)
    assert action_progress(queue.model_copy(update={"index": 9})) == (3, 3)
    assert action_progress(ActionQueue()) == (0, 0)
    one = ActionQueue(
        actions=[
            AddAction(content="x", shot_type="code"),
            ExecAction(codecell_id="lastAddedCellId"),
        ]
    )
    assert action_progress(one) == (1, 1)


def _with_stages(stages: LevelProgress) -> list[str]:
    snapshot = new_snapshot("wf-1", "run-1")
    progress = snapshot.location.progress.model_copy(update={"stages": stages})
    location = snapshot.location.model_copy(update={"progress": progress})
    return summary_lines(refresh_metrics(snapshot.model_copy(update={"location": location})), None)


def test_the_summary_counts_stages_as_overall_progress_does() -> None:
    """A run waiting after its fifth of six stages said ``stages: 4/6 completed`` beside
    ``overall_progress 0.83``: the line left out the current stage that had completed."""
    stages = LevelProgress(
        completed=[PlanItem(id=f"s{n}", completion_status="success") for n in range(4)],
        current=PlanItem(id="s4", completion_status="success"),
        remaining=[PlanItem(id="s5")],
    )
    lines = _with_stages(stages)
    assert lines[1].startswith("stages: 5/6 completed")
    assert "overall_progress 0.83" in lines[2]
    failed = stages.model_copy(update={"current": PlanItem(id="s4", completion_status="failed")})
    lines = _with_stages(failed)
    assert lines[1].startswith("stages: 4/6 completed")
    assert "overall_progress 0.67" in lines[2]
