"""Helpers for the hostile-input tests: a trap on the server's log and bad-body generators."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class LogTrap(logging.Handler):
    """Collects every record the test server logs (its app logger, tornado's and the root's)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Keep the record."""
        self.records.append(record)

    def tracebacks(self) -> list[str]:
        """Messages of records that carry a traceback or are errors (5xx are logged as such)."""
        bad = []
        for record in self.records:
            text = record.getMessage()
            if record.exc_info or "Traceback" in text or record.levelno >= logging.ERROR:
                bad.append(f"{record.name} {record.levelname}: {text[:300]}")
        return bad


@contextmanager
def trapped_log(server_app: Any) -> Iterator[LogTrap]:
    """A :class:`LogTrap` on the server's loggers for the duration of the block."""
    trap = LogTrap()
    loggers = {
        logging.getLogger(),
        logging.getLogger("tornado"),
        logging.getLogger("tornado.application"),
        logging.getLogger("tornado.access"),
        server_app.log,
    }
    for logger in loggers:
        logger.addHandler(trap)
    try:
        yield trap
    finally:
        for logger in loggers:
            logger.removeHandler(trap)


def nested(depth: int) -> bytes:
    """A JSON array ``depth`` levels deep."""
    return b"[" * depth + b"]" * depth
