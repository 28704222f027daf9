"""Reflection payloads applied: ``<reflection>`` (T5) and ``<stage_reflection>`` (T6).

D17 precedence: ``<decision><next_state>`` wins over the root attribute
(``current_step_is_complete`` / ``stage_is_complete``); when both are given and disagree, the
decision is taken and a warning says so. A payload with neither is refused, as is a next state
the reflection cannot decide (a behavior reflection asking for ``stage_completed``).

Behavior reflection (at ``behavior_completed``): the variables it declares are merged, outputs
tracking moves (expected / produced / in_progress), the behavior moves to completed with its
status and artifacts; then NEXT_BEHAVIOR or COMPLETE_STEP (see :mod:`.decide`, D15).
Stage reflection (at ``step_completed``): variable management (extracted, retained,
deprecated, gaps), outputs tracking, experience kept on the stage; then NEXT_STEP or
COMPLETE_STAGE.
"""

from __future__ import annotations

from typing import Any

from notebook_bcc.models.names import State
from notebook_bcc.models.snapshot import VariableInfo, WorkflowSnapshot
from notebook_bcc.protocol.reflections import (
    ContextForNext,
    Decision,
    OutputsTracking,
    ReflectionPayload,
    StageReflectionPayload,
)
from notebook_bcc.protocol.text import clean_text
from notebook_bcc.protocol.xml_common import VariableList
from notebook_bcc.workflow.context import (
    add_gaps,
    deprecate,
    described_info,
    known_variables,
    merge_declared,
    propagate_produced,
    track,
    unique,
)
from notebook_bcc.workflow.decide import (
    BehaviorOutcome,
    StepOutcome,
    conclude_behavior,
    conclude_step,
)
from notebook_bcc.workflow.errors import ContradictoryPayloadError
from notebook_bcc.workflow.items import names
from notebook_bcc.workflow.legal import require_state
from notebook_bcc.workflow.result import DEFAULT_OPTIONS, Applied, ApplyOptions, Draft

S = State

BEHAVIOR_NEXT_STATES: dict[State, BehaviorOutcome] = {
    S.STEP_RUNNING: "continue",
    S.BEHAVIOR_RUNNING: "continue",
    S.STEP_COMPLETED: "complete",
}
"""What a behavior reflection's ``<next_state>`` means."""

STAGE_NEXT_STATES: dict[State, StepOutcome] = {
    S.STEP_RUNNING: "next_step",
    S.STAGE_COMPLETED: "complete_stage",
    S.STAGE_RUNNING: "complete_stage",
    S.WORKFLOW_COMPLETED: "complete_stage",
}
"""What a stage reflection's ``<next_state>`` means (seed 000 T6: STAGE_RUNNING = next stage)."""

NOT_PRODUCED = frozenset(
    {"missing", "incomplete", "failed", "not_produced", "absent", "partial", "pending", "error"}
)
"""Artifact ``status`` values that do not count as produced."""


def _decide(
    draft: Draft,
    decision: Decision | None,
    flag: bool | None,
    meanings: dict[State, Any],
    *,
    attr: str,
    when_true: str,
    when_false: str,
) -> Any:
    """The outcome by D17: ``next_state`` first, the root attribute otherwise."""
    by_flag = None if flag is None else (when_true if flag else when_false)
    if decision is not None and decision.next_state is not None:
        state = decision.next_state
        if state not in meanings:
            allowed = ", ".join(s.value for s in meanings)
            raise draft.fail(
                ContradictoryPayloadError,
                f"<next_state> {decision.next_state_text or state.value} is not a decision this "
                f"reflection can make (expected one of: {allowed})",
            )
        outcome = meanings[state]
        if by_flag is not None and by_flag != outcome:
            draft.warn(
                f"D17: <next_state> {decision.next_state_text or state.value} wins over "
                f'{attr}="{str(flag).lower()}"'
            )
        return outcome
    if by_flag is None:
        raise draft.fail(
            ContradictoryPayloadError,
            f"no decision: neither <decision><next_state> nor the {attr} attribute",
        )
    return by_flag


def declared(variables: VariableList | None) -> dict[str, VariableInfo]:
    """Variables a reflection declares, as planner-sourced infos."""
    result: dict[str, VariableInfo] = {}
    if variables is None:
        return result
    for ref in variables.items:
        if ref.name:
            result[ref.name] = described_info(
                ref.attrs.get("value") or ref.description,
                ref.attrs.get("type") or ref.details.get("type"),
            )
    return result


def _produced_names(variables: VariableList | None) -> list[str]:
    if variables is None:
        return []
    return unique(
        ref.name
        for ref in variables.items
        if ref.name and ref.attrs.get("status", "").strip().lower() not in NOT_PRODUCED
    )


def _tracking_level(tracking: OutputsTracking, default: str) -> str:
    level = (tracking.level or "").lower()
    for name in ("stage", "step", "behavior"):
        if level.startswith(name):
            return name + "s"
    return default


def apply_tracking(draft: Draft, tracking: OutputsTracking | None, default_level: str) -> None:
    """An ``<outputs_tracking_update>`` moved into the level it names (or ``default_level``)."""
    if tracking is None:
        return
    level = _tracking_level(tracking, default_level)
    progress = draft.level(level)
    outputs = track(
        progress.current_outputs,
        produced=names(tracking.produced),
        in_progress=None if tracking.in_progress is None else names(tracking.in_progress),
        expected=names(tracking.expected),
        remaining=names(tracking.remaining),
    )
    draft.update_level(level, current_outputs=outputs)
    propagate_produced(draft, names(tracking.produced))


def _whathappened(context: ContextForNext | None) -> str | None:
    if context is None:
        return None
    if context.whathappened is not None:
        return clean_text(context.whathappened.plain_text()) or None
    return context.text or None


def apply_reflection(
    snapshot: WorkflowSnapshot,
    payload: ReflectionPayload,
    *,
    options: ApplyOptions = DEFAULT_OPTIONS,
) -> Applied:
    """Apply a behavior reflection at ``behavior_completed`` (see the module docstring)."""
    draft = Draft(snapshot, payload.kind, options)
    require_state(payload.kind, draft.state)
    outcome: BehaviorOutcome = _decide(
        draft,
        payload.decision,
        payload.current_step_is_complete,
        BEHAVIOR_NEXT_STATES,
        attr="current_step_is_complete",
        when_true="complete",
        when_false="continue",
    )
    context = payload.context_for_next
    variables = declared(None if context is None else context.variables_produced)
    for ref in payload.new_variables:
        if ref.name:
            variables[ref.name] = described_info(
                ref.attrs.get("value") or ref.description, ref.attrs.get("type")
            )
    merge_declared(draft, variables)
    behavior = draft.level("behaviors").current
    evaluation = payload.evaluation
    if evaluation is not None and evaluation.artifacts_produced is not None:
        artifacts = _produced_names(evaluation.artifacts_produced)
    elif payload.outputs_tracking_update is not None and payload.outputs_tracking_update.produced:
        artifacts = names(payload.outputs_tracking_update.produced)
    else:
        expected = set(behavior.outputs) if behavior is not None else set()
        artifacts = [name for name in variables if name in expected]
    apply_tracking(draft, payload.outputs_tracking_update, "steps")
    propagate_produced(draft, artifacts)
    goal = (evaluation.goal_status or "").strip().lower() if evaluation is not None else ""
    conclude_behavior(
        draft,
        outcome,
        artifacts=artifacts,
        whathappened=_whathappened(context),
        continue_status="success" if goal == "achieved" else "failed",
    )
    return draft.finish()


def _stage_notes(draft: Draft, payload: StageReflectionPayload) -> None:
    stage = draft.level("stages").current
    if stage is None:
        return
    extra = dict(stage.extra)
    if payload.stage_experience is not None and payload.stage_experience.summary:
        extra["experience"] = payload.stage_experience.summary
    review = payload.stage_goal_review
    if review is not None and review.needs_update:
        extra["goal_review"] = {
            "proposed_goal": review.proposed_goal,
            "reasoning": review.reasoning,
        }
    assessment = payload.stage_assessment
    if assessment is not None and assessment.goal_status:
        extra["goal_status"] = assessment.goal_status
    if extra != stage.extra:
        draft.update_level("stages", current=stage.model_copy(update={"extra": extra}))


def _keep_management(draft: Draft, payload: StageReflectionPayload) -> None:
    """The variable management on the stage (``extra``), so planners see what carries on."""
    management = payload.variable_management
    stage = draft.level("stages").current
    if management is None or stage is None:
        return
    kept = {
        "retain": names(management.retained),
        "deprecate": names(management.deprecated),
        "required_for_next": names(management.required_for_next),
        "gaps": names(management.gaps),
    }
    kept = {key: value for key, value in kept.items() if value}
    if kept:
        extra = {**stage.extra, "variable_management": kept}
        draft.update_level("stages", current=stage.model_copy(update={"extra": extra}))


def apply_stage_reflection(
    snapshot: WorkflowSnapshot,
    payload: StageReflectionPayload,
    *,
    options: ApplyOptions = DEFAULT_OPTIONS,
) -> Applied:
    """Apply a stage reflection at ``step_completed`` (see the module docstring)."""
    draft = Draft(snapshot, payload.kind, options)
    require_state(payload.kind, draft.state)
    outcome: StepOutcome = _decide(
        draft,
        payload.decision,
        payload.stage_is_complete,
        STAGE_NEXT_STATES,
        attr="stage_is_complete",
        when_true="complete_stage",
        when_false="next_step",
    )
    management = payload.variable_management
    if management is not None:
        merge_declared(draft, declared(management.extracted))
        retained = names(management.retained)
        known = known_variables(draft.snapshot)
        absent = [name for name in retained if name not in known]
        if absent:
            draft.warn("retained variables not in the workspace: " + ", ".join(absent))
        deprecate(draft, names(management.deprecated), retained)
        stage = draft.level("stages").current
        if stage is not None and management.gaps is not None:
            missing = [name for name in names(management.gaps) if name not in known]
            add_gaps(draft, missing, "stage", stage.id, effect=False, reported=True)
        _keep_management(draft, payload)
    if payload.context_for_next is not None:
        merge_declared(draft, declared(payload.context_for_next.variables_produced))
    apply_tracking(draft, payload.outputs_tracking_update, "stages")
    _stage_notes(draft, payload)
    decision = payload.decision
    assessment = payload.stage_assessment
    conclude_step(
        draft,
        outcome,
        focus=None if decision is None else decision.next_focus,
        goal_status=None if assessment is None else assessment.goal_status,
        next_step_id=payload.next_step_id,
    )
    return draft.finish()
