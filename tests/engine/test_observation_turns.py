"""A blueprint run never builds a planner observation (see tests/planners/test_request.py)."""

from __future__ import annotations

import pytest

from notebook_bcc.engine.engine import Engine
from notebook_bcc.models.snapshot import WorkflowSnapshot
from tests.engine.conftest import EngineHarness, run_once


def test_a_blueprint_run_never_builds_an_observation(
    harness: EngineHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = Engine.observation

    def counted(self: Engine, snapshot: WorkflowSnapshot | None = None) -> dict[str, object]:
        calls.append(self.snapshot.fsm.state.value)
        return real(self, snapshot)

    monkeypatch.setattr(Engine, "observation", counted)

    async def scenario() -> None:
        await run_once(await harness.open("paths"), "completed")

    harness.run(scenario)
    assert calls == []
    assert harness.notebook.exists()
