"""What a :class:`~notebook_bcc.kernel.session.KernelSession` answers: the kernel's own
description, how a cell's execution ended, and a silent request's reply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from notebook_bcc.kernel.results import ExecStatus

TIMEOUT_ENAME = "NotebookBccCellTimeout"
"""The ``ename`` of the reply nbclient synthesizes when our per-cell timeout fires."""


@dataclass(frozen=True, slots=True)
class KernelInfo:
    """What the kernel said about itself, in the shape a notebook's metadata wants."""

    kernelspec: dict[str, Any]
    language_info: dict[str, Any]
    protocol_version: str | None
    implementation: str | None


@dataclass(frozen=True, slots=True)
class RawRun:
    """How one ``execute`` ended; the outputs are in the cell itself (partial ones included)."""

    status: ExecStatus
    execution_count: int | None
    started_at: str
    ended_at: str
    duration_s: float
    message: str | None = None
    kernel_ready: bool = True


@dataclass(frozen=True, slots=True)
class SilentReply:
    """The content of a silent request's ``execute_reply`` and how many interrupts it took."""

    content: dict[str, Any]
    interrupts: int


def reply_status(
    reply: dict[str, Any] | None, timeout: float | None
) -> tuple[ExecStatus, str | None]:
    """How a cell ended, from its ``execute_reply`` (None: no reply came)."""
    content = reply.get("content", {}) if reply else {}
    state = content.get("status")
    if state == "ok":
        return "ok", None
    ename = content.get("ename")
    if ename == TIMEOUT_ENAME:
        return "timeout", f"the cell ran longer than {timeout:g} s and was interrupted"
    if ename == "KeyboardInterrupt":
        return "interrupted", "the kernel was interrupted"
    if state == "aborted":
        return "error", "the kernel aborted the request"
    if state == "error":
        return "error", f"{ename}: {content.get('evalue', '')}"
    return "error", "no execute_reply from the kernel"


__all__ = ["TIMEOUT_ENAME", "KernelInfo", "RawRun", "SilentReply", "reply_status"]
