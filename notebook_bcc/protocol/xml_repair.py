"""Precise repair of LLM XML: the smallest edits that make a planner document well-formed.

Used only when the document is not well-formed as it stands. The tokenizer walks the text from
the root's start tag and knows the root's element names (:mod:`xml_vocab`):

* The content of a raw-text element (code, markdown, expressions) runs to its literal closing
  tag (or the first closing tag of an enclosing element, or the end of input). If it holds a
  bare ``<`` or a ``&`` that starts no entity, the LLM did not escape it and every character
  is kept literally; otherwise it already is XML text and is left alone. CDATA sections are kept.
* Elsewhere a ``<`` is markup only when it opens a known element, closes an open one, or opens
  a well-formed unknown element that is closed later; any other ``<`` and every ``&`` that
  starts no entity is escaped.
* Bare attributes get the value ``"true"``, unquoted values are quoted, duplicate attributes
  are dropped (noted), ``<`` and stray ``&`` in values are escaped.
* An end tag closes the elements left open inside it; the end of input closes everything still
  open (the payload is then *truncated*), and a tag cut by the end of input is dropped.
* ``<!DOCTYPE`` and ``<!ENTITY`` outside raw text are refused.

No newline is added or removed before the end of input, so the repaired text's line ``n`` is
line ``n`` of the region starting at the root in the original. Words are never changed.
The lexical rules (names, entities, escaping) live in :mod:`xml_lexical`.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import NamedTuple

from notebook_bcc.protocol.errors import DoctypeRefusedError, PayloadTooLargeError, ProtocolError
from notebook_bcc.protocol.limits import MAX_DEPTH, MAX_REPAIR_NOTES
from notebook_bcc.protocol.text import LineIndex
from notebook_bcc.protocol.xml_lexical import (
    ATTR_NAME_RE,
    DECLARATION_RE,
    END_TAG_RE,
    MARKUP_IN_VALUE_RE,
    NAME_RE,
    PARTIAL_END_RE,
    PI_RE,
    SPECIAL_RE,
    UNQUOTED_RE,
    XML_NAME_RE,
    entity_at,
    escape_attr_value,
    escape_raw_text,
    skip_ws,
)
from notebook_bcc.protocol.xml_tree import RepairKind, RepairNote
from notebook_bcc.protocol.xml_vocab import RAW_TEXT_ELEMENTS, TEXT_ONLY_ELEMENTS, VOCABULARY


@dataclass
class RepairResult:
    """The outcome of :func:`repair_xml`."""

    text: str
    """The repaired XML of the root element (line 1 = the root's line in the original)."""
    end: int
    """Offset in the original text where the root ended (or the text did)."""
    notes: list[RepairNote]
    truncated: bool
    """The input ended before the root was closed (or inside a tag)."""
    closed_at_end: int
    """How many elements (root first, down the last-child chain) the end of input closed."""


class _Open(NamedTuple):
    name: str
    line: int
    raw: bool


@dataclass
class _Tag:
    name: str
    markup: str
    end: int
    self_closing: bool
    strict: bool
    notes: list[tuple[RepairKind, str]] = field(default_factory=list)


class _Partial:
    """Marker: the input ended inside a tag."""


_PARTIAL = _Partial()


class _Repairer:
    def __init__(self, text: str, start: int, root: str, kind: str) -> None:
        self.text = text
        self.size = len(text)
        self.pos = start
        self.start = start
        self.root = root
        self.kind = kind
        self.vocab = VOCABULARY[root]
        self.lines = LineIndex(text)
        self.out: list[str] = []
        self.stack: list[_Open] = []
        self.notes: list[RepairNote] = []
        self.extra_notes = 0
        self.truncated = False
        self.opened = False
        self.root_closed = False
        self._closes: dict[str, list[int]] | None = None

    # -- bookkeeping -------------------------------------------------------------------------

    def note(self, kind: RepairKind, pos: int, element: str | None, detail: str = "") -> None:
        """Record a repair at ``pos`` (capped at MAX_REPAIR_NOTES, the rest counted)."""
        if len(self.notes) < MAX_REPAIR_NOTES:
            self.notes.append(
                RepairNote(kind=kind, line=self.lines.line_of(pos), element=element, detail=detail)
            )
        else:
            self.extra_notes += 1

    def current(self) -> str | None:
        """Name of the innermost open element."""
        return self.stack[-1].name if self.stack else None

    def stray(self) -> None:
        """The ``<`` at ``pos`` is text."""
        self.note("escaped_char", self.pos, self.current(), "'<' kept as text")
        self.out.append("&lt;")
        self.pos += 1

    def find_close(self, name: str, frm: int) -> tuple[int, int]:
        """Start and end of the first ``</name>`` at or after ``frm``, or (-1, -1).

        All end tags are indexed once (O(n)); each lookup is a binary search, so neither many
        elements nor many distinct unknown names make the repair quadratic.
        """
        if self._closes is None:
            self._closes = {}
            for match in END_TAG_RE.finditer(self.text, self.start):
                self._closes.setdefault(match.group(1), []).extend((match.start(), match.end()))
        positions = self._closes.get(name)
        if not positions:
            return -1, -1
        index = bisect_left(positions, frm)
        index += index % 2
        if index >= len(positions):
            return -1, -1
        return positions[index], positions[index + 1]

    # -- main loop ---------------------------------------------------------------------------

    def run(self) -> RepairResult:
        """Walk the document from the root start tag to its end (or the end of input)."""
        text = self.text
        while self.pos < self.size and not self.root_closed:
            if self.stack and self.stack[-1].raw:
                self.raw_content()
                continue
            match = SPECIAL_RE.search(text, self.pos)
            stop = match.start() if match else self.size
            if stop > self.pos:
                self.out.append(text[self.pos : stop])
                self.pos = stop
            if match is None:
                break
            char = text[stop]
            if char == ">":
                self.out.append("&gt;")
                self.pos += 1
            elif char == "&":
                self.ampersand()
            else:
                self.less_than()
        return self.finish()

    def ampersand(self) -> None:
        """An ``&`` in mixed content: keep a valid entity, escape anything else."""
        entity = entity_at(self.text, self.pos)
        if entity is not None:
            self.out.append(entity.group())
            self.pos = entity.end()
            return
        self.note("escaped_char", self.pos, self.current(), "'&' kept as text")
        self.out.append("&amp;")
        self.pos += 1

    def less_than(self) -> None:
        """A ``<`` in mixed content: markup, or text when it opens nothing we accept."""
        text, pos = self.text, self.pos
        if not self.opened:
            self.start_tag()
            return
        if text.startswith("<!--", pos):
            end = text.find("-->", pos + 4)
            body = text[pos + 4 : end] if end >= 0 else ""
            if end < 0 or "--" in body or body.endswith("-"):
                self.stray()
                return
            self.out.append(text[pos : end + 3])
            self.pos = end + 3
        elif text.startswith("<![CDATA[", pos):
            end = text.find("]]>", pos + 9)
            if end < 0:
                self.stray()
                return
            self.out.append(text[pos : end + 3])
            self.pos = end + 3
        elif DECLARATION_RE.match(text, pos):
            raise DoctypeRefusedError(
                self.kind,
                "document type and entity declarations are refused (XXE, entity expansion)",
                line=self.lines.line_of(pos),
                element="!DOCTYPE",
            )
        elif text.startswith("<?", pos):
            match = PI_RE.match(text, pos)
            if match is None or match.group(1).lower() == "xml":
                self.stray()
                return
            self.out.append(match.group())
            self.pos = match.end()
        elif text.startswith("</", pos):
            self.end_tag()
        else:
            self.start_tag()

    # -- tags ----------------------------------------------------------------------------------

    def end_tag(self) -> None:
        """``</name>``: close it (and what it left open), or keep it as text if never opened."""
        match = END_TAG_RE.match(self.text, self.pos)
        if match is None:
            if PARTIAL_END_RE.match(self.text, self.pos):
                self.note("dropped_partial_tag", self.pos, self.current(), "end tag cut short")
                self.truncated = True
                self.pos = self.size
            else:
                self.stray()
            return
        name = match.group(1)
        names = [entry.name for entry in self.stack]
        if name not in names:
            self.stray()
            return
        index = len(names) - 1 - names[::-1].index(name)
        while len(self.stack) > index + 1:
            inner = self.stack.pop()
            self.note(
                "closed_element",
                self.pos,
                inner.name,
                f"<{inner.name}> from line {inner.line} closed by </{name}>",
            )
            self.out.append(f"</{inner.name}>")
        self.stack.pop()
        self.out.append(match.group())
        self.pos = match.end()
        if not self.stack:
            self.root_closed = True

    def start_tag(self) -> None:
        """``<name ...>``: open a known element or a well-formed closed unknown one."""
        pos = self.pos
        tag = self.scan_tag(pos)
        if isinstance(tag, _Partial):
            if not self.opened:
                raise ProtocolError(
                    self.kind,
                    f"the input ends inside the <{self.root}> start tag",
                    line=self.lines.line_of(pos),
                    element=self.root,
                )
            self.note("dropped_partial_tag", pos, self.current(), "start tag cut short")
            self.truncated = True
            self.pos = self.size
            return
        if tag is None:
            if not self.opened:
                raise ProtocolError(
                    self.kind,
                    f"the <{self.root}> start tag is malformed",
                    line=self.lines.line_of(pos),
                    element=self.root,
                )
            self.stray()
            return
        if (
            self.opened
            and tag.name not in self.vocab
            and not (
                tag.strict and (tag.self_closing or self.find_close(tag.name, tag.end)[0] >= 0)
            )
        ):
            self.stray()
            return
        line = self.lines.line_of(pos)
        if self.opened and tag.name in self.vocab:
            self.close_prose_before(tag.name, pos)
        if len(self.stack) >= MAX_DEPTH:
            raise PayloadTooLargeError(
                self.kind,
                f"elements nested deeper than {MAX_DEPTH} levels",
                line=line,
                element=tag.name,
            )
        for kind, detail in tag.notes:
            self.note(kind, pos, tag.name, detail)
        self.out.append(tag.markup)
        self.pos = tag.end
        self.opened = True
        if tag.self_closing:
            if not self.stack:
                self.root_closed = True
        else:
            self.stack.append(_Open(tag.name, line, tag.name in RAW_TEXT_ELEMENTS))

    def close_prose_before(self, sibling: str, pos: int) -> None:
        """A known element opens inside a prose element left open: close the prose there.

        Only when the prose element has no end tag of its own before its parent's end tag
        (otherwise the LLM did close it, and the element is what it wrote inside).
        """
        while len(self.stack) >= 2 and self.stack[-1].name in TEXT_ONLY_ELEMENTS:
            top, parent = self.stack[-1], self.stack[-2]
            own, _ = self.find_close(top.name, pos)
            parent_end, _ = self.find_close(parent.name, pos)
            if own >= 0 and (parent_end < 0 or own < parent_end):
                return
            self.stack.pop()
            self.note(
                "closed_element",
                pos,
                top.name,
                f"<{top.name}> from line {top.line} closed where its sibling <{sibling}> opens",
            )
            self.out.append(f"</{top.name}>")

    def runaway_quote(self, name: str, attr: str, value_start: int) -> ProtocolError:
        """An attribute quote that is never closed where the tag ends: the repair cannot tell
        where the value stops, so the document is refused naming the line."""
        return ProtocolError(
            self.kind,
            f"the {attr} attribute of <{name}> opens a quote that does not close before the "
            "tag ends; cannot tell where its value stops",
            line=self.lines.line_of(value_start),
            element=name,
        )

    def scan_tag(self, pos: int) -> _Tag | _Partial | None:
        """Read a start tag at ``pos`` leniently; None if it is no tag, partial at end of input."""
        text, size = self.text, self.size
        name_match = NAME_RE.match(text, pos + 1)
        if name_match is None:
            return _PARTIAL if pos + 1 >= size else None
        name = name_match.group()
        parts = ["<", name]
        notes: list[tuple[RepairKind, str]] = []
        seen: set[str] = set()
        strict = True
        i = name_match.end()
        while True:
            ws_end = skip_ws(text, i)
            ws = text[i:ws_end]
            i = ws_end
            if i >= size:
                return _PARTIAL
            char = text[i]
            if char == ">":
                parts.append(ws + ">")
                return _Tag(name, "".join(parts), i + 1, False, strict, notes)
            if char == "/":
                if i + 1 >= size:
                    return _PARTIAL
                if text[i + 1] == ">":
                    parts.append(ws + "/>")
                    return _Tag(name, "".join(parts), i + 2, True, strict, notes)
                return None
            if not ws:
                if len(parts) == 2:
                    return None
                ws = " "
                strict = False
            attr_match = ATTR_NAME_RE.match(text, i)
            if attr_match is None:
                return None
            attr = attr_match.group()
            j = attr_match.end()
            if j >= size:
                return _PARTIAL
            if not XML_NAME_RE.match(attr):
                return None
            eq = skip_ws(text, j)
            if eq < size and text[eq] == "=":
                value_start = skip_ws(text, eq + 1)
                if value_start >= size:
                    return _PARTIAL
                between = text[j:value_start]
                quote = text[value_start]
                if quote in "\"'":
                    close = text.find(quote, value_start + 1)
                    known = name in self.vocab
                    if close < 0:
                        if known and text.find(">", value_start) >= 0:
                            raise self.runaway_quote(name, attr, value_start)
                        return _PARTIAL
                    value = text[value_start + 1 : close]
                    if known and MARKUP_IN_VALUE_RE.search(value):
                        raise self.runaway_quote(name, attr, value_start)
                    i = close + 1
                else:
                    unquoted = UNQUOTED_RE.match(text, value_start)
                    if unquoted is None:
                        return None
                    value = unquoted.group()
                    i = unquoted.end()
                    if i >= size:
                        return _PARTIAL
                    if value.endswith("/") and text[i] == ">":
                        value = value[:-1]
                        i -= 1
                    strict = False
                    notes.append(("unquoted_attribute", f"{attr}={value!r} quoted"))
                if attr in seen:
                    notes.append(("duplicate_attribute", f"second {attr}={value!r} dropped"))
                    parts.append(ws)
                    continue
                seen.add(attr)
                escaped, changed = escape_attr_value(value)
                if changed:
                    notes.append(("attribute_value", f"'<' or '&' in {attr} escaped"))
                parts.append(f'{ws}{attr}{between}"{escaped}"')
            else:
                strict = False
                i = j
                if attr in seen:
                    notes.append(("duplicate_attribute", f"second bare {attr} dropped"))
                    parts.append(ws)
                    continue
                seen.add(attr)
                notes.append(("bare_attribute", f'{attr} given the value "true"'))
                parts.append(f'{ws}{attr}="true"')

    # -- raw text ------------------------------------------------------------------------------

    def raw_content(self) -> None:
        """Consume the content of the raw-text element on top of the stack."""
        top = self.stack[-1]
        start = self.pos
        limit, limit_end = self.find_close(top.name, start)
        own = limit >= 0
        for outer in self.stack[:-1]:
            found, _ = self.find_close(outer.name, start)
            if found >= 0 and (limit < 0 or found < limit):
                limit, own = found, False
        if limit < 0:
            content = self.text[start:]
            cut = content.rfind("</")
            if cut >= 0 and PARTIAL_END_RE.fullmatch(content, cut):
                tail = content[cut:].rstrip()
                if any(f"</{entry.name}>".startswith(tail) for entry in self.stack):
                    self.note("dropped_partial_tag", start + cut, top.name, "end tag cut short")
                    content = content[:cut]
            self.emit_raw(top.name, start, content)
            self.truncated = True
            self.pos = self.size
            return
        self.emit_raw(top.name, start, self.text[start:limit])
        self.stack.pop()
        if own:
            self.out.append(self.text[limit:limit_end])
            self.pos = limit_end
        else:
            self.note(
                "closed_element",
                limit,
                top.name,
                f"<{top.name}> from line {top.line} closed by its parent's end tag",
            )
            self.out.append(f"</{top.name}>")
            self.pos = limit
        if not self.stack:
            self.root_closed = True

    def emit_raw(self, name: str, start: int, content: str) -> None:
        """Write raw-text content, escaped as :func:`escape_raw_text` decides."""
        escaped, literal = escape_raw_text(content)
        if literal:
            self.note("verbatim_text", start, name, f"<{name}> text kept character for character")
        self.out.append(escaped)

    # -- end -----------------------------------------------------------------------------------

    def finish(self) -> RepairResult:
        """Close what the end of input left open and report."""
        closed = len(self.stack)
        end_pos = self.size
        for entry in reversed(self.stack):
            self.note(
                "closed_at_end",
                end_pos,
                entry.name,
                f"<{entry.name}> from line {entry.line} closed at the end of input",
            )
            self.out.append(f"</{entry.name}>")
        if closed:
            self.truncated = True
        if self.root_closed and self.text[self.pos :].strip():
            self.note("dropped_trailing", self.pos, None, "text after the root element dropped")
        if self.extra_notes:
            self.notes.append(
                RepairNote(
                    kind="more",
                    line=self.notes[-1].line,
                    detail=f"{self.extra_notes} more repairs not listed",
                )
            )
        return RepairResult(
            text="".join(self.out),
            end=self.pos,
            notes=self.notes,
            truncated=self.truncated,
            closed_at_end=closed,
        )


def repair_xml(text: str, start: int, root: str, kind: str) -> RepairResult:
    """Repair the document whose root start tag begins at ``text[start]``.

    ``text`` must use ``\\n`` line ends. Raises :class:`DoctypeRefusedError` on a declaration
    outside raw text, :class:`PayloadTooLargeError` past :data:`MAX_DEPTH`, and
    :class:`ProtocolError` when the root start tag itself is unreadable.
    """
    return _Repairer(text, start, root, kind).run()
