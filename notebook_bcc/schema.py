"""The registry of models whose JSON Schema ``notebook-bcc schema`` prints.

Entries are ``name -> "module:Class"`` strings imported on demand, so the registry itself is
cheap to import. Each layer adds its wire models here.
"""

from __future__ import annotations

import importlib
from typing import Any

from notebook_bcc.errors import UnknownNameError

SCHEMA_MODELS: dict[str, str] = {
    "snapshot": "notebook_bcc.models.snapshot:WorkflowSnapshot",
    "command": "notebook_bcc.models.command:Command",
    "event": "notebook_bcc.models.event:WorkflowEvent",
    "contract": "notebook_bcc.models.contract:ExecutionContract",
    "history_entry": "notebook_bcc.models.records:HistoryEntry",
    "trace_record": "notebook_bcc.models.records:TraceRecord",
    "pending_decision": "notebook_bcc.models.snapshot:PendingDecision",
    "blueprint": "notebook_bcc.blueprint.models:Blueprint",
    # protocol layer (issue 3): planner payloads and the actions they carry
    "payload": "notebook_bcc.protocol.payloads:PayloadModel",
    "payload_stages": "notebook_bcc.protocol.plans:StagesPayload",
    "payload_workflow": "notebook_bcc.protocol.plans:WorkflowPayload",
    "payload_steps": "notebook_bcc.protocol.plans:StepsPayload",
    "payload_behavior": "notebook_bcc.protocol.plans:BehaviorPayload",
    "payload_actions": "notebook_bcc.protocol.xml_actions:ActionsPayload",
    "payload_reflection": "notebook_bcc.protocol.reflections:ReflectionPayload",
    "payload_stage_reflection": "notebook_bcc.protocol.reflections:StageReflectionPayload",
    "payload_json_actions": "notebook_bcc.protocol.payloads:JsonActionsPayload",
    "payload_signals": "notebook_bcc.protocol.payloads:SignalsPayload",
    "payload_planning": "notebook_bcc.protocol.payloads:PlanningPayload",
    "json_action": "notebook_bcc.protocol.json_actions:JsonActionModel",
    "xml_action": "notebook_bcc.protocol.xml_actions:XmlActionModel",
    "xml_element": "notebook_bcc.protocol.xml_tree:XmlElement",
    "planning_response": "notebook_bcc.protocol.planning:PlanningResponse",
    "control_signal": "notebook_bcc.protocol.signals:ControlSignalModel",
    "behavior_feedback": "notebook_bcc.protocol.signals:BehaviorFeedback",
    # apply layer (issue 4): the observation planners receive, and an apply's outcome
    "observation": "notebook_bcc.workflow.observation_models:Observation",
    "applied": "notebook_bcc.workflow.result:Applied",
    # server extension (issue 8): REST request bodies and answers, the stream's snapshot message
    "create_workflow_request": "notebook_bcc.server.models:CreateWorkflowRequest",
    "workflow_list": "notebook_bcc.server.models:WorkflowList",
    "trace_document": "notebook_bcc.server.models:TraceDocument",
    "diagram_document": "notebook_bcc.server.models:DiagramDocument",
    "fsm_document": "notebook_bcc.server.models:FsmDocument",
    "stream_snapshot": "notebook_bcc.server.models:StreamSnapshot",
    "error_body": "notebook_bcc.server.models:ErrorBody",
}


def _load(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of the model registered as ``name`` (validation mode)."""
    if name not in SCHEMA_MODELS:
        raise UnknownNameError("schema model", name, sorted(SCHEMA_MODELS))
    schema: dict[str, Any] = _load(SCHEMA_MODELS[name]).model_json_schema(by_alias=True)
    return schema


def all_schemas() -> dict[str, dict[str, Any]]:
    """Every registered model's schema, keyed by its registry name."""
    return {name: json_schema(name) for name in sorted(SCHEMA_MODELS)}
