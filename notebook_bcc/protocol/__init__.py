"""The protocol layer: planner payloads (XML, JSON, NDJSON) <-> typed pydantic models.

Pure: no file or network I/O. Entry point: :func:`parse_payload`. Streams:
:class:`NdjsonDecoder` (values) and :class:`ActionStreamDecoder` (action models).
"""

from notebook_bcc.protocol.action_stream import ActionStreamDecoder
from notebook_bcc.protocol.errors import (
    DoctypeRefusedError,
    PayloadTooLargeError,
    ProtocolError,
    ProtocolIssue,
)
from notebook_bcc.protocol.json_actions import ACTION_MODELS, JsonAction, parse_action
from notebook_bcc.protocol.ndjson import NdjsonDecoder, NdjsonRecord
from notebook_bcc.protocol.parse import JSON_KINDS, PAYLOAD_KINDS, parse_payload
from notebook_bcc.protocol.payloads import (
    JsonActionsPayload,
    Payload,
    PayloadModel,
    PlanningPayload,
    SignalsPayload,
)
from notebook_bcc.protocol.planning import PlanningResponse
from notebook_bcc.protocol.plans import (
    BehaviorPayload,
    StagePlan,
    StagesPayload,
    StepPlan,
    StepsPayload,
    WorkflowPayload,
)
from notebook_bcc.protocol.reflections import ReflectionPayload, StageReflectionPayload
from notebook_bcc.protocol.signals import BehaviorFeedback
from notebook_bcc.protocol.xml_actions import ActionsPayload, XmlAction, to_json_actions
from notebook_bcc.protocol.xml_tree import RepairNote, XmlElement
from notebook_bcc.protocol.xml_vocab import XML_KINDS

__all__ = [
    "ACTION_MODELS",
    "JSON_KINDS",
    "PAYLOAD_KINDS",
    "XML_KINDS",
    "ActionStreamDecoder",
    "ActionsPayload",
    "BehaviorFeedback",
    "BehaviorPayload",
    "DoctypeRefusedError",
    "JsonAction",
    "JsonActionsPayload",
    "NdjsonDecoder",
    "NdjsonRecord",
    "Payload",
    "PayloadModel",
    "PayloadTooLargeError",
    "PlanningPayload",
    "PlanningResponse",
    "ProtocolError",
    "ProtocolIssue",
    "ReflectionPayload",
    "RepairNote",
    "SignalsPayload",
    "StagePlan",
    "StageReflectionPayload",
    "StagesPayload",
    "StepPlan",
    "StepsPayload",
    "WorkflowPayload",
    "XmlAction",
    "XmlElement",
    "parse_action",
    "parse_payload",
    "to_json_actions",
]
