"""Shared helpers of the LLM planner tests: fast settings, fixture snapshots, requests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from notebook_bcc.models.names import State
from notebook_bcc.models.snapshot import (
    CurrentLocation,
    Effects,
    LevelProgress,
    WorkflowSnapshot,
    new_snapshot,
)
from notebook_bcc.planners.base import PlannerRequest
from notebook_bcc.planners.llm import LlmPlanner, LlmSettings
from notebook_bcc.planners.llm.agents import BY_ID
from notebook_bcc.workflow import build_observation
from tests.conftest import FIXTURES

LLM = FIXTURES / "llm"
CONVERSATION = LLM / "conversation"
REPLIES = LLM / "replies"
GOLDEN = LLM / "prompts"

SECRET = "sk-notebook-bcc-test-7f3a9c1e5b2d"
"""A distinctive API key: tests grep everything the run wrote for it."""

CELLS: list[tuple[str, str]] = [
    ("markdown", "# House prices"),
    ("code", "# notebook-bcc inputs\nuser_problem = 'Describe the house prices'"),
    ("markdown", "## Load the data"),
    ("markdown", "We read the submitted CSV."),
    ("code", "import csv\nwith open(user_submit_files[0]) as handle:\n    rows = list(...)"),
]
"""The notebook the golden prompts' digest is made from."""

T = TypeVar("T")


def fast(base_url: str, **overrides: Any) -> LlmSettings:
    """Settings with millisecond backoff and short timeouts."""
    values: dict[str, Any] = {
        "base_url": base_url,
        "model": "scripted-model",
        "connect_timeout": 2.0,
        "idle_timeout": 5.0,
        "total_timeout": 20.0,
        "max_retries": 2,
        "backoff_base": 0.001,
        "backoff_cap": 0.004,
        **overrides,
    }
    return LlmSettings(**values)


class SleepLog:
    """An ``asyncio.sleep`` stand-in that records the delays (and does not wait)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def planner(base_url: str, *, sleep: SleepLog | None = None, **overrides: Any) -> LlmPlanner:
    """An LLM planner on ``base_url`` with :func:`fast` settings."""
    if sleep is None:
        return LlmPlanner(fast(base_url, **overrides))
    return LlmPlanner(fast(base_url, **overrides), sleep=sleep)


def run(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine factory on a fresh event loop."""
    return asyncio.run(make())


def fixture_snapshot() -> WorkflowSnapshot:
    """The mid-run snapshot of ``tests/fixtures/llm/snapshot.json`` (at behavior_completed)."""
    text = (LLM / "snapshot.json").read_text(encoding="utf-8")
    return WorkflowSnapshot.model_validate_json(text)


def snapshot_for(agent_id: str) -> WorkflowSnapshot:
    """The fixture snapshot moved to the state (and location) where ``agent_id`` is asked."""
    base = fixture_snapshot()
    if agent_id == "stage-planner":
        return new_snapshot(
            base.workflow_id,
            base.run_id,
            notebook_path=base.notebook_path,
            problem=base.problem,
            files=list(base.files),
            planner=base.planner,
        )
    location = base.location
    progress = location.progress
    current = location.current
    update: dict[str, Any] = {}
    if agent_id == "step-planner":
        state = State.STAGE_RUNNING
        progress = progress.model_copy(
            update={"steps": LevelProgress(), "behaviors": LevelProgress()}
        )
        current = CurrentLocation(stage_id="explore")
        update = {
            "effects": Effects(),
            "acceptance": {},
            "action_queue": base.action_queue.model_copy(
                update={"behavior_id": None, "actions": []}
            ),
        }
    elif agent_id == "behavior-arrangement":
        state = State.STEP_RUNNING
        progress = progress.model_copy(update={"behaviors": LevelProgress()})
        current = CurrentLocation(stage_id="explore", step_id="load")
        update = {"effects": Effects(), "acceptance": {}}
    elif agent_id == "action-generator":
        state = State.BEHAVIOR_RUNNING
        update = {"effects": Effects(), "acceptance": {}}
    elif agent_id == "behavior-reflection":
        state = State.BEHAVIOR_COMPLETED
    else:
        state = State.STEP_COMPLETED
        behaviors = progress.behaviors
        assert behaviors.current is not None
        done = behaviors.current.model_copy(update={"completion_status": "success"})
        progress = progress.model_copy(
            update={
                "behaviors": behaviors.model_copy(update={"completed": [done], "current": None})
            }
        )
        current = CurrentLocation(stage_id="explore", step_id="load")
    location = location.model_copy(update={"progress": progress, "current": current})
    fsm = base.fsm.model_copy(update={"state": state})
    return base.model_copy(update={"fsm": fsm, "location": location, **update})


FEEDBACK = {
    "behavior_id": "load_b1",
    "actions_executed": 1,
    "actions_succeeded": 1,
    "sections_added": 1,
    "last_action_result": "ok",
}


def request_for(agent_id: str, snapshot: WorkflowSnapshot | None = None) -> PlannerRequest:
    """The request ``agent_id`` answers, with the D21 observation and the fixture digest."""
    snap = snapshot or snapshot_for(agent_id)
    cells = CELLS if agent_id != "stage-planner" else []
    observation = build_observation(snap, cells=cells)
    feedback = FEEDBACK if agent_id == "behavior-reflection" else None
    return PlannerRequest(BY_ID[agent_id].point, snap, observation, feedback)


def write_replies(folder: Path, replies: dict[str, str]) -> Path:
    """A folder of reply files (``{"001-stage-planner.txt": text, ...}``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in replies.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder
