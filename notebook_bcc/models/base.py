"""Shared pydantic configuration and small helpers for the wire models."""

from __future__ import annotations

from datetime import datetime, timezone

from pydantic import BaseModel, ConfigDict


class WireModel(BaseModel):
    """Base of every model that crosses a boundary (store, REST, CLI, planner).

    Unknown keys are refused so that a typo in a hand-written state file is an error, and aliases
    (``from``) are accepted by name as well.
    """

    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        validate_default=False,
        use_enum_values=False,
        ser_json_inf_nan="null",
    )


def utc_now_iso() -> str:
    """The current time as an ISO 8601 UTC string with a ``Z`` suffix (seed 003's format)."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")
