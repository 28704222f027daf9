"""Typed errors of the protocol layer.

A payload that cannot be read gives a :class:`ProtocolError` and no model at all. The error names
the payload kind, where the problem is (a line of the *original* text, a JSON pointer, or both)
and the element or key concerned, so that a person can find it and a planner can be told.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from notebook_bcc.errors import NotebookBccError


@dataclass(frozen=True)
class ProtocolIssue:
    """One problem in a payload: a message and where it is."""

    message: str
    line: int | None = None
    pointer: str | None = None
    element: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The issue as plain JSON data."""
        return {
            "message": self.message,
            "line": self.line,
            "pointer": self.pointer,
            "element": self.element,
        }


PAYLOAD = "payload"
"""The ``kind`` of a document whose payload kind is not known yet (detection failed)."""


class ProtocolError(NotebookBccError, ValueError):
    """A planner payload that is malformed, unsafe or of the wrong kind.

    ``kind`` is the payload kind being read (``stages``, ``json-actions``, ...). The first issue's
    location is also exposed as ``line``, ``pointer`` and ``element``; ``issues`` lists them all
    (a validation error can name several fields at once).
    """

    code = "protocol_error"

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        line: int | None = None,
        pointer: str | None = None,
        element: str | None = None,
        issues: list[ProtocolIssue] | None = None,
    ) -> None:
        first = ProtocolIssue(message, line=line, pointer=pointer, element=element)
        all_issues = list(issues) if issues else [first]
        self.kind = kind
        self.issues: list[ProtocolIssue] = all_issues
        head = all_issues[0]
        self.line = head.line
        self.pointer = head.pointer
        self.element = head.element
        super().__init__(
            _describe(kind, head),
            details={"kind": kind, "issues": [issue.to_json() for issue in all_issues]},
        )

    def format_lines(self, source: str) -> list[str]:
        """One ``SOURCE:LINE: ELEMENT: message`` line per issue (``SOURCE: ...`` if no line)."""
        return [_format_issue(source, self.kind, issue) for issue in self.issues]


class DoctypeRefusedError(ProtocolError):
    """A document carrying ``<!DOCTYPE`` or ``<!ENTITY`` (XXE, billion laughs): never parsed."""

    code = "doctype_refused"


class PayloadTooLargeError(ProtocolError):
    """A payload beyond the size or nesting bounds of :mod:`notebook_bcc.protocol.limits`."""

    code = "payload_too_large"


def _label(kind: str, issue: ProtocolIssue) -> str:
    if issue.element:
        return issue.element
    if issue.pointer:
        return issue.pointer
    return kind


def _message(issue: ProtocolIssue) -> str:
    if issue.element and issue.pointer:
        return f"{issue.message} (at {issue.pointer})"
    return issue.message


def _format_issue(source: str, kind: str, issue: ProtocolIssue) -> str:
    where = f"{source}:{issue.line}" if issue.line is not None else source
    return f"{where}: {_label(kind, issue)}: {_message(issue)}"


def _describe(kind: str, issue: ProtocolIssue) -> str:
    where = f"line {issue.line}: " if issue.line is not None else ""
    if kind == PAYLOAD and _label(kind, issue) == PAYLOAD:  # the kind itself is unknown
        return f"{where}{_message(issue)}"
    return f"{kind} payload: {where}{_label(kind, issue)}: {_message(issue)}"
