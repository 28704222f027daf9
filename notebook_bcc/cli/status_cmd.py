"""``notebook-bcc status`` and ``notebook-bcc diagram``: read a run's state, draw a blueprint."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

INTEGRITY_KEY = "store_integrity"
"""The key ``status --json`` adds to the snapshot: ``{"altered": bool, "problem": null | {code,
message, details}}``, the verification ``trace --verify`` runs (exit 1 when altered)."""


def register(subparsers: Any) -> None:
    """Add the ``status`` and ``diagram`` commands."""
    status = subparsers.add_parser(
        "status", help="FSM state, run status, pending decisions, progress and metrics of a run"
    )
    status.add_argument("--state-db", type=Path, required=True, help="the run's SQLite file")
    status.add_argument("--workflow", help="the workflow id (default: the only or latest one)")
    status.add_argument(
        "--json",
        action="store_true",
        help="print the snapshot as JSON, with store_integrity: whether the store was altered",
    )
    status.set_defaults(handler=_status)
    diagram = subparsers.add_parser(
        "diagram", help="the blueprint's stage machine as Mermaid (fsm diagram: the 14-state FSM)"
    )
    diagram.add_argument("target", type=Path, help="a blueprint YAML file or a folder with one")
    diagram.add_argument("--current", help="mark this stage as current")
    diagram.set_defaults(handler=_diagram)
    register_cancel(subparsers)


def open_existing(path: Path) -> Any:
    """The store at ``path``; a missing file is bad input, never silently created."""
    from notebook_bcc.errors import NotebookBccError
    from notebook_bcc.store.sqlite import SqliteStore

    if path.is_dir():
        raise NotebookBccError(f"{path} is a directory, not a state database")
    if not path.is_file():
        raise NotebookBccError(f"{path}: no such state database")
    return SqliteStore(path, existing=True)


def altered(store: Any, path: Path, command: str) -> str | None:
    """The refusal to print when the store at ``path`` fails its verification (a row edited
    or deleted behind its back), else None: ``command`` will not write onto it, as resume
    will not act on it (a new row would chain to the forged ones and bury the evidence)."""
    from notebook_bcc.store.errors import ChainBrokenError

    try:
        store.verification()
    except ChainBrokenError as exc:
        return (
            f"error: {path} was altered after it was written, so {command} will not write to "
            f"it: {exc.message} (`notebook-bcc trace --verify --state-db {path}` checks it "
            "again)"
        )
    return None


def pick_workflow(store: Any, workflow_id: str | None) -> str:
    """The workflow to show: the one named, or the latest in the database."""
    from notebook_bcc.errors import NotebookBccError

    ids: list[str] = store.workflow_ids()
    if workflow_id is not None:
        if workflow_id not in ids:
            raise NotebookBccError(
                f"no workflow {workflow_id!r} (known: {', '.join(ids) or 'none'})"
            )
        return workflow_id
    if not ids:
        raise NotebookBccError("the state database holds no workflow")
    return ids[-1]


def _status(args: argparse.Namespace) -> int:
    from notebook_bcc.cli.next_steps import next_commands
    from notebook_bcc.cli.notebook_place import moved_notebook
    from notebook_bcc.cli.views import print_json, summary_lines
    from notebook_bcc.engine.offline import owner_alive
    from notebook_bcc.models.contract import ExecutionStatus
    from notebook_bcc.store.errors import ChainBrokenError

    store = open_existing(args.state_db)
    try:
        snapshot = store.load(pick_workflow(store, args.workflow))
        altered = None
        integrity: dict[str, Any] = {"altered": False, "problem": None}
        try:
            # what status shows is read from rows resume would refuse to act on when altered:
            # say so here, not first at the resume
            store.verification()
        except ChainBrokenError as exc:
            # details name the row as read: a forged column may hold what JSON cannot
            problem = json.loads(json.dumps(exc.to_json(), default=str))
            integrity = {"altered": True, "problem": problem}
            altered = (
                f"{args.state_db} was altered after it was written: {exc.message}; resume will "
                f"not act on it (`notebook-bcc trace --verify --state-db {args.state_db}` "
                "checks it again)"
            )
        others = len(store.workflow_ids()) - 1
        owner = store.owner(snapshot.workflow_id)
        in_doubt = [
            c
            for c in store.contracts(snapshot.workflow_id, statuses=[ExecutionStatus.RUNNING])
            if c.irreversible and c.action_type == "cell_execution"
        ]
    finally:
        store.close()
    if args.json:
        # the snapshot's own keys as they are, plus whether the store was altered after it
        # was written (the text's warning), for a script to read
        print_json({**snapshot.model_dump(mode="json", by_alias=True), INTEGRITY_KEY: integrity})
        if altered is not None:
            print(f"error: {altered}", file=sys.stderr)
            return 1
        return 0
    progress = snapshot.location.progress
    more = (
        f" (the latest of {others + 1} in this store; --workflow ID shows another)"
        if others and args.workflow is None
        else ""
    )
    print(f"workflow: {snapshot.workflow_id}{more}")
    print(f"FSM state: {snapshot.fsm.state.value} (last event {snapshot.fsm.last_transition})")
    print(
        f"run: {snapshot.run.status}" + (f" — {snapshot.run.reason}" if snapshot.run.reason else "")
    )
    if snapshot.run.status == "running" and not owner_alive(owner):
        gone = f"its process {owner} is gone" if owner else "no process owns it"
        print(f"  nothing drives this run now: {gone} (killed?)")
    if in_doubt and not owner_alive(owner):
        where = in_doubt[0].metadata.get("path") or in_doubt[0].execution_id
        print(
            f"  an irreversible action was running when it stopped ({where}): resume asks "
            "whether it happened; it is never run again unasked"
        )
    if altered is not None:
        print(f"  warning: {altered}")
    moved = moved_notebook(snapshot)
    if moved is not None:
        print(f"  warning: {moved}")
    current = progress.stages.current
    print(
        "stages: "
        + ", ".join(f"{s.id}[{s.completion_status}]" for s in progress.stages.completed)
        + (f" | current {current.id}" if current else "")
        + (
            " | remaining " + ", ".join(s.id for s in progress.stages.remaining)
            if progress.stages.remaining
            else ""
        )
    )
    for line in summary_lines(snapshot, None)[2:]:
        print(line)
    if altered is not None:
        return 1  # said above; resume would refuse, so no "next:" command
    if owner_alive(owner) and snapshot.run.status not in ("completed", "cancelled"):
        # its process goes on by itself; resume would be refused
        print(
            f"process {owner} is running it: it goes on by itself "
            f"(`notebook-bcc cancel --state-db {args.state_db}` stops it)"
        )
        return 0
    for line in next_commands(snapshot, args.state_db):
        print(line)
    return 0


def _diagram(args: argparse.Namespace) -> int:
    from notebook_bcc.blueprint.diagram import blueprint_mermaid
    from notebook_bcc.blueprint.issues import BlueprintError
    from notebook_bcc.blueprint.loader import load_blueprint_file

    path = args.target / "workflow.yaml" if args.target.is_dir() else args.target
    try:
        loaded = load_blueprint_file(path)
    except BlueprintError as exc:
        for issue in exc.issues:
            print(issue.format(str(path)), file=sys.stderr)
        return 2
    print(blueprint_mermaid(loaded, current=args.current), end="")
    return 0


def register_cancel(subparsers: Any) -> None:
    """Add the ``cancel`` command."""
    cancel = subparsers.add_parser(
        "cancel",
        help="record CANCEL: a running process stops at its next safe point (exit 4)",
    )
    cancel.add_argument("--state-db", type=Path, required=True, help="the run's SQLite file")
    cancel.add_argument("--workflow", help="the workflow id (default: the latest one)")
    cancel.set_defaults(handler=_cancel)


def _cancel(args: argparse.Namespace) -> int:
    from notebook_bcc.engine.offline import cancel_now, owner_alive

    store = open_existing(args.state_db)
    try:
        refusal = altered(store, args.state_db, "cancel")
        if refusal is not None:
            print(refusal, file=sys.stderr)
            return 1
        workflow_id = pick_workflow(store, args.workflow)
        owner = store.owner(workflow_id)
        if owner_alive(owner):
            store.enqueue_command(workflow_id, {"event": "CANCEL", "expected_version": 0})
            print(f"cancel queued for {workflow_id}: process {owner} stops at its next safe point")
            return 0
        current = store.load(workflow_id)
        if current.run.status == "cancelled" or current.fsm.state.value == "cancelled":
            print(
                f"error: workflow {workflow_id} is already cancelled (nothing to CANCEL)",
                file=sys.stderr,
            )
            return 2
        if current.fsm.state.value == "workflow_completed":
            print(f"error: workflow {workflow_id} is completed: nothing to cancel", file=sys.stderr)
            return 2
        snapshot = cancel_now(store, workflow_id)
    finally:
        store.close()
    print(
        f"workflow {workflow_id} cancelled (FSM {snapshot.fsm.state.value}); its record stays in "
        "the store, and running the same `notebook-bcc run` command again starts anew"
    )
    return 0
