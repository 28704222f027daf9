"""``notebook-bcc fsm table|diagram``: the 14-state workflow FSM as data or Mermaid."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``fsm`` command group."""
    fsm = subparsers.add_parser("fsm", help="the workflow FSM of seed 003 (table, diagram)")
    sub = fsm.add_subparsers(dest="fsm_command", metavar="SUBCOMMAND", required=True)
    table = sub.add_parser("table", help="print the 45-row transition table")
    table.add_argument("--format", choices=["json", "markdown"], default="json")
    table.set_defaults(handler=_table)
    diagram = sub.add_parser("diagram", help="print the FSM as a Mermaid stateDiagram-v2")
    diagram.add_argument("--current", metavar="STATE", help="mark this state as current")
    diagram.set_defaults(handler=_diagram)


def _table(args: argparse.Namespace) -> int:
    import json

    from notebook_bcc.fsm.table import TRANSITIONS, table_rows

    if args.format == "json":
        print(json.dumps(table_rows(), indent=2))
        return 0
    print("| from | event | to | group |")
    print("|---|---|---|---|")
    for row in TRANSITIONS:
        print(f"| {row.source.value} | {row.event.value} | {row.target.value} | {row.group} |")
    return 0


def _diagram(args: argparse.Namespace) -> int:
    from notebook_bcc.fsm.mermaid import workflow_fsm_mermaid

    print(workflow_fsm_mermaid(current=args.current))
    return 0
