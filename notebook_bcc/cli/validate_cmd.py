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
    parser.add_argument(
        "file", help="the YAML file to check (or a folder holding workflow.yaml, as for run)"
    )
    parser.set_defaults(handler=_validate)


def _validate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from notebook_bcc.blueprint.issues import Issue
    from notebook_bcc.blueprint.validate import validate_file

    path = Path(args.file)
    if path.is_dir():  # the same folder `run` takes: its workflow.yaml
        path = path / "workflow.yaml"
    name = str(path)
    report = validate_file(path)
    errors = list(report.errors)
    warnings = list(report.warnings)
    if report.loaded is not None:
        document = report.loaded.document
        declared = list(getattr(document, "files", []) or [])
        for index, found in enumerate(report.loaded.resolved_files()):
            if not found.exists():
                line = report.loaded.source.line_of(("files", index))
                warnings.append(
                    Issue(
                        line,
                        f"files[{index}]: {declared[index]} does not exist here "
                        "(run refuses a missing input file)",
                    )
                )
    for issue in errors:
        print(issue.format(name), file=sys.stderr)
    for issue in warnings:
        print(issue.format(name, prefix="warning: "), file=sys.stderr)
    if errors:
        return 2
    print(report.summary)
    return 0
