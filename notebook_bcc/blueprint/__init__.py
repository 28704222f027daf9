"""Blueprints (D14): YAML workflows as seed 004 state machines of DSLC stages.

- :mod:`~notebook_bcc.blueprint.models` — ``Blueprint``, ``StageSpec``, ``StepSpec``,
  ``BehaviorSpec``, ``ActionSpec`` and the bare ``StateMachineSpec``;
- :mod:`~notebook_bcc.blueprint.loader` — ``load_blueprint_text`` / ``load_blueprint_file``
  (raise ``BlueprintError`` carrying every ``(line, message)``);
- :mod:`~notebook_bcc.blueprint.validate` — ``validate_file`` / ``validate_text`` -> report;
- :mod:`~notebook_bcc.blueprint.diagram` — ``blueprint_mermaid`` (Mermaid stateDiagram-v2).

Names are imported lazily so that importing the models (e.g. for ``notebook-bcc schema``)
does not load the YAML parser.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "ActionSpec": "notebook_bcc.blueprint.models",
    "BehaviorSpec": "notebook_bcc.blueprint.models",
    "Blueprint": "notebook_bcc.blueprint.models",
    "StageSpec": "notebook_bcc.blueprint.models",
    "StateMachineSpec": "notebook_bcc.blueprint.models",
    "StepSpec": "notebook_bcc.blueprint.models",
    "BlueprintError": "notebook_bcc.blueprint.issues",
    "Issue": "notebook_bcc.blueprint.issues",
    "LoadedBlueprint": "notebook_bcc.blueprint.loader",
    "load_blueprint_file": "notebook_bcc.blueprint.loader",
    "load_blueprint_text": "notebook_bcc.blueprint.loader",
    "ValidationReport": "notebook_bcc.blueprint.validate",
    "validate_file": "notebook_bcc.blueprint.validate",
    "validate_text": "notebook_bcc.blueprint.validate",
    "blueprint_mermaid": "notebook_bcc.blueprint.diagram",
    "rule_machine_mermaid": "notebook_bcc.blueprint.diagram",
}

__all__ = [
    "ActionSpec",
    "BehaviorSpec",
    "Blueprint",
    "BlueprintError",
    "Issue",
    "LoadedBlueprint",
    "StageSpec",
    "StateMachineSpec",
    "StepSpec",
    "ValidationReport",
    "blueprint_mermaid",
    "load_blueprint_file",
    "load_blueprint_text",
    "rule_machine_mermaid",
    "validate_file",
    "validate_text",
]


def __getattr__(name: str) -> Any:
    """Import an exported name on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
