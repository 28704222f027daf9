"""The DSLC HTTP planner's answers that are not a server's: the seed 003 fallback decision
(D17) and the stage route read from the server's stage_completed answer."""

from __future__ import annotations

import json
from typing import Any

from notebook_bcc.models.names import State
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.planners.base import PlannerError, PlannerReply, StageRoute
from notebook_bcc.protocol.parse import parse_payload
from notebook_bcc.protocol.payloads import Payload, PlanningPayload, SignalsPayload
from notebook_bcc.protocol.signals import SIGNAL_TYPES

FALLBACK_POINTS: dict[str, State] = {
    "plan_behavior": State.STEP_RUNNING,
    "reflect_behavior": State.BEHAVIOR_COMPLETED,
}
"""Where the seed 003 fallback decision maps to an event (D17)."""

FALLBACK_DECISION: dict[str, Any] = {
    "targetAchieved": False,
    "transition": {"continue_behaviors": False, "target_achieved": False},
}
"""Seed 003's fallback planning response when the planner is unreachable (D17)."""


def fallback_reply(reason: str) -> PlannerReply:
    """The fallback decision as a reply; ``fallback.reason`` (kept by the model) says why."""
    body = json.dumps({**FALLBACK_DECISION, "fallback": {"reason": reason}})
    return PlannerReply(parse_payload(body, "planning"), body, "application/json")


def route_from_reply(
    payload: Payload, snapshot: WorkflowSnapshot, planned: StageRoute
) -> StageRoute:
    """A stage route from the server's stage_completed answer (see ``HttpPlanner.route_stage``)."""
    remaining = snapshot.location.progress.stages.remaining
    warnings: list[str] = []
    extra = []
    if isinstance(payload, SignalsPayload | PlanningPayload):
        extra = [a.type for a in payload.actions if a.type not in SIGNAL_TYPES]
    if extra:
        warnings.append(
            f"stage_completed: {len(extra)} action(s) in the server's answer were not run "
            f"(no actions run at stage_completed): {', '.join(extra)}"
        )
    if isinstance(payload, PlanningPayload) and payload.response is not None:
        response = payload.response
        achieved = response.target_achieved
        if achieved is None and response.transition is not None:
            achieved = response.transition.target_achieved
        if achieved is True:
            if remaining:
                warnings.append(
                    "targetAchieved at stage_completed: stage(s) left are skipped: "
                    + ", ".join(item.id for item in remaining)
                )
            return StageRoute(
                planned.outcome, None, rule="planner: targetAchieved", warnings=tuple(warnings)
            )
        if achieved is False:
            if not remaining:
                raise PlannerError(
                    "the server asks for the next stage (targetAchieved: false) at "
                    "stage_completed, but no stage remains"
                )
            return StageRoute(
                planned.outcome,
                remaining[0].id,
                rule="planner: next stage",
                warnings=tuple(warnings),
            )
    elif not isinstance(payload, SignalsPayload | PlanningPayload):
        raise PlannerError(f"a {payload.kind} payload cannot route a stage")
    return StageRoute(
        planned.outcome,
        planned.target,
        end_state=planned.end_state,
        failed=planned.failed,
        rule=planned.rule,
        warnings=tuple(warnings),
    )


__all__ = ["FALLBACK_DECISION", "FALLBACK_POINTS", "fallback_reply", "route_from_reply"]
