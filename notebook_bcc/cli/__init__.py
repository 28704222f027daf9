"""The ``notebook-bcc`` command line: a thin layer over the package.

Command modules are imported lazily (each exposes ``register(subparsers)``; the handler imports
what it needs), so ``notebook-bcc --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sqlite3
import sys
import time
from collections.abc import Sequence

from notebook_bcc import __version__
from notebook_bcc.cli.deferred_imports import defer_iri_grammar

COMMAND_MODULES: tuple[str, ...] = (
    "notebook_bcc.cli.run_cmd",
    "notebook_bcc.cli.status_cmd",
    "notebook_bcc.cli.resume_cmd",
    "notebook_bcc.cli.fsm_cmd",
    "notebook_bcc.cli.validate_cmd",
    "notebook_bcc.cli.schema_cmd",
    "notebook_bcc.cli.parse_cmd",
    "notebook_bcc.cli.apply_cmd",
)
"""Modules that each register one or more subcommands, in help order."""

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="notebook-bcc",
        description="Run DSLC workflows planned by an AI or a YAML blueprint in real notebooks.",
    )
    parser.add_argument("--version", action="version", version=f"notebook-bcc {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


_STARTED = [time.monotonic()]
"""When this command started (main() resets it): the summary's 'time in this command'."""


def command_seconds() -> float:
    """Seconds since the command started: a resume's kernel start and silent replay count."""
    return time.monotonic() - _STARTED[0]


def _shown(text: str) -> str:
    """``text`` with its undecodable bytes as ``\\xNN``."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _undecodable_text(args: argparse.Namespace) -> str | None:
    """Which text argument holds bytes that are not UTF-8 (a shell's ``$'\\xff'``), or None.

    Text reaches JSON, the store and the kernel, none of which can hold such bytes; file paths
    (``Path`` arguments) may, and are left alone.
    """

    def texts(value: object) -> list[str]:
        if isinstance(value, list | tuple):
            return [text for item in value for text in texts(item)]
        return [value] if isinstance(value, str) else []

    for name, value in vars(args).items():
        for item in texts(value):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                flag = "--" + name.replace("_", "-")
                byte = item[exc.start].encode("utf-8", "surrogateescape")
                return (
                    f"{flag} is not UTF-8 text (byte {byte!r} at character {exc.start} of "
                    f"'{_shown(item)}'): give it as UTF-8"
                )
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse arguments and run the chosen handler; returns the exit code."""
    _STARTED[0] = time.monotonic()
    defer_iri_grammar()
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    undecodable = _undecodable_text(args)
    if undecodable is not None:
        print(f"error: {undecodable}", file=sys.stderr)
        return EXIT_BAD_INPUT
    from notebook_bcc.errors import NotebookBccError
    from notebook_bcc.store.errors import NotAStateDatabaseError, StoreUnavailableError

    try:
        code: int = handler(args)
    except NotAStateDatabaseError as exc:  # a wrong --state-db path: bad input
        print(f"error: {exc.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except StoreUnavailableError as exc:
        # D1: the store cannot be written (locked, disk full); it stays at its last commit
        print(f"error: {exc.message}", file=sys.stderr)
        return EXIT_FAILED
    except NotebookBccError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except sqlite3.DatabaseError as exc:
        # a table dropped, a page corrupted: the store was altered or damaged under us
        where = getattr(args, "state_db", None)
        print(
            f"error: the state database {where or ''} cannot be read: {exc}; it was altered "
            "or damaged after it was written"
            + (f" (`notebook-bcc trace --verify --state-db {where}` says where)" if where else ""),
            file=sys.stderr,
        )
        return EXIT_FAILED
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:  # Ctrl-C before the run installed its own handlers
        print("interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
