"""``notebook-bcc validate FILE.yaml``: check a blueprint or a bare seed 004 state machine."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``validate`` command."""
    parser = subparsers.add_parser(
        "validate",
        help="check a blueprint / state-machine YAML (exit 0 valid, 2 with FILE:LINE errors)",
    )
    parser.add_argument("file", help="the YAML file to check")
    parser.set_defaults(handler=_validate)


def _validate(args: argparse.Namespace) -> int:
    from notebook_bcc.blueprint.validate import validate_file

    report = validate_file(args.file)
    for issue in report.errors:
        print(issue.format(args.file), file=sys.stderr)
    for issue in report.warnings:
        print(issue.format(args.file, prefix="warning: "), file=sys.stderr)
    if report.errors:
        return 2
    print(report.summary)
    return 0
