"""The base of every JSON action a planner sends (generating, reflecting and planning streams)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class PlannerAction(BaseModel):
    """One action object: ``type`` (or its synonym ``action``) says which.

    Keys the model does not name are kept (``model_extra``), never dropped: the reference
    client's extra keys (``stage_id``, ``store_id``, ...) survive a round trip. ``irreversible``
    marks an action with side effects outside the notebook (DESIGN §9 D8).
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    type: str
    irreversible: bool = Field(
        default=False, description="side effects outside the notebook: run at most once (D8)"
    )

    @model_validator(mode="before")
    @classmethod
    def _action_key(cls, data: Any) -> Any:
        """Accept ``action`` as the discriminator key; refuse a ``type`` it contradicts."""
        if isinstance(data, dict) and isinstance(data.get("action"), str):
            if "type" not in data:
                data = {("type" if key == "action" else key): value for key, value in data.items()}
            elif data["type"] == data["action"]:
                data = {key: value for key, value in data.items() if key != "action"}
            else:
                raise ValueError(
                    f"type {data['type']!r} and action {data['action']!r} name different actions"
                )
        return data
