"""How plan items, outputs, variables and notebook cells look in an observation.

The reference client's prompts read these shapes, so they follow its state documents:

- a current item carries every field it has; a remaining item its specification (goal,
  ``verified_artifacts`` / ``required_variables`` as ``name: description`` maps, acceptance,
  PCS considerations); a completed item what it was asked to do (agent, task, inputs, outputs,
  acceptance) and how it ended (``completion_status``, ``artifacts_produced``);
- ``current_outputs.expected`` as ``{name, description}`` items;
- ``variables`` as ``name: value`` (a value the workflow holds, else one line of text saying
  what the variable is), one shape whatever the variable's origin;
- notebook cells as ``{cell_type, source, outputs?}``, newest kept when the budget trims.

Budget: every string is clipped (``… [N more chars]``), lists are capped by the caller.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from typing import Any

from notebook_bcc.models.snapshot import Outputs, PlanItem, VariableInfo

ID_KEYS = {"stages": "stage_id", "steps": "step_id", "behaviors": "behavior_id"}

ITEM_FIELDS = (
    "title",
    "goal",
    "verified_artifacts",
    "required_variables",
    "acceptance",
    "focus",
    "agent",
    "task",
    "inputs",
    "outputs",
    "iteration",
    "completion_status",
    "artifacts_produced",
    "whathappened",
)
"""Fields of the current item, in the order shown."""

REMAINING_FIELDS = ("title", "goal", "verified_artifacts", "required_variables", "acceptance")
"""A remaining item's specification (plus ``optional`` and ``pcs_considerations``)."""

COMPLETED_FIELDS = (
    "title",
    "goal",
    "agent",
    "task",
    "inputs",
    "outputs",
    "acceptance",
    "iteration",
    "completion_status",
    "artifacts_produced",
    "whathappened",
)
"""A completed item: what it was asked to do and how it ended."""

EXTRA_SHOWN = (
    "description",
    "goals",
    "experience",
    "goal_status",
    "goal_review",
    "variable_management",
)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a ``… [N more chars]`` marker."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more chars]"


def clip_any(value: Any, limit: int) -> Any:
    """Every string inside ``value`` clipped to ``limit``."""
    if isinstance(value, str):
        return clip(value, limit)
    if isinstance(value, list):
        return [clip_any(entry, limit) for entry in value]
    if isinstance(value, dict):
        return {key: clip_any(entry, limit) for key, entry in value.items()}
    return value


def bounded(value: Any, limit: int) -> Any:
    """A JSON value kept as is when small, else its JSON text clipped (strings clipped)."""
    if isinstance(value, str):
        return clip(value, limit)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = json.dumps(value, ensure_ascii=False, default=str)
    return value if len(text) <= limit else clip(text, limit)


def _fields(item: PlanItem, names: Sequence[str], limit: int) -> dict[str, Any]:
    view: dict[str, Any] = {}
    for name in names:
        value = getattr(item, name)
        if value not in (None, [], {}):
            view[name] = clip_any(value, limit)
    return view


def _pcs(item: PlanItem, limit: int) -> dict[str, Any] | None:
    if item.pcs_considerations is None:
        return None
    pcs = item.pcs_considerations.model_dump(exclude_none=True)
    return clip_any(pcs, limit) if pcs else None


def item_view(item: PlanItem, level: str, limit: int) -> dict[str, Any]:
    """The current plan item as planners see it (seed 000 keys: ``stage_id``, ...)."""
    view: dict[str, Any] = {ID_KEYS[level]: item.id, **_fields(item, ITEM_FIELDS, limit)}
    if item.optional:
        view["optional"] = True
    pcs = _pcs(item, limit)
    if pcs is not None:
        view["pcs_considerations"] = pcs
    if item.visits > 1:
        view["visits"] = item.visits
    for key in EXTRA_SHOWN:
        if key in item.extra:
            view[key] = clip_any(item.extra[key], limit)
    return view


def remaining_view(item: PlanItem, level: str, limit: int) -> dict[str, Any]:
    """A remaining item with its specification."""
    view: dict[str, Any] = {ID_KEYS[level]: item.id, **_fields(item, REMAINING_FIELDS, limit)}
    if item.optional:
        view["optional"] = True
    pcs = _pcs(item, limit)
    if pcs is not None:
        view["pcs_considerations"] = pcs
    return view


def completed_view(item: PlanItem, level: str, limit: int) -> dict[str, Any]:
    """A completed item: what it was asked to do and how it ended."""
    return {ID_KEYS[level]: item.id, **_fields(item, COMPLETED_FIELDS, limit)}


def outputs_view(outputs: Outputs, limit: int) -> dict[str, Any]:
    """``current_outputs`` with ``expected`` as ``{name, description}`` items."""
    return {
        "expected": [
            {"name": name, "description": clip(outputs.descriptions.get(name, ""), limit)}
            for name in outputs.expected
        ],
        "produced": list(outputs.produced),
        "in_progress": list(outputs.in_progress),
    }


# ---------------------------------------------------------------- variables


def variable_text(info: VariableInfo, limit: int, max_columns: int) -> str:
    """One line saying what a variable without a JSON value is: type, size, columns, repr."""
    parts = [] if info.type == "unknown" else [info.type]
    if info.shape is not None:
        parts.append("shape (" + ", ".join(str(n) for n in info.shape) + ")")
    if info.length is not None:
        parts.append(f"length {info.length}")
    if info.dtypes:
        columns = list(info.dtypes.items())
        shown = ", ".join(f"{name}: {dtype}" for name, dtype in columns[:max_columns])
        more = len(columns) - max_columns
        parts.append(f"columns {shown}" + (f" (+{more} more)" if more > 0 else ""))
    text = ", ".join(parts)
    if info.repr:
        text = f"{text}: {info.repr}" if text else info.repr
    return clip(text or info.type, limit)


_LITERAL_TYPES = frozenset({"str", "int", "float", "bool", "list", "dict", "tuple"})


def literal_value(info: VariableInfo, limit: int) -> Any:
    """The JSON value of a builtin the kernel summarized by its repr (None if not one).

    ``ast.literal_eval`` evaluates literals only (never code) and only a repr within
    ``limit`` characters is read, so a ``['a.csv']`` list shows as the list it is, the same
    shape as a value the planner or the user gave.
    """
    if info.type not in _LITERAL_TYPES or not info.repr or len(info.repr) > limit:
        return None
    try:
        value = ast.literal_eval(info.repr)
        json.dumps(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return list(value) if isinstance(value, tuple) else value


def variable_view(info: VariableInfo, limit: int, max_columns: int) -> Any:
    """A variable as the reference shows it: its value, else a line of text about it."""
    if info.value is not None:
        return bounded(info.value, limit)
    value = literal_value(info, limit)
    if value is not None:
        return bounded(value, limit)
    return variable_text(info, limit, max_columns)


# ---------------------------------------------------------------- notebook cells


def _source(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return "" if value is None else str(value)


def _output_text(output: Any) -> Any:
    if not isinstance(output, Mapping):
        return output
    if "text" in output:
        return _source(output["text"])
    data = output.get("data")
    if isinstance(data, Mapping) and "text/plain" in data:
        return _source(data["text/plain"])
    if output.get("output_type") == "error":
        return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
    return {key: value for key, value in output.items() if key != "data"}


def cell_view(cell: Mapping[str, Any], limit: int) -> dict[str, Any]:
    """One notebook cell: type, source and (for code) its outputs as text, clipped."""
    view: dict[str, Any] = {"cell_type": cell.get("cell_type", "code")}
    if "id" in cell:
        view["id"] = cell["id"]
    view["source"] = clip(_source(cell.get("source")), limit)
    outputs = cell.get("outputs")
    if isinstance(outputs, list) and outputs:
        view["outputs"] = [bounded(_output_text(output), limit) for output in outputs]
    for key, value in cell.items():
        if key not in ("cell_type", "id", "source", "outputs", "metadata") and key not in view:
            view[key] = bounded(value, limit)
    return view


def cells_view(cells: Sequence[Mapping[str, Any]], count: int, limit: int) -> dict[str, Any]:
    """The newest ``count`` cells (``cells``), and how many older ones were left out."""
    shown = list(cells[-count:]) if count > 0 else []
    view: dict[str, Any] = {"cells": [cell_view(cell, limit) for cell in shown]}
    if len(cells) > len(shown):
        view["cells_omitted"] = len(cells) - len(shown)
    return view


# ---------------------------------------------------------------- what was trimmed


def trim_notes(doc: Any) -> list[str]:
    """What the budget left out of an observation, one line per place (for ``observe``)."""
    notes: list[str] = []
    _walk(doc, "", notes)
    return notes


def _walk(value: Any, path: str, notes: list[str]) -> None:
    if isinstance(value, dict):
        for key, entry in value.items():
            where = f"{path}/{key}"
            if key.endswith("_omitted") and isinstance(entry, int):
                notes.append(f"{path}: {entry} {key.removesuffix('_omitted')} left out")
            elif key == "…" or (key == "more" and isinstance(entry, str)):
                notes.append(f"{path}: {entry}")
            else:
                _walk(entry, where, notes)
    elif isinstance(value, list):
        for index, entry in enumerate(value):
            _walk(entry, f"{path}/{index}", notes)
    elif isinstance(value, str) and value.endswith(" more chars]") and "… [" in value:
        marker = value[value.rindex("… [") + 3 : -1]
        notes.append(f"{path}: clipped ({marker})")
