"""Notebook actions of the Generating API (PROTOCOL-NOTES "JSON actions").

Plus ``communication``, which carries the XML ``<communication to=...>`` action in JSON form.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from notebook_bcc.protocol.action_base import PlannerAction

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
