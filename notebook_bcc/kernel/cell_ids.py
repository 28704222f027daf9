"""Deterministic cell ids from an action's path (DESIGN §9 D10).

A cell is named by where its action sits in the workflow:
``stage_id/visit/step_id/behavior_id/iteration/action_index``. Replaying the same action gives
the same id (an upsert, never a duplicate); a retried behavior (next iteration) or a revisited
stage (next visit) gives new ids, so old cells are never overwritten. nbformat 4.5 ids must match
``^[a-zA-Z0-9-_]+$`` and be 1-64 characters: the id is a readable prefix plus a short hash of the
full path, and the full path is kept in the cell's ``metadata.notebook_bcc.path``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_PREFIX_CHARS = 32
_HASH_CHARS = 12
CELL_ID_PATTERN = re.compile(r"^[a-zA-Z0-9-_]{1,64}$")
"""What nbformat 4.5 accepts as a cell id."""


@dataclass(frozen=True, slots=True)
class ActionPath:
    """Where an action sits in the workflow; the caller (the engine) supplies it."""

    stage_id: str
    visit: int
    step_id: str
    behavior_id: str
    iteration: int
    action_index: int
    scope: str = ""
    """The workflow the action belongs to: two workflows on one notebook never share ids."""
    key: str = field(init=False, repr=False, compare=False)
    """The readable path ``stage/visit/step/behavior/iteration/index`` kept in metadata."""

    def __post_init__(self) -> None:
        key = (
            f"{self.stage_id}/{self.visit}/{self.step_id}/{self.behavior_id}/"
            f"{self.iteration}/{self.action_index}"
        )
        object.__setattr__(self, "key", key)

    @property
    def behavior_key(self) -> tuple[str, int, str, str, int]:
        """The path of the behavior run this action belongs to (everything but the index)."""
        return (self.stage_id, self.visit, self.step_id, self.behavior_id, self.iteration)

    def cell_id(self) -> str:
        """The deterministic nbformat cell id of the cell this action creates."""
        return cell_id_for(self)


def cell_id_for(path: ActionPath) -> str:
    """``<behavior>-<index>-<hash>``: readable, unique per path, valid for nbformat 4.5.

    The hash covers a length-prefixed form of every component, so ids of paths whose parts
    contain ``/`` (or any separator) cannot collide with each other.
    """
    # Length-prefixed parts: unambiguous whatever characters the ids contain.
    canonical = (
        f"{len(path.stage_id)}:{path.stage_id}|{path.visit}|{len(path.step_id)}:{path.step_id}|"
        f"{len(path.behavior_id)}:{path.behavior_id}|{path.iteration}|{path.action_index}"
    )
    if path.scope:
        canonical += f"|{len(path.scope)}:{path.scope}"
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{_readable(path.behavior_id)}-{path.action_index}-{digest[:_HASH_CHARS]}"


@lru_cache(maxsize=1024)
def _readable(behavior_id: str) -> str:
    return _UNSAFE.sub("_", behavior_id).strip("_")[:_PREFIX_CHARS] or "cell"
