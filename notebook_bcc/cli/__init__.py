"""The ``notebook-bcc`` command line: a thin layer over the package.

Command modules are imported lazily (each exposes ``register(subparsers)``; the handler imports
what it needs), so ``notebook-bcc --help`` stays fast.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sqlite3
import sys
import time
from collections.abc import Sequence
from typing import NoReturn

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


class CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: a mistyped option is named with the closest real one, and an
    error is one line plus where to read more, not the whole usage of a long command."""

    def error(self, message: str) -> NoReturn:
        """Print ``prog: error: message`` and the ``--help`` hint; exit 2."""
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n(see {self.prog} --help)\n")

    def unknown(self, extra: Sequence[str]) -> NoReturn:
        """Refuse arguments this command does not take, with a "did you mean" per option."""
        known = [o for action in self._actions for o in action.option_strings]
        hints = []
        for item in extra:
            close = difflib.get_close_matches(item.split("=", 1)[0], known, n=1)
            if item.startswith("-") and close:
                hints.append(f"{item} (did you mean {close[0]}?)")
            else:
                hints.append(item)
        self.error(f"unrecognized arguments: {', '.join(hints)}")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="notebook-bcc",
        description="Run DSLC workflows planned by an AI or a YAML blueprint in real notebooks.",
    )
    parser.add_argument("--version", action="version", version=f"notebook-bcc {__version__}")
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=CommandParser
    )
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


def _command_parser(parser: argparse.ArgumentParser, name: str | None) -> CommandParser | None:
    """The parser of subcommand ``name``, if there is one."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            chosen = action.choices[name]
            return chosen if isinstance(chosen, CommandParser) else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse arguments and run the chosen handler; returns the exit code."""
    _STARTED[0] = time.monotonic()
    defer_iri_grammar()
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        command = _command_parser(parser, getattr(args, "command", None))
        if command is None:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        command.unknown(extra)
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
