"""A reading helper over one :class:`XmlElement`: typed attribute and child access.

Builders take the children they understand; :meth:`ElementView.rest` returns the others, so an
element we don't act on is kept in the model (``extra``) instead of being dropped.
"""

from __future__ import annotations

from notebook_bcc.protocol.errors import ProtocolError
from notebook_bcc.protocol.text import clean_text
from notebook_bcc.protocol.xml_tree import XmlElement

_TRUE = frozenset({"true", "yes", "1", "y", "on"})
_FALSE = frozenset({"false", "no", "0", "n", "off"})


def parse_bool(value: str, *, kind: str, element: str, line: int, what: str) -> bool:
    """``true/false`` (any case, also yes/no, 1/0, on/off) or a typed error naming ``what``."""
    word = value.strip().lower()
    if word in _TRUE or word == what.lower():
        return True
    if word in _FALSE:
        return False
    raise ProtocolError(
        kind, f"{what} must be true or false, not {value.strip()!r}", line=line, element=element
    )


class ElementView:
    """Typed, consumption-tracking access to an element's attributes and children."""

    def __init__(self, element: XmlElement, kind: str) -> None:
        self.element = element
        self.kind = kind
        self._children = element.elements()
        self._used: set[int] = set()

    @property
    def tag(self) -> str:
        """The element's tag."""
        return self.element.tag

    @property
    def line(self) -> int:
        """The line of the element's start tag in the original payload."""
        return self.element.line

    def error(self, message: str, *, element: XmlElement | None = None) -> ProtocolError:
        """A typed error located at ``element`` (default: this element)."""
        target = element or self.element
        return ProtocolError(self.kind, message, line=target.line, element=target.tag)

    def attr(self, *names: str) -> str | None:
        """The first of the attributes ``names`` present, verbatim."""
        for name in names:
            if name in self.element.attrs:
                return self.element.attrs[name]
        return None

    def required_attr(self, name: str) -> str:
        """An attribute that must be present and not blank (returned stripped)."""
        value = self.element.attrs.get(name)
        if value is None or not value.strip():
            raise self.error(f"<{self.tag}> needs a non-empty {name} attribute")
        return value.strip()

    def bool_attr(self, name: str) -> bool | None:
        """A boolean attribute, None when absent."""
        value = self.element.attrs.get(name)
        if value is None:
            return None
        return parse_bool(value, kind=self.kind, element=self.tag, line=self.line, what=name)

    def take(self, *names: str) -> XmlElement | None:
        """The first unused child named one of ``names`` (marked used)."""
        for index, child in enumerate(self._children):
            if index not in self._used and child.tag in names:
                self._used.add(index)
                return child
        return None

    def take_all(self, *names: str) -> list[XmlElement]:
        """Every unused child named one of ``names``, in order (marked used)."""
        found: list[XmlElement] = []
        for index, child in enumerate(self._children):
            if index not in self._used and child.tag in names:
                self._used.add(index)
                found.append(child)
        return found

    def text(self, *names: str) -> str | None:
        """The tidied text (:func:`clean_text`) of the first child named one of ``names``."""
        child = self.take(*names)
        return None if child is None else clean_text(child.content())

    def bool_child(self, *names: str) -> bool | None:
        """A child whose text is a boolean, None when absent."""
        child = self.take(*names)
        if child is None:
            return None
        return parse_bool(
            child.content(), kind=self.kind, element=child.tag, line=child.line, what=child.tag
        )

    def rest(self) -> list[XmlElement]:
        """The child elements no builder took."""
        return [child for i, child in enumerate(self._children) if i not in self._used]
