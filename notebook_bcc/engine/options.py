"""What a run may do on its own, and its limits."""

from __future__ import annotations

from dataclasses import dataclass, field

from notebook_bcc.engine.irreversible import DEFAULT_PATTERNS


@dataclass(frozen=True)
class EngineOptions:
    """Knobs of one run (CLI flags, REST ``options``, server traits).

    ``auto_confirm`` approves every decision a human may delegate (D3): updates, stage
    confirmations, irreversible confirmations and kernel rebuilds, never an in-doubt action.
    ``confirm_irreversible`` asks before an irreversible action runs (D9). ``max_hops`` caps
    stage entries (default: 10 x the stage count, D14/D16). ``cell_timeout`` limits each cell
    (seconds, None = none). ``max_iterations`` is D15's default behavior-iteration cap per step.
    ``ask_before_rebuild`` makes a new kernel wait for a human before cells are replayed.
    """

    auto_confirm: bool = False
    confirm_irreversible: bool = True
    max_hops: int | None = None
    cell_timeout: float | None = None
    max_iterations: int = 3
    kernel_name: str = "python3"
    effects_history_cap: int = 50
    irreversible_patterns: tuple[str, ...] = field(default=DEFAULT_PATTERNS)
    observation_format: str = "state"
    write_debounce: float = 0.5
    ask_before_rebuild: bool = False
    """Ask a human (a ``kernel_rebuild`` decision) before replaying cells into a new kernel;
    by default the replay runs at once and a human is asked only when it fails (D11)."""
