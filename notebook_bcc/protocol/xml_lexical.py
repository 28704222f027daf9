"""The lexical rules of the XML repair (:mod:`xml_repair`): names, entities and character
references, the escaping of raw text and attribute values, and the declarations refused."""

from __future__ import annotations

import re

NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*"
NAME_RE = re.compile(NAME)
XML_NAME_RE = re.compile(NAME + r"\Z")
WS_RE = re.compile(r"[ \t\n]*")
ATTR_NAME_RE = re.compile(r"[^ \t\n=/>\"'<&`]+")
UNQUOTED_RE = re.compile(r"[^ \t\n>\"'`=<]+")
SPECIAL_RE = re.compile(r"[<&>]")
END_TAG_RE = re.compile(r"</(" + NAME + r")[ \t\n]*>")
PARTIAL_END_RE = re.compile(r"</[A-Za-z0-9_.\-]*[ \t\n]*\Z")
PI_RE = re.compile(r"<\?(" + NAME + r")(?:[ \t\n][\s\S]*?)?\?>")
CDATA_RE = re.compile(r"<!\[CDATA\[[\s\S]*?\]\]>")
MARKUP_IN_VALUE_RE = re.compile(r"</[A-Za-z_]|\n[ \t]*<[A-Za-z_]")
"""An end tag, or a start tag opening a line, inside an attribute value: the quote ran on."""
ENTITY_RE = re.compile(r"&(?:lt|gt|amp|quot|apos|#([0-9]{1,7})|#x([0-9A-Fa-f]{1,6}));")

DECLARATION_RE = re.compile(r"<!\s*(?:DOCTYPE|ENTITY)", re.IGNORECASE)
"""A document type or entity declaration: what XXE and billion-laughs payloads need."""


def skip_ws(text: str, pos: int) -> int:
    """The offset after the XML whitespace at ``pos``."""
    match = WS_RE.match(text, pos)
    return match.end() if match else pos


def is_xml_char(code: int) -> bool:
    """Whether ``code`` is a character XML 1.0 allows."""
    return (
        code in (0x9, 0xA, 0xD)
        or 0x20 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


def entity_at(text: str, pos: int) -> re.Match[str] | None:
    """The valid entity or character reference starting at ``pos``, if any."""
    match = ENTITY_RE.match(text, pos)
    if match is None:
        return None
    decimal, hexadecimal = match.group(1), match.group(2)
    if decimal is not None and not is_xml_char(int(decimal)):
        return None
    if hexadecimal is not None and not is_xml_char(int(hexadecimal, 16)):
        return None
    return match


def has_stray_amp(text: str) -> bool:
    """Whether ``text`` holds an ``&`` that starts no entity or character reference."""
    pos = text.find("&")
    while pos >= 0:
        if entity_at(text, pos) is None:
            return True
        pos = text.find("&", pos + 1)
    return False


def escape_raw_text(content: str) -> tuple[str, bool]:
    """XML for the content of a raw-text element, and whether it was taken literally.

    CDATA sections are kept. If the rest holds a bare ``<`` or a stray ``&``, all of it is
    literal text (every ``&``, ``<``, ``>`` escaped); otherwise it already is XML text.
    """
    segments: list[tuple[str, bool]] = []
    pos = 0
    for match in CDATA_RE.finditer(content):
        segments.append((content[pos : match.start()], False))
        segments.append((match.group(), True))
        pos = match.end()
    segments.append((content[pos:], False))
    literal = any(("<" in seg or has_stray_amp(seg)) for seg, is_cdata in segments if not is_cdata)
    out: list[str] = []
    for seg, is_cdata in segments:
        if is_cdata:
            out.append(seg)
        elif literal:
            out.append(seg.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
        else:
            out.append(seg.replace(">", "&gt;"))
    return "".join(out), literal


def escape_attr_value(value: str) -> tuple[str, bool]:
    """An attribute value for a double-quoted attribute, and whether ``<`` or ``&`` was escaped."""
    out: list[str] = []
    changed = False
    for i, char in enumerate(value):
        if char == "<":
            out.append("&lt;")
            changed = True
        elif char == "&" and entity_at(value, i) is None:
            out.append("&amp;")
            changed = True
        elif char == '"':
            out.append("&quot;")
        else:
            out.append(char)
    return "".join(out), changed
