"""The lossless element tree every XML payload keeps, and the notes a repair leaves.

:class:`XmlElement` holds an element exactly as read: tag, every attribute, its text, the text
after it (``tail``), its children (comments and processing instructions included, as ``#comment``
and ``#pi`` nodes) and the line of its start tag in the original payload.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from notebook_bcc.models.base import WireModel
from notebook_bcc.protocol.errors import PayloadTooLargeError
from notebook_bcc.protocol.limits import MAX_DEPTH

_MARKUP_SCAN = re.compile(r"<!--[\s\S]*?-->|<!\[CDATA\[[\s\S]*?\]\]>|<\?[\s\S]*?\?>|<(?=[A-Za-z_])")

COMMENT_TAG = "#comment"
PI_TAG = "#pi"

RepairKind = Literal[
    "escaped_char",
    "verbatim_text",
    "bare_attribute",
    "unquoted_attribute",
    "duplicate_attribute",
    "attribute_value",
    "closed_element",
    "closed_at_end",
    "dropped_partial_tag",
    "dropped_prose",
    "dropped_trailing",
    "more",
]


class RepairNote(WireModel):
    """One change the repair made to reach well-formed XML, at a line of the original text.

    Kinds: ``escaped_char`` (a stray ``<`` or ``&`` became text), ``verbatim_text`` (a code or
    text element read literally), ``bare_attribute`` / ``unquoted_attribute`` /
    ``duplicate_attribute`` / ``attribute_value`` (attribute fixes), ``closed_element`` (an
    element its parent's end tag closed), ``closed_at_end`` (closed because the input ended),
    ``dropped_partial_tag`` (a tag cut by the end of input), ``dropped_prose`` /
    ``dropped_trailing`` (text around the root), ``more`` (notes beyond the cap, counted).
    """

    kind: RepairKind
    line: int
    element: str | None = None
    detail: str = ""


class XmlElement(WireModel):
    """One element of a planner XML document, kept verbatim."""

    tag: str
    attrs: dict[str, str] = Field(default_factory=dict)
    text: str = ""
    tail: str = ""
    line: int
    children: list[XmlElement] = Field(default_factory=list)
    truncated: bool = Field(
        default=False, description="closed by the repair because the input ended inside it"
    )

    @property
    def is_node(self) -> bool:
        """True for a comment or processing instruction rather than an element."""
        return self.tag in (COMMENT_TAG, PI_TAG)

    def elements(self) -> list[XmlElement]:
        """Child elements, without comments and processing instructions."""
        return [child for child in self.children if not child.is_node]

    def content(self) -> str:
        """The element's content as the planner wrote it, for a text field.

        Text is verbatim (never entity-escaped); child elements appear as their tags around
        their own content (``Use <b>median</b> for x < 5``); comments are left out.
        """
        parts: list[str] = [self.text]
        for child in self.children:
            if not child.is_node:
                parts.append(child.tagged_content())
            parts.append(child.tail)
        return "".join(parts)

    def tagged_content(self) -> str:
        """The element as tags around :meth:`content` (attributes double-quoted)."""
        attrs = "".join(f' {name}="{escape_attr(value)}"' for name, value in self.attrs.items())
        inner = self.content()
        if not inner and not self.elements():
            return f"<{self.tag}{attrs}/>"
        return f"<{self.tag}{attrs}>{inner}</{self.tag}>"

    def plain_text(self) -> str:
        """All text of the element and its descendants, in document order, without markup."""
        parts: list[str] = [self.text]
        for child in self.children:
            if not child.is_node:
                parts.append(child.plain_text())
            parts.append(child.tail)
        return "".join(parts)

    def inner_xml(self, *, skip_nodes: bool = False) -> str:
        """The content serialized as XML (text escaped), optionally without comments/PIs."""
        parts = [escape_text(self.text)]
        for child in self.children:
            if not (skip_nodes and child.is_node):
                parts.append(child.to_xml())
            else:
                parts.append(escape_text(child.tail))
        return "".join(parts)

    def to_xml(self) -> str:
        """The element (with its tail) serialized as XML."""
        if self.tag == COMMENT_TAG:
            return f"<!--{self.text}-->{escape_text(self.tail)}"
        if self.tag == PI_TAG:
            target = self.attrs.get("target", "")
            body = f" {self.text}" if self.text else ""
            return f"<?{target}{body}?>{escape_text(self.tail)}"
        attrs = "".join(f' {name}="{escape_attr(value)}"' for name, value in self.attrs.items())
        inner = self.inner_xml()
        if not inner:
            return f"<{self.tag}{attrs}/>{escape_text(self.tail)}"
        return f"<{self.tag}{attrs}>{inner}</{self.tag}>{escape_text(self.tail)}"


def escape_text(text: str) -> str:
    """Escape ``&``, ``<`` and ``>`` for XML character data."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_attr(text: str) -> str:
    """Escape a value for a double-quoted XML attribute."""
    return escape_text(text).replace('"', "&quot;")


def start_tag_lines(xml: str) -> list[int]:
    """The line of every element start tag of the well-formed ``xml``, in document order.

    lxml reports the line where a start tag *ends*; a multi-line start tag should be located
    where it begins. In well-formed XML every ``<`` outside comments, CDATA and processing
    instructions is markup, so a scan finds the start tags in the order lxml iterates them.
    """
    lines: list[int] = []
    line = 1
    pos = 0
    for match in _MARKUP_SCAN.finditer(xml):
        if match.group() == "<":
            line += xml.count("\n", pos, match.start())
            pos = match.start()
            lines.append(line)
    return lines


def from_lxml(
    root: Any, *, xml: str, line_offset: int, truncated_depth: int, kind: str
) -> XmlElement:
    """Convert the lxml tree parsed from ``xml`` into :class:`XmlElement` nodes.

    ``line_offset`` maps ``xml``'s lines back to the original payload's;
    ``truncated_depth`` marks that many elements, from the root down its last-child chain,
    as closed because the input ended inside them.
    """
    from lxml import etree

    starts = iter(start_tag_lines(xml))

    def convert(el: Any, depth: int, on_chain: bool) -> XmlElement:
        if isinstance(el.tag, str):
            line = next(starts, int(el.sourceline or 1)) + line_offset
        else:
            line = int(el.sourceline or 1) + line_offset
        if depth > MAX_DEPTH:
            raise PayloadTooLargeError(
                kind,
                f"elements nested deeper than {MAX_DEPTH} levels",
                line=line,
                element=str(el.tag),
            )
        if el.tag is etree.Comment:
            return XmlElement(tag=COMMENT_TAG, text=el.text or "", tail=el.tail or "", line=line)
        if el.tag is etree.ProcessingInstruction:
            return XmlElement(
                tag=PI_TAG,
                attrs={"target": str(el.target)},
                text=el.text or "",
                tail=el.tail or "",
                line=line,
            )
        kids = list(el)
        last_element = max(
            (i for i, kid in enumerate(kids) if isinstance(kid.tag, str)), default=-1
        )
        children = [
            convert(kid, depth + 1, on_chain and i == last_element and depth < truncated_depth)
            for i, kid in enumerate(kids)
        ]
        return XmlElement(
            tag=str(etree.QName(el).localname),
            attrs={str(etree.QName(k).localname): str(v) for k, v in el.attrib.items()},
            text=el.text or "",
            tail=el.tail or "",
            line=line,
            children=children,
            truncated=on_chain,
        )

    return convert(root, 1, truncated_depth > 0)
