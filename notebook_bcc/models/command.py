"""Commands a human sends (D3): one model for the CLI, REST and the panel."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, RootModel, ValidationError, field_validator

from notebook_bcc.errors import CommandError, UnknownNameError
from notebook_bcc.models.base import WireModel
from notebook_bcc.models.names import Event, parse_event

HUMAN_EVENTS: frozenset[Event] = frozenset(
    {
        Event.UPDATE_WORKFLOW_CONFIRMED,
        Event.UPDATE_WORKFLOW_REJECTED,
        Event.UPDATE_STEP_CONFIRMED,
        Event.UPDATE_STEP_REJECTED,
        Event.CANCEL,
        Event.RESET,
        Event.START_WORKFLOW,
        Event.START_BEHAVIOR,
    }
)
"""The FSM events a human may send; exactly seed 003's names (D3)."""

Version = Annotated[
    int,
    Field(
        ge=0,
        strict=True,
        description='The snapshot version the sender saw: a JSON integer (70.0 and "70" '
        "are refused, never coerced).",
    ),
]


class EventCommand(WireModel):
    """``{"event": "CANCEL", "expected_version": 7}``."""

    event: Event
    expected_version: Version

    @field_validator("event", mode="before")
    @classmethod
    def _human_event(cls, value: Any) -> Event:
        event = parse_event(value)
        if event not in HUMAN_EVENTS:
            allowed = ", ".join(sorted(e.value for e in HUMAN_EVENTS))
            raise ValueError(f"{event.value} is not an event a human may send; allowed: {allowed}")
        return event


class DecideCommand(WireModel):
    """``{"decide": "<pending id>", "decision": "approve", "expected_version": 7}``."""

    decide: str = Field(
        min_length=1, max_length=1_000, description="The id of a pending decision (D2)."
    )
    decision: Literal["approve", "reject"]
    expected_version: Version


class ActionCommand(WireModel):
    """``{"action": "pause", "expected_version": 7}``."""

    action: Literal["run", "pause", "retry", "restart"]
    expected_version: Version


class Command(RootModel[EventCommand | DecideCommand | ActionCommand]):
    """Any command of D3; each carries the snapshot version it was based on."""


def parse_command(data: object) -> EventCommand | DecideCommand | ActionCommand:
    """Validate a command's JSON form, raising :class:`CommandError` that says what is wrong."""
    if not isinstance(data, dict):
        raise CommandError(f"a command must be a JSON object, got {type(data).__name__}")
    keys = {"event", "decide", "action"} & set(data)
    if len(keys) != 1:
        raise CommandError(
            "a command has exactly one of the keys 'event', 'decide' or 'action'"
            f" (got {sorted(keys) or 'none'})",
            details={"keys": sorted(data)},
        )
    (key,) = keys
    models: dict[str, type[EventCommand | DecideCommand | ActionCommand]] = {
        "event": EventCommand,
        "decide": DecideCommand,
        "action": ActionCommand,
    }
    try:
        return models[key].model_validate(data)
    except UnknownNameError as exc:
        raise CommandError(f"/{key}: {exc.message}") from None
    except ValidationError as exc:
        problems = [
            "/" + "/".join(str(p) for p in err["loc"]) + ": " + err["msg"] for err in exc.errors()
        ]
        raise CommandError(
            "invalid command: " + "; ".join(problems), details={"errors": problems}
        ) from None
