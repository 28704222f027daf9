"""JSON text -> plain values, strictly, with every problem located by line and JSON pointer.

Strict means: duplicate keys, ``NaN``/``Infinity`` and nesting beyond :data:`MAX_DEPTH` are
refused (each is ambiguous or hostile), and so is anything ``json`` itself rejects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from notebook_bcc.protocol.errors import PayloadTooLargeError, ProtocolError, ProtocolIssue
from notebook_bcc.protocol.limits import MAX_DEPTH
from notebook_bcc.protocol.text import line_of

_FENCE_RE = re.compile(r"\A\s*```[A-Za-z]*[ \t]*\n([\s\S]*?)\n[ \t]*```\s*\Z")
_DECODER = json.JSONDecoder()


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class _ConstantError(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(key)
        result[key] = value
    return result


def _constant(name: str) -> Any:
    raise _ConstantError(name)


def escape_token(token: str | int) -> str:
    """One JSON pointer reference token (RFC 6901 escaping)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer(tokens: Iterable[str | int]) -> str:
    """A JSON pointer from its tokens (``""`` for the whole document)."""
    return "".join("/" + escape_token(token) for token in tokens)


def decode_json(text: str, kind: str, *, first_line: int = 1) -> Any:
    """Parse one JSON text strictly; errors give the line (counting from ``first_line``)."""
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise ProtocolError(
            kind,
            f"invalid JSON: {exc.msg} (column {exc.colno})",
            line=first_line + exc.lineno - 1,
            element="json",
        ) from None
    except _DuplicateKeyError as exc:
        raise ProtocolError(
            kind, f"key {exc.key!r} appears twice in one object", line=first_line, element=exc.key
        ) from None
    except _ConstantError as exc:
        raise ProtocolError(
            kind, f"{exc} is not a JSON number", line=first_line, element="json"
        ) from None
    except RecursionError:
        raise PayloadTooLargeError(
            kind, f"JSON nested deeper than {MAX_DEPTH} levels", line=first_line, element="json"
        ) from None
    check_depth(value, kind, first_line)
    return value


def check_depth(value: Any, kind: str, line: int | None) -> None:
    """Refuse arrays/objects nested deeper than :data:`MAX_DEPTH`."""
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 1, ())]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, dict):
            children: Iterable[tuple[str | int, Any]] = item.items()
        elif isinstance(item, list):
            children = enumerate(item)
        else:
            continue
        if depth > MAX_DEPTH:
            raise PayloadTooLargeError(
                kind,
                f"JSON nested deeper than {MAX_DEPTH} levels",
                line=line,
                pointer=pointer(path),
                element="json",
            )
        stack.extend((child, depth + 1, (*path, key)) for key, child in children)


@dataclass
class JsonRecord:
    """One top-level JSON value and where it starts."""

    value: Any
    line: int
    """Line where the value starts."""
    text: str
    """The JSON text it was read from (the whole document, or its NDJSON line)."""
    base_line: int
    """Line of ``text``'s first character."""


@dataclass
class JsonText:
    """A payload's JSON values: one document, or one per NDJSON line."""

    records: list[JsonRecord]
    format: Literal["document", "ndjson"]


def strip_fence(text: str) -> tuple[str, int]:
    """The body of a payload wrapped in one Markdown code fence (else the text itself), and
    the number of lines before it."""
    match = _FENCE_RE.match(text)
    if match is None:
        return text, 0
    return match.group(1), text.count("\n", 0, match.start(1))


def load_json_text(text: str, kind: str) -> JsonText:
    """Read a JSON document or an NDJSON stream (one value per non-blank line)."""
    from notebook_bcc.protocol.ndjson import NdjsonDecoder

    body, offset = strip_fence(text)
    if not body.strip():
        raise ProtocolError(kind, "empty payload", line=1, element="json")
    first = len(body) - len(body.lstrip())
    first_line = offset + line_of(body, first)
    try:
        value = decode_json(body, kind, first_line=offset + 1)
    except ProtocolError as whole_error:
        lines = [line for line in body.split("\n") if line.strip()]
        if len(lines) < 2 or not _parses(lines[0]):
            raise whole_error from None
    else:
        return JsonText([JsonRecord(value, first_line, body, offset + 1)], "document")
    decoder = NdjsonDecoder(kind=kind, first_line=offset + 1)
    records = decoder.feed_records(body) + decoder.close_records()
    return JsonText(
        [JsonRecord(rec.value, rec.line, rec.text, rec.line) for rec in records], "ndjson"
    )


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def locate(text: str, tokens: Sequence[str], *, first_line: int = 1) -> int | None:
    """The line where the value at ``tokens`` starts in the JSON ``text``.

    For a token that is not there (a missing key), the line of the object that lacks it.
    """
    try:
        pos = _skip_ws(text, 0)
        for token in tokens:
            if pos >= len(text) or text[pos] not in "{[":
                break
            opener = text[pos]
            pos = _skip_ws(text, pos + 1)
            container = pos
            index = 0
            found = False
            while pos < len(text) and text[pos] not in "}]":
                if opener == "{":
                    key, pos = _DECODER.raw_decode(text, pos)
                    pos = _skip_ws(text, _skip_ws(text, pos) + 1)
                    hit = key == token
                else:
                    hit = str(index) == token
                if hit:
                    found = True
                    break
                _, pos = _DECODER.raw_decode(text, pos)
                pos = _skip_ws(text, pos)
                if pos < len(text) and text[pos] == ",":
                    pos = _skip_ws(text, pos + 1)
                index += 1
            if not found:
                return first_line + text.count("\n", 0, max(container - 1, 0))
        return first_line + text.count("\n", 0, pos)
    except (ValueError, IndexError, RecursionError):
        return None


def validation_issues(
    exc: ValidationError,
    value: Any,
    *,
    base: Sequence[str | int],
    record: JsonRecord,
    element: str | None = None,
) -> list[ProtocolIssue]:
    """Turn a pydantic validation error on ``value`` into located protocol issues.

    ``base`` is the pointer of ``value`` inside ``record``; the pointer of each issue follows
    the error's location through the actual input (union branch labels are skipped).
    """
    issues: list[ProtocolIssue] = []
    for error in exc.errors(include_url=False, include_input=False):
        tokens: list[str | int] = list(base)
        current: Any = value
        last: str | None = None
        for part in error["loc"]:
            if isinstance(current, dict) and isinstance(part, str):
                if part in current:
                    current = current[part]
                elif error["type"] != "missing":
                    continue
                else:
                    current = None
                tokens.append(part)
                last = part
            elif isinstance(current, list) and isinstance(part, int) and part < len(current):
                current = current[part]
                tokens.append(part)
        message = str(error["msg"])
        if last is not None and element is not None:
            message = f"{last}: {message}"
        issues.append(
            ProtocolIssue(
                message,
                line=locate(record.text, [str(t) for t in tokens], first_line=record.base_line),
                pointer=pointer(tokens),
                element=element or last or "json",
            )
        )
    return issues
