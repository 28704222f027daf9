"""The payload models: one per kind, and the :data:`Payload` union discriminated by ``kind``."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field, JsonValue, RootModel

from notebook_bcc.models.base import WireModel
from notebook_bcc.protocol.json_actions import JsonAction
from notebook_bcc.protocol.planning import PlanningResponse
from notebook_bcc.protocol.plans import (
    BehaviorPayload,
    StagesPayload,
    StepsPayload,
    WorkflowPayload,
)
from notebook_bcc.protocol.reflections import ReflectionPayload, StageReflectionPayload
from notebook_bcc.protocol.signals import SIGNAL_TYPES
from notebook_bcc.protocol.xml_actions import ActionsPayload

JsonFormat = Literal["document", "ndjson"]


class _ActionStream(WireModel):
    kind: str
    format: JsonFormat = Field(description="one JSON document, or one value per NDJSON line")
    actions: list[JsonAction] = Field(default_factory=list)
    envelope: dict[str, JsonValue] = Field(
        default_factory=dict, description='keys beside "actions" in {"actions": [...]} wrappers'
    )


class JsonActionsPayload(_ActionStream):
    """JSON actions from the Generating API (``{"actions": [...]}`` or NDJSON)."""

    kind: Literal["json-actions"] = "json-actions"


class SignalsPayload(_ActionStream):
    """A reflecting stream: control signals interleaved with ordinary actions."""

    kind: Literal["signals"] = "signals"

    @property
    def signals(self) -> list[JsonAction]:
        """The control signals, in order."""
        return [action for action in self.actions if action.type in SIGNAL_TYPES]


class PlanningPayload(WireModel):
    """A Planning API answer: a decision object, or a stream of the newer planning actions."""

    kind: Literal["planning"] = "planning"
    format: JsonFormat
    response: PlanningResponse | None = None
    actions: list[JsonAction] = Field(default_factory=list)
    envelope: dict[str, JsonValue] = Field(default_factory=dict)


Payload = Annotated[
    Union[  # noqa: UP007 - a discriminated union needs the Union spelling on Python 3.10
        StagesPayload,
        WorkflowPayload,
        StepsPayload,
        BehaviorPayload,
        ActionsPayload,
        ReflectionPayload,
        StageReflectionPayload,
        JsonActionsPayload,
        SignalsPayload,
        PlanningPayload,
    ],
    Field(discriminator="kind"),
]
"""Any parsed planner payload."""


class PayloadModel(RootModel[Payload]):
    """Any parsed planner payload (for schema export and validating a normalized dump)."""
