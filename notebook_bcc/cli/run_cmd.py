"""``notebook-bcc run [TARGET]``: run a workflow headless, with a live view.

Planners (``--planner``): ``blueprint`` (default; TARGET is a blueprint YAML file or a folder
with workflow.yaml), ``http`` (a DSLC planning server at ``--planner-url``; no TARGET, give
``--problem`` and ``--file``), ``llm`` (seed 000's six agents asked through an
OpenAI-compatible chat API at ``--llm-base-url`` with ``--model``; no TARGET, give
``--problem`` and ``--file``; the API key comes from NOTEBOOK_BCC_LLM_API_KEY, else
OPENAI_API_KEY), ``replay`` (TARGET is a directory written by ``--record DIR``; its problem
and input files are used). ``--record DIR`` writes any planner's answers to
DIR/transcript.jsonl with copies of the inputs, for ``--planner replay`` later.

Papermill / ``jupyter execute`` habits: ``-p NAME VALUE``, ``-y YAML``, ``-f FILE`` (run
parameters), ``-k KERNEL``, ``--cwd DIR``, ``--start-timeout S``, ``--execution-timeout S``,
``--log-output``; reports for CI: ``--junit-xml FILE``, ``--report FILE.html|FILE.md``;
``--notebook`` and ``--report`` also take fsspec URLs (s3://, gs://, http://, file://, ...).

Exit codes: 0 completed, 1 the workflow ended in ``error`` or the run failed, 2 bad input,
3 waiting on a human decision (or paused), 4 cancelled, 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from notebook_bcc.cli import params, run_extras, run_planners
from notebook_bcc.cli.made_folders import MadeFolders
from notebook_bcc.cli.run_planners import bad


def register(subparsers: Any) -> None:
    """Add the ``run`` command."""
    parser = subparsers.add_parser(
        "run",
        help="run a workflow headless (a blueprint file or a folder holding workflow.yaml)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "target",
        type=Path,
        nargs="?",
        help="a blueprint YAML file or a folder with workflow.yaml (blueprint); "
        "a record directory (replay); none (http)",
    )
    parser.add_argument(
        "--notebook",
        help="the notebook to write, a path or an fsspec URL (default: out/NAME/NAME.ipynb)",
    )
    parser.add_argument(
        "--state-db", type=Path, help="the SQLite state file (default: beside the notebook)"
    )
    parser.add_argument("--problem", help="the problem statement (user_problem)")
    parser.add_argument(
        "--file", action="append", default=[], type=Path, help="an input file (repeatable)"
    )
    parser.add_argument(
        "--auto-confirm",
        action="store_true",
        help="approve updates, stage confirmations and irreversible actions as they arise",
    )
    parser.add_argument("--max-hops", type=int, help="cap on stage entries (default 10 x stages)")
    parser.add_argument(
        "--cell-timeout",
        "--execution-timeout",
        dest="cell_timeout",
        type=float,
        help="seconds per cell (default: none)",
    )
    parser.add_argument("--json", action="store_true", help="print WorkflowEvents as JSON lines")
    parser.add_argument(
        "--abandon",
        action="store_true",
        help="start anew even if the notebook's earlier run is unfinished (it is recorded as "
        "cancelled and kept in the store); without it such a run makes `run` exit 2",
    )
    run_planners.add_arguments(parser)
    params.add_arguments(parser)
    run_extras.add_arguments(parser)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    if args.max_hops is not None and args.max_hops < 1:
        return bad("--max-hops must be at least 1")
    if args.cell_timeout is not None and args.cell_timeout <= 0:
        return bad("--cell-timeout must be positive")
    misplaced = run_planners.misplaced_flags(args)
    if misplaced:
        return bad(misplaced)
    problem = run_extras.check(args)
    if problem:
        return bad(problem)
    given, raw = params.gather(args)
    made = run_planners.prepare(args)
    if isinstance(made, int):
        return made
    planner, name, problem, files = made
    parameters = run_planners.parameters(args, planner, given, raw)
    if isinstance(parameters, int):
        return parameters
    extras = run_extras.RunExtras(args, name=name, plan=run_planners.plan(planner))
    default = Path("out") / name / f"{name}.ipynb"
    # noted before anything is made: a run refused on its way leaves no empty folder behind
    folders = MadeFolders(output_folders(args, default))
    try:
        return _start(
            args,
            extras,
            default=default,
            planner=planner,
            problem=problem,
            files=files,
            parameters=parameters,
        )
    finally:
        if extras.engine is None:  # the engine never opened: the run was refused
            folders.remove_empty()


def output_folders(args: argparse.Namespace, default: Path) -> list[Path]:
    """The folders ``run`` may create before it starts: the local notebook's, the state
    database's and ``--record DIR`` (what a refused run must not leave behind empty)."""
    from notebook_bcc.cli.remote import is_url

    given = args.notebook
    local = default if given is None or is_url(given) else Path(given)
    folders = [local.parent, (args.state_db or local.with_name("state.sqlite")).parent]
    if args.record is not None:
        folders.append(args.record)
    return folders


def _start(
    args: argparse.Namespace,
    extras: run_extras.RunExtras,
    *,
    default: Path,
    planner: Any,
    problem: str | None,
    files: list[Path],
    parameters: dict[str, Any],
) -> int:
    """Make the run's outputs and run it (see :func:`_run`)."""
    notebook = extras.notebook_path(args.notebook, default)
    extras.check_report_target(notebook)
    if args.record is not None:
        from notebook_bcc.planners.registry import recording

        planner = recording(planner, args.record)
    # The engine's imports (nbclient, nbformat) are slow: only once the input is known good.
    import asyncio

    from notebook_bcc.cli.views import choose_view
    from notebook_bcc.engine.headless import HeadlessRun
    from notebook_bcc.engine.options import EngineOptions

    state_db = args.state_db or notebook.with_name("state.sqlite")
    refusal = _altered_store(state_db)
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 1
    view = choose_view(json_lines=args.json)
    run = HeadlessRun(
        abandon=args.abandon,
        planner=planner,
        notebook=notebook,
        state_db=state_db,
        problem=problem,
        files=files,
        options=EngineOptions(
            auto_confirm=args.auto_confirm,
            max_hops=args.max_hops,
            cell_timeout=args.cell_timeout,
            kernel_name=args.kernel or "python3",
        ),
        parameters=parameters,
        cwd=args.cwd.resolve() if args.cwd is not None else None,
        start_timeout=args.start_timeout,
        output_listener=extras.output_listener(view),
        max_tokens=args.max_tokens,
        max_planner_calls=args.max_planner_calls,
    )
    code = asyncio.run(drive(run, view, on_open=extras.attach))
    return extras.finish(code)


async def drive(run: Any, view: Any, *, on_open: Any = None) -> int:
    """Open, run and close a headless engine, with signals handled as D1 says.

    ``on_open(engine)`` is called once the engine exists, before it runs (reports, uploads).
    """
    import asyncio

    from notebook_bcc.engine.headless import close_headless, open_headless

    engine = await open_headless(run)
    if on_open is not None:
        on_open(engine)
    installed = install_interrupts(engine, view)
    quiet = planner_notices(view)
    view.start(engine)
    try:
        result = await engine.run()
    except asyncio.CancelledError:
        await mark_stopped(engine)
        view.stop(engine, None)
        await close_headless(engine)
        print_next(engine.snapshot, run.state_db, auto_confirm=run.options.auto_confirm)
        return 130
    except BaseException:
        await close_headless(engine)  # e.g. the store is locked: never orphan the kernel
        raise
    finally:
        remove_interrupts(installed)
        quiet()
    view.stop(engine, result)
    await close_headless(engine)
    print_next(engine.snapshot, run.state_db, auto_confirm=run.options.auto_confirm)
    return result.exit_code


def install_interrupts(engine: Any, view: Any) -> list[Any]:
    """Ctrl-C / SIGTERM for the running task (``run`` and ``resume`` alike, D1): the first
    stops at the next safe point, saying what it waits for; the second cancels the task now
    (the caller records the run ``interrupted``). Returns the signals installed."""
    import asyncio
    import signal

    from notebook_bcc.models.names import State

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    hits = 0

    def on_signal() -> None:
        nonlocal hits
        hits += 1
        if hits == 1:
            replaying = engine.recovery.replaying
            if replaying is not None:
                done, total = replaying
                view.notice(
                    f"interrupt: finishing the replay of the kernel's state ({done} of {total} "
                    "cells replayed), then stopping (again to stop now; the next resume "
                    "replays them again)"
                )
            elif engine.snapshot.fsm.state is State.ACTION_RUNNING:
                view.notice(
                    "interrupt: finishing the running cell, then stopping (again to stop now)"
                )
            else:
                view.notice(
                    "interrupt: stopping (no cell is running; a planner call in flight is "
                    "dropped and asked again on resume)"
                )
            engine.request_interrupt()
        elif task is not None:
            task.cancel()

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal)
            installed.append(sig)
        except (NotImplementedError, RuntimeError):
            pass
    return installed


def planner_notices(view: Any) -> Any:
    """Show the planner's retries (what failed, the attempt, the wait) and its warnings as
    notices while a run drives it; returns the function that stops it."""
    import logging

    class Notices(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING or getattr(record, "planner_retry", False):
                try:
                    text = record.getMessage()
                    # the planners' own messages may already start with the word
                    view.notice(text if text.startswith("planner ") else f"planner: {text}")
                except Exception:
                    self.handleError(record)

    logger = logging.getLogger("notebook_bcc.planners")
    handler = Notices(logging.INFO)
    level = logger.level
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    logger.addHandler(handler)

    def stop() -> None:
        logger.removeHandler(handler)
        logger.setLevel(level)

    return stop


def remove_interrupts(installed: list[Any]) -> None:
    """Undo :func:`install_interrupts`."""
    import asyncio

    loop = asyncio.get_running_loop()
    for sig in installed:
        loop.remove_signal_handler(sig)


async def mark_stopped(engine: Any) -> None:
    """A second Ctrl-C stopped the run at once: record it ``interrupted`` (D1), best effort.

    The cell that was running is settled by the next ``resume`` (an in-doubt or failed
    contract, D11); what matters here is that ``status`` and a re-run no longer see a run
    that claims to be running.
    """
    from notebook_bcc.engine.routing import with_run
    from notebook_bcc.models.contract import ExecutionStatus
    from notebook_bcc.store.sqlite import Commit

    reason = "stopped at once by a second interrupt; resume settles the cell that was running"
    try:
        stored = await engine.store.load(engine.snapshot.workflow_id)
        workflow_id = stored.workflow_id
        running = await engine.store.call(
            lambda s: s.contracts(workflow_id, statuses=[ExecutionStatus.RUNNING])
        )
        if any(c.irreversible and c.action_type == "cell_execution" for c in running):
            reason = (
                "stopped at once by a second interrupt while an irreversible action ran; "
                "resume asks whether it happened (it is never run again unasked)"
            )
        if stored.run.status in ("running", "paused"):
            await engine.store.commit(
                Commit(
                    snapshot=with_run(stored, "interrupted", reason),
                    expected_version=stored.version,
                )
            )
            engine.snapshot = await engine.store.load(stored.workflow_id)
    except Exception as exc:  # the store may be mid-write: the next resume still recovers
        import logging

        logging.getLogger(__name__).warning("notebook-bcc: could not record the stop: %s", exc)


def _altered_store(state_db: Path) -> str | None:
    """Refuse (the message) to add a run to an existing store that fails verification."""
    if not state_db.is_file():
        return None
    from notebook_bcc.cli.status_cmd import altered
    from notebook_bcc.store.sqlite import SqliteStore

    store = SqliteStore(state_db, existing=True)
    try:
        return altered(store, state_db, "run")
    finally:
        store.close()


def print_next(snapshot: Any, state_db: Any, *, auto_confirm: bool = False) -> None:
    """The commands that continue the run, on stderr (nothing when it is over)."""
    from notebook_bcc.cli.next_steps import next_commands

    for line in next_commands(snapshot, state_db, auto_confirm=auto_confirm):
        print(line, file=sys.stderr)
