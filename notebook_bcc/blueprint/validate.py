"""``validate``: check a blueprint or a bare seed 004 machine and summarize it (no exceptions).

A :class:`ValidationReport` has the errors and warnings (each an :class:`Issue` with its line)
and a one-line summary; the CLI prints ``FILE:LINE: message`` lines and exits 2 on errors.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from notebook_bcc.blueprint.issues import BlueprintError, Issue
from notebook_bcc.blueprint.loader import (
    LoadedBlueprint,
    load_blueprint_file,
    load_blueprint_text,
)
from notebook_bcc.blueprint.models import Blueprint

__all__ = ["Issue", "ValidationReport", "summarize", "validate_file", "validate_text"]


@dataclass(frozen=True)
class ValidationReport:
    """The outcome of validating one file: errors, warnings, summary, and what was loaded."""

    filename: str
    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)
    summary: str = ""
    loaded: LoadedBlueprint | None = None

    @property
    def ok(self) -> bool:
        """Whether the file has no errors (warnings allowed)."""
        return not self.errors


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def summarize(loaded: LoadedBlueprint) -> str:
    """One line: ``FILE: valid blueprint 'name': 6 stages, 14 steps, ..., ends: done``."""
    document = loaded.document
    machine = loaded.machine
    name = f" {document.name!r}" if document.name else ""
    ends = ", ".join(machine.end_states) or "after the last state"
    if isinstance(document, Blueprint):
        counts = [
            _plural(len(document.states), "stage"),
            _plural(document.step_count, "step"),
            _plural(document.behavior_count, "behavior"),
        ]
        if document.parameters:
            counts.append(_plural(len(document.parameters), "parameter"))
    else:
        counts = [_plural(len(document.states), "state")]
    counts.append(_plural(len(document.transitions), "transition"))
    text = (
        f"{loaded.filename}: valid {loaded.kind}{name}: {', '.join(counts)}, "
        f"start {machine.start_state}, ends: {ends}"
    )
    if loaded.warnings:
        text += f" ({_plural(len(loaded.warnings), 'warning')})"
    return text


def _failed(filename: str, exc: BlueprintError) -> ValidationReport:
    summary = f"{filename}: invalid: {_plural(len(exc.issues), 'error')}"
    return ValidationReport(filename, list(exc.issues), list(exc.warnings), summary)


def validate_text(text: str, filename: str = "<string>") -> ValidationReport:
    """Validate YAML ``text`` reported under ``filename``."""
    try:
        loaded = load_blueprint_text(text, filename)
    except BlueprintError as exc:
        return _failed(filename, exc)
    return ValidationReport(filename, [], list(loaded.warnings), summarize(loaded), loaded)


def validate_file(path: str | os.PathLike[str]) -> ValidationReport:
    """Validate the file at ``path``; a missing or unreadable file is one error, not a crash."""
    filename = os.fspath(path)
    try:
        loaded = load_blueprint_file(filename)
    except BlueprintError as exc:
        return _failed(filename, exc)
    return ValidationReport(filename, [], list(loaded.warnings), summarize(loaded), loaded)
