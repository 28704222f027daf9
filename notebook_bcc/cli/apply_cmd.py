"""``notebook-bcc apply`` and ``notebook-bcc observe``: the apply layer on recorded states.

``apply --state STATE.json PAYLOAD`` applies one planner payload to a state (our snapshot or a
reference-client state document) and prints ``{"event", "events", "warnings", "pending",
"actions", "diff", "repairs", "snapshot"}``; a payload illegal in that state, or truncated (cut
off before its closing tag: part of it is lost), exits 2 with the typed error. Every repair the
parser made is listed in ``repairs`` and, one ``repaired: ...`` line each, on standard error.
``observe --state STATE.json`` prints the observation a planner would receive, and on standard
error one ``trimmed: ...`` line per place the size budget cut.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from notebook_bcc.cli.parse_cmd import KINDS as _KINDS


def register(subparsers: Any) -> None:
    """Add the ``apply`` and ``observe`` commands."""
    apply = subparsers.add_parser(
        "apply",
        help="apply a planner payload to a state and print the event and the next snapshot "
        "(exit 2 when the payload is illegal in that state)",
    )
    apply.add_argument("payload", help="the payload file, or - for standard input")
    apply.add_argument(
        "--state", required=True, help="STATE.json: a snapshot or a reference-client state"
    )
    apply.add_argument("--kind", choices=_KINDS, default="auto", help="payload kind (default auto)")
    apply.add_argument(
        "--max-iterations", type=int, default=3, help="behavior iterations per step (D15)"
    )
    apply.add_argument("--actor", default="planner", help="actor recorded in the FSM history")
    apply.add_argument("--at", help="ISO 8601 timestamp for the records (default: now)")
    apply.set_defaults(handler=_apply)

    observe = subparsers.add_parser(
        "observe", help="print the observation a planner receives for a state"
    )
    observe.add_argument(
        "--state", required=True, help="STATE.json: a snapshot or a reference-client state"
    )
    observe.add_argument(
        "--format",
        choices=["state", "context"],
        default="state",
        help="state: {observation: {location}, state: {...}} (default); "
        "context: seed 003's observation.context form",
    )
    observe.add_argument(
        "--case", choices=["upper", "lower"], default="upper", help="FSM state name case"
    )
    observe.add_argument("--filter", help="a context_filter JSON file (default: the state's)")
    observe.add_argument("--notebook", help="an .ipynb whose cells are digested")
    observe.add_argument("--max-chars", type=int, help="size budget of the whole observation")
    observe.set_defaults(handler=_observe)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


class _InputError(Exception):
    pass


def _read_bytes(path: str) -> bytes:
    from notebook_bcc.protocol.limits import MAX_PAYLOAD_CHARS

    try:
        if path == "-":
            return sys.stdin.buffer.read(MAX_PAYLOAD_CHARS + 1)
        with open(path, "rb") as handle:
            return handle.read(MAX_PAYLOAD_CHARS + 1)
    except OSError as exc:
        raise _InputError(f"{path}: {exc.strerror or exc}") from None


def _read_json(path: str) -> Any:
    import json

    data = _read_bytes(path)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _InputError(f"{path}: not UTF-8 ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise _InputError(
            f"{path}: invalid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
        ) from None


def _load_state(path: str) -> Any:
    from notebook_bcc.workflow import StateDocumentError, load_state_document

    document = _read_json(path)
    try:
        return load_state_document(document)
    except StateDocumentError as exc:
        raise _InputError(f"{path}: {exc.message}") from None


def _apply(args: argparse.Namespace) -> int:
    import json

    from notebook_bcc.protocol import ProtocolError
    from notebook_bcc.workflow import ApplyError, apply_text

    try:
        snapshot = _load_state(args.state)
        data = _read_bytes(args.payload)
    except _InputError as exc:
        return _fail(str(exc))
    source = "<stdin>" if args.payload == "-" else args.payload
    try:
        applied = apply_text(
            snapshot,
            data,
            args.kind,
            actor=args.actor,
            at=args.at,
            max_iterations=args.max_iterations,
        )
    except ProtocolError as exc:
        for line in exc.format_lines(source):
            print(f"error: {line}", file=sys.stderr)
        return 2
    except ApplyError as exc:
        return _fail(f"{source}: {exc.message}")
    for line in applied.repairs:
        print(f"{source}: {line}", file=sys.stderr)
    print(json.dumps(applied.to_json(), indent=2, ensure_ascii=False))
    return 0


def _observe(args: argparse.Namespace) -> int:
    import json
    from dataclasses import replace

    from pydantic import ValidationError

    from notebook_bcc.protocol.planning import ContextFilter
    from notebook_bcc.workflow import DEFAULT_BUDGET, build_observation

    try:
        snapshot = _load_state(args.state)
        context_filter = None
        if args.filter:
            raw = _read_json(args.filter)
            if isinstance(raw, dict) and "context_filter" in raw:
                raw = raw["context_filter"]
            try:
                context_filter = ContextFilter.model_validate(raw)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = "/".join(str(part) for part in first["loc"])
                raise _InputError(f"{args.filter}: /{where}: {first['msg']}") from None
        cells = None
        if args.notebook:
            notebook = _read_json(args.notebook)
            cells = notebook.get("cells") if isinstance(notebook, dict) else None
            if not isinstance(cells, list):
                raise _InputError(f"{args.notebook}: not a notebook (no cells list)")
    except _InputError as exc:
        return _fail(str(exc))
    budget = DEFAULT_BUDGET
    if args.max_chars is not None:
        budget = replace(budget, max_chars=args.max_chars)
    observation = build_observation(
        snapshot,
        context_filter=context_filter,
        fmt=args.format,
        budget=budget,
        cells=cells,
        state_case=args.case,
    )
    from notebook_bcc.workflow.views import trim_notes

    for note in trim_notes(observation):
        print(f"trimmed: {note}", file=sys.stderr)
    print(json.dumps(observation, indent=2, ensure_ascii=False))
    return 0
