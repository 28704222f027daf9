"""Planner XML text -> a verbatim :class:`XmlElement` tree, safely and precisely.

Order of work:

1. Refuse declarations (``<!DOCTYPE``/``<!ENTITY``) anywhere outside code/text elements
   (one string search, before any parsing), find the root (prose and code fences around it
   are dropped) and check it is the kind expected.
2. If the root region is well-formed as it stands, parse it as is: nothing is altered. (One
   exception keeps code exact: a code/text element holding markup is read as raw text instead.)
3. Otherwise repair it (:mod:`xml_repair`) and parse the result strictly.

lxml always runs with entities, DTDs and network access off. Every line number refers to the
original text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from notebook_bcc.protocol.errors import DoctypeRefusedError, ProtocolError
from notebook_bcc.protocol.text import find_invalid_xml_char, line_of
from notebook_bcc.protocol.xml_repair import repair_xml
from notebook_bcc.protocol.xml_tree import RepairNote, XmlElement, from_lxml
from notebook_bcc.protocol.xml_vocab import RAW_TEXT_ELEMENTS, XML_KINDS

_ROOT_RE = re.compile(r"<(" + "|".join(XML_KINDS) + r")(?=[ \t\n/>]|\Z)")
_LINE_START_RE = re.compile(r"[ \t]*(?:```[A-Za-z]*[ \t]*)?\Z")
_LXML_SUFFIX_RE = re.compile(r", line \d+, column \d+\Z")
_TAG_NAME_RE = re.compile(r"<([A-Za-z_][A-Za-z0-9_.\-]*)")
_PROLOG_RE = re.compile(r"\A\s*(?:<\?xml[^>]*\?>)?\s*\Z")


@dataclass
class ParsedXml:
    """A planner XML document read into its verbatim tree, with what was done to read it."""

    root: XmlElement
    truncated: bool
    repaired: bool
    notes: list[RepairNote]


def find_root(text: str) -> re.Match[str] | None:
    """The root start tag: the first known root opening a line (after an optional code fence),
    else the first known root anywhere."""
    first: re.Match[str] | None = None
    for match in _ROOT_RE.finditer(text):
        if first is None:
            first = match
        line_start = text.rfind("\n", 0, match.start()) + 1
        if _LINE_START_RE.match(text[line_start : match.start()]):
            return match
    return first


def _parser() -> Any:
    from lxml import etree

    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        recover=False,
        strip_cdata=True,
        remove_blank_text=False,
        remove_comments=False,
        remove_pis=False,
        collect_ids=False,
    )


def _refuse(kind: str, text: str, offset: int) -> DoctypeRefusedError:
    return DoctypeRefusedError(
        kind,
        "document type and entity declarations are refused (XXE, entity expansion)",
        line=line_of(text, offset),
        element="!DOCTYPE",
    )


_RAW_NAMES = "|".join(re.escape(name) for name in sorted(RAW_TEXT_ELEMENTS))
_RAW_SCAN_RE = re.compile(
    r"<(" + _RAW_NAMES + r")(?=[ \t\n/>])|</(" + _RAW_NAMES + r")[ \t\n]*>|"
    r"<!\s*(?i:DOCTYPE|ENTITY)"
)


def _declaration(text: str) -> int:
    """Offset of the first ``<!DOCTYPE``/``<!ENTITY`` outside code/text elements, or -1.

    One linear scan tracks whether a raw-text element (whose content may mention
    ``<!DOCTYPE html>`` as data) is open. The repair tokenizer refuses any declaration it
    meets outside raw text as well, so this fast check only needs to catch the obvious ones.
    """
    open_raw: str | None = None
    for match in _RAW_SCAN_RE.finditer(text):
        opened, closed = match.group(1), match.group(2)
        if opened is not None:
            if open_raw is None:
                end = text.find(">", match.end())
                if end < 0 or text[end - 1] != "/":
                    open_raw = opened
        elif closed is not None:
            if closed == open_raw:
                open_raw = None
        elif open_raw is None:
            return match.start()
    return -1


def _root_end(text: str, root: str, start: int) -> int:
    """Offset just past the last ``</root>`` after ``start``, or -1."""
    pattern = re.compile("</" + root + r"[ \t\n]*>")
    pos = text.rfind("</" + root)
    while pos > start:
        match = pattern.match(text, pos)
        if match:
            return match.end()
        pos = text.rfind("</" + root, start, pos)
    return -1


def _holds_markup_in_raw_text(element: Any) -> bool:
    return any(len(node) > 0 for node in element.iter(*RAW_TEXT_ELEMENTS))


def _element_near(text: str, line: int) -> str | None:
    """Name of the last start tag at or before the end of ``line`` of ``text``."""
    end = -1
    for _ in range(line):
        end = text.find("\n", end + 1)
        if end < 0:
            end = len(text)
            break
    names = _TAG_NAME_RE.findall(text, 0, end)
    return names[-1] if names else None


def parse_xml(text: str, kind: str) -> ParsedXml:
    """Read a planner XML payload whose root must be ``<kind>``.

    Raises :class:`ProtocolError` (or its subclasses) naming the original line and element.
    """
    from lxml import etree

    text = text.replace("\r\n", "\n").replace("\r", "\n")
    declaration = _declaration(text)
    if declaration >= 0:
        raise _refuse(kind, text, declaration)
    match = find_root(text)
    if match is None:
        raise ProtocolError(
            kind, f"no <{kind}> root element found", line=1 if text.strip() else None, element=kind
        )
    start = match.start()
    root = match.group(1)
    if root != kind:
        raise ProtocolError(
            kind,
            f"expected a <{kind}> document, found <{root}>",
            line=line_of(text, start),
            element=root,
        )
    line_offset = text.count("\n", 0, start)
    notes: list[RepairNote] = []
    if not _PROLOG_RE.match(text[:start]):
        notes.append(
            RepairNote(kind="dropped_prose", line=1, detail="text before the root element dropped")
        )

    end = _root_end(text, root, start)
    if end > start:
        try:
            parsed = etree.fromstring(text[start:end], _parser())
        except (etree.XMLSyntaxError, ValueError):
            parsed = None
        if parsed is not None and not _holds_markup_in_raw_text(parsed):
            if text[end:].strip():
                notes.append(
                    RepairNote(
                        kind="dropped_trailing",
                        line=line_of(text, end),
                        detail="text after the root element dropped",
                    )
                )
            element = from_lxml(
                parsed, xml=text[start:end], line_offset=line_offset, truncated_depth=0, kind=kind
            )
            return ParsedXml(root=element, truncated=False, repaired=False, notes=notes)

    result = repair_xml(text, start, root, kind)
    bad = find_invalid_xml_char(text, start, result.end)
    if bad >= 0:
        line = line_of(text, bad)
        raise ProtocolError(
            kind,
            f"character U+{ord(text[bad]):04X} is not allowed in XML",
            line=line,
            element=_element_near(text[start:], line - line_offset) or root,
        )
    try:
        parsed = etree.fromstring(result.text, _parser())
    except etree.XMLSyntaxError as exc:
        local = int(exc.lineno or 1)
        message = _LXML_SUFFIX_RE.sub("", str(exc.msg or exc))
        raise ProtocolError(
            kind,
            message,
            line=local + line_offset,
            element=_element_near(result.text, local) or root,
        ) from None
    element = from_lxml(
        parsed,
        xml=result.text,
        line_offset=line_offset,
        truncated_depth=result.closed_at_end,
        kind=kind,
    )
    return ParsedXml(
        root=element, truncated=result.truncated, repaired=True, notes=notes + result.notes
    )
