"""Which kind of payload a text is, when the caller does not say (``kind="auto"``)."""

from __future__ import annotations

from typing import Any

from notebook_bcc.protocol.errors import DoctypeRefusedError, ProtocolError
from notebook_bcc.protocol.json_text import JsonText, strip_fence
from notebook_bcc.protocol.planning import PLANNING_KEYS
from notebook_bcc.protocol.text import line_of
from notebook_bcc.protocol.xml_lexical import DECLARATION_RE
from notebook_bcc.protocol.xml_parse import find_root

JSON = "json"
"""What :func:`detect_kind` returns for JSON text, before :func:`is_planning_response`."""


def detect_kind(text: str) -> str:
    """An XML kind (the root's name) or :data:`JSON`.

    JSON: the text (or the body of one code fence) starts with ``{`` or ``[``. XML: a known
    planner root element appears (the one :func:`find_root` picks).
    """
    body, _ = strip_fence(text)
    if body.lstrip(" \t\r\n").startswith(("{", "[")):
        return JSON
    match = find_root(text)
    if match is not None:
        return match.group(1)
    declaration = DECLARATION_RE.search(text)
    if declaration is not None:
        raise DoctypeRefusedError(
            "payload",
            "document type and entity declarations are refused (XXE, entity expansion)",
            line=line_of(text, declaration.start()),
            element="!DOCTYPE",
        )
    raise ProtocolError(
        "payload",
        "cannot tell the payload kind: neither JSON nor a planner XML root "
        "(<stages>, <workflow>, <steps>, <behavior>, <actions>, <reflection>, "
        "<stage_reflection>)",
        line=1,
        element="payload",
    )


def is_planning_response(doc: JsonText) -> bool:
    """True for a single JSON object that carries a planning key and is not an action."""
    if doc.format != "document" or len(doc.records) != 1:
        return False
    value: Any = doc.records[0].value
    if not isinstance(value, dict) or "type" in value or "action" in value:
        return False
    return bool(PLANNING_KEYS & value.keys())
