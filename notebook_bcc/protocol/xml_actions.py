"""``<actions>`` (seed 000 T4, the Action-Generator) and its mapping to JSON actions.

Code and text are kept to the letter (``code``, ``text``); ``cell_source`` and ``markdown`` are
the same content dedented and trimmed, ready for a cell. A code action cut by the end of input
is marked ``truncated`` and ``executable = False``: it must never run.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Union

from pydantic import Field, RootModel

from notebook_bcc.models.actions import (
    LAST_ADDED_CELL,
    AddAction,
    CommunicationAction,
    ExecAction,
    NewSectionAction,
    NewStepAction,
    UpdateTitleAction,
)
from notebook_bcc.models.base import WireModel
from notebook_bcc.protocol.json_actions import JsonAction
from notebook_bcc.protocol.payload_base import XmlPayloadBase, base_fields
from notebook_bcc.protocol.text import clean_block, clean_text
from notebook_bcc.protocol.xml_parse import ParsedXml
from notebook_bcc.protocol.xml_tree import XmlElement
from notebook_bcc.protocol.xml_view import ElementView

_LIST_MARKER = re.compile(r"\A(?:[-*+]|\d+[.)])\s+")


class _XmlAction(WireModel):
    attrs: dict[str, str] = Field(default_factory=dict)
    line: int
    truncated: bool = False


class UpdateProjectTitle(_XmlAction):
    """``<update-project-title>``: the notebook's title."""

    type: Literal["update-project-title"] = "update-project-title"
    title: str


class UpdateSectionTitle(_XmlAction):
    """``<update-section-title>``: a new section heading."""

    type: Literal["update-section-title"] = "update-section-title"
    title: str


class UpdateStepTitle(_XmlAction):
    """``<update-step-title>``: a new step heading."""

    type: Literal["update-step-title"] = "update-step-title"
    title: str


class AddText(_XmlAction):
    """``<add-text>``: markdown; ``text`` verbatim, ``markdown`` ready for a cell."""

    type: Literal["add-text"] = "add-text"
    text: str
    markdown: str


class AddSection(_XmlAction):
    """``<add-section>``: section names (child elements, or one per line of text)."""

    type: Literal["add-section"] = "add-section"
    sections: list[str] = Field(default_factory=list)
    text: str = ""


class AddCode2Run(_XmlAction):
    """``<add-code2run>``: Python to add and run; ``code`` verbatim, byte for byte."""

    type: Literal["add-code2run"] = "add-code2run"
    code: str
    cell_source: str = Field(description="code dedented, blank edge lines dropped")
    irreversible: bool = Field(default=False, description='irreversible="true" (D8)')
    executable: bool = Field(default=True, description="False when the code was cut off")


class Communication(_XmlAction):
    """``<communication to="agent">``: a message to another agent."""

    type: Literal["communication"] = "communication"
    to: str | None = None
    message: str


XmlAction = Annotated[
    Union[  # noqa: UP007 - a discriminated union needs the Union spelling on Python 3.10
        UpdateProjectTitle,
        UpdateSectionTitle,
        UpdateStepTitle,
        AddText,
        AddSection,
        AddCode2Run,
        Communication,
    ],
    Field(discriminator="type"),
]
"""One action of an ``<actions>`` document."""


class XmlActionModel(RootModel[XmlAction]):
    """One XML action (for schema export)."""


class ActionsPayload(XmlPayloadBase):
    """``<actions>``: notebook actions in document order, and the same as JSON actions."""

    kind: Literal["actions"] = "actions"
    actions: list[XmlAction] = Field(default_factory=list)
    json_actions: list[JsonAction] = Field(
        default_factory=list, description="the actions mapped to the JSON action models"
    )


def _read_action(element: XmlElement, kind: str) -> XmlAction | None:
    view = ElementView(element, kind)
    common = {"attrs": dict(element.attrs), "line": element.line, "truncated": element.truncated}
    content = element.content()
    tag = element.tag
    if tag == "update-project-title":
        return UpdateProjectTitle(title=clean_text(content), **common)
    if tag == "update-section-title":
        return UpdateSectionTitle(title=clean_text(content), **common)
    if tag == "update-step-title":
        return UpdateStepTitle(title=clean_text(content), **common)
    if tag == "add-text":
        return AddText(text=content, markdown=clean_block(content), **common)
    if tag == "add-code2run":
        return AddCode2Run(
            code=content,
            cell_source=clean_block(content),
            irreversible=bool(view.bool_attr("irreversible")),
            executable=not element.truncated,
            **common,
        )
    if tag == "communication":
        return Communication(to=view.attr("to"), message=clean_text(content), **common)
    if tag == "add-section":
        children = element.elements()
        if children:
            sections = [clean_text(child.content()) for child in children]
        else:
            sections = [
                _LIST_MARKER.sub("", line.strip())
                for line in clean_text(content).splitlines()
                if line.strip()
            ]
        return AddSection(sections=[s for s in sections if s], text=content, **common)
    return None


def to_json_actions(actions: list[XmlAction]) -> list[JsonAction]:
    """The JSON actions an ``<actions>`` document stands for (PROTOCOL-NOTES mapping).

    ``add-code2run`` becomes ``add`` (code) then ``exec lastAddedCellId``; a truncated one
    becomes an ``add`` marked ``truncated`` (kept for the record, never executed) and no
    ``exec``.
    """
    result: list[JsonAction] = []
    for action in actions:
        if isinstance(action, UpdateProjectTitle):
            result.append(UpdateTitleAction(title=action.title))
        elif isinstance(action, UpdateSectionTitle):
            result.append(NewSectionAction(content=action.title))
        elif isinstance(action, UpdateStepTitle):
            result.append(NewStepAction(content=action.title))
        elif isinstance(action, AddText):
            result.append(AddAction(content=action.markdown, shot_type="markdown"))
        elif isinstance(action, AddSection):
            result.extend(NewSectionAction(content=name) for name in action.sections)
        elif isinstance(action, AddCode2Run):
            if action.executable:
                result.append(
                    AddAction(
                        content=action.cell_source,
                        shot_type="action",
                        irreversible=action.irreversible,
                    )
                )
                result.append(
                    ExecAction(codecell_id=LAST_ADDED_CELL, irreversible=action.irreversible)
                )
            else:
                result.append(
                    AddAction(
                        content=action.cell_source,
                        shot_type="action",
                        irreversible=action.irreversible,
                        truncated=True,
                    )
                )
        else:
            result.append(CommunicationAction(to=action.to, content=action.message))
    return result


def build_actions(parsed: ParsedXml) -> ActionsPayload:
    """The :class:`ActionsPayload` of a parsed ``<actions>`` document."""
    actions: list[XmlAction] = []
    extra: list[XmlElement] = []
    for child in parsed.root.elements():
        action = _read_action(child, "actions")
        if action is None:
            extra.append(child)
        else:
            actions.append(action)
    return ActionsPayload(
        **base_fields(parsed),
        actions=actions,
        json_actions=to_json_actions(actions),
        extra=extra,
    )
