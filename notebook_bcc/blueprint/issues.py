"""Problems found in a blueprint file, located by line, and the error that carries them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from notebook_bcc.errors import NotebookBccError


class Issue(NamedTuple):
    """One problem: its 1-based line (None when it concerns the whole file) and a message."""

    line: int | None
    message: str

    def format(self, filename: str, prefix: str = "") -> str:
        """``FILE:LINE: PREFIXmessage`` (or ``FILE: PREFIXmessage`` without a line)."""
        where = f"{filename}:{self.line}" if self.line is not None else filename
        return f"{where}: {prefix}{self.message}"


def sort_issues(issues: Sequence[Issue]) -> list[Issue]:
    """Issues without duplicates, file-level ones first, then by line (stable otherwise)."""
    unique = list(dict.fromkeys(issues))
    return sorted(unique, key=lambda issue: -1 if issue.line is None else issue.line)


class BlueprintError(NotebookBccError):
    """A blueprint or state-machine file that cannot be loaded; carries every problem found.

    ``issues`` are the errors (``[(line, message)]``), ``warnings`` what was also noticed.
    """

    code = "invalid_blueprint"

    def __init__(
        self, filename: str, issues: Sequence[Issue], warnings: Sequence[Issue] = ()
    ) -> None:
        self.filename = filename
        self.issues = sort_issues(issues)
        self.warnings = sort_issues(warnings)
        first = self.issues[0].format(filename) if self.issues else f"{filename}: invalid"
        more = len(self.issues) - 1
        suffix = f" (and {more} more error{'s' if more != 1 else ''})" if more > 0 else ""
        super().__init__(
            first + suffix,
            details={
                "filename": filename,
                "errors": [{"line": i.line, "message": i.message} for i in self.issues],
                "warnings": [{"line": i.line, "message": i.message} for i in self.warnings],
            },
        )
