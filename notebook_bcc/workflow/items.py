"""Planner payload pieces -> snapshot :class:`PlanItem` objects.

One conversion per planned thing (stage, step, behavior, template stage/step, streamed
``plan_stage``/``plan_step``/``delegate_task``). Elements the payload carries that the plan item
has no field for are kept in ``extra`` as plain text, so nothing the planner said is dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from notebook_bcc.models.snapshot import PcsConsiderations, PlanItem
from notebook_bcc.protocol.planning import TemplateStage, TemplateStep
from notebook_bcc.protocol.plans import BehaviorPayload, PlannedItem, StagePlan, StepPlan
from notebook_bcc.protocol.text import clean_text
from notebook_bcc.protocol.xml_common import VariableList
from notebook_bcc.protocol.xml_tree import XmlElement

_POSITION_ATTRS = frozenset(
    {"id", "title", "optional", "insert_before", "insert_after", "replaces"}
)


@dataclass(frozen=True)
class Positioned:
    """A plan item and where the planner wants it (``insert_before``/``_after``, ``replaces``)."""

    item: PlanItem
    insert_before: str | None = None
    insert_after: str | None = None
    replaces: str | None = None

    @property
    def positioned(self) -> bool:
        """True when the planner gave a position."""
        return bool(self.insert_before or self.insert_after or self.replaces)

    def to_json(self) -> dict[str, Any]:
        """The item and its position as JSON data (kept in a pending decision's details)."""
        return {
            "item": self.item.model_dump(mode="json", by_alias=True),
            "insert_before": self.insert_before,
            "insert_after": self.insert_after,
            "replaces": self.replaces,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Positioned:
        """The inverse of :meth:`to_json`."""
        return cls(
            item=PlanItem.model_validate(data["item"]),
            insert_before=data.get("insert_before"),
            insert_after=data.get("insert_after"),
            replaces=data.get("replaces"),
        )


def names(variables: VariableList | None) -> list[str]:
    """The distinct names of a variable list, in order."""
    if variables is None:
        return []
    return list(dict.fromkeys(variables.names))


def described(variables: VariableList | None) -> dict[str, str]:
    """``name -> value or description`` of a variable list (bound inputs, declared outputs)."""
    result: dict[str, str] = {}
    if variables is None:
        return result
    for ref in variables.items:
        if ref.name:
            text = ref.attrs.get("value") or ref.description or ""
            result[ref.name] = text
    return result


def element_texts(elements: list[XmlElement]) -> dict[str, str]:
    """Leftover elements as ``tag -> plain text`` (repeated tags joined by blank lines)."""
    result: dict[str, str] = {}
    for element in elements:
        text = clean_text(element.plain_text())
        result[element.tag] = f"{result[element.tag]}\n\n{text}" if element.tag in result else text
    return result


def _extra(planned: PlannedItem) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if planned.description and planned.goal:
        extra["description"] = planned.description
    attrs = {k: v for k, v in planned.attrs.items() if k not in _POSITION_ATTRS}
    if attrs:
        extra["attrs"] = attrs
    texts = element_texts(planned.extra)
    if texts:
        extra["elements"] = texts
    return extra


def _pcs(step: StepPlan) -> PcsConsiderations | None:
    notes = step.pcs_considerations
    if notes is None:
        return None
    return PcsConsiderations(
        predictability=notes.predictability,
        computability=notes.computability,
        stability=notes.stability,
    )


def planned_item(planned: PlannedItem) -> PlanItem:
    """A stage or step as planned in XML."""
    extra = _extra(planned)
    if isinstance(planned, StagePlan) and planned.steps:
        extra["steps"] = [
            planned_item(step).model_dump(mode="json", exclude_defaults=True)
            for step in planned.steps
        ]
    return PlanItem(
        id=planned.id,
        title=planned.title,
        goal=planned.goal or planned.description,
        verified_artifacts=described(planned.verified_artifacts),
        required_variables=described(planned.required_variables),
        acceptance=[criterion.expression for criterion in planned.acceptance],
        focus=planned.focus,
        optional=planned.optional,
        pcs_considerations=_pcs(planned) if isinstance(planned, StepPlan) else None,
        extra=extra,
    )


def positioned(planned: PlannedItem) -> Positioned:
    """A planned stage or step with its positioning attributes."""
    return Positioned(
        item=planned_item(planned),
        insert_before=planned.insert_before,
        insert_after=planned.insert_after,
        replaces=planned.replaces,
    )


def behavior_item(payload: BehaviorPayload, iteration: int) -> PlanItem:
    """The behavior a ``<behavior>`` payload plans, at ``iteration``."""
    extra: dict[str, Any] = {}
    if payload.step_id:
        extra["step_id"] = payload.step_id
    if payload.effects:
        extra["effects"] = payload.effects
    attrs = {k: v for k, v in payload.attrs.items() if k not in ("id", "step_id")}
    if attrs:
        extra["attrs"] = attrs
    texts = element_texts(payload.extra)
    if texts:
        extra["elements"] = texts
    return PlanItem(
        id=payload.id,
        agent=payload.agent,
        task=payload.task,
        inputs=described(payload.inputs),
        outputs=described(payload.outputs),
        acceptance=[criterion.expression for criterion in payload.acceptance],
        focus=payload.task,
        iteration=iteration,
        whathappened=None
        if payload.whathappened is None
        else clean_text(payload.whathappened.plain_text()) or None,
        extra=extra,
    )


def _model_extra(model: Any) -> dict[str, Any]:
    extra = getattr(model, "model_extra", None) or {}
    return {key: value for key, value in extra.items() if value is not None}


def template_step_item(step: TemplateStep) -> PlanItem:
    """A step of a planning JSON ``stage_steps_update`` / workflow template."""
    return PlanItem(
        id=step.id,
        title=step.title,
        goal=step.description,
        extra=_model_extra(step),
    )


def template_stage_item(stage: TemplateStage) -> PlanItem:
    """A stage of a planning JSON ``workflowTemplate``."""
    extra = _model_extra(stage)
    if stage.steps:
        extra["steps"] = [
            template_step_item(step).model_dump(mode="json", exclude_defaults=True)
            for step in stage.steps
        ]
    return PlanItem(id=stage.id, title=stage.title, goal=stage.description, extra=extra)


def json_text(value: Any) -> str | None:
    """A JSON value as text (strings as they are), None for null/empty."""
    if value is None or value in ("", [], {}):
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def criteria(value: Any) -> list[str]:
    """Acceptance given as JSON (a string, a list of strings, anything else as JSON text)."""
    if value is None:
        return []
    if isinstance(value, list):
        return [text for text in (json_text(entry) for entry in value) if text]
    text = json_text(value)
    return [text] if text else []
