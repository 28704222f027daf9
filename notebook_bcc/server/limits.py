"""Bounds on untrusted REST input, checked before the input costs anything.

Every request body is measured (:data:`MAX_BODY_BYTES`) and its JSON nesting counted
(:data:`MAX_JSON_DEPTH`) *before* it is parsed: ``json.loads`` recurses per level, so a body of
``[[[[...`` 1,000 deep would otherwise end in a ``RecursionError`` (a 500 with a traceback).
``NaN`` and ``Infinity`` are not JSON and are refused as well. Each refusal is a
:class:`~notebook_bcc.server.errors.BadRequestError` (400) whose ``code`` names what was too big.

The string caps (:data:`MAX_PROBLEM_CHARS`, :data:`MAX_PATH_CHARS`, ...) are used by the wire
models: they bound what lands in a workflow snapshot, which is written at every commit.
"""

from __future__ import annotations

import json
import re
from http import HTTPStatus
from typing import Any

from notebook_bcc.server.errors import BadRequestError

MAX_BODY_BYTES = 1_000_000
"""Largest request body any endpoint accepts (a command is ~100 bytes, a start request ~1 KB)."""

MAX_JSON_DEPTH = 32
"""Deepest nesting of objects and arrays in a request body."""

MAX_BLUEPRINT_BYTES = 2_000_000
"""Largest blueprint file read over REST: the CLI's cap (``loader.MAX_FILE_BYTES``)."""

MAX_PROBLEM_CHARS = 100_000
"""Longest problem statement (it is stored in the snapshot)."""

MAX_PATH_CHARS = 4_096
"""Longest API path a request may name."""

MAX_FILES = 1_000
"""Most input files one request may name."""

MAX_NAME_CHARS = 1_000
"""Longest short identifier (a decision id, a model name, an env variable name)."""

MAX_URL_CHARS = 8_192
"""Longest planner URL."""


class BodyTooLargeError(BadRequestError):
    """A request body larger than :data:`MAX_BODY_BYTES` (413, refused before it is read)."""

    code = "body_too_large"
    status = HTTPStatus.REQUEST_ENTITY_TOO_LARGE


class JsonTooDeepError(BadRequestError):
    """A request body nested deeper than :data:`MAX_JSON_DEPTH`."""

    code = "json_too_deep"


class InvalidJsonError(BadRequestError):
    """A request body that is not JSON (or uses NaN / Infinity)."""

    code = "bad_request"  # the code a non-JSON body always had (a contract)


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")


def check_body_size(body: bytes, *, limit: int = MAX_BODY_BYTES) -> None:
    """Refuse a body over ``limit`` bytes."""
    if len(body) > limit:
        raise BodyTooLargeError(
            f"the request body is {len(body)} bytes; the limit is {limit}",
            details={"limit": limit, "size": len(body)},
        )


def json_depth(body: bytes) -> int:
    """The deepest nesting of ``[``/``{`` in ``body``, brackets inside strings ignored.

    Linear in the body and without recursion; an unbalanced body is measured as far as it
    goes (the parser then reports it as not JSON).
    """
    depth = deepest = 0
    for match in _BRACKETS.finditer(_STRING.sub(b'""', body)):
        if match.group() in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


MAX_INT_DIGITS = 100
"""Digits an integer of a request body may have (no field of the API needs more)."""


class TooManyDigitsError(ValueError):
    """An integer literal longer than :data:`MAX_INT_DIGITS`."""


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise TooManyDigitsError(
            f"the request body is JSON, but one of its integers has {digits} digits; the limit "
            f"is {MAX_INT_DIGITS}"
        )
    return int(text)


def parse_json_body(body: bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``body`` as JSON after the size and depth checks; an empty body is ``None``."""
    check_body_size(body)
    if not body:
        return None
    deepest = json_depth(body)
    if deepest > max_depth:
        raise JsonTooDeepError(
            f"the request body nests {deepest} levels deep; the limit is {max_depth}",
            details={"limit": max_depth, "depth": deepest},
        )
    try:
        return json.loads(body, parse_constant=_refuse_constant, parse_int=_bounded_int)
    except TooManyDigitsError as exc:
        raise InvalidJsonError(str(exc), details={"limit": MAX_INT_DIGITS}) from None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        reason = str(exc)[:200]
        raise InvalidJsonError(f"the request body is not JSON: {reason}") from None
