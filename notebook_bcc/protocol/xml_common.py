"""Typed pieces several planner XML roots share: variable lists, criteria, PCS notes."""

from __future__ import annotations

import re

from pydantic import Field

from notebook_bcc.models.base import WireModel
from notebook_bcc.protocol.text import clean_text
from notebook_bcc.protocol.xml_tree import XmlElement
from notebook_bcc.protocol.xml_view import ElementView

VARIABLE_TAGS = ("variable", "artifact", "var", "item", "required_artifact")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_SEPARATORS = re.compile(r"[,;\s]+")


class VariableRef(WireModel):
    """A named variable or artifact: ``<variable name="df">description</variable>``.

    ``name`` comes from the ``name`` attribute, or from the text when the text is a bare
    identifier (``<artifact>raw_dataset</artifact>``). Leaf children (``<type>``,
    ``<description>``, ...) are in ``details``; ``group`` names the wrapper it sat in
    (``if_continuing_stage``), if any.
    """

    name: str | None = None
    description: str | None = None
    attrs: dict[str, str] = Field(default_factory=dict)
    details: dict[str, str] = Field(default_factory=dict)
    group: str | None = None
    line: int
    extra: list[XmlElement] = Field(default_factory=list)


class VariableList(WireModel):
    """A list of variables (``verified_artifacts``, ``required_variables``, ``retain``, ...).

    A list given as plain text (``df_raw, df_clean``) yields items when every token is an
    identifier; the text is kept in ``text`` either way.
    """

    items: list[VariableRef] = Field(default_factory=list)
    text: str = ""
    line: int
    extra: list[XmlElement] = Field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """The names of the items that have one."""
        return [item.name for item in self.items if item.name]


class Criterion(WireModel):
    """An acceptance criterion: a Python expression, with its attributes (``status=...``)."""

    expression: str
    attrs: dict[str, str] = Field(default_factory=dict)
    line: int


class PcsNotes(WireModel):
    """PCS considerations or a PCS check: predictability, computability, stability."""

    predictability: str | None = None
    computability: str | None = None
    stability: str | None = None
    line: int
    extra: list[XmlElement] = Field(default_factory=list)


def read_variable(element: XmlElement, kind: str, group: str | None = None) -> VariableRef:
    """A :class:`VariableRef` from a ``<variable>``-like element."""
    view = ElementView(element, kind)
    details: dict[str, str] = {}
    extra: list[XmlElement] = []
    for child in view.rest():
        if child.elements():
            extra.append(child)
        else:
            details[child.tag] = clean_text(child.content())
    own_text = clean_text(element.text + "".join(c.tail for c in element.children))
    name = view.attr("name")
    description = details.get("description")
    if name is None:
        if _IDENTIFIER.match(own_text):
            name = own_text
        elif own_text and description is None:
            description = own_text
    elif own_text and description is None:
        description = own_text
    return VariableRef(
        name=name.strip() if name else None,
        description=description,
        attrs=dict(element.attrs),
        details=details,
        group=group,
        line=element.line,
        extra=extra,
    )


def read_variable_list(element: XmlElement, kind: str) -> VariableList:
    """A :class:`VariableList` from a list element (children or plain text)."""
    items: list[VariableRef] = []
    extra: list[XmlElement] = []
    for child in element.elements():
        if child.tag in VARIABLE_TAGS:
            items.append(read_variable(child, kind))
            continue
        nested = [kid for kid in child.elements() if kid.tag in VARIABLE_TAGS]
        if nested:
            items.extend(read_variable(kid, kind, group=child.tag) for kid in nested)
            leftovers = [kid for kid in child.elements() if kid.tag not in VARIABLE_TAGS]
            extra.extend(leftovers)
        else:
            extra.append(child)
    own_text = clean_text(element.text + "".join(c.tail for c in element.children))
    if not element.elements() and own_text:
        tokens = [token for token in _SEPARATORS.split(own_text) if token]
        if tokens and all(_IDENTIFIER.match(token) for token in tokens):
            items = [VariableRef(name=token, line=element.line) for token in tokens]
    return VariableList(items=items, text=own_text, line=element.line, extra=extra)


def optional_variable_list(view: ElementView, *names: str) -> VariableList | None:
    """The variable list under the first child named one of ``names``, if present."""
    child = view.take(*names)
    return None if child is None else read_variable_list(child, view.kind)


def read_criteria(element: XmlElement) -> tuple[list[Criterion], list[XmlElement]]:
    """Criteria of an ``<acceptance>``-like element, and its children that are not criteria.

    ``<criterion>`` children give one criterion each; an element with only text gives one
    criterion per non-blank line.
    """
    children = element.elements()
    criteria = [
        Criterion(expression=clean_text(child.content()), attrs=dict(child.attrs), line=child.line)
        for child in children
        if child.tag == "criterion"
    ]
    if not children:
        criteria = [
            Criterion(expression=line.strip(), line=element.line)
            for line in clean_text(element.content()).splitlines()
            if line.strip()
        ]
    return criteria, [child for child in children if child.tag != "criterion"]


def read_pcs(element: XmlElement, kind: str) -> PcsNotes:
    """:class:`PcsNotes` from ``<pcs_considerations>``, ``<pcs_check>`` or the like."""
    view = ElementView(element, kind)
    return PcsNotes(
        predictability=view.text("predictability"),
        computability=view.text("computability"),
        stability=view.text("stability"),
        line=element.line,
        extra=view.rest(),
    )
