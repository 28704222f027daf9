"""Effects bookkeeping (DESIGN §9 D12): the engine's outputs of the running behavior.

``current`` holds the outputs of the running behavior and stays intact through its reflection;
it moves to ``history`` when the next behavior starts (or on a ``comment_result`` action).
History keeps only the last ``cap`` entries.
"""

from __future__ import annotations

from collections.abc import Iterable

from notebook_bcc.models.snapshot import Effects


def archive_current(effects: Effects, cap: int) -> Effects:
    """``current`` appended to ``history`` (capped to the last ``cap``), ``current`` emptied."""
    if not effects.current:
        return effects
    history = [*effects.history, *effects.current]
    return Effects(current=[], history=history[-cap:] if cap > 0 else [])


def add_current(effects: Effects, entries: Iterable[str]) -> Effects:
    """``entries`` appended to ``current``."""
    new = list(entries)
    if not new:
        return effects
    return effects.model_copy(update={"current": [*effects.current, *new]})


def cap_history(effects: Effects, cap: int) -> Effects:
    """``history`` cut to its last ``cap`` entries."""
    if len(effects.history) <= cap:
        return effects
    return effects.model_copy(update={"history": effects.history[-cap:] if cap > 0 else []})


def warn_effect(message: str) -> str:
    """The text of a WARN effect (the form planners and the reference client use)."""
    return f"WARN: {message}"
