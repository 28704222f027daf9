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
from pathlib import Path
from typing import Any

from notebook_bcc.cli import params, run_extras

EXIT_BAD_INPUT = 2

TRANSPORT_FLAGS: dict[str, str] = {
    "planner_connect_timeout": "connect_timeout",
    "planner_idle_timeout": "idle_timeout",
    "planner_timeout": "total_timeout",
    "planner_retries": "max_retries",
    "planner_backoff": "backoff_base",
    "planner_backoff_cap": "backoff_cap",
}
"""``--planner-*`` flags the http and llm planners share -> their settings keys."""

HTTP_FLAGS: dict[str, str] = {
    "planner_url": "url",
    "planner_state_case": "state_case",
    "planner_route": "route",
    "planner_token_env": "token_env",
}
"""Flags of the http planner only -> its settings keys."""

LLM_FLAGS: dict[str, str] = {
    "llm_base_url": "base_url",
    "model": "model",
    "llm_templates": "templates",
    "llm_stream": "stream",
    "llm_max_parse_retries": "max_parse_retries",
    "llm_temperature": "temperature",
    "llm_max_tokens": "max_tokens",
    "llm_api_key_env": "api_key_env",
}
"""Flags of the llm planner only -> its settings keys."""

Prepared = tuple[Any, str, str | None, list[Path]]
"""A planner ready to run: (planner, run name, problem, input files)."""


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
    _planner_arguments(parser)
    params.add_arguments(parser)
    run_extras.add_arguments(parser)
    parser.set_defaults(handler=_run)


def _planner_arguments(parser: Any) -> None:
    """``--planner`` and its options (timeouts and retries, ``--record``, the llm flags)."""
    group = parser.add_argument_group(
        "planner",
        "the --planner-*timeout, --planner-retries and --planner-backoff* flags apply to the "
        "http and llm planners; the other --planner-* flags to http only",
    )
    group.add_argument(
        "--planner",
        choices=("blueprint", "http", "llm", "replay"),
        default="blueprint",
        help="where decisions come from (default: blueprint)",
    )
    group.add_argument("--planner-url", help="base URL of the DSLC planning server (http)")
    group.add_argument(
        "--record", type=Path, metavar="DIR", help="record the planner's answers and inputs to DIR"
    )
    group.add_argument(
        "--planner-connect-timeout", type=float, metavar="S", help="seconds to connect (10)"
    )
    group.add_argument(
        "--planner-idle-timeout",
        type=float,
        metavar="S",
        help="seconds a response may stay silent, before or between chunks (300)",
    )
    group.add_argument(
        "--planner-timeout", type=float, metavar="S", help="seconds for one whole attempt (900)"
    )
    group.add_argument(
        "--planner-retries", type=int, metavar="N", help="retries after a failed attempt (3)"
    )
    group.add_argument(
        "--planner-backoff", type=float, metavar="S", help="first backoff delay base (0.5)"
    )
    group.add_argument(
        "--planner-backoff-cap", type=float, metavar="S", help="longest backoff delay (30)"
    )
    group.add_argument(
        "--planner-state-case",
        choices=("upper", "lower"),
        help="case of FSM state names sent to the server (upper)",
    )
    group.add_argument(
        "--planner-route",
        choices=("server", "plan"),
        help="at stage_completed ask the server (server, default) or follow the plan order",
    )
    group.add_argument(
        "--planner-token-env",
        metavar="VAR",
        help="environment variable holding a bearer token for the server",
    )
    group.add_argument(
        "--no-planner-fallback",
        action="store_true",
        help="fail instead of using the seed 003 fallback decision when the server is down",
    )
    llm = parser.add_argument_group(
        "llm planner",
        "seed 000's agents through an OpenAI-compatible chat API; the key is read from "
        "NOTEBOOK_BCC_LLM_API_KEY, else OPENAI_API_KEY (or --llm-api-key-env VAR) and is "
        "never stored; --planner-* timeouts, retries and backoff apply too",
    )
    llm.add_argument(
        "--llm-base-url",
        metavar="URL",
        help="the API root with its version, e.g. http://127.0.0.1:11434/v1 "
        "(requests go to URL/chat/completions)",
    )
    llm.add_argument("--model", metavar="NAME", help="the model name the API serves")
    llm.add_argument(
        "--llm-templates",
        type=Path,
        metavar="DIR",
        help="a folder of <agent-id>.md (and feedback.md) prompt templates replacing the "
        "shipped ones",
    )
    llm.add_argument(
        "--llm-stream",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="stream answers as server-sent events (default: on)",
    )
    llm.add_argument(
        "--llm-max-parse-retries",
        type=int,
        metavar="N",
        help="times an unusable reply is sent back with its error before the run fails (2)",
    )
    llm.add_argument("--llm-temperature", type=float, metavar="T", help="sampling temperature")
    llm.add_argument("--llm-max-tokens", type=int, metavar="N", help="cap on reply tokens")
    llm.add_argument(
        "--llm-api-key-env",
        metavar="VAR",
        help="environment variable holding the API key (instead of the default ones)",
    )


def _given(args: argparse.Namespace, flags: dict[str, str]) -> dict[str, Any]:
    """The settings the user gave among ``flags`` (flag attribute -> settings key)."""
    return {
        key: getattr(args, flag) for flag, key in flags.items() if getattr(args, flag) is not None
    }


def _http_settings(args: argparse.Namespace) -> Any:
    from notebook_bcc.planners.http import HttpPlannerSettings

    options: dict[str, Any] = {**_given(args, TRANSPORT_FLAGS), **_given(args, HTTP_FLAGS)}
    if args.no_planner_fallback:
        options["fallback"] = False
    return HttpPlannerSettings(**options)


def _llm_settings(args: argparse.Namespace) -> Any:
    from notebook_bcc.planners.llm import LlmSettings

    options: dict[str, Any] = {**_given(args, TRANSPORT_FLAGS), **_given(args, LLM_FLAGS)}
    if "templates" in options:
        options["templates"] = str(Path(options["templates"]).resolve())
    return LlmSettings(**options)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _misplaced_flags(args: argparse.Namespace) -> str | None:
    """Why planner flags do not apply to the chosen planner, or None."""
    http_only = [_flag(n) for n in HTTP_FLAGS if getattr(args, n) is not None]
    if args.no_planner_fallback:
        http_only.append("--no-planner-fallback")
    if args.planner != "http" and http_only:
        return f"{', '.join(http_only)} only apply to --planner http"
    llm_only = [_flag(n) for n in LLM_FLAGS if getattr(args, n) is not None]
    if args.planner != "llm" and llm_only:
        return f"{', '.join(llm_only)} only apply to --planner llm"
    shared = [_flag(n) for n in TRANSPORT_FLAGS if getattr(args, n) is not None]
    if args.planner not in ("http", "llm") and shared:
        return f"{', '.join(shared)} only apply to --planner http or llm"
    return None


def _blueprint_path(target: Path) -> Path:
    from notebook_bcc.errors import NotebookBccError

    path = target / "workflow.yaml" if target.is_dir() else target
    if not path.exists():
        raise NotebookBccError(
            f"{target}: no such blueprint (expected a YAML file or a folder with workflow.yaml)"
        )
    return path


def _bad(message: str) -> int:
    import sys

    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _run(args: argparse.Namespace) -> int:
    if args.max_hops is not None and args.max_hops < 1:
        return _bad("--max-hops must be at least 1")
    if args.cell_timeout is not None and args.cell_timeout <= 0:
        return _bad("--cell-timeout must be positive")
    misplaced = _misplaced_flags(args)
    if misplaced:
        return _bad(misplaced)
    problem = run_extras.check(args)
    if problem:
        return _bad(problem)
    given, raw = params.gather(args)
    chosen = {
        "blueprint": _blueprint_run,
        "http": _http_run,
        "llm": _llm_run,
        "replay": _replay_run,
    }
    made = chosen[args.planner](args)
    if isinstance(made, int):
        return made
    planner, name, problem, files = made
    parameters = _parameters(args, planner, given, raw)
    if isinstance(parameters, int):
        return parameters
    extras = run_extras.RunExtras(args, name=name, plan=_plan(planner))
    notebook = extras.notebook_path(args.notebook, Path("out") / name / f"{name}.ipynb")
    extras.check_report_target(notebook)
    if args.record is not None:
        from notebook_bcc.planners.recording import RecordingPlanner

        planner = RecordingPlanner(planner, args.record)
    # The engine's imports (nbclient, nbformat) are slow: only once the input is known good.
    import asyncio

    from notebook_bcc.cli.views import choose_view
    from notebook_bcc.engine.headless import HeadlessRun
    from notebook_bcc.engine.options import EngineOptions

    state_db = args.state_db or notebook.with_name("state.sqlite")
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


def _parameters(
    args: argparse.Namespace, planner: Any, given: dict[str, Any], raw: dict[str, str]
) -> dict[str, Any] | int:
    """The run's parameters: checked against a blueprint's ``parameters:``; a replay's own."""
    from notebook_bcc.blueprint.parameters import resolve

    if args.planner == "replay":
        if given:
            return _bad("--planner replay uses the recorded parameters; drop -p/-y/-f")
        return dict(planner.parameters)
    loaded = getattr(planner, "loaded", None)
    declared = getattr(getattr(loaded, "document", None), "parameters", None)
    return resolve(given, declared, raw=raw)


def _plan(planner: Any) -> Any:
    """A blueprint's (step, behavior) plan per stage, for the reports (None otherwise)."""
    from notebook_bcc.cli.ledger import blueprint_plan

    loaded = getattr(planner, "loaded", None)
    return blueprint_plan(loaded.document) if loaded is not None else None


def _blueprint_run(args: argparse.Namespace) -> Prepared | int:
    import sys

    from notebook_bcc.blueprint.issues import BlueprintError
    from notebook_bcc.blueprint.loader import load_blueprint_file
    from notebook_bcc.planners.blueprint import BlueprintPlanner

    if args.target is None:
        return _bad("TARGET (a blueprint) is required with --planner blueprint")
    path = _blueprint_path(args.target)
    try:
        loaded = load_blueprint_file(path)
        planner = BlueprintPlanner(loaded)
    except BlueprintError as exc:
        for issue in exc.issues:
            print(issue.format(str(path)), file=sys.stderr)
        return EXIT_BAD_INPUT
    name = loaded.blueprint.name or path.stem
    files = [*planner.files(), *(p.resolve() for p in args.file)]
    return planner, name, args.problem or loaded.blueprint.name, files


def _http_run(args: argparse.Namespace) -> Prepared | int:
    from notebook_bcc.planners.http import HttpPlanner

    if args.target is not None:
        return _bad("--planner http takes no TARGET (give --problem and --file)")
    if not args.planner_url:
        return _bad("--planner http needs --planner-url URL")
    if not args.problem:
        return _bad("--planner http needs --problem TEXT")
    if args.planner_retries is not None and args.planner_retries < 0:
        return _bad("--planner-retries must be 0 or more")
    planner = HttpPlanner(_http_settings(args))
    return planner, "dslc", args.problem, [p.resolve() for p in args.file]


def _llm_run(args: argparse.Namespace) -> Prepared | int:
    from notebook_bcc.planners.llm import LlmPlanner

    if args.target is not None:
        return _bad("--planner llm takes no TARGET (give --problem and --file)")
    if not args.llm_base_url:
        return _bad("--planner llm needs --llm-base-url URL (e.g. http://127.0.0.1:11434/v1)")
    if not args.model:
        return _bad("--planner llm needs --model NAME")
    if not args.problem:
        return _bad("--planner llm needs --problem TEXT")
    if args.planner_retries is not None and args.planner_retries < 0:
        return _bad("--planner-retries must be 0 or more")
    planner = LlmPlanner(_llm_settings(args))
    return planner, "llm", args.problem, [p.resolve() for p in args.file]


def _replay_run(args: argparse.Namespace) -> Prepared | int:
    from notebook_bcc.planners.replay import ReplayPlanner

    if args.target is None:
        return _bad("TARGET (a directory written by --record) is required with --planner replay")
    if args.problem or args.file:
        return _bad("--planner replay uses the recorded problem and files; drop --problem/--file")
    if not args.target.is_dir():
        return _bad(f"{args.target}: not a record directory")
    planner = ReplayPlanner(args.target)
    name = args.target.resolve().name or "replay"
    return planner, name, planner.problem, planner.files()


async def drive(run: Any, view: Any, *, on_open: Any = None) -> int:
    """Open, run and close a headless engine, with signals handled as D1 says.

    ``on_open(engine)`` is called once the engine exists, before it runs (reports, uploads).
    """
    import asyncio
    import signal

    from notebook_bcc.engine.headless import close_headless, open_headless

    engine = await open_headless(run)
    if on_open is not None:
        on_open(engine)
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
        await mark_stopped(engine)
        view.stop(engine, None)
        await close_headless(engine)
        print_next(engine.snapshot, run.state_db)
        return 130
    except BaseException:
        await close_headless(engine)  # e.g. the store is locked: never orphan the kernel
        raise
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
    view.stop(engine, result)
    await close_headless(engine)
    print_next(engine.snapshot, run.state_db)
    return result.exit_code


async def mark_stopped(engine: Any) -> None:
    """A second Ctrl-C stopped the run at once: record it ``interrupted`` (D1), best effort.

    The cell that was running is settled by the next ``resume`` (an in-doubt or failed
    contract, D11); what matters here is that ``status`` and a re-run no longer see a run
    that claims to be running.
    """
    from notebook_bcc.engine.routing import with_run
    from notebook_bcc.store.sqlite import Commit

    reason = "stopped at once by a second interrupt; resume settles the cell that was running"
    try:
        stored = await engine.store.load(engine.snapshot.workflow_id)
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


def print_next(snapshot: Any, state_db: Any) -> None:
    """The commands that continue the run, on stderr (nothing when it is over)."""
    import sys

    from notebook_bcc.cli.next_steps import next_commands

    for line in next_commands(snapshot, state_db):
        print(line, file=sys.stderr)
