"""What the workflow service keeps per workflow, and the settings it runs with."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from notebook_bcc.engine.engine import Engine
from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.models.names import State
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.planners.registry import REGISTRY
from notebook_bcc.server.kernels import NotebookKernel
from notebook_bcc.server.stream import WorkflowHub

RestartPolicy = Literal["resume", "wait"]

AVAILABLE_PLANNERS: tuple[str, ...] = REGISTRY.kinds()
"""Planner kinds this installation can run (the planner registry's); the others are
validated, then answered 501."""

_FINISHED_STATES = frozenset({State.WORKFLOW_COMPLETED, State.CANCELLED})


@dataclass(frozen=True)
class ServiceSettings:
    """What the service needs from the extension's configuration."""

    store_path: Path
    server_root: str | None = None
    """The server's root: the store must belong to it (:mod:`.store_place`); None: unchecked."""
    engine: EngineOptions = field(default_factory=EngineOptions)
    default_planner: dict[str, Any] = field(default_factory=dict)
    stream_buffer: int = 1000
    stop_timeout: float = 10.0
    restart_policy: RestartPolicy = "resume"
    allowed_planners: tuple[str, ...] = AVAILABLE_PLANNERS
    """Kinds this server's configuration lets clients start (``allowed_planners`` trait)."""
    llm_key_envs: tuple[str, ...] = ("NOTEBOOK_BCC_LLM_API_KEY", "OPENAI_API_KEY")
    """Variables a client may name as an llm planner's ``api_key_env`` (``llm_key_envs``)."""


@dataclass
class LiveWorkflow:
    """A workflow an engine drives in this server process."""

    engine: Engine
    kernel: NotebookKernel
    hub: WorkflowHub
    notebook_path: str
    task: asyncio.Task[None] | None = None
    failure: str | None = None
    """The last exception that escaped the engine's run loop (logged too)."""

    @property
    def workflow_id(self) -> str:
        """The workflow's id."""
        return self.engine.snapshot.workflow_id

    @property
    def running(self) -> bool:
        """True while the run loop executes."""
        return self.task is not None and not self.task.done()


def is_finished(snapshot: WorkflowSnapshot) -> bool:
    """Completed or cancelled: nothing more will happen in this workflow."""
    return snapshot.fsm.state in _FINISHED_STATES or snapshot.run.status in (
        "completed",
        "cancelled",
    )


def may_yield_notebook(snapshot: WorkflowSnapshot) -> bool:
    """Finished or failed: a new workflow on the notebook archives this one.

    A failed run can be retried from its own record until then; starting anew on its
    notebook must never be refused (a failure is not a dead end)."""
    return is_finished(snapshot) or snapshot.run.status == "failed"


__all__ = [
    "AVAILABLE_PLANNERS",
    "LiveWorkflow",
    "RestartPolicy",
    "ServiceSettings",
    "is_finished",
    "may_yield_notebook",
]
