"""The plain-line view (``run`` / ``resume`` with output piped): what a person reads per event."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from notebook_bcc.cli.views import PlainView
from notebook_bcc.models import WorkflowEvent, new_snapshot


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
