"""``notebook-bcc schema [MODEL]``: JSON Schema generated from the pydantic models."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``schema`` command."""
    parser = subparsers.add_parser(
        "schema", help="print JSON Schema of the wire models (all of them, or MODEL)"
    )
    parser.add_argument("model", nargs="?", help="a model name; omit for all, keyed by name")
    parser.set_defaults(handler=_schema)


def _schema(args: argparse.Namespace) -> int:
    import json

    from notebook_bcc.schema import all_schemas, json_schema

    result = json_schema(args.model) if args.model else all_schemas()
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0
