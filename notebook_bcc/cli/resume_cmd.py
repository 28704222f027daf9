"""``notebook-bcc resume`` and ``notebook-bcc trace``: continue a stored run; read its record.

``resume`` rebuilds the notebook from the store, restores kernel state (D11), settles what the
previous process left running (an irreversible action in doubt is never re-run without a human),
applies a decision when asked and continues. Exit codes as ``run``. ``--junit-xml FILE`` and
``--report FILE.html|FILE.md`` as for ``run``, written when the resumed run stops and describing
the whole run (the behaviors before the resume too).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from notebook_bcc.cli import run_extras, run_planners


def register(subparsers: Any) -> None:
    """Add the ``resume`` and ``trace`` commands."""
    resume = subparsers.add_parser(
        "resume",
        help="continue a stored run (after a crash, a stop or a pending decision)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    resume.add_argument("--state-db", type=Path, required=True, help="the run's SQLite file")
    resume.add_argument("--workflow", help="the workflow id (default: the latest one)")
    answer = resume.add_mutually_exclusive_group()
    answer.add_argument("--approve", "--confirm", action="store_true", help="approve a decision")
    answer.add_argument("--reject", action="store_true", help="reject a decision")
    resume.add_argument("--decision", help="which pending decision (needed when several)")
    resume.add_argument("--auto-confirm", action="store_true", help="as for run (never in_doubt)")
    resume.add_argument(
        "--restart", action="store_true", help="from error: restart the workflow, not the behavior"
    )
    resume.add_argument("--cell-timeout", type=float, help="seconds per cell (default: none)")
    resume.add_argument(
        "--ask-before-rebuild",
        action="store_true",
        help="ask before replaying the completed cells into the new kernel (default: replay at "
        "once; a failed replay always asks)",
    )
    resume.add_argument("--json", action="store_true", help="print WorkflowEvents as JSON lines")
    run_planners.add_setting_arguments(resume)
    run_extras.add_report_arguments(
        resume.add_argument_group("reports for CI (as for run; they describe the whole run)")
    )
    resume.set_defaults(handler=_resume)
    trace = subparsers.add_parser(
        "trace", help="the full FSM history and contract trace of a run (--verify the hashes)"
    )
    trace.add_argument("--state-db", type=Path, required=True, help="the run's SQLite file")
    trace.add_argument("--workflow", help="the workflow id (default: the latest one)")
    trace.add_argument(
        "--verify",
        action="store_true",
        help="check every hash chain to its anchored last row, and contracts and cells "
        "against their change logs (exit 1 naming the first tampered table and row)",
    )
    trace.add_argument(
        "--anchor",
        type=Path,
        metavar="FILE",
        help="with --verify: also check the database against an anchor exported earlier",
    )
    trace.add_argument(
        "--export-anchor",
        type=Path,
        metavar="FILE",
        help="write the chain heads (rows, last seq, last hash of each chain) to FILE as JSON",
    )
    trace.add_argument(
        "--exchanges",
        action="store_true",
        help="what the AI planner (llm, http, replay) was asked and answered, per call: "
        "request summary, raw reply, tokens, latency",
    )
    trace.add_argument(
        "--behavior", metavar="ID", help="with --exchanges: only this behavior's exchanges"
    )
    trace.add_argument(
        "--json",
        action="store_true",
        help="print the rows as JSON lines (with --verify / --export-anchor: one JSON "
        "document with the outcome)",
    )
    trace.set_defaults(handler=_trace)


def _resume(args: argparse.Namespace) -> int:
    import asyncio

    from notebook_bcc.cli.next_steps import decision_lines, next_commands
    from notebook_bcc.cli.notebook_place import moved_notebook, renamed_notebook
    from notebook_bcc.cli.status_cmd import open_existing, pick_workflow
    from notebook_bcc.cli.views import choose_view
    from notebook_bcc.engine.engine import exit_code_for, owner_tag
    from notebook_bcc.engine.offline import owner_alive
    from notebook_bcc.engine.options import EngineOptions
    from notebook_bcc.store.errors import ChainBrokenError

    problem = run_extras.check_reports(args)
    if problem is not None:  # refused before anything is opened or resumed, as run does
        return run_planners.bad(problem)
    store = open_existing(args.state_db)
    try:
        # resume acts on what the store holds: cells it replays into a kernel, the code of an
        # irreversible action it runs. A row edited behind the store's back must stop it here,
        # before it runs or is saved again (a re-save would log the forged row as valid)
        try:
            store.verification()
        except ChainBrokenError as exc:
            print(
                f"error: {args.state_db} was altered after it was written, so resume will not "
                f"act on it: {exc.message} (`notebook-bcc trace --verify --state-db "
                f"{args.state_db}` checks it again)",
                file=sys.stderr,
            )
            return 1
        workflow_id = pick_workflow(store, args.workflow)
        stored = store.load(workflow_id)
        owner = store.owner(workflow_id)
        renamed = None if owner_alive(owner) else renamed_notebook(stored)
        if renamed is not None and stored.notebook_path is not None:
            # renamed in its folder since the run stopped: go on in it (as the server follows
            # a rename), never write the old name again beside it
            print(
                f"notebook: {stored.notebook_path} was renamed to {renamed.name}; "
                f"resume goes on in {renamed.name}",
                file=sys.stderr,
            )
            store.move_notebook(stored.notebook_path, str(renamed))
            stored = store.load(workflow_id)
    finally:
        store.close()
    pending = stored.run.pending
    if owner is not None and owner_alive(owner) and owner != owner_tag():
        print(_busy(workflow_id, owner, args.state_db), file=sys.stderr)
        return 2
    if args.restart and stored.fsm.state.value in ("workflow_completed", "cancelled"):
        print(
            f"error: workflow {workflow_id} is {stored.run.status}: nothing to restart; run the "
            "same `notebook-bcc run` command again to start anew",
            file=sys.stderr,
        )
        return 2
    # finished by its own record: a run killed just before its last commit (FSM completed,
    # run still running) is finished by the resume below, not called finished here
    ended = stored.run.status in ("completed", "cancelled")
    if ended and not (args.approve or args.reject):
        # nothing to go on with: no kernel, no replay of its cells (whose irreversible ones
        # would then be offered to run again), the record left as it is; only the notebook
        # is written from the store, in case the process died before its last write (D10)
        from notebook_bcc.engine.headless import write_stored_notebook

        asyncio.run(write_stored_notebook(args.state_db, workflow_id))
        print(
            f"workflow {workflow_id} is {stored.run.status}: nothing to resume (run the same "
            "`notebook-bcc run` command again to start anew)"
        )
        return exit_code_for(stored)
    moved = moved_notebook(stored)
    if moved is not None:
        print(f"warning: {moved}", file=sys.stderr)
    changes = run_planners.changed_settings(args, stored.planner.kind)
    if isinstance(changes, str):
        print(f"error: {changes}", file=sys.stderr)
        return 2
    answering = args.approve or args.reject or args.auto_confirm
    if pending and stored.run.status == "waiting" and not answering:
        # nothing to do but wait: say what is pending and how to answer, start no kernel
        for item in pending:
            for line in decision_lines(stored, item):
                print(line, file=sys.stderr)
        for line in next_commands(stored, args.state_db):
            print(line, file=sys.stderr)
        if changes:
            print(
                "the planner settings given were not changed: give them with the answer",
                file=sys.stderr,
            )
        return 3
    decision: str | None = None
    if args.approve or args.reject:
        if args.decision:
            if args.decision not in {p.id for p in pending}:
                print(f"error: no pending decision {args.decision!r}", file=sys.stderr)
                _list(pending)
                return 2
            decision = args.decision
        elif len(pending) == 1:
            decision = pending[0].id
        elif not pending:
            ended = stored.run.status in ("completed", "cancelled")
            print(
                "error: there is no pending decision to answer"
                + (
                    f": workflow {workflow_id} is {stored.run.status} (run the same "
                    "`notebook-bcc run` command again to start anew)"
                    if ended
                    else f" (the run is {stored.run.status}: `notebook-bcc resume --state-db "
                    f"{args.state_db}` continues it)"
                ),
                file=sys.stderr,
            )
            return 2
        else:
            print(
                "error: several decisions are pending; choose one with --decision", file=sys.stderr
            )
            _list(pending)
            return 2
    extras = run_extras.RunExtras(args, name=workflow_id, plan=None)
    # a remote --report whose filesystem is missing stops here, before the run is claimed
    extras.check_report_target(Path(stored.notebook_path or args.state_db.with_suffix(".ipynb")))
    claimer = open_existing(args.state_db)
    try:  # the check above, made again and kept in one transaction (two resumes at once)
        other = claimer.claim_owner(workflow_id, owner_tag(), owner_alive)
    finally:
        claimer.close()
    if other is not None:
        print(_busy(workflow_id, other, args.state_db), file=sys.stderr)
        return 2
    options = EngineOptions(
        auto_confirm=args.auto_confirm,
        cell_timeout=args.cell_timeout,
        ask_before_rebuild=args.ask_before_rebuild,
    )
    view = choose_view(json_lines=args.json)
    answer = "approve" if args.approve else "reject"
    code = asyncio.run(
        _drive(
            args.state_db,
            workflow_id,
            options=options,
            view=view,
            decision=decision,
            answer=answer,
            restart=args.restart,
            changes=changes,
            planner=stored.planner.model_dump(mode="json"),
            extras=extras,
        )
    )
    return extras.finish(code)


async def record_settings(engine: Any, changes: dict[str, Any]) -> None:
    """Store the planner settings ``resume`` changed, with a trace record of old -> new."""
    import time

    from notebook_bcc.models.records import TraceRecord

    snapshot = engine.snapshot
    before = snapshot.planner.settings
    planner = snapshot.planner.model_copy(update={"settings": {**before, **changes}})
    await engine.commit(
        snapshot.model_copy(update={"planner": planner}),
        records=[
            TraceRecord(
                actor="human",
                action="planner_settings",
                timestamp=time.time(),
                result="changed by resume",
                metadata={key: [before.get(key), value] for key, value in changes.items()},
            )
        ],
    )
    names = ", ".join(f"{key} = {value}" for key, value in changes.items())
    print(f"planner settings changed: {names}", file=sys.stderr)


def _busy(workflow_id: str, owner: str, state_db: Path) -> str:
    return (
        f"error: workflow {workflow_id} is being run by process {owner}: wait for it to "
        f"stop, or `notebook-bcc cancel --state-db {state_db}` it"
    )


def _list(pending: Any) -> None:
    for item in pending:
        print(f"  {item.id} ({item.kind}): {item.message}", file=sys.stderr)


async def _drive(
    state_db: Path,
    workflow_id: str,
    *,
    options: Any,
    view: Any,
    decision: str | None,
    answer: Any,
    restart: bool,
    changes: dict[str, Any],
    planner: dict[str, Any],
    extras: run_extras.RunExtras,
) -> int:
    import asyncio

    from notebook_bcc.cli.run_cmd import (
        install_interrupts,
        mark_stopped,
        planner_notices,
        print_next,
        remove_interrupts,
    )
    from notebook_bcc.engine.engine import exit_code_for
    from notebook_bcc.engine.headless import close_headless, open_stored, planner_for
    from notebook_bcc.errors import NotebookBccError

    changed = None  # the stored planner, with the settings this resume changes
    if changes:
        changed = planner_for({**planner, "settings": {**planner["settings"], **changes}})
    engine = await open_stored(state_db, workflow_id=workflow_id, options=options, planner=changed)
    try:
        await extras.attach_resumed(engine)  # before anything the resume does is published
    except BaseException:
        await close_headless(engine)  # e.g. no filesystem for a remote --report
        raise
    if changes:
        await record_settings(engine, changes)
    installed = install_interrupts(engine, view)
    quiet = planner_notices(view)
    view.start(engine)
    result = None
    stopped_now = False
    try:
        await engine.recovery.prepare(restart=restart)
        pending = {p.id: p for p in engine.snapshot.run.pending}
        if (
            decision is not None
            and decision not in pending
            and decision.startswith("kernel_rebuild-")
        ):
            decision = None  # the kernel was restored as this process started (D11)
        try:
            if decision is not None:
                await engine.decide(decision, answer, actor="human")
            # --auto-confirm answers what was pending already, as it answers what arises
            await engine.answer_delegated()
        except NotebookBccError as exc:
            print(f"error: {exc.message}", file=sys.stderr)
            _list(engine.snapshot.run.pending)
            return exit_code_for(engine.snapshot)
        run = engine.snapshot.run
        over = run.status in ("failed", "cancelled", "completed")  # e.g. a rejection failed it
        if not over and (run.status != "waiting" or not run.pending):
            result = await engine.run()
    except asyncio.CancelledError:  # a second Ctrl-C: stopped at once
        await mark_stopped(engine)
        stopped_now = True
    finally:
        remove_interrupts(installed)
        quiet()
        view.stop(engine, result)
        await close_headless(engine)
    print_next(engine.snapshot, state_db, auto_confirm=options.auto_confirm)
    if stopped_now:
        return 130
    return result.exit_code if result is not None else exit_code_for(engine.snapshot)


def _trace(args: argparse.Namespace) -> int:
    import json
    from datetime import datetime, timezone

    from notebook_bcc.cli.status_cmd import open_existing, pick_workflow
    from notebook_bcc.cli.trace_verify import verify_store

    store = open_existing(args.state_db)
    try:
        if args.verify or args.export_anchor is not None or args.anchor is not None:
            return verify_store(store, args)
        workflow_id = pick_workflow(store, args.workflow)
        if args.exchanges or args.behavior is not None:
            from notebook_bcc.cli.exchanges_view import print_exchanges

            return print_exchanges(store, workflow_id, behavior=args.behavior, as_json=args.json)
        history = store.history(workflow_id)
        trace = store.trace(workflow_id)
    finally:
        store.close()
    if args.json:
        for entry in history:
            print(json.dumps({"table": "history", **entry.model_dump(mode="json", by_alias=True)}))
        for record in trace:
            print(json.dumps({"table": "trace", **record.model_dump(mode="json")}))
        return 0
    print(f"FSM history of {workflow_id} ({len(history)} transitions):")
    for entry in history:
        print(
            f"  {entry.timestamp}  {entry.from_state.value:>24} --{entry.event.value}--> "
            f"{entry.to.value}  [{entry.actor}]"
        )
    print(f"trace ({len(trace)} rows):")
    for record in trace:
        # one line per row, times as the history's (ISO, UTC); --json keeps the raw values
        extra = _readable_detail(record)
        when = datetime.fromtimestamp(record.timestamp, tz=timezone.utc)
        stamp = when.isoformat(timespec="microseconds").replace("+00:00", "Z")
        print(f"  {stamp}  {record.actor:>12}  {record.action}{extra}")
    return 0


def _readable_detail(record: Any) -> str:
    """What a trace row says, on its line: its result, a warning's message, a setting's old
    and new values (the readable trace printed a bare 'engine warning')."""
    parts = [str(record.result)] if record.result else []
    metadata = record.metadata or {}
    if record.action == "warning" and metadata.get("message"):
        parts.append(str(metadata["message"]))
    elif record.action == "planner_settings":
        parts += [
            f"{key}: {pair[0]!r} -> {pair[1]!r}"
            for key, pair in metadata.items()
            if isinstance(pair, list) and len(pair) == 2
        ]
    text = "; ".join(parts)
    return " " + " ⏎ ".join(text.splitlines()) if text else ""
