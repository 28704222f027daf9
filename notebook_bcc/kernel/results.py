"""Typed results the kernel layer hands back, so the engine never parses strings.

These are in-process values (plain dataclasses: the markdown hot path must stay well under
0.1 ms); the engine turns them into contracts, effects and snapshot fields. The snapshot's own
pydantic models (``VariableInfo``, ``AcceptanceResult``) are reused where a result *is* one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from notebook_bcc.models.snapshot import VariableInfo

ExecStatus = Literal["ok", "error", "timeout", "dead_kernel", "interrupted"]
"""How one cell execution ended. ``timeout`` comes from our own clock (the kernel only sees a
KeyboardInterrupt); ``interrupted`` is an interrupt that was not ours (a human in JupyterLab, or
the session closing under a cell it does not own)."""

CellChange = Literal["created", "updated", "executed"]
"""Why a cell is handed to the sinks: new, changed in place (merge, title, marker), or run."""

KernelEventKind = Literal[
    "comment_result",
    "title",
    "last_text",
    "thinking",
    "thinking_finished",
    "effect_as_thinking",
    "communication",
]
"""Things an action asks of the caller beyond a cell (the engine owns effects, D12)."""


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """The error a cell raised: name, value and a trimmed, colour-free traceback."""

    ename: str
    evalue: str
    traceback: tuple[str, ...] = ()


@dataclass(slots=True)
class ExecResult:
    """What happened when one code cell ran (partial outputs are kept on every status)."""

    cell_id: str
    status: ExecStatus
    outputs: list[dict[str, Any]]
    effects: list[str]
    execution_count: int | None
    started_at: str
    ended_at: str
    duration_s: float
    error: ErrorInfo | None = None
    message: str | None = None
    kernel_ready: bool = True

    @property
    def ok(self) -> bool:
        """True when the cell ran to the end without raising."""
        return self.status == "ok"


@dataclass(frozen=True, slots=True)
class CellRecord:
    """A finished cell as a sink receives it.

    ``cell`` is the live nbformat cell: a sink that keeps it must copy or serialize it at once,
    because later actions (a markdown merge, an execution) change it in place.
    """

    cell_id: str
    index: int
    change: CellChange
    cell: dict[str, Any]
    path: str | None
    contract_id: str | None = None


@dataclass(frozen=True, slots=True)
class KernelEvent:
    """A request to the caller that is not a cell (title changed, comment, thinking, ...)."""

    kind: KernelEventKind
    data: dict[str, Any]


@dataclass(slots=True)
class ActionOutcome:
    """What one action did: the cell it touched, the execution if any, events, or a refusal."""

    action_type: str
    cell_id: str | None = None
    change: CellChange | None = None
    execution: ExecResult | None = None
    events: list[KernelEvent] = field(default_factory=list)
    refused: str | None = None

    @property
    def ok(self) -> bool:
        """True when the action was applied and any execution it ran ended ``ok``."""
        return self.refused is None and (self.execution is None or self.execution.ok)


@dataclass(slots=True)
class VariablesReport:
    """The variables probe's answer: a summary per user variable and which names exist.

    ``present`` maps each name the caller asked about (declared artifacts, required variables)
    to ``"variable"``, ``"file"`` (a path that exists, relative to the kernel's working
    directory) or ``None``. ``error`` is set when the probe could not run (timeout, dead kernel);
    the other fields are then empty.
    """

    variables: dict[str, VariableInfo]
    present: dict[str, str | None]
    total: int
    omitted: int
    duration_s: float
    error: str | None = None

    @property
    def missing(self) -> list[str]:
        """Names the caller asked about that exist neither as a variable nor as a file."""
        return [name for name, where in self.present.items() if where is None]
