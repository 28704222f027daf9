"""``notebook-bcc parse FILE|-``: read a planner payload and print its normalized model as JSON."""

from __future__ import annotations

import argparse
import sys
from typing import Any

KINDS = (
    "auto",
    "stages",
    "workflow",
    "steps",
    "behavior",
    "actions",
    "reflection",
    "stage_reflection",
    "json-actions",
    "planning",
    "signals",
)
"""The ``--kind`` choices (the protocol layer's payload kinds)."""


def register(subparsers: Any) -> None:
    """Add the ``parse`` command."""
    parser = subparsers.add_parser(
        "parse",
        help="parse a planner payload (XML, JSON, NDJSON) and print its model as JSON "
        "(exit 2 with FILE:LINE: ELEMENT: message errors)",
    )
    parser.add_argument("file", help="the payload file, or - for standard input")
    parser.add_argument(
        "--kind",
        choices=KINDS,
        default="auto",
        help="payload kind (default: auto, told from the content)",
    )
    parser.set_defaults(handler=_parse)


def _read(path: str) -> bytes:
    from notebook_bcc.protocol.limits import MAX_PAYLOAD_CHARS

    if path == "-":
        return sys.stdin.buffer.read(MAX_PAYLOAD_CHARS + 1)
    with open(path, "rb") as handle:
        return handle.read(MAX_PAYLOAD_CHARS + 1)


def _parse(args: argparse.Namespace) -> int:
    import json

    from notebook_bcc.protocol import ProtocolError, parse_payload

    source = "<stdin>" if args.file == "-" else args.file
    try:
        data = _read(args.file)
    except OSError as exc:
        print(f"error: {source}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        payload = parse_payload(data, kind=args.kind)
    except ProtocolError as exc:
        for line in exc.format_lines(source):
            print(f"error: {line}", file=sys.stderr)
        return 2
    print(json.dumps(payload.model_dump(mode="json"), indent=2, ensure_ascii=False))
    return 0
