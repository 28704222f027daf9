"""State documents in: our snapshot, or a reference-client state converted to one.

The reference DSLC client records ``{observation: {location: {current, progress, goals}},
state: {variables, effects, notebook, FSM: {state, last_transition, timestamp}}}`` (also with
``progress`` beside ``location``, or the state block under ``observation.context``, and FSM
names in any case). :func:`load_state_document` accepts either kind of document, so recorded
states from other DSLC clients can be replayed through the apply layer. A malformed document
raises :class:`StateDocumentError` with the JSON pointer of the bad field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from notebook_bcc.errors import UnknownNameError
from notebook_bcc.fsm.workflow import can_fire, next_state
from notebook_bcc.models.names import Event, State, parse_event, parse_state
from notebook_bcc.models.records import HistoryEntry
from notebook_bcc.models.snapshot import (
    HISTORY_TAIL,
    CurrentLocation,
    Effects,
    FsmBlock,
    LevelProgress,
    Location,
    NotebookSummary,
    Outputs,
    PcsConsiderations,
    PlanItem,
    Progress,
    VariableInfo,
    WorkflowSnapshot,
)
from notebook_bcc.workflow.errors import StateDocumentError
from notebook_bcc.workflow.items import criteria, json_text

IMPORTED_ID = "imported"
"""``workflow_id`` and ``run_id`` given to a converted reference state unless told otherwise."""

_ID_KEYS = {"stages": "stage_id", "steps": "step_id", "behaviors": "behavior_id"}
_STATUSES = ("success", "failed", "unverified", "skipped")
_STATUS_WORDS = {"completed": "success", "complete": "success", "done": "success"}
_SEPARATORS = re.compile(r"[,;\s]+")
_CELL_TYPES = ("code", "markdown", "raw")


def _ptr(base: str, key: str | int) -> str:
    token = str(key).replace("~", "~0").replace("/", "~1")
    return f"{base}/{token}"


def _obj(value: Any, pointer: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise StateDocumentError(pointer, f"expected an object, got {type(value).__name__}")
    return dict(value)


def _list(value: Any, pointer: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise StateDocumentError(pointer, f"expected an array, got {type(value).__name__}")
    return value


def _text(value: Any, pointer: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, dict)):
        return json_text(value)
    if isinstance(value, (int, float, bool)):
        return str(value)
    raise StateDocumentError(pointer, "expected text")  # pragma: no cover - JSON has no other


def _int(value: Any, pointer: str, default: int = 0) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise StateDocumentError(pointer, f"expected an integer, got {json.dumps(value)}")
    return value


def _names(value: Any, pointer: str) -> list[str]:
    """Artifact / variable names: a list of names or ``{name}`` objects, a mapping, or text."""
    if value is None:
        return []
    if isinstance(value, str):
        return [token for token in _SEPARATORS.split(value) if token]
    if isinstance(value, Mapping):
        return [str(key) for key in value]
    result: list[str] = []
    for index, entry in enumerate(_list(value, pointer)):
        if isinstance(entry, str):
            result.append(entry)
        elif isinstance(entry, Mapping) and isinstance(entry.get("name") or entry.get("id"), str):
            result.append(str(entry.get("name") or entry.get("id")))
        else:
            raise StateDocumentError(_ptr(pointer, index), "expected a name or {name: ...}")
    return list(dict.fromkeys(result))


def _state(value: Any, pointer: str) -> State:
    try:
        return parse_state(value)
    except UnknownNameError as exc:
        raise StateDocumentError(pointer, exc.message) from None


def _event(value: Any, pointer: str) -> Event:
    """An event name as the reference writes it (``START_STEP -> step_running`` and typos)."""
    found = _event_or_none(value)
    if found is not None:
        return found
    try:
        return parse_event(value)
    except UnknownNameError as exc:
        raise StateDocumentError(pointer, exc.message) from None


def _event_or_none(value: Any) -> Event | None:
    """The event a reference spelling names, or None (``TRANSITION_TO_<STATE>`` names a state)."""
    if not isinstance(value, str):
        return None
    name = value.split("->", 1)[0].strip().upper().replace("COMPELETE", "COMPLETE")
    for candidate in (name, name.removeprefix("TRANSITION_TO_")):
        try:
            return parse_event(candidate)
        except UnknownNameError:
            continue
    return None


def _status(value: Any, pointer: str) -> str | None:
    if value is None:
        return None
    word = str(value).strip().lower()
    word = _STATUS_WORDS.get(word, word)
    if word not in _STATUSES:
        raise StateDocumentError(
            pointer, f"unknown completion_status {value!r}; expected one of {', '.join(_STATUSES)}"
        )
    return word


def _mapping_text(value: Any, pointer: str) -> dict[str, str]:
    """``name -> text`` (bound inputs, declared outputs, artifact and variable specs).

    A mapping keeps its values (an object value gives its ``description``, else its JSON
    text); a list gives names, with the ``description`` of ``{name, description}`` entries;
    text gives the names it lists.
    """
    if value is None:
        return {}
    if isinstance(value, str):
        return dict.fromkeys(_names(value, pointer), "")
    if isinstance(value, list):
        result: dict[str, str] = {}
        for index, entry in enumerate(value):
            if isinstance(entry, Mapping) and isinstance(entry.get("name") or entry.get("id"), str):
                name = str(entry.get("name") or entry.get("id"))
                text = entry.get("description", entry.get("value"))
                result[name] = _text(text, _ptr(_ptr(pointer, index), "description")) or ""
            else:
                for name in _names([entry], _ptr(pointer, index)):
                    result.setdefault(name, "")
        return result
    result = {}
    for key, entry in _obj(value, pointer).items():
        if isinstance(entry, Mapping) and isinstance(entry.get("description"), str):
            result[str(key)] = entry["description"]
        else:
            result[str(key)] = _text(entry, _ptr(pointer, key)) or ""
    return result


_ITEM_KEYS = frozenset(
    {
        "id",
        "title",
        "goal",
        "description",
        "verified_artifacts",
        "required_variables",
        "acceptance",
        "focus",
        "optional",
        "pcs_considerations",
        "agent",
        "task",
        "inputs",
        "outputs",
        "iteration",
        "visits",
        "completion_status",
        "artifacts_produced",
        "whathappened",
    }
)


def _item(value: Any, pointer: str, level: str) -> PlanItem:
    if isinstance(value, str):
        return PlanItem(id=value)
    data = _obj(value, pointer)
    id_key = _ID_KEYS[level]
    raw_id = data.get(id_key, data.get("id"))
    if not isinstance(raw_id, str) or not raw_id:
        raise StateDocumentError(_ptr(pointer, id_key), f"a {level[:-1]} needs a string {id_key}")
    pcs_raw = data.get("pcs_considerations")
    pcs = None
    if pcs_raw is not None:
        pcs_data = _obj(pcs_raw, _ptr(pointer, "pcs_considerations"))
        pcs = PcsConsiderations(
            **{
                key: _text(pcs_data.get(key), _ptr(pointer, key))
                for key in ("predictability", "computability", "stability")
            }
        )
    iteration = data.get("iteration")
    extra = {k: v for k, v in data.items() if k not in _ITEM_KEYS and k != id_key}
    goal = _text(data.get("goal"), _ptr(pointer, "goal"))
    description = _text(data.get("description"), _ptr(pointer, "description"))
    if goal and description:
        extra["description"] = description
    return PlanItem(
        id=raw_id,
        title=_text(data.get("title"), _ptr(pointer, "title")),
        goal=goal or description,
        verified_artifacts=_mapping_text(
            data.get("verified_artifacts"), _ptr(pointer, "verified_artifacts")
        ),
        required_variables=_mapping_text(
            data.get("required_variables"), _ptr(pointer, "required_variables")
        ),
        acceptance=criteria(data.get("acceptance")),
        focus=_text(data.get("focus"), _ptr(pointer, "focus")),
        optional=bool(data.get("optional", False)),
        pcs_considerations=pcs,
        agent=_text(data.get("agent"), _ptr(pointer, "agent")),
        task=_text(data.get("task"), _ptr(pointer, "task")),
        inputs=_mapping_text(data.get("inputs"), _ptr(pointer, "inputs")),
        outputs=_mapping_text(data.get("outputs"), _ptr(pointer, "outputs")),
        iteration=None if iteration is None else _int(iteration, _ptr(pointer, "iteration")),
        visits=_int(data.get("visits"), _ptr(pointer, "visits")),
        completion_status=_status(
            data.get("completion_status"), _ptr(pointer, "completion_status")
        ),
        artifacts_produced=_names(
            data.get("artifacts_produced"), _ptr(pointer, "artifacts_produced")
        ),
        whathappened=_text(data.get("whathappened"), _ptr(pointer, "whathappened")),
        extra=extra,
    )


def _outputs(value: Any, pointer: str) -> Outputs:
    data = _obj(value, pointer)
    expected = _mapping_text(data.get("expected"), _ptr(pointer, "expected"))
    return Outputs(
        expected=list(expected),
        descriptions={name: text for name, text in expected.items() if text},
        produced=_names(data.get("produced"), _ptr(pointer, "produced")),
        in_progress=_names(data.get("in_progress"), _ptr(pointer, "in_progress")),
    )


def _level(value: Any, pointer: str, level: str) -> LevelProgress:
    data = _obj(value, pointer)
    current = data.get("current")
    iteration = data.get("iteration")
    return LevelProgress(
        completed=[
            _item(entry, _ptr(_ptr(pointer, "completed"), i), level)
            for i, entry in enumerate(_list(data.get("completed"), _ptr(pointer, "completed")))
        ],
        current=None if current is None else _item(current, _ptr(pointer, "current"), level),
        remaining=[
            _item(entry, _ptr(_ptr(pointer, "remaining"), i), level)
            for i, entry in enumerate(_list(data.get("remaining"), _ptr(pointer, "remaining")))
        ],
        focus=_text(data.get("focus"), _ptr(pointer, "focus")),
        current_outputs=_outputs(data.get("current_outputs"), _ptr(pointer, "current_outputs")),
        iteration=None if iteration is None else _int(iteration, _ptr(pointer, "iteration")),
    )


def _location(observation: dict[str, Any]) -> Location:
    base = "/observation/location"
    location = _obj(observation.get("location"), base)
    current = _obj(location.get("current"), _ptr(base, "current"))
    cur_ptr = _ptr(base, "current")
    ids = {
        key: _text(current.get(key), _ptr(cur_ptr, key))
        for key in ("stage_id", "step_id", "behavior_id")
    }
    if "progress" in location:
        progress_ptr, progress_raw = _ptr(base, "progress"), location["progress"]
    else:
        progress_ptr, progress_raw = "/observation/progress", observation.get("progress")
    progress = _obj(progress_raw, progress_ptr)
    goals = location.get("goals")
    if isinstance(goals, list):
        goals = "\n".join(str(goal) for goal in goals)
    return Location(
        current=CurrentLocation(
            **ids,
            behavior_iteration=_int(
                current.get("behavior_iteration"), _ptr(cur_ptr, "behavior_iteration")
            ),
        ),
        progress=Progress(
            **{
                level: _level(progress.get(level), _ptr(progress_ptr, level), level)
                for level in ("stages", "steps", "behaviors")
            }
        ),
        goals=_text(goals, _ptr(base, "goals")),
    )


def _variable(value: Any) -> VariableInfo:
    length = len(value) if isinstance(value, (list, dict)) else None
    return VariableInfo(type=type(value).__name__, value=value, length=length, source="kernel")


def _event_between(source: State, target: State) -> Event | None:
    """The one event the FSM table fires from ``source`` to ``target`` (None if not one)."""
    found = [
        event for event in Event if can_fire(source, event) and next_state(source, event) == target
    ]
    return found[0] if len(found) == 1 else None


def _fsm(value: Any, pointer: str) -> FsmBlock:
    data = _obj(value, pointer)
    if not data:
        return FsmBlock()
    state = _state(data.get("state", "idle"), _ptr(pointer, "state"))
    last = data.get("last_transition")
    history: list[HistoryEntry] = []
    history_ptr = _ptr(pointer, "history")
    for index, raw in enumerate(_list(data.get("history"), history_ptr)):
        entry_ptr = _ptr(history_ptr, index)
        entry = _obj(raw, entry_ptr)
        from_state = _state(entry.get("from"), _ptr(entry_ptr, "from"))
        to_state = _state(entry.get("to"), _ptr(entry_ptr, "to"))
        event = _event_or_none(entry.get("event")) or _event_between(from_state, to_state)
        history.append(
            HistoryEntry(
                from_state=from_state,
                event=event or _event(entry.get("event"), _ptr(entry_ptr, "event")),
                to=to_state,
                timestamp=_text(entry.get("timestamp"), _ptr(entry_ptr, "timestamp")) or "",
                actor=_text(entry.get("actor"), _ptr(entry_ptr, "actor")) or "client",
            )
        )
    last_event = _event_or_none(last)
    last_name = None
    if last is not None and (last_event is None or last_event.value != last):
        last_name = _text(last, _ptr(pointer, "last_transition"))
    return FsmBlock(
        state=state,
        last_transition=last_event,
        last_transition_name=last_name,
        timestamp=_text(data.get("timestamp"), _ptr(pointer, "timestamp")),
        history=history[-HISTORY_TAIL:],
    )


def _notebook(value: Any, pointer: str) -> NotebookSummary:
    data = _obj(value, pointer)
    cell_type = data.get("last_cell_type")
    if cell_type is not None and cell_type not in _CELL_TYPES:
        raise StateDocumentError(
            _ptr(pointer, "last_cell_type"), f"expected code, markdown or raw, got {cell_type!r}"
        )
    cells = data.get("cells")
    count = data.get("cell_count")
    if count is None and isinstance(cells, list):
        count = len(cells)
    return NotebookSummary(
        notebook_id=_text(data.get("notebook_id"), _ptr(pointer, "notebook_id")),
        title=_text(data.get("title"), _ptr(pointer, "title")),
        cell_count=_int(count, _ptr(pointer, "cell_count")),
        execution_count=_int(data.get("execution_count"), _ptr(pointer, "execution_count")),
        last_cell_type=cell_type,
        last_output=data.get("last_output"),
        cells=[
            _cell(cell, _ptr(_ptr(pointer, "cells"), index))
            for index, cell in enumerate(_list(cells, _ptr(pointer, "cells")))
        ],
    )


def _cell(value: Any, pointer: str) -> dict[str, Any]:
    """One notebook cell as the reference recorded it (an object; text is a markdown cell)."""
    if isinstance(value, str):
        return {"cell_type": "markdown", "source": value}
    return _obj(value, pointer)


def _effects(value: Any, pointer: str) -> Effects:
    data = _obj(value, pointer)
    lists: dict[str, list[str]] = {}
    for key in ("current", "history"):
        entries = _list(data.get(key), _ptr(pointer, key))
        lists[key] = [
            _text(entry, _ptr(_ptr(pointer, key), i)) or "" for i, entry in enumerate(entries)
        ]
    return Effects(**lists)


def snapshot_from_reference(
    doc: Mapping[str, Any], *, workflow_id: str = IMPORTED_ID, run_id: str = IMPORTED_ID
) -> WorkflowSnapshot:
    """Convert a reference-client state document into a :class:`WorkflowSnapshot`.

    ``user_problem`` / ``user_submit_files`` become the snapshot's ``problem`` / ``files``;
    other variables are kept with their JSON values (source ``kernel``: what the workspace
    held). Unknown item keys go to ``PlanItem.extra``.
    """
    observation = _obj(doc.get("observation"), "/observation")
    if "state" in doc:
        block_ptr, block_raw = "/state", doc["state"]
    else:
        block_ptr, block_raw = "/observation/context", observation.get("context")
    block = _obj(block_raw, block_ptr)
    variables_ptr = _ptr(block_ptr, "variables")
    raw_variables = _obj(block.get("variables"), variables_ptr)
    problem = raw_variables.pop("user_problem", None)
    files = raw_variables.pop("user_submit_files", None)
    if problem is not None and not isinstance(problem, str):
        raw_variables["user_problem"] = problem
        problem = None
    if isinstance(files, str):
        files = [files]
    if files is not None and not (
        isinstance(files, list) and all(isinstance(f, str) for f in files)
    ):
        raise StateDocumentError(_ptr(variables_ptr, "user_submit_files"), "expected file paths")
    fsm_key = "FSM" if "FSM" in block else "fsm"
    return WorkflowSnapshot(
        workflow_id=workflow_id,
        run_id=run_id,
        fsm=_fsm(block.get(fsm_key), _ptr(block_ptr, fsm_key)),
        location=_location(observation),
        variables={name: _variable(value) for name, value in raw_variables.items()},
        effects=_effects(block.get("effects"), _ptr(block_ptr, "effects")),
        notebook=_notebook(block.get("notebook"), _ptr(block_ptr, "notebook")),
        problem=problem,
        files=list(files or []),
    )


def _pointer_of(error: ValidationError) -> tuple[str, str]:
    first = error.errors()[0]
    pointer = "".join(_ptr("", part) for part in first["loc"])
    return pointer, str(first["msg"])


def load_state_document(
    data: Any, *, workflow_id: str = IMPORTED_ID, run_id: str = IMPORTED_ID
) -> WorkflowSnapshot:
    """Our snapshot (``workflow_id``/``fsm`` keys) or a reference state, as a snapshot."""
    if not isinstance(data, Mapping):
        raise StateDocumentError("", f"expected a JSON object, got {type(data).__name__}")
    if "workflow_id" in data or "fsm" in data:
        try:
            return WorkflowSnapshot.model_validate(data)
        except ValidationError as exc:
            pointer, message = _pointer_of(exc)
            raise StateDocumentError(pointer, message) from None
    if "observation" in data or "state" in data:
        try:
            return snapshot_from_reference(data, workflow_id=workflow_id, run_id=run_id)
        except ValidationError as exc:  # pragma: no cover - the converter checks types first
            pointer, message = _pointer_of(exc)
            raise StateDocumentError(pointer, message) from None
    raise StateDocumentError(
        "",
        "neither a notebook-bcc snapshot (workflow_id, fsm) nor a reference-client state "
        "(observation, state)",
    )
