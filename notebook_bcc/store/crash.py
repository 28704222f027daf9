"""Crash-point injection for the durability suite: SIGKILL this process around a commit.

``NOTEBOOK_BCC_CRASH_AT`` = ``before:N`` or ``after:N`` (the Nth commit of this process, from
1), optionally ``before:N:KIND`` to count only commits of one kind (``contract_running``,
``contract_terminal``, ``cell``, ``transition``, ``decision``, ...). Unset, it costs one dict
lookup per commit.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

ENV_VAR = "NOTEBOOK_BCC_CRASH_AT"


@dataclass
class CrashPlan:
    """When to kill: before or after the ``count``-th commit (of ``kind`` if given)."""

    when: str
    count: int
    kind: str | None = None
    seen: int = 0

    @classmethod
    def from_env(cls) -> CrashPlan | None:
        """The plan in the environment, or None; a malformed value is a ValueError."""
        raw = os.environ.get(ENV_VAR)
        if not raw:
            return None
        parts = raw.split(":")
        if len(parts) not in (2, 3) or parts[0] not in ("before", "after"):
            raise ValueError(f"{ENV_VAR}={raw!r}: expected before:N, after:N or before:N:KIND")
        return cls(parts[0], int(parts[1]), parts[2] if len(parts) == 3 else None)

    def tick(self, kinds: frozenset[str]) -> bool:
        """Count one commit carrying ``kinds``; True when this is the one to die at."""
        if self.kind is not None and self.kind not in kinds:
            return False
        self.seen += 1
        return self.seen == self.count


def die() -> None:
    """Kill this process at once, as a power-cut-free crash would (no cleanup, no flush)."""
    os.kill(os.getpid(), signal.SIGKILL)
