"""Reflection payloads: ``<reflection>`` (seed 000 T5) and ``<stage_reflection>`` (T6).

Both spellings the reference payloads use are read: ``progress``/``stage_progress``,
``stage_experience``/``experience_summary``, ``pcs_check``/``pcs_alignment_check``,
``gaps``/``variable_gap_analysis``, long (``variables_to_retain``) and short (``retain``)
variable-management names. Blocks whose inner shape varies (``whathappened``,
``step_evaluation``, ...) are kept as verbatim :class:`XmlElement` trees.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from notebook_bcc.errors import UnknownNameError
from notebook_bcc.models.base import WireModel
from notebook_bcc.models.names import State, parse_state
from notebook_bcc.protocol.errors import ProtocolError
from notebook_bcc.protocol.payload_base import XmlPayloadBase, base_fields
from notebook_bcc.protocol.text import clean_text
from notebook_bcc.protocol.xml_common import (
    Criterion,
    PcsNotes,
    VariableList,
    VariableRef,
    optional_variable_list,
    read_criteria,
    read_pcs,
    read_variable,
)
from notebook_bcc.protocol.xml_parse import ParsedXml
from notebook_bcc.protocol.xml_tree import XmlElement
from notebook_bcc.protocol.xml_view import ElementView


class Decision(WireModel):
    """``<decision>``: the next state the reflector asks for, and why (D17: it wins)."""

    next_state: State | None = None
    next_state_text: str | None = Field(default=None, description="next_state as written")
    next_focus: str | None = None
    reasoning: str | None = None
    line: int
    extra: list[XmlElement] = Field(default_factory=list)


class ContextForNext(WireModel):
    """``<context_for_next>``: variables produced, what happened, recommendations."""

    variables_produced: VariableList | None = None
    whathappened: XmlElement | None = None
    recommendations_for_next: XmlElement | None = None
    text: str = ""
    line: int
    extra: list[XmlElement] = Field(default_factory=list)


class OutputsTracking(WireModel):
    """``<outputs_tracking_update>`` / ``<outputs_update>``: artifact status lists.

    ``level`` names a wrapper such as ``stage_level`` the lists sat in.
    """

    level: str | None = None
    produced: VariableList | None = None
    in_progress: VariableList | None = None
    remaining: VariableList | None = None
    expected: VariableList | None = None
    text: str = ""
    line: int
    extra: list[XmlElement] = Field(default_factory=list)


class Evaluation(WireModel):
    """``<evaluation>`` of a behavior reflection."""

    artifacts_produced: VariableList | None = None
    acceptance_validation: list[Criterion] = Field(default_factory=list)
    execution_quality: XmlElement | None = None
    goal_achievement: XmlElement | None = None
    goal_status: str | None = Field(default=None, description="achieved | partial | ...")
    line: int
    extra: list[XmlElement] = Field(default_factory=list)


class ReflectionPayload(XmlPayloadBase):
    """``<reflection current_step_is_complete>``: the Behavior Reflection agent's verdict."""

    kind: Literal["reflection"] = "reflection"
    current_step_is_complete: bool | None = None
    evaluation: Evaluation | None = None
    decision: Decision | None = None
    context_for_next: ContextForNext | None = None
    outputs_tracking_update: OutputsTracking | None = None
    new_variables: list[VariableRef] = Field(default_factory=list)


class StageAssessment(WireModel):
    """``<stage_assessment>``: progress (``progress`` or ``stage_progress``) and status."""

    progress: XmlElement | None = None
    stage_artifacts_status: VariableList | None = None
    goal_status: str | None = None
    line: int
    extra: list[XmlElement] = Field(default_factory=list)


class GoalReview(WireModel):
    """``<stage_goal_review>``: does the stage goal need an update?"""

    needs_update: bool | None = None
    current_goal: str | None = None
    proposed_goal: str | None = None
    reasoning: str | None = None
    text: str = ""
    line: int
    extra: list[XmlElement] = Field(default_factory=list)


class StageExperience(WireModel):
    """``<stage_experience from=...>`` or ``<experience_summary>``: what the stage taught."""

    tag: str
    from_stage: str | None = None
    summary: str | None = None
    line: int
    extra: list[XmlElement] = Field(default_factory=list)


class VariableManagement(WireModel):
    """``<variable_management>``: variables extracted, retained, deprecated, needed, missing."""

    extracted: VariableList | None = None
    retained: VariableList | None = None
    deprecated: VariableList | None = None
    required_for_next: VariableList | None = None
    gaps: VariableList | None = None
    line: int
    extra: list[XmlElement] = Field(default_factory=list)


class StageReflectionPayload(XmlPayloadBase):
    """``<stage_reflection stage_is_complete>``: the Stage Reflection agent's verdict."""

    kind: Literal["stage_reflection"] = "stage_reflection"
    stage_is_complete: bool | None = None
    step_evaluation: XmlElement | None = None
    stage_assessment: StageAssessment | None = None
    stage_goal_review: GoalReview | None = None
    stage_experience: StageExperience | None = None
    decision: Decision | None = None
    context_for_next: ContextForNext | None = None
    outputs_tracking_update: OutputsTracking | None = None
    variable_management: VariableManagement | None = None
    pcs_check: PcsNotes | None = None
    next_step_id: str | None = Field(
        default=None,
        description="the step to run next: <next_step_id> anywhere in the document (in "
        "<decision> or <context_for_next>), or a next_step_id attribute of <decision>",
    )
    next_step_line: int | None = None


def _find(element: XmlElement, tag: str) -> XmlElement | None:
    """The first element named ``tag`` under ``element``, depth first."""
    for child in element.elements():
        if child.tag == tag:
            return child
        found = _find(child, tag)
        if found is not None:
            return found
    return None


def _next_step(root: XmlElement) -> tuple[str | None, int | None]:
    """``next_step_id`` of a stage reflection (decision attribute first), with its line."""
    for child in root.elements():
        if child.tag == "decision" and child.attrs.get("next_step_id", "").strip():
            return child.attrs["next_step_id"].strip(), child.line
    found = _find(root, "next_step_id")
    if found is None:
        return None, None
    text = clean_text(found.content())
    return (text or None), found.line


def _own_text(element: XmlElement) -> str:
    return clean_text(element.text + "".join(child.tail for child in element.children))


def _status(element: XmlElement | None, kind: str) -> str | None:
    """A ``status`` attribute, ``<status>`` inside ``element``, or its text when childless."""
    if element is None:
        return None
    if element.attrs.get("status"):
        return element.attrs["status"].strip()
    status = ElementView(element, kind).text("status")
    if status is not None:
        return status
    if element.elements():
        return None
    return _own_text(element) or None


def read_decision(element: XmlElement, kind: str) -> Decision:
    """A :class:`Decision`; an unknown ``next_state`` is a typed error."""
    view = ElementView(element, kind)
    state_element = view.take("next_state")
    state: State | None = None
    state_text: str | None = None
    if state_element is not None:
        state_text = clean_text(state_element.content())
        if state_text:
            try:
                state = parse_state(state_text)
            except UnknownNameError:
                raise ProtocolError(
                    kind,
                    f"unknown state {state_text!r}",
                    line=state_element.line,
                    element="next_state",
                ) from None
    return Decision(
        next_state=state,
        next_state_text=state_text,
        next_focus=view.text("next_focus"),
        reasoning=view.text("reasoning"),
        line=element.line,
        extra=view.rest(),
    )


def read_context(element: XmlElement, kind: str) -> ContextForNext:
    """A :class:`ContextForNext`."""
    view = ElementView(element, kind)
    return ContextForNext(
        variables_produced=optional_variable_list(view, "variables_produced"),
        whathappened=view.take("whathappened"),
        recommendations_for_next=view.take("recommendations_for_next"),
        text=_own_text(element),
        line=element.line,
        extra=view.rest(),
    )


def read_outputs(element: XmlElement, kind: str) -> OutputsTracking:
    """An :class:`OutputsTracking`, looking inside a single ``*_level`` wrapper if there is one."""
    level: str | None = None
    body = element
    children = element.elements()
    if len(children) == 1 and children[0].tag.endswith("_level"):
        body, level = children[0], children[0].tag
    view = ElementView(body, kind)
    return OutputsTracking(
        level=level,
        produced=optional_variable_list(view, "produced"),
        in_progress=optional_variable_list(view, "in_progress"),
        remaining=optional_variable_list(view, "remaining"),
        expected=optional_variable_list(view, "expected"),
        text=_own_text(body),
        line=element.line,
        extra=view.rest(),
    )


def _evaluation(element: XmlElement, kind: str) -> Evaluation:
    view = ElementView(element, kind)
    criteria: list[Criterion] = []
    leftovers: list[XmlElement] = []
    validation = view.take("acceptance_validation")
    if validation is not None:
        criteria, leftovers = read_criteria(validation)
    goal = view.take("goal_achievement")
    return Evaluation(
        artifacts_produced=optional_variable_list(view, "artifacts_produced"),
        acceptance_validation=criteria,
        execution_quality=view.take("execution_quality"),
        goal_achievement=goal,
        goal_status=_status(goal, kind),
        line=element.line,
        extra=[*leftovers, *view.rest()],
    )


def build_reflection(parsed: ParsedXml) -> ReflectionPayload:
    """The :class:`ReflectionPayload` of a parsed ``<reflection>`` document."""
    kind = "reflection"
    view = ElementView(parsed.root, kind)
    evaluation = view.take("evaluation")
    decision = view.take("decision")
    context = view.take("context_for_next")
    outputs = view.take("outputs_tracking_update", "outputs_update")
    new_variables = [read_variable(el, kind) for el in view.take_all("new_variable")]
    return ReflectionPayload(
        **base_fields(parsed),
        current_step_is_complete=view.bool_attr("current_step_is_complete"),
        evaluation=None if evaluation is None else _evaluation(evaluation, kind),
        decision=None if decision is None else read_decision(decision, kind),
        context_for_next=None if context is None else read_context(context, kind),
        outputs_tracking_update=None if outputs is None else read_outputs(outputs, kind),
        new_variables=new_variables,
        extra=view.rest(),
    )


def _assessment(element: XmlElement, kind: str) -> StageAssessment:
    view = ElementView(element, kind)
    progress = view.take("progress", "stage_progress")
    artifacts = optional_variable_list(view, "stage_artifacts_status")
    status = view.text("goal_status")
    if status is None:
        status = _status(view.take("stage_goal_achievement"), kind)
    return StageAssessment(
        progress=progress,
        stage_artifacts_status=artifacts,
        goal_status=status,
        line=element.line,
        extra=view.rest(),
    )


def _goal_review(element: XmlElement, kind: str) -> GoalReview:
    view = ElementView(element, kind)
    needs_update = view.bool_attr("needs_update")
    child_flag = view.bool_child("needs_update")
    return GoalReview(
        needs_update=needs_update if needs_update is not None else child_flag,
        current_goal=view.text("current_goal"),
        proposed_goal=view.text("proposed_goal"),
        reasoning=view.text("update_reasoning", "reasoning"),
        text=_own_text(element),
        line=element.line,
        extra=view.rest(),
    )


def _experience(element: XmlElement, kind: str) -> StageExperience:
    view = ElementView(element, kind)
    nested = view.take("stage_experience_variable", "stage_experience")
    from_stage = element.attrs.get("from")
    if from_stage is None and nested is not None:
        from_stage = nested.attrs.get("from")
    if nested is not None:
        summary: str | None = clean_text(nested.content()) or None
    elif element.elements():
        summary = _own_text(element) or None
    else:
        summary = clean_text(element.content()) or None
    return StageExperience(
        tag=element.tag,
        from_stage=from_stage,
        summary=summary,
        line=element.line,
        extra=view.rest(),
    )


def _variables(element: XmlElement, kind: str) -> VariableManagement:
    view = ElementView(element, kind)
    return VariableManagement(
        extracted=optional_variable_list(
            view, "variables_extracted_from_notebook", "extracted_from_notebook", "extracted"
        ),
        retained=optional_variable_list(view, "variables_to_retain", "retain"),
        deprecated=optional_variable_list(view, "variables_to_deprecate", "deprecate"),
        required_for_next=optional_variable_list(view, "variables_required_for_next"),
        gaps=optional_variable_list(view, "gaps", "variable_gap_analysis"),
        line=element.line,
        extra=view.rest(),
    )


def build_stage_reflection(parsed: ParsedXml) -> StageReflectionPayload:
    """The :class:`StageReflectionPayload` of a parsed ``<stage_reflection>`` document."""
    kind = "stage_reflection"
    view = ElementView(parsed.root, kind)
    assessment = view.take("stage_assessment")
    review = view.take("stage_goal_review")
    experience = view.take("stage_experience", "experience_summary")
    decision = view.take("decision")
    context = view.take("context_for_next")
    outputs = view.take("outputs_tracking_update", "outputs_update")
    variables = view.take("variable_management")
    pcs = view.take("pcs_check", "pcs_alignment_check")
    next_step_id, next_step_line = _next_step(parsed.root)
    return StageReflectionPayload(
        **base_fields(parsed),
        next_step_id=next_step_id,
        next_step_line=next_step_line,
        stage_is_complete=view.bool_attr("stage_is_complete"),
        step_evaluation=view.take("step_evaluation"),
        stage_assessment=None if assessment is None else _assessment(assessment, kind),
        stage_goal_review=None if review is None else _goal_review(review, kind),
        stage_experience=None if experience is None else _experience(experience, kind),
        decision=None if decision is None else read_decision(decision, kind),
        context_for_next=None if context is None else read_context(context, kind),
        outputs_tracking_update=None if outputs is None else read_outputs(outputs, kind),
        variable_management=None if variables is None else _variables(variables, kind),
        pcs_check=None if pcs is None else read_pcs(pcs, kind),
        extra=view.rest(),
    )
