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
