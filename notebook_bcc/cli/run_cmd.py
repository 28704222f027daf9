"""``notebook-bcc run TARGET``: run a workflow headless, with a live view.

Exit codes: 0 completed, 1 the workflow ended in ``error`` or the run failed, 2 bad input,
3 waiting on a human decision (or paused), 4 cancelled, 130 interrupted.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

EXIT_BAD_INPUT = 2


def register(subparsers: Any) -> None:
    """Add the ``run`` command."""
    parser = subparsers.add_parser(
        "run",
        help="run a workflow headless (a blueprint file or a folder holding workflow.yaml)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "target", type=Path, help="a blueprint YAML file, or a folder with workflow.yaml"
    )
    parser.add_argument(
        "--notebook", type=Path, help="the notebook to write (default: out/NAME/NAME.ipynb)"
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
    parser.add_argument("--cell-timeout", type=float, help="seconds per cell (default: none)")
    parser.add_argument("--json", action="store_true", help="print WorkflowEvents as JSON lines")
    parser.set_defaults(handler=_run)


def _blueprint_path(target: Path) -> Path:
    from notebook_bcc.errors import NotebookBccError

    path = target / "workflow.yaml" if target.is_dir() else target
    if not path.exists():
        raise NotebookBccError(
            f"{target}: no such blueprint (expected a YAML file or a folder with workflow.yaml)"
        )
    return path


def _run(args: argparse.Namespace) -> int:
    import asyncio
    import sys

    from notebook_bcc.blueprint.issues import BlueprintError
    from notebook_bcc.blueprint.loader import load_blueprint_file
    from notebook_bcc.cli.views import choose_view
    from notebook_bcc.engine.headless import HeadlessRun
    from notebook_bcc.engine.options import EngineOptions
    from notebook_bcc.planners.blueprint import BlueprintPlanner

    if args.max_hops is not None and args.max_hops < 1:
        print("error: --max-hops must be at least 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.cell_timeout is not None and args.cell_timeout <= 0:
        print("error: --cell-timeout must be positive", file=sys.stderr)
        return EXIT_BAD_INPUT
    path = _blueprint_path(args.target)
    try:
        loaded = load_blueprint_file(path)
        planner = BlueprintPlanner(loaded)
    except BlueprintError as exc:
        for issue in exc.issues:
            print(issue.format(str(path)), file=sys.stderr)
        return EXIT_BAD_INPUT
    name = loaded.blueprint.name or path.stem
    notebook = args.notebook or Path("out") / name / f"{name}.ipynb"
    state_db = args.state_db or notebook.with_name("state.sqlite")
    run = HeadlessRun(
        planner=planner,
        notebook=notebook,
        state_db=state_db,
        problem=args.problem or loaded.blueprint.name,
        files=[*planner.files(), *(p.resolve() for p in args.file)],
        options=EngineOptions(
            auto_confirm=args.auto_confirm,
            max_hops=args.max_hops,
            cell_timeout=args.cell_timeout,
        ),
    )
    view = choose_view(json_lines=args.json)
    return asyncio.run(drive(run, view))


async def drive(run: Any, view: Any) -> int:
    """Open, run and close a headless engine, with signals handled as D1 says."""
    import asyncio
    import signal

    from notebook_bcc.engine.headless import close_headless, open_headless

    engine = await open_headless(run)
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    hits = 0

    def on_signal() -> None:
        nonlocal hits
        hits += 1
        if hits == 1:
            view.notice("interrupt: finishing the running cell, then stopping (again to stop now)")
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
    view.start(engine)
    try:
        result = await engine.run()
    except asyncio.CancelledError:
        view.stop(engine, None)
        await close_headless(engine)
        return 130
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
    view.stop(engine, result)
    await close_headless(engine)
    return result.exit_code
