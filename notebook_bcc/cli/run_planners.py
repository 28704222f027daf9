"""How ``notebook-bcc run`` turns its planner flags into a planner (``--planner KIND``).

The flags are translated into the planner's settings keys and the planner is built by the
planner registry (:mod:`notebook_bcc.planners.registry`), the same one the server and
``resume`` use; what a planner can do beyond the protocol (a blueprint's declared parameters
and plan, a recording's problem and parameters) is asked through its capability protocols.

The planner modules (pydantic, httpx) are imported when a run is prepared, not when the CLI
builds its parser: ``notebook-bcc --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

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


def add_arguments(parser: Any) -> None:
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
    group.add_argument(
        "--record", type=Path, metavar="DIR", help="record the planner's answers and inputs to DIR"
    )
    add_setting_arguments(parser, group)


def add_setting_arguments(parser: Any, group: Any | None = None) -> None:
    """The flags that become a planner's stored settings (``run``; ``resume`` changes them)."""
    if group is None:
        group = parser.add_argument_group(
            "planner settings",
            "change the stored settings of the workflow's http or llm planner from now on "
            "(a server that moved, a timeout too short, another model); the change is "
            "recorded in the trace",
        )
    group.add_argument("--planner-url", help="base URL of the DSLC planning server (http)")
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


def _http_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The http planner's settings from its flags and the shared transport flags."""
    options: dict[str, Any] = {**_given(args, TRANSPORT_FLAGS), **_given(args, HTTP_FLAGS)}
    if args.no_planner_fallback:
        options["fallback"] = False
    return options


def _llm_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The llm planner's settings from its flags and the shared transport flags."""
    options: dict[str, Any] = {**_given(args, TRANSPORT_FLAGS), **_given(args, LLM_FLAGS)}
    if "templates" in options:
        options["templates"] = str(Path(options["templates"]).resolve())
    return options


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _apply(flags: list[str], to: str) -> str:
    verb = "applies" if len(flags) == 1 else "apply"
    return f"{', '.join(flags)} {verb} only to --planner {to}"


def misplaced_flags(args: argparse.Namespace, kind: str | None = None) -> str | None:
    """Why planner flags do not apply to the planner (``kind``, else ``--planner``), or None."""
    kind = kind or args.planner
    http_only = [_flag(n) for n in HTTP_FLAGS if getattr(args, n) is not None]
    if args.no_planner_fallback:
        http_only.append("--no-planner-fallback")
    if kind != "http" and http_only:
        return _apply(http_only, "http")
    llm_only = [_flag(n) for n in LLM_FLAGS if getattr(args, n) is not None]
    if kind != "llm" and llm_only:
        return _apply(llm_only, "llm")
    shared = [_flag(n) for n in TRANSPORT_FLAGS if getattr(args, n) is not None]
    if kind not in ("http", "llm") and shared:
        return _apply(shared, "http or llm")
    return None


def changed_settings(args: argparse.Namespace, kind: str) -> dict[str, Any] | str:
    """The settings ``resume``'s flags change for a workflow planned by ``kind``, or why
    they do not apply to it."""
    wrong = misplaced_flags(args, kind)
    if wrong is not None:
        return f"{wrong} (this workflow's planner is {kind})"
    if args.planner_retries is not None and args.planner_retries < 0:
        return "--planner-retries must be 0 or more"
    if kind == "http":
        return _http_settings(args)
    if kind == "llm":
        return _llm_settings(args)
    return {}


def _blueprint_path(target: Path) -> Path:
    from notebook_bcc.errors import NotebookBccError

    path = target / "workflow.yaml" if target.is_dir() else target
    if not path.exists():
        raise NotebookBccError(
            f"{target}: no such blueprint (expected a YAML file or a folder with workflow.yaml)"
        )
    return path


def bad(message: str) -> int:
    """Print ``message`` as a bad-input error; the exit code for it (2)."""
    import sys

    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def parameters(
    args: argparse.Namespace, planner: Any, given: dict[str, Any], raw: dict[str, str]
) -> dict[str, Any] | int:
    """The run's parameters: checked against a blueprint's ``parameters:``; a replay's own."""
    from notebook_bcc.planners.capabilities import RecordedRun, parameters_for

    if isinstance(planner, RecordedRun) and given:
        return bad("--planner replay uses the recorded parameters; drop -p/-y/-f")
    return parameters_for(planner, given, raw=raw)


def plan(planner: Any) -> Any:
    """A blueprint's (step, behavior) plan per stage, for the reports (None otherwise)."""
    from notebook_bcc.cli.ledger import blueprint_plan
    from notebook_bcc.planners.capabilities import BlueprintBacked

    return blueprint_plan(planner.loaded.document) if isinstance(planner, BlueprintBacked) else None


def _blueprint_run(args: argparse.Namespace) -> Prepared | int:
    import sys

    from notebook_bcc.blueprint.issues import BlueprintError
    from notebook_bcc.blueprint.loader import load_blueprint_file
    from notebook_bcc.planners.registry import REGISTRY

    if args.target is None:
        return bad("TARGET (a blueprint) is required with --planner blueprint")
    path = _blueprint_path(args.target)
    try:
        loaded = load_blueprint_file(path)
        planner = REGISTRY.build("blueprint", {}, blueprint=loaded)
    except BlueprintError as exc:
        for issue in exc.issues:
            print(issue.format(str(path)), file=sys.stderr)
        return EXIT_BAD_INPUT
    name = loaded.blueprint.name or path.stem
    files = [*loaded.resolved_files(), *(p.resolve() for p in args.file)]
    return planner, name, args.problem or loaded.blueprint.name, files


def _remote_run(
    args: argparse.Namespace,
    kind: str,
    required: tuple[tuple[str, str], ...],
    settings: dict[str, Any],
    name: str,
) -> Prepared | int:
    """An http or llm planner: no TARGET, the ``required`` flags given, built by the registry."""
    from notebook_bcc.planners.registry import REGISTRY

    if args.target is not None:
        return bad(f"--planner {kind} takes no TARGET (give --problem and --file)")
    for attribute, message in required:
        if not getattr(args, attribute):
            return bad(message)
    if args.planner_retries is not None and args.planner_retries < 0:
        return bad("--planner-retries must be 0 or more")
    planner = REGISTRY.build(kind, settings)
    for attribute in ("planner_token_env", "llm_api_key_env"):
        variable = getattr(args, attribute, None)
        if variable and variable not in os.environ:
            # found out before a kernel starts, not at the first planner call
            return bad(
                f"{_flag(attribute)} {variable}: that environment variable is not set "
                "(export it, then run again)"
            )
    return planner, name, args.problem, [p.resolve() for p in args.file]


def _http_run(args: argparse.Namespace) -> Prepared | int:
    required = (
        ("planner_url", "--planner http needs --planner-url URL"),
        ("problem", "--planner http needs --problem TEXT"),
    )
    return _remote_run(args, "http", required, _http_settings(args), "dslc")


def _llm_run(args: argparse.Namespace) -> Prepared | int:
    required = (
        ("llm_base_url", "--planner llm needs --llm-base-url URL (e.g. http://127.0.0.1:11434/v1)"),
        ("model", "--planner llm needs --model NAME"),
        ("problem", "--planner llm needs --problem TEXT"),
    )
    return _remote_run(args, "llm", required, _llm_settings(args), "llm")


def _replay_run(args: argparse.Namespace) -> Prepared | int:
    from notebook_bcc.planners.registry import REGISTRY

    if args.target is None:
        return bad("TARGET (a directory written by --record) is required with --planner replay")
    if args.problem or args.file:
        return bad("--planner replay uses the recorded problem and files; drop --problem/--file")
    if not args.target.is_dir():
        return bad(f"{args.target}: not a record directory")
    planner = REGISTRY.build("replay", {"transcript": str(args.target)})
    name = args.target.resolve().name or "replay"
    from notebook_bcc.planners.capabilities import DeclaresFiles, problem_of

    files = planner.files() if isinstance(planner, DeclaresFiles) else []
    return planner, name, problem_of(planner), files


def prepare(args: argparse.Namespace) -> Prepared | int:
    """The planner ``--planner`` names, built from the flags, or the bad-input exit code."""
    chosen = {
        "blueprint": _blueprint_run,
        "http": _http_run,
        "llm": _llm_run,
        "replay": _replay_run,
    }
    return chosen[args.planner](args)
