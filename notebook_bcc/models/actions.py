"""The typed notebook actions a behavior queues (PROTOCOL-NOTES "JSON actions").

These are the shared vocabulary of every layer that touches a queued action: the protocol
parses planner output into them, the reducer queues them in ``ActionQueue.actions`` as they are,
the engine runs them and the kernel turns them into cells — one model from the wire to the cell,
never a dict in between. ``communication`` carries the XML ``<communication to=...>`` action in
JSON form.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

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


CODE_SHOT_TYPE = "action"
"""The ``shot_type`` that makes an ``add`` a code cell; any other (or none) is markdown."""

LAST_ADDED_CELL = "lastAddedCellId"
"""The ``exec`` target meaning "the cell the previous ``add`` created"."""


class AddAction(PlannerAction):
    """``add``: a new cell, code when ``shot_type`` is ``action``, else markdown."""

    type: Literal["add"] = "add"
    content: str
    shot_type: str | None = None
    metadata: dict[str, Any] | None = None
    truncated: bool = Field(
        default=False, description="content cut off by the end of a stream: never execute it"
    )

    @property
    def is_code(self) -> bool:
        """True when the new cell is a code cell."""
        return self.shot_type == CODE_SHOT_TYPE


class AddTextAction(PlannerAction):
    """``add-text``: markdown text (merged into the previous markdown cell unless a heading)."""

    type: Literal["add-text"] = "add-text"
    content: str


class NewChapterAction(PlannerAction):
    """``new_chapter``: a ``#`` heading cell."""

    type: Literal["new_chapter"] = "new_chapter"
    content: str


class NewSectionAction(PlannerAction):
    """``new_section``: a ``##`` heading cell."""

    type: Literal["new_section"] = "new_section"
    content: str


class NewStepAction(PlannerAction):
    """``new_step``: a ``###`` heading cell."""

    type: Literal["new_step"] = "new_step"
    content: str


class ExecAction(PlannerAction):
    """``exec``: run a code cell once (a cell id, or ``lastAddedCellId``)."""

    type: Literal["exec"] = "exec"
    codecell_id: str
    need_output: bool = True
    auto_debug: bool = False


class CommentResultAction(PlannerAction):
    """``comment_result``: a markdown comment on results; current effects move to history."""

    type: Literal["comment_result"] = "comment_result"
    content: str


class UpdateTitleAction(PlannerAction):
    """``update_title``: the notebook title, given as ``title`` or ``content``."""

    type: Literal["update_title"] = "update_title"
    title: str | None = None
    content: str | None = None

    @model_validator(mode="after")
    def _has_title(self) -> UpdateTitleAction:
        if self.title is None and self.content is None:
            raise ValueError("update_title needs a title or a content")
        return self

    @property
    def value(self) -> str:
        """The new title (``title`` wins over ``content``)."""
        return self.title if self.title is not None else self.content or ""


class UpdateLastTextAction(PlannerAction):
    """``update_last_text``: replace the text of the last markdown cell."""

    type: Literal["update_last_text"] = "update_last_text"
    text: str


class IsThinkingAction(PlannerAction):
    """``is_thinking``: show a thinking marker."""

    type: Literal["is_thinking"] = "is_thinking"
    thinking_text: str | None = None
    agent_name: str | None = None
    custom_text: str | None = None
    text_array: list[str] | None = None


class FinishThinkingAction(PlannerAction):
    """``finish_thinking``: remove the thinking marker."""

    type: Literal["finish_thinking"] = "finish_thinking"


class SetEffectAsThinkingAction(PlannerAction):
    """``set_effect_as_thinking``: mark the last code cell's effect as thinking."""

    type: Literal["set_effect_as_thinking"] = "set_effect_as_thinking"
    thinking_text: str


class CommunicationAction(PlannerAction):
    """``communication``: a message to another agent (XML ``<communication to=...>``)."""

    type: Literal["communication"] = "communication"
    to: str | None = Field(default=None, description="the agent the message is for")
    content: str


NotebookActions = Union[  # noqa: UP007 - a discriminated union needs the Union spelling on 3.10
    AddAction,
    AddTextAction,
    NewChapterAction,
    NewSectionAction,
    NewStepAction,
    ExecAction,
    CommentResultAction,
    UpdateTitleAction,
    UpdateLastTextAction,
    IsThinkingAction,
    FinishThinkingAction,
    SetEffectAsThinkingAction,
    CommunicationAction,
]
"""Every notebook action model (the protocol's union of all planner actions extends it)."""

NotebookAction = Annotated[NotebookActions, Field(discriminator="type")]
"""A notebook action, the only kind a behavior's action queue holds (discriminated by ``type``)."""
