"""``parse_payload``: any planner payload in, one typed model out (or a typed error)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from notebook_bcc.protocol.detect import JSON, detect_kind, is_planning_response
from notebook_bcc.protocol.errors import ProtocolError
from notebook_bcc.protocol.json_actions import raise_issues, read_actions
from notebook_bcc.protocol.json_text import JsonText, load_json_text, validation_issues
from notebook_bcc.protocol.payloads import (
    JsonActionsPayload,
    Payload,
    PlanningPayload,
    SignalsPayload,
)
from notebook_bcc.protocol.planning import PlanningResponse
from notebook_bcc.protocol.plans import (
    build_behavior,
    build_stages,
    build_steps,
    build_workflow,
)
from notebook_bcc.protocol.reflections import build_reflection, build_stage_reflection
from notebook_bcc.protocol.signals import SIGNAL_TYPES
from notebook_bcc.protocol.text import decode_payload
from notebook_bcc.protocol.xml_actions import build_actions
from notebook_bcc.protocol.xml_parse import ParsedXml, parse_xml
from notebook_bcc.protocol.xml_vocab import XML_KINDS

JSON_KINDS: tuple[str, ...] = ("json-actions", "planning", "signals")
"""Payload kinds whose wire form is JSON or NDJSON."""

PAYLOAD_KINDS: tuple[str, ...] = ("auto", *XML_KINDS, *JSON_KINDS)
"""Every value ``parse_payload(kind=...)`` accepts."""

_XML_BUILDERS: dict[str, Callable[[ParsedXml], Any]] = {
    "stages": build_stages,
    "workflow": build_workflow,
    "steps": build_steps,
    "behavior": build_behavior,
    "actions": build_actions,
    "reflection": build_reflection,
    "stage_reflection": build_stage_reflection,
}


def parse_payload(data: str | bytes, kind: str = "auto") -> Payload:
    """Parse a planner payload into its typed model.

    ``data`` is the payload as sent (text, or UTF-8 bytes). ``kind`` is one of
    :data:`PAYLOAD_KINDS`; ``auto`` tells JSON from XML, the XML kind from the root element and
    the JSON kind from the content (a planning object, a stream with control signals, or
    plain actions). Anything malformed, unsafe or of another kind raises
    :class:`ProtocolError` naming the kind, the line and/or JSON pointer, and the element;
    no model is returned then.
    """
    if kind not in PAYLOAD_KINDS:
        raise ProtocolError(
            kind,
            f"unknown payload kind {kind!r}; expected one of: {', '.join(PAYLOAD_KINDS)}",
            element="kind",
        )
    auto = kind == "auto"
    text = decode_payload(data, "payload" if auto else kind)
    if not text.strip():
        raise ProtocolError("payload" if auto else kind, "empty payload", line=1, element="payload")
    if auto:
        kind = detect_kind(text)
    if kind in _XML_BUILDERS:
        payload: Payload = _XML_BUILDERS[kind](parse_xml(text, kind))
        return payload
    doc = load_json_text(text, kind)
    if kind == JSON:
        kind = "planning" if is_planning_response(doc) else "json-actions"
    if kind == "planning":
        return _planning(doc)
    read = read_actions(doc.records, kind)
    if auto and any(action.type in SIGNAL_TYPES for action in read.actions):
        kind = "signals"
    model = SignalsPayload if kind == "signals" else JsonActionsPayload
    return model.model_validate(
        {"format": doc.format, "actions": read.actions, "envelope": read.envelope}
    )


def _planning(doc: JsonText) -> PlanningPayload:
    if not is_planning_response(doc):
        read = read_actions(doc.records, "planning")
        return PlanningPayload(format=doc.format, actions=read.actions, envelope=read.envelope)
    record = doc.records[0]
    try:
        response = PlanningResponse.model_validate(record.value)
    except ValidationError as exc:
        issues = validation_issues(exc, record.value, base=[], record=record)
        raise raise_issues("planning", issues) from None
    return PlanningPayload(format=doc.format, response=response)
