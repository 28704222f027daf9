"""What the DSLC HTTP planner sends and accepts at each decision point.

The endpoint a point posts to (:data:`ENDPOINTS`), the XML roots and JSON kinds it takes, how a
Content-Type is read (:func:`body_format`), the payload kind a body is parsed as
(:func:`payload_kind`), the observation's state names recased for the server
(:func:`recase_states`), and the protocol error that keeps a refused body
(:class:`HttpProtocolError`).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from notebook_bcc.protocol.detect import JSON as DETECTED_JSON
from notebook_bcc.protocol.detect import detect_kind
from notebook_bcc.protocol.errors import ProtocolError
from notebook_bcc.protocol.planning import PLANNING_KEYS

ENDPOINTS: dict[str, str] = {
    "plan_stages": "/planning",
    "plan_steps": "/planning",
    "plan_behavior": "/planning",
    "generate_actions": "/generating",
    "reflect_behavior": "/reflecting",
    "reflect_stage": "/reflecting",
    "route_stage": "/reflecting",
}
"""The endpoint each decision point posts to (PROTOCOL-NOTES "Which endpoint at which state")."""

XML_ROOTS: dict[str, tuple[str, ...]] = {
    "plan_stages": ("stages", "workflow"),
    "plan_steps": ("steps",),
    "plan_behavior": ("behavior",),
    "generate_actions": ("actions",),
    "reflect_behavior": ("reflection",),
    "reflect_stage": ("stage_reflection",),
    "route_stage": (),
}
"""XML roots a point accepts; any other root is a protocol error naming both."""

JSON_KINDS: dict[str, str] = {
    "plan_stages": "planning",
    "plan_steps": "planning",
    "plan_behavior": "planning",
    "generate_actions": "json-actions",
    "reflect_behavior": "signals",
    "reflect_stage": "signals",
    "route_stage": "signals",
}
"""How a point reads JSON / NDJSON that is not a planning decision object."""

NDJSON_TYPES = frozenset(
    {
        "application/x-ndjson",
        "application/ndjson",
        "application/jsonl",
        "application/x-jsonl",
        "application/jsonlines",
        "application/x-jsonlines",
        "application/json-lines",
        "application/stream+json",
    }
)
"""Media types read as NDJSON (one value per line), incrementally."""

BodyFormat = Literal["xml", "json", "ndjson", "unknown"]

TRACE_BODY_CHARS = 100_000
"""How much of a refused body a protocol error keeps in its details (and so in the trace)."""


def body_format(content_type: str | None) -> BodyFormat:
    """How a body of this Content-Type is read: XML, JSON, NDJSON, or unknown (sniffed)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in NDJSON_TYPES:
        return "ndjson"
    if media in ("application/xml", "text/xml") or media.endswith("+xml"):
        return "xml"
    if media in ("application/json", "text/json") or media.endswith("+json"):
        return "json"
    return "unknown"


def recase_states(observation: dict[str, Any], case: Literal["upper", "lower"]) -> dict[str, Any]:
    """The observation with FSM state names in ``case`` (D21: DSLC servers expect upper case).

    The engine builds observations upper case; only ``lower`` needs a copy.
    """
    if case == "upper":
        return observation
    doc: dict[str, Any] = json.loads(json.dumps(observation))
    holders = [doc.get("state"), (doc.get("observation") or {}).get("context")]
    for holder in holders:
        if not isinstance(holder, dict) or not isinstance(holder.get("FSM"), dict):
            continue
        fsm = holder["FSM"]
        if isinstance(fsm.get("state"), str):
            fsm["state"] = fsm["state"].lower()
        for entry in fsm.get("history") or []:
            for key in ("from", "to"):
                if isinstance(entry, dict) and isinstance(entry.get(key), str):
                    entry[key] = entry[key].lower()
    return doc


EXCERPT_CHARS = 80
"""Characters of a refused body quoted in the error message (the trace keeps the body)."""


class HttpProtocolError(ProtocolError):
    """A response the protocol layer refused; ``details`` keep the body and where it came from.

    ``details["body"]`` is the body as received (the first :data:`TRACE_BODY_CHARS`
    characters; ``body_truncated`` says when more was cut), with ``content_type``, ``url``,
    ``status`` and ``point``.
    """

    code = "planner_protocol_error"

    def __init__(
        self,
        error: ProtocolError,
        *,
        body: str,
        content_type: str | None,
        url: str,
        status: int | None,
        point: str,
    ) -> None:
        head = error.issues[0]
        super().__init__(
            error.kind,
            head.message,
            line=head.line,
            pointer=head.pointer,
            element=head.element,
            issues=error.issues,
        )
        self.body = body
        shown = " ".join(body.split())
        excerpt = shown[:EXCERPT_CHARS] + ("…" if len(shown) > EXCERPT_CHARS else "")
        self.message = (
            f"{self.message} (HTTP {status}, {content_type or 'no Content-Type'}, "
            f"{len(body.encode('utf-8'))} bytes: {excerpt!r})"
        )
        self.details.update(
            {
                "point": point,
                "url": url,
                "status": status,
                "content_type": content_type,
                "body": body[:TRACE_BODY_CHARS],
                "body_truncated": len(body) > TRACE_BODY_CHARS,
            }
        )


def _kind_error(point: str, state: str, found: str, fmt: BodyFormat) -> ProtocolError:
    roots = XML_ROOTS.get(point, ())
    expected = [f"<{root}>" for root in roots]
    expected.append("planning JSON" if JSON_KINDS[point] == "planning" else JSON_KINDS[point])
    kind = roots[0] if roots else JSON_KINDS[point]
    where = f"{point} at {state}"
    if fmt == "xml" and found == DETECTED_JSON:
        message = f"the Content-Type says XML but the body is JSON ({where})"
    else:
        shown = "JSON" if found == DETECTED_JSON else f"<{found}>"
        message = f"wrong root {shown} for {where}: expected {' or '.join(expected)}"
    return ProtocolError(kind, message, line=1, element=found)


def _is_planning_object(text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return (
        isinstance(value, dict)
        and "type" not in value
        and "action" not in value
        and bool(PLANNING_KEYS & value.keys())
    )


def payload_kind(point: str, state: str, content_type: str | None, text: str) -> str:
    """The payload kind to parse ``text`` as, from the point and the Content-Type.

    A root or kind the point does not accept raises :class:`ProtocolError`.
    """
    fmt = body_format(content_type)
    if fmt == "unknown":
        found = detect_kind(text)
        fmt = "json" if found == DETECTED_JSON else "xml"
    if fmt == "xml":
        found = detect_kind(text)
        if found not in XML_ROOTS[point]:
            raise _kind_error(point, state, found, "xml")
        return found
    if fmt == "json" and _is_planning_object(text):
        return "planning"
    return JSON_KINDS[point]


__all__ = [
    "ENDPOINTS",
    "JSON_KINDS",
    "NDJSON_TYPES",
    "TRACE_BODY_CHARS",
    "XML_ROOTS",
    "BodyFormat",
    "HttpProtocolError",
    "body_format",
    "payload_kind",
    "recase_states",
]
