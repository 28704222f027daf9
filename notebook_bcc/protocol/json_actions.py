"""Every JSON action type in one discriminated union, and JSON values -> action models.

Accepted shapes: a bare action, ``{"action": {...}}`` (extra wrapper keys are merged into the
action), ``{"actions": [...]}`` (other keys go to the envelope) and a JSON array of any of
these. The discriminator is ``type`` or ``action``; its spelling is matched case-insensitively
with ``-``/``_`` interchangeable (``new-section`` is ``new_section``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Union, cast, get_args

from pydantic import Field, RootModel, ValidationError

from notebook_bcc.models.actions import NotebookActions, PlannerAction
from notebook_bcc.protocol.errors import ProtocolError, ProtocolIssue
from notebook_bcc.protocol.json_text import JsonRecord, locate, pointer, validation_issues
from notebook_bcc.protocol.planning_actions import (
    BugAnalysisAction,
    ClearEffectCurrentAction,
    ClearEffectHistoryAction,
    CompleteBehaviorAction,
    CompleteStagePlanningAction,
    CompleteStepPlanningAction,
    CompleteWorkflowPlanningAction,
    DelegateTaskAction,
    ExecNewVersionAction,
    PlanStageAction,
    PlanStepAction,
    UpdateCodeAction,
    UpdateStageContextAction,
    UpdateStepFocusAction,
)
from notebook_bcc.protocol.signals import (
    CompleteReflectionSignal,
    MarkStageCompleteSignal,
    MarkStepCompleteSignal,
)

JsonAction = Annotated[
    Union[  # noqa: UP007 - a discriminated union needs the Union spelling on Python 3.10
        NotebookActions,
        MarkStepCompleteSignal,
        MarkStageCompleteSignal,
        CompleteReflectionSignal,
        PlanStageAction,
        CompleteWorkflowPlanningAction,
        PlanStepAction,
        UpdateStageContextAction,
        CompleteStagePlanningAction,
        DelegateTaskAction,
        CompleteStepPlanningAction,
        CompleteBehaviorAction,
        BugAnalysisAction,
        UpdateCodeAction,
        ExecNewVersionAction,
        UpdateStepFocusAction,
        ClearEffectCurrentAction,
        ClearEffectHistoryAction,
    ],
    Field(discriminator="type"),
]
"""Any action a planner may stream, discriminated by ``type``."""


class JsonActionModel(RootModel[JsonAction]):
    """One JSON action (for schema export and validating normalized dumps)."""


_MODELS: tuple[type[PlannerAction], ...] = get_args(get_args(JsonAction)[0])
"""Every action model, in the order of the :data:`JsonAction` union."""

ACTION_MODELS: dict[str, type[PlannerAction]] = {
    str(model.model_fields["type"].default): model for model in _MODELS
}
"""Action type -> its model."""


def canonical_type(name: str) -> str | None:
    """The registered spelling of an action type name, or None if unknown."""
    key = name.strip()
    if key in ACTION_MODELS:
        return key
    lowered = key.lower()
    for candidate in (lowered, lowered.replace("-", "_"), lowered.replace("_", "-")):
        if candidate in ACTION_MODELS:
            return candidate
    return None


def raise_issues(kind: str, issues: list[ProtocolIssue]) -> ProtocolError:
    """A :class:`ProtocolError` carrying ``issues`` (the first one is the headline)."""
    head = issues[0]
    return ProtocolError(
        kind,
        head.message,
        line=head.line,
        pointer=head.pointer,
        element=head.element,
        issues=issues,
    )


@dataclass
class ActionsRead:
    """Actions read from JSON values, and keys of ``{"actions": [...]}`` envelopes."""

    actions: list[JsonAction] = field(default_factory=list)
    envelope: dict[str, Any] = field(default_factory=dict)


class _Reader:
    def __init__(self, kind: str, record: JsonRecord, result: ActionsRead) -> None:
        self.kind = kind
        self.record = record
        self.result = result

    def fail(self, message: str, tokens: Sequence[str | int], element: str) -> ProtocolError:
        """A typed error at the JSON pointer ``tokens`` of the current record."""
        record = self.record
        return ProtocolError(
            self.kind,
            message,
            line=locate(record.text, [str(t) for t in tokens], first_line=record.base_line),
            pointer=pointer(tokens),
            element=element,
        )

    def visit(self, value: Any, tokens: list[str | int], wrapper: dict[str, Any]) -> None:
        """Read actions from ``value``: a list, a wrapper, an envelope or an action."""
        if isinstance(value, list):
            for index, item in enumerate(value):
                self.visit(item, [*tokens, index], {})
            return
        if not isinstance(value, dict):
            raise self.fail(
                f"expected an action object, got {type(value).__name__}", tokens, "json"
            )
        inner = value.get("action")
        if isinstance(inner, dict) and "type" not in value:
            extras = {key: item for key, item in value.items() if key != "action"}
            self.visit(inner, [*tokens, "action"], extras)
        elif "type" in value or isinstance(inner, str):
            self.result.actions.append(self.build(value, tokens, wrapper))
        elif "actions" in value and isinstance(value["actions"], list | dict):
            self.result.envelope.update(
                {key: item for key, item in value.items() if key != "actions"}
            )
            self.visit(value["actions"], [*tokens, "actions"], {})
        else:
            raise self.fail("not an action: it has no 'type' or 'action' key", tokens, "json")

    def build(
        self, value: dict[str, Any], tokens: list[str | int], wrapper: dict[str, Any]
    ) -> JsonAction:
        """Validate one action object (``wrapper`` keys fill in keys it lacks)."""
        names: dict[str, str] = {}
        for key in ("type", "action"):
            raw = value.get(key)
            if key in value and not isinstance(raw, str):
                if key == "action" and isinstance(raw, dict):
                    continue
                raise self.fail(f"{key} must be a string", [*tokens, key], key)
            if isinstance(raw, str):
                canonical = canonical_type(raw)
                if canonical is None:
                    raise self.fail(
                        f"unknown action type {raw!r}; expected one of: "
                        + ", ".join(sorted(ACTION_MODELS)),
                        [*tokens, key],
                        raw,
                    )
                names[key] = canonical
        if len(set(names.values())) > 1:
            raise self.fail(
                f"type {value['type']!r} and action {value['action']!r} name different actions",
                [*tokens, "type"],
                names["type"],
            )
        type_name = next(iter(names.values()))
        data = {key: item for key, item in wrapper.items() if key not in value}
        data.update({key: item for key, item in value.items() if key not in names})
        data["type"] = type_name
        try:
            return cast("JsonAction", ACTION_MODELS[type_name].model_validate(data))
        except ValidationError as exc:
            issues = validation_issues(
                exc, data, base=tokens, record=self.record, element=type_name
            )
            raise raise_issues(self.kind, issues) from None


def read_actions(records: Sequence[JsonRecord], kind: str) -> ActionsRead:
    """Action models from JSON values; any bad one raises :class:`ProtocolError`."""
    result = ActionsRead()
    for record in records:
        _Reader(kind, record, result).visit(record.value, [], {})
    return result


def parse_action(value: Any, kind: str = "json-actions") -> list[JsonAction]:
    """Action models from one JSON value (an action, a wrapper or a list of them)."""
    record = JsonRecord(value=value, line=1, text="", base_line=1)
    return read_actions([record], kind).actions
