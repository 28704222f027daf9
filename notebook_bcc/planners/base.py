"""The Planner protocol: one async method per decision point of seed 003's scenario 1.

| state | method | seed 000 agent |
|---|---|---|
| idle | ``plan_stages`` | Stage-Planner |
| stage_running | ``plan_steps`` | Step-Planner |
| step_running, behavior_running (re-plan) | ``plan_behavior`` | Behavior Arrangement |
| behavior_running | ``generate_actions`` | Action-Generator |
| behavior_completed | ``reflect_behavior`` | Behavior Reflection |
| step_completed | ``reflect_stage`` | Stage Reflection |
| stage_completed | ``route_stage`` | (the client: next stage by the plan or the stage machine) |

Every answer is a :class:`PlannerReply` carrying the parsed payload *and* the body as sent, so
a run can be recorded and replayed, and the engine applies it through the protocol layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, Protocol, runtime_checkable

from notebook_bcc.errors import NotebookBccError
from notebook_bcc.models.snapshot import UsageTotals, WorkflowSnapshot
from notebook_bcc.protocol.payloads import Payload

DecisionPoint = Literal[
    "plan_stages",
    "plan_steps",
    "plan_behavior",
    "generate_actions",
    "reflect_behavior",
    "reflect_stage",
    "route_stage",
]


class PlannerError(NotebookBccError):
    """The planner could not answer (unreachable, refused, unparseable after retries).

    ``usage``: what the failed attempts cost (an LLM's unusable replies), counted in the
    snapshot like any answered call.
    """

    code = "planner_error"

    def __init__(
        self,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        usage: UsageTotals | None = None,
    ) -> None:
        super().__init__(message, details=details)
        self.usage = usage


@dataclass(frozen=True)
class PlannerRequest:
    """What the engine asks at a decision point: the snapshot and its observation (D21)."""

    point: DecisionPoint
    snapshot: WorkflowSnapshot
    observe: dict[str, Any] | Callable[[], dict[str, Any]]
    """The observation, or how to build it: built at the first read of :attr:`observation`,
    so a planner that never reads it (a blueprint) never pays for it (a few ms a turn)."""
    behavior_feedback: dict[str, Any] | None = None

    @cached_property
    def observation(self) -> dict[str, Any]:
        """The observation planners receive (D21), built once."""
        return self.observe() if callable(self.observe) else self.observe


@dataclass(frozen=True)
class RejectedReply:
    """A reply the planner received and could not use before the one it answered with (an LLM
    answer that did not parse, sent back with its error): kept so a recording shows it."""

    body: str
    error: str


@dataclass(frozen=True)
class PlannerReply:
    """A planner's answer: the parsed payload, the body as sent and what it cost; ``rejected``
    lists the unusable replies that came before it, oldest first."""

    payload: Payload
    body: str
    content_type: str
    usage: UsageTotals | None = None
    rejected: tuple[RejectedReply, ...] = ()


@dataclass(frozen=True)
class StageRoute:
    """Where the workflow goes after a stage (``route_stage``).

    ``outcome`` is the stage's seed 004 outcome; ``target`` the next stage to enter, or None
    when the workflow ends (``end_state`` names the declared end state reached, if any);
    ``failed`` marks an end reached through a failure; ``rule`` says which rule decided.
    """

    outcome: Literal["success", "failure", "pause"]
    target: str | None
    end_state: str | None = None
    failed: bool = False
    rule: str | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    message: str | None = None
    """For a pause: the question to put to the human."""


@runtime_checkable
class Planner(Protocol):
    """Answers the engine at each decision point (see the module table)."""

    kind: str

    def settings(self) -> dict[str, Any]:
        """The planner's settings for ``snapshot.planner`` (never secrets)."""

    async def plan_stages(self, request: PlannerRequest) -> PlannerReply:
        """Stages (``<stages>`` / ``<workflow>``) at idle."""

    async def plan_steps(self, request: PlannerRequest) -> PlannerReply:
        """Steps of the current stage at stage_running."""

    async def plan_behavior(self, request: PlannerRequest) -> PlannerReply | None:
        """The next behavior at step_running (or planning JSON: target achieved).

        At behavior_running after NEXT_BEHAVIOR, a ``<behavior>`` re-plans the iteration;
        None keeps the current behavior (a retry).
        """

    async def generate_actions(self, request: PlannerRequest) -> PlannerReply:
        """Actions for the current behavior at behavior_running."""

    async def reflect_behavior(self, request: PlannerRequest) -> PlannerReply:
        """A behavior reflection (or control signals / planning JSON) at behavior_completed."""

    async def reflect_stage(self, request: PlannerRequest) -> PlannerReply:
        """A stage reflection (or control signals / planning JSON) at step_completed."""

    async def route_stage(
        self, request: PlannerRequest, *, decided: Literal["success", "failure"] | None = None
    ) -> StageRoute:
        """The next stage at stage_completed; ``decided`` is a human's answer to a pause."""

    async def aclose(self) -> None:
        """Release connections, files, ..."""


def next_remaining_stage(snapshot: WorkflowSnapshot) -> StageRoute:
    """The route of a planner without a stage machine: the first remaining stage, or the end."""
    remaining = snapshot.location.progress.stages.remaining
    current = snapshot.location.progress.stages.current
    failed = current is not None and current.completion_status == "failed"
    outcome: Literal["success", "failure"] = "failure" if failed else "success"
    if remaining:
        return StageRoute(outcome, remaining[0].id, rule="plan order")
    return StageRoute(outcome, None, rule="plan order")
