"""One entry point for every payload kind: :func:`apply_payload` (and :func:`apply_text`)."""

from __future__ import annotations

from notebook_bcc.models.base import utc_now_iso
from notebook_bcc.models.records import TraceRecord
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.protocol.parse import parse_payload
from notebook_bcc.protocol.payloads import (
    JsonActionsPayload,
    Payload,
    PlanningPayload,
    SignalsPayload,
)
from notebook_bcc.protocol.plans import (
    BehaviorPayload,
    StagesPayload,
    StepsPayload,
    WorkflowPayload,
)
from notebook_bcc.protocol.reflections import ReflectionPayload, StageReflectionPayload
from notebook_bcc.protocol.xml_actions import ActionsPayload
from notebook_bcc.workflow.actions import apply_actions
from notebook_bcc.workflow.damage import check_intact, repair_lines
from notebook_bcc.workflow.planning import apply_planning, apply_signals
from notebook_bcc.workflow.plans import apply_behavior, apply_stages, apply_steps
from notebook_bcc.workflow.reflect import apply_reflection, apply_stage_reflection
from notebook_bcc.workflow.result import (
    DEFAULT_EFFECTS_HISTORY_CAP,
    DEFAULT_MAX_ITERATIONS,
    Applied,
    ApplyOptions,
    epoch_seconds,
)


def apply_payload(
    snapshot: WorkflowSnapshot,
    payload: Payload,
    *,
    actor: str = "planner",
    at: str | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    effects_history_cap: int = DEFAULT_EFFECTS_HISTORY_CAP,
) -> Applied:
    """Apply any parsed payload to ``snapshot``: the next snapshot with its events fired.

    Raises an :class:`ApplyError` (the snapshot unchanged) when the payload is illegal in the
    current FSM state or contradicts itself or the snapshot, and a
    :class:`~.damage.DamagedPayloadError` when it is truncated. The repairs the parser made are
    listed in :attr:`Applied.repairs` and in a ``repair:<kind>`` trace row. Pure:
    no I/O, the input snapshot is never modified.
    """
    check_intact(payload, snapshot.fsm.state)
    options = ApplyOptions(
        actor=actor, at=at, max_iterations=max_iterations, effects_history_cap=effects_history_cap
    )
    applied = _dispatch(snapshot, payload, options)
    repairs = repair_lines(payload)
    if not repairs:
        return applied
    at = options.at or utc_now_iso()
    trace = TraceRecord(
        actor=actor,
        action=f"repair:{getattr(payload, 'kind', 'payload')}",
        timestamp=epoch_seconds(at),
        result="applied",
        metadata={"repairs": repairs},
    )
    return applied.model_copy(update={"repairs": repairs, "records": [*applied.records, trace]})


def _dispatch(snapshot: WorkflowSnapshot, payload: Payload, options: ApplyOptions) -> Applied:
    if isinstance(payload, (StagesPayload, WorkflowPayload)):
        return apply_stages(snapshot, payload, options=options)
    if isinstance(payload, StepsPayload):
        return apply_steps(snapshot, payload, options=options)
    if isinstance(payload, BehaviorPayload):
        return apply_behavior(snapshot, payload, options=options)
    if isinstance(payload, (ActionsPayload, JsonActionsPayload)):
        return apply_actions(snapshot, payload, options=options)
    if isinstance(payload, ReflectionPayload):
        return apply_reflection(snapshot, payload, options=options)
    if isinstance(payload, StageReflectionPayload):
        return apply_stage_reflection(snapshot, payload, options=options)
    if isinstance(payload, SignalsPayload):
        return apply_signals(snapshot, payload, options=options)
    if isinstance(payload, PlanningPayload):
        return apply_planning(snapshot, payload, options=options)
    raise TypeError(f"not a payload model: {type(payload).__name__}")  # pragma: no cover


def apply_text(
    snapshot: WorkflowSnapshot,
    text: str | bytes,
    kind: str = "auto",
    *,
    actor: str = "planner",
    at: str | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    effects_history_cap: int = DEFAULT_EFFECTS_HISTORY_CAP,
) -> Applied:
    """Parse a payload as sent (:func:`parse_payload`) and apply it.

    Raises :class:`ProtocolError` when the text cannot be read, :class:`ApplyError` when the
    payload cannot be applied; either way nothing changed.
    """
    return apply_payload(
        snapshot,
        parse_payload(text, kind),
        actor=actor,
        at=at,
        max_iterations=max_iterations,
        effects_history_cap=effects_history_cap,
    )
