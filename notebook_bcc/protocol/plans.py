"""Planning payloads: ``<stages>``, ``<workflow>``, ``<steps>`` and ``<behavior>`` (seed 000 T1-T3).

Each builder turns a parsed document into its typed model; anything the model has no field for
stays in ``extra`` (and the whole document in ``document``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import Field

from notebook_bcc.models.base import WireModel
from notebook_bcc.protocol.errors import ProtocolError
from notebook_bcc.protocol.payload_base import XmlPayloadBase, base_fields
from notebook_bcc.protocol.xml_common import (
    Criterion,
    PcsNotes,
    VariableList,
    optional_variable_list,
    read_criteria,
    read_pcs,
)
from notebook_bcc.protocol.xml_parse import ParsedXml
from notebook_bcc.protocol.xml_tree import XmlElement
from notebook_bcc.protocol.xml_view import ElementView


class PlannedItem(WireModel):
    """What a planned stage and a planned step share."""

    id: str
    title: str | None = None
    goal: str | None = None
    description: str | None = None
    verified_artifacts: VariableList | None = None
    required_variables: VariableList | None = None
    acceptance: list[Criterion] = Field(default_factory=list)
    focus: str | None = None
    optional: bool = Field(default=False, description="the stage/step may be skipped")
    insert_before: str | None = Field(default=None, description="id this one goes before")
    insert_after: str | None = Field(default=None, description="id this one goes after")
    replaces: str | None = Field(default=None, description="id this one replaces")
    attrs: dict[str, str] = Field(default_factory=dict)
    line: int
    truncated: bool = False
    extra: list[XmlElement] = Field(default_factory=list)


class StepPlan(PlannedItem):
    """A step planned by the Step-Planner (``<step>``), with its PCS considerations."""

    pcs_considerations: PcsNotes | None = None


class StagePlan(PlannedItem):
    """A stage planned by the Stage-Planner (``<stage>``); ``steps`` when the plan lists them."""

    steps: list[StepPlan] = Field(default_factory=list)


class StagesPayload(XmlPayloadBase):
    """``<stages>``: the stages of a workflow (directly or inside ``<remaining>``)."""

    kind: Literal["stages"] = "stages"
    stages: list[StagePlan] = Field(default_factory=list)
    focus: str | None = None
    goals: str | None = None


class WorkflowPayload(XmlPayloadBase):
    """``<workflow>``: a titled workflow and its stages, with positioning attributes."""

    kind: Literal["workflow"] = "workflow"
    id: str | None = None
    title: str | None = None
    description: str | None = None
    stages: list[StagePlan] = Field(default_factory=list)
    focus: str | None = None
    goals: str | None = None


class StepsPayload(XmlPayloadBase):
    """``<steps>``: the steps of the current stage, the execution focus and updated goals."""

    kind: Literal["steps"] = "steps"
    stage_id: str | None = None
    steps: list[StepPlan] = Field(default_factory=list)
    focus: str | None = None
    goals: str | None = None


class BehaviorPayload(XmlPayloadBase):
    """``<behavior>``: which agent does what, with bound inputs, outputs and acceptance."""

    kind: Literal["behavior"] = "behavior"
    id: str
    step_id: str | None = None
    agent: str | None = None
    task: str | None = None
    inputs: VariableList | None = None
    effects: str | None = None
    outputs: VariableList | None = None
    acceptance: list[Criterion] = Field(default_factory=list)
    whathappened: XmlElement | None = None


def _item_fields(view: ElementView) -> tuple[dict[str, Any], list[XmlElement]]:
    """Shared stage/step fields, and the non-criterion children of ``<acceptance>``."""
    acceptance: list[Criterion] = []
    leftovers: list[XmlElement] = []
    acceptance_element = view.take("acceptance")
    if acceptance_element is not None:
        acceptance, leftovers = read_criteria(acceptance_element)
    fields: dict[str, Any] = {
        "id": view.required_attr("id"),
        "title": view.attr("title") or view.text("title"),
        "goal": view.text("goal"),
        "description": view.text("description"),
        "verified_artifacts": optional_variable_list(view, "verified_artifacts"),
        "required_variables": optional_variable_list(view, "required_variables"),
        "acceptance": acceptance,
        "focus": view.text("focus"),
        "optional": bool(view.bool_attr("optional")),
        "insert_before": view.attr("insert_before"),
        "insert_after": view.attr("insert_after"),
        "replaces": view.attr("replaces"),
        "attrs": dict(view.element.attrs),
        "line": view.line,
        "truncated": view.element.truncated,
    }
    return fields, leftovers


def read_step(element: XmlElement, kind: str) -> StepPlan:
    """A :class:`StepPlan` from a ``<step>`` element."""
    view = ElementView(element, kind)
    fields, leftovers = _item_fields(view)
    pcs = view.take("pcs_considerations", "pcs")
    return StepPlan(
        **fields,
        pcs_considerations=None if pcs is None else read_pcs(pcs, kind),
        extra=[*leftovers, *view.rest()],
    )


def read_stage(element: XmlElement, kind: str) -> StagePlan:
    """A :class:`StagePlan` from a ``<stage>`` element (with its ``<steps>`` if listed)."""
    view = ElementView(element, kind)
    fields, leftovers = _item_fields(view)
    steps: list[StepPlan] = []
    steps_element = view.take("steps")
    if steps_element is not None:
        steps_view = ElementView(steps_element, kind)
        steps, nested = collect(steps_view, "step", read_step)
        leftovers += nested + steps_view.rest()
    direct, nested = collect(view, "step", read_step)
    steps += direct
    check_unique(steps, "step", kind)
    return StagePlan(**fields, steps=steps, extra=[*leftovers, *nested, *view.rest()])


_Item = TypeVar("_Item", StagePlan, StepPlan)


def collect(
    view: ElementView, tag: str, read: Callable[[XmlElement, str], _Item]
) -> tuple[list[_Item], list[XmlElement]]:
    """Items named ``tag`` under ``view``, directly or inside ``<remaining>`` groups.

    Returns them in document order, with the other children of those groups.
    """
    items: list[_Item] = []
    leftovers: list[XmlElement] = []
    for child in view.take_all(tag, "remaining"):
        if child.tag == tag:
            items.append(read(child, view.kind))
            continue
        for kid in child.elements():
            if kid.tag == tag:
                items.append(read(kid, view.kind))
            else:
                leftovers.append(kid)
    return items, leftovers


def check_unique(items: Sequence[PlannedItem], tag: str, kind: str) -> None:
    """Refuse two items with the same id (the engine could not tell them apart)."""
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise ProtocolError(
                kind, f"{tag} id {item.id!r} is used twice", line=item.line, element=tag
            )
        seen.add(item.id)


def build_stages(parsed: ParsedXml) -> StagesPayload:
    """The :class:`StagesPayload` of a parsed ``<stages>`` document."""
    view = ElementView(parsed.root, "stages")
    stages, leftovers = collect(view, "stage", read_stage)
    check_unique(stages, "stage", "stages")
    return StagesPayload(
        **base_fields(parsed),
        stages=stages,
        focus=view.text("focus"),
        goals=view.text("goals"),
        extra=[*leftovers, *view.rest()],
    )


def build_workflow(parsed: ParsedXml) -> WorkflowPayload:
    """The :class:`WorkflowPayload` of a parsed ``<workflow>`` document."""
    kind = "workflow"
    view = ElementView(parsed.root, kind)
    leftovers: list[XmlElement] = []
    stages: list[StagePlan] = []
    container = view.take("stages")
    if container is not None:
        container_view = ElementView(container, kind)
        stages, leftovers = collect(container_view, "stage", read_stage)
        leftovers += container_view.rest()
    direct, nested = collect(view, "stage", read_stage)
    stages += direct
    check_unique(stages, "stage", kind)
    return WorkflowPayload(
        **base_fields(parsed),
        id=view.attr("id", "name"),
        title=view.attr("title") or view.text("title"),
        description=view.text("description"),
        stages=stages,
        focus=view.text("focus"),
        goals=view.text("goals"),
        extra=[*leftovers, *nested, *view.rest()],
    )


def build_steps(parsed: ParsedXml) -> StepsPayload:
    """The :class:`StepsPayload` of a parsed ``<steps>`` document."""
    view = ElementView(parsed.root, "steps")
    steps, leftovers = collect(view, "step", read_step)
    check_unique(steps, "step", "steps")
    return StepsPayload(
        **base_fields(parsed),
        stage_id=view.attr("stage_id"),
        steps=steps,
        focus=view.text("focus"),
        goals=view.text("goals"),
        extra=[*leftovers, *view.rest()],
    )


def build_behavior(parsed: ParsedXml) -> BehaviorPayload:
    """The :class:`BehaviorPayload` of a parsed ``<behavior>`` document."""
    kind = "behavior"
    view = ElementView(parsed.root, kind)
    acceptance: list[Criterion] = []
    leftovers: list[XmlElement] = []
    acceptance_element = view.take("acceptance")
    if acceptance_element is not None:
        acceptance, leftovers = read_criteria(acceptance_element)
    return BehaviorPayload(
        **base_fields(parsed),
        id=view.required_attr("id"),
        step_id=view.attr("step_id"),
        agent=view.text("agent"),
        task=view.text("task"),
        inputs=optional_variable_list(view, "inputs"),
        effects=view.text("effects"),
        outputs=optional_variable_list(view, "outputs"),
        acceptance=acceptance,
        whathappened=view.take("whathappened"),
        extra=[*leftovers, *view.rest()],
    )
