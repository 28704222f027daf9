"""Fields every payload parsed from planner XML carries."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from notebook_bcc.models.base import WireModel
from notebook_bcc.protocol.xml_parse import ParsedXml
from notebook_bcc.protocol.xml_tree import RepairNote, XmlElement


class XmlPayloadBase(WireModel):
    """What every XML payload model carries beside its typed fields.

    ``document`` is the whole root element verbatim (every element, attribute and text, with
    its line), so nothing the planner sent is lost even where no typed field maps it.
    ``attrs`` are the root's attributes; ``extra`` the root's children no typed field took.
    """

    kind: str = Field(description="the payload kind (each payload model fixes it)")
    truncated: bool = Field(
        default=False, description="the input ended before the document did; see repairs"
    )
    truncation_accepted: bool = Field(
        default=False,
        description="whoever fetched it chose to apply it although truncated (never by default)",
    )
    repaired: bool = Field(default=False, description="the text was not well-formed as sent")
    repairs: list[RepairNote] = Field(default_factory=list)
    attrs: dict[str, str] = Field(default_factory=dict)
    extra: list[XmlElement] = Field(default_factory=list)
    document: XmlElement

    OMITTED_WHEN_UNSET: ClassVar[frozenset[str]] = frozenset(
        {"truncation_accepted", "next_step_id", "next_step_line"}
    )
    """Fields added after transcripts were first recorded: left out of a dump while they hold
    their default, so a payload dumps exactly as it did before (recordings compare equal)."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in self.OMITTED_WHEN_UNSET:
                if name in data and data[name] in (None, False):
                    del data[name]
        return data


def base_fields(parsed: ParsedXml) -> dict[str, Any]:
    """The :class:`XmlPayloadBase` fields of a parsed document (``extra`` excepted)."""
    return {
        "truncated": parsed.truncated,
        "repaired": parsed.repaired,
        "repairs": parsed.notes,
        "attrs": dict(parsed.root.attrs),
        "document": parsed.root,
    }
